"""Calls with many arguments name them (issue 38): no function in lambda_src/stepwell takes more than four
positional parameters besides self/cls; the others are keyword-only (`*,`), so a call cannot pass two
arguments of the same type in the wrong order. Dataclasses are not functions here: those built with many
fields use kw_only=True (or keyword calls)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lambda_src" / "stepwell"
MAX_POSITIONAL = 4
_RECEIVERS = ("self", "cls")

# Definitions that may take more positional parameters, as "<path in the package>::<qualified name>".
# Only for signatures fixed by someone else (a stdlib override such as logging's, an SDK callback), each with
# its reason; none is needed today. An entry whose definition no longer takes more must go
# (test_every_allowed_definition_still_takes_more).
ALLOWED: frozenset[str] = frozenset()


def positional_parameters(arguments: ast.arguments) -> list[str]:
    """The parameters a call may pass by position, without the receiver (self or cls)."""
    names = [argument.arg for argument in [*arguments.posonlyargs, *arguments.args]]
    return names[1:] if names and names[0] in _RECEIVERS else names


def offenders(source: str, module: str) -> list[str]:
    """Every function and lambda of `source` taking more than MAX_POSITIONAL positional parameters, as
    "<module>::<qualified name>" (a method as Class.method, a nested function as outer.inner)."""
    found: list[str] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = (*scope, "<lambda>" if isinstance(child, ast.Lambda) else child.name)
                if len(positional_parameters(child.args)) > MAX_POSITIONAL:
                    found.append(f"{module}::{'.'.join(inner)}")
            elif isinstance(child, ast.ClassDef):
                inner = (*scope, child.name)
            visit(child, inner)

    visit(ast.parse(source), ())
    return found


@functools.cache
def package_offenders() -> tuple[str, ...]:
    return tuple(
        name
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in offenders(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix())
    )


def not_allowed(found: Iterable[str], allowed: frozenset[str] = ALLOWED) -> list[str]:
    return sorted(set(found) - allowed)


def test_no_function_in_the_package_takes_more_than_four_positional_parameters() -> None:
    new = not_allowed(package_offenders())
    assert not new, (
        "make the parameters after the fourth keyword-only (`*,`) and name them at every call site; "
        f"ALLOWED is only for signatures fixed by someone else: {new}"
    )


def test_every_allowed_definition_still_takes_more() -> None:
    stale = sorted(ALLOWED - set(package_offenders()))
    assert not stale, f"converted, moved or gone: remove from ALLOWED: {stale}"


SNIPPET = """
def five(a, b, c, d, e): ...
def four_then_keywords(a, b, c, d, *, e, f=1): ...
def only_positional(a, b, c, d, e, /): ...
def variadic(a, b, c, d, *rest, **options): ...
async def fetch(a, b, c, d, e=None): ...
pick = lambda a, b, c, d, e: a

class Store:
    def __init__(self, a, b, c, d): ...
    def put(self, a, b, c, d, e): ...
    @classmethod
    def build(cls, a, b, c, d): ...
    @staticmethod
    def helper(a, b, c, d, e): ...
    class Inner:
        def deep(self, a, b, c, d, e=0): ...

def outer():
    def inner(a, b, c, d, e): ...
"""


def test_the_check_finds_every_kind_of_definition_with_too_many_positional_parameters() -> None:
    assert offenders(SNIPPET, "snippet.py") == [
        "snippet.py::five",
        "snippet.py::only_positional",
        "snippet.py::fetch",
        "snippet.py::<lambda>",
        "snippet.py::Store.put",
        "snippet.py::Store.helper",
        "snippet.py::Store.Inner.deep",
        "snippet.py::outer.inner",
    ]


def test_a_new_definition_fails_the_check_unless_allowed() -> None:
    found = offenders("class Tables:\n    def put_text(self, a, b, c, d, e): ...\n", "x.py")
    assert not_allowed(found) == ["x.py::Tables.put_text"]
    # Allowed in its own file it passes, the same name in another file does not; a keyword-only version is
    # no offender at all.
    assert not_allowed(found, allowed=frozenset({"x.py::Tables.put_text"})) == []
    assert not_allowed(found, allowed=frozenset({"y.py::Tables.put_text"})) == ["x.py::Tables.put_text"]
    assert offenders("def put(a, b, c, d, *, e): ...\n", "x.py") == []
