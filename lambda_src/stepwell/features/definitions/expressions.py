"""A small, safe expression language for definitions (conditions, trigger filters, action inputs, wait
times). A tokenizer, a precedence-climbing parser to a tree, and an evaluator over plain JSON values:
nothing is ever handed to Python's `eval`.

Grammar (lowest precedence first):

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") sum)?
    sum     := product (("+" | "-") product)*
    product := unary (("*" | "/" | "%") unary)*
    unary   := "-" unary | primary
    primary := NUMBER | STRING | "true" | "false" | "null" | path | "(" expr ")" | "[" [expr ("," expr)*] "]"
    path    := NAME ("." NAME | "[" (NUMBER | STRING) "]")*

A path starts at one of the roots given to `compile_expression` (for definitions: data, event, subject,
domain). A missing key or index reads as null. Strings are in single or double quotes with backslash
escapes for the quote and the backslash. Only ASCII digits, letters and spaces are tokens.

Limits, so that no expression can exhaust the stack, the memory or the time of the worker:
- at most MAX_EXPRESSION_LENGTH characters;
- at most MAX_DEPTH levels in the tree: each operator of a chain (`1 + 1 + 1` is two levels), each
  unary operator, each list and each pair of parentheses counts;
- integers are exact (never read through a float) and at most MAX_INTEGER_BITS bits in magnitude, as
  literals, as operands of arithmetic and as results; a float result must be finite;
- `+` on strings or lists gives at most MAX_CONCAT_LENGTH characters or items;
- a value is at most MAX_VALUE_BYTES as JSON (a list literal repeating a large path would otherwise make
  many megabytes of one event's data, which the engine then serializes);
- an evaluation takes at most its CPU budget (a `Meter`; DEFAULT_EVALUATION_CPU_SECONDS when none is given):
  the evaluator counts its steps (tree nodes, list items compared, values measured) and reads the thread's
  CPU clock every CHECK_EVERY of them. One operation of C code (comparing two large values) runs to its end
  before the next check, so an evaluation may overrun its budget by that much.

`estimate_cost` bounds an expression's work before it runs (validation refuses definitions by it).

Every failure, parsing or evaluating, is an `ExpressionError` naming the position and text of the node
at fault, the reason and the whole expression.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any

from stepwell.config import DEFAULT_EXPRESSION_CPU_SECONDS

MAX_EXPRESSION_LENGTH = 2000
MAX_DEPTH = 64
MAX_INTEGER_BITS = 128
MAX_CONCAT_LENGTH = 400_000
MAX_VALUE_BYTES = 1024 * 1024
DEFAULT_ROOTS = ("data", "event", "subject", "domain")
# The CPU one evaluation may take when its caller gives no Meter (a flow key): the deployment's default.
DEFAULT_EVALUATION_CPU_SECONDS = DEFAULT_EXPRESSION_CPU_SECONDS
# Steps between two reads of the CPU clock: a read costs about as much as a few steps, and 64 steps of the
# evaluator take well under a millisecond.
CHECK_EVERY = 64


class ExpressionError(ValueError):
    """An expression that does not parse, or fails to evaluate. The message names the expression;
    `reason`, `position` and `fragment` (the text of the node at fault) are also kept apart."""

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        position: int | None = None,
        fragment: str | None = None,
        expression: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason or message
        self.position = position
        self.fragment = fragment
        self.expression = expression


class BudgetExceeded(ExpressionError):
    """An evaluation stopped by its Meter: the message names the budget it exceeded."""


class Meter:
    """The CPU budget of one evaluation, on the thread that runs it. CPU time is the thread's
    (time.thread_time): the SDK runs handlers and parallel branches on threads of a process that runs other
    executions at the same time, and the process's clock would charge this evaluation with their work."""

    __slots__ = ("_clock", "_left", "deadline", "reason")

    def __init__(self, seconds: float, reason: str, clock: Callable[[], float] = time.thread_time) -> None:
        self._clock = clock
        self.deadline = clock() + seconds
        self.reason = reason
        self._left = CHECK_EVERY

    def tick(self, steps: int = 1) -> None:
        self._left -= steps
        if self._left <= 0:
            self._left = CHECK_EVERY
            if self._clock() > self.deadline:
                raise BudgetExceeded(self.reason)


def evaluation_meter(seconds: float = DEFAULT_EVALUATION_CPU_SECONDS) -> Meter:
    """A Meter for one evaluation under the per-evaluation budget."""
    return Meter(seconds, f"the evaluation took more than its CPU budget of {seconds:g} s per expression")


_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
  | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<op>==|!=|<=|>=|<|>|\+|-|\*|/|%|\(|\)|\[|\]|\.|,)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    """,
    re.VERBOSE | re.ASCII,
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null"}


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, op, name, keyword, end
    value: str
    position: int

    @property
    def end(self) -> int:
        return self.position + len(self.value)


def _excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            reason = f"unexpected character {text[position]!r}"
            raise ExpressionError(
                f"{reason} at position {position} in expression {_excerpt(text, 200)!r}",
                reason=reason,
                position=position,
                fragment=text[position],
                expression=text,
            )
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "name" and value in _KEYWORDS:
            kind = "keyword"
        if kind != "space":
            tokens.append(Token(kind, value, position))
        position = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


# --- the tree -------------------------------------------------------------------------------------
# Every node keeps its span in the text (for error messages) and the depth of the tree below it.


@dataclass(frozen=True)
class Literal:
    value: Any
    span: tuple[int, int] = (0, 0)
    depth: int = 1


@dataclass(frozen=True)
class Path:
    root: str
    parts: tuple[str | int, ...]
    span: tuple[int, int] = (0, 0)
    depth: int = 1


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Node, ...]
    span: tuple[int, int] = (0, 0)
    depth: int = 1


@dataclass(frozen=True)
class Unary:
    op: str  # "not" or "-"
    operand: Node
    span: tuple[int, int] = (0, 0)
    depth: int = 1


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    _: KW_ONLY
    span: tuple[int, int] = (0, 0)
    depth: int = 1


Node = Literal | Path | ListExpr | Unary | Binary

# Binding power of the binary operators; "not" (prefix) sits between "and" and the comparisons, unary
# "-" binds tightest. Comparisons do not chain (`a < b < c` is an error, as in the grammar).
_BINARY_PRECEDENCE = {
    "or": 1,
    "and": 2,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "in": 4,
    "not in": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}
_NOT_PRECEDENCE = 3
_COMPARE_PRECEDENCE = 4
_UNARY_PRECEDENCE = 7


class _Parser:
    def __init__(self, text: str, roots: Sequence[str]) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0
        self.roots = roots
        self.nesting = 0

    def error(self, reason: str, token: Token | None = None) -> ExpressionError:
        token = token or self.peek()
        where = "at the end" if token.kind == "end" else f"at position {token.position} ({token.value!r})"
        return ExpressionError(
            f"{reason} {where} in expression {_excerpt(self.text, 200)!r}",
            reason=reason,
            position=token.position,
            fragment=token.value,
            expression=self.text,
        )

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.peek()
        if token.kind != "end":
            self.index += 1
        return token

    def accept(self, kind: str, value: str) -> Token | None:
        token = self.peek()
        if token.kind == kind and token.value == value:
            self.index += 1
            return token
        return None

    def expect(self, kind: str, value: str) -> Token:
        token = self.accept(kind, value)
        if token is None:
            raise self.error(f"expected {value!r}")
        return token

    def check_depth(self, node: Node, at: Token) -> Node:
        if node.depth > MAX_DEPTH:
            raise self.error(
                f"expression nested deeper than {MAX_DEPTH} levels (each operator of a chain counts)", at
            )
        return node

    def enter(self, at: Token) -> None:
        # Bounds the parser's recursion before it happens (a node's depth is known only after): every
        # recursion (an operand, parentheses, a list) counts, so the stack stays within a few hundred frames.
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise self.error(f"expression nested deeper than {MAX_DEPTH} levels", at)

    def leave(self) -> None:
        self.nesting -= 1

    def parse(self) -> Node:
        if not self.text.strip():
            raise ExpressionError("empty expression", reason="empty expression", position=0, expression="")
        node = self.parse_expression(1)
        if self.peek().kind != "end":
            raise self.error("unexpected token")
        return node

    def binary_operator(self) -> tuple[str, int] | None:
        """The binary operator at the cursor (with how many tokens it takes), if any."""
        token = self.peek()
        if token.kind == "op" and token.value in _BINARY_PRECEDENCE:
            return token.value, 1
        if token.kind == "keyword" and token.value in ("and", "or", "in"):
            return token.value, 1
        following = self.peek(1)
        if token.value == "not" and following.kind == "keyword" and following.value == "in":
            return "not in", 2
        return None

    def parse_expression(self, min_precedence: int) -> Node:
        node = self.parse_prefix(min_precedence)
        compared = False
        while True:
            found = self.binary_operator()
            if found is None:
                return node
            op, width = found
            precedence = _BINARY_PRECEDENCE[op]
            if precedence < min_precedence:
                return node
            if precedence == _COMPARE_PRECEDENCE:
                if compared:
                    raise self.error("unexpected token")
                compared = True
            at = self.peek()
            self.index += width
            self.enter(at)
            right = self.parse_expression(precedence + 1)
            self.leave()
            node = self.check_depth(
                Binary(
                    op,
                    node,
                    right,
                    span=(node.span[0], right.span[1]),
                    depth=1 + max(node.depth, right.depth),
                ),
                at,
            )

    def parse_prefix(self, min_precedence: int) -> Node:
        token = self.peek()
        if token.kind == "keyword" and token.value == "not":
            if min_precedence > _NOT_PRECEDENCE:
                raise self.error("expected a value", token)
            return self.parse_unary(token, "not", lambda: self.parse_expression(_NOT_PRECEDENCE))
        if token.kind == "op" and token.value == "-":
            return self.parse_unary(token, "-", lambda: self.parse_prefix(_UNARY_PRECEDENCE))
        return self.parse_primary()

    def parse_unary(self, token: Token, op: str, operand: Callable[[], Node]) -> Node:
        self.take()
        self.enter(token)
        inner = operand()
        self.leave()
        return self.check_depth(Unary(op, inner, (token.position, inner.span[1]), 1 + inner.depth), token)

    def parse_primary(self) -> Node:
        token = self.take()
        span = (token.position, token.end)
        if token.kind == "number":
            return Literal(self.number(token), span)
        if token.kind == "string":
            return Literal(_unquote(token.value), span)
        if token.kind == "keyword" and token.value in ("true", "false", "null"):
            return Literal({"true": True, "false": False, "null": None}[token.value], span)
        if token.kind == "op" and token.value == "(":
            self.enter(token)
            node = self.parse_expression(1)
            self.leave()
            self.expect("op", ")")
            return node
        if token.kind == "op" and token.value == "[":
            self.enter(token)
            items: list[Node] = []
            closing = self.accept("op", "]")
            if closing is None:
                items.append(self.parse_expression(1))
                while self.accept("op", ","):
                    items.append(self.parse_expression(1))
                closing = self.expect("op", "]")
            self.leave()
            depth = 1 + max((item.depth for item in items), default=0)
            return self.check_depth(ListExpr(tuple(items), (token.position, closing.end), depth), token)
        if token.kind == "name":
            if token.value not in self.roots:
                raise self.error(
                    f"unknown name {token.value!r} (allowed roots: {', '.join(self.roots)})", token
                )
            return self.parse_path(token)
        raise self.error("expected a value", token)

    def number(self, token: Token) -> int | float:
        if token.value.isdigit():  # exact: never through a float
            whole = int(token.value)
            if whole.bit_length() > MAX_INTEGER_BITS:
                raise self.error(f"integer out of range (at most {MAX_INTEGER_BITS} bits)", token)
            return whole
        number = float(token.value)
        if not math.isfinite(number):
            raise self.error("number out of range", token)
        return number

    def parse_path(self, root: Token) -> Path:
        parts: list[str | int] = []
        end = root.end
        while True:
            if self.accept("op", "."):
                name = self.take()
                if name.kind not in ("name", "keyword"):
                    raise self.error("expected a key after '.'", name)
                parts.append(name.value)
                end = name.end
            elif self.accept("op", "["):
                key = self.take()
                if key.kind == "number" and key.value.isdigit():
                    parts.append(int(key.value))
                elif key.kind == "string":
                    parts.append(_unquote(key.value))
                else:
                    raise self.error("expected an index (a whole number) or a quoted key", key)
                end = self.expect("op", "]").end
            else:
                return Path(root.value, tuple(parts), (root.position, end))


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


class _Failure(Exception):
    """An evaluation failure at `node` (turned into an ExpressionError naming it by `evaluate`)."""

    def __init__(self, node: Node, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


@dataclass(frozen=True)
class Expression:
    """A compiled expression: `evaluate(env)` with env mapping each root name to its value."""

    text: str
    tree: Node

    def evaluate(self, env: Mapping[str, Any], meter: Meter | None = None) -> Any:
        """The value over `env`, within `meter`'s CPU budget (default: evaluation_meter())."""
        metered = meter if meter is not None else evaluation_meter()
        try:
            value = _eval(self.tree, env, metered)
            if isinstance(value, (list, dict)) and not _fits_as_json(value, MAX_VALUE_BYTES, metered):
                raise _Failure(
                    self.tree,
                    f"the value is over {MAX_VALUE_BYTES:,} bytes as JSON, the most a value may take",
                )
            return value
        except BudgetExceeded as exceeded:
            raise BudgetExceeded(
                f"{exceeded.reason} in expression {_excerpt(self.text, 200)!r}",
                reason=exceeded.reason,
                expression=self.text,
            ) from None
        except _Failure as failure:
            start, end = failure.node.span
            fragment = self.text[start:end]
            raise ExpressionError(
                f"{failure.reason} at position {start} ({_excerpt(fragment)!r}) "
                f"in expression {_excerpt(self.text, 200)!r}",
                reason=failure.reason,
                position=start,
                fragment=fragment,
                expression=self.text,
            ) from None

    def paths(self) -> list[Path]:
        found: list[Path] = []
        _collect_paths(self.tree, found)
        return found


def compile_expression(text: object, roots: Iterable[str] = DEFAULT_ROOTS) -> Expression:
    if not isinstance(text, str):
        raise ExpressionError(f"an expression must be a string, got {brief_repr(text)}")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ExpressionError(
            f"expression is {len(text)} characters long; at most {MAX_EXPRESSION_LENGTH} allowed"
        )
    return Expression(text, _Parser(text, tuple(roots)).parse())


def evaluate(text: str, env: Mapping[str, Any]) -> Any:
    return compile_expression(text, env.keys()).evaluate(env)


def _fits_as_json(value: Any, limit: int, meter: Meter | None = None) -> bool:
    """Whether `value` takes at most about `limit` bytes as JSON (strings counted in characters): a walk
    that stops as soon as it is over, so a huge value costs no more than `limit` to refuse. Iterative: data
    may be nested deeper than Python's stack."""
    left = limit
    pending = [value]
    steps = 0
    while pending:
        steps += 1
        if steps == CHECK_EVERY and meter is not None:
            meter.tick(steps)
            steps = 0
        item = pending.pop()
        if isinstance(item, str):
            left -= len(item) + 3  # quotes and a separator
        elif isinstance(item, dict):
            left -= 2 + 4 * len(item)
            for key, member in item.items():
                left -= len(key) if isinstance(key, str) else 8
                pending.append(member)
        elif isinstance(item, list):
            left -= 2 + len(item)
            pending.extend(item)
        else:  # numbers, booleans, null
            left -= 8
        if left < 0:
            return False
    return True


def _collect_paths(node: Node, found: list[Path]) -> None:
    if isinstance(node, Path):
        found.append(node)
    elif isinstance(node, ListExpr):
        for item in node.items:
            _collect_paths(item, found)
    elif isinstance(node, Unary):
        _collect_paths(node.operand, found)
    elif isinstance(node, Binary):
        _collect_paths(node.left, found)
        _collect_paths(node.right, found)


def truthy(value: Any) -> bool:
    return bool(value)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def brief_repr(value: Any) -> str:
    """A value for an error message: its repr, cut short (data may be large)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # deeply nested data, or an int too long for repr
        text = f"<{_type_name(value)}>"
    return _excerpt(text, 100)


def _described(value: Any) -> str:
    return f"{_type_name(value)} {brief_repr(value)}"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _bounded(value: Any, role: str) -> Any:
    """`value` if it is a number within the limits (see the module doc), else an ExpressionError."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INTEGER_BITS:
        raise ExpressionError(
            f"{role} is an integer of {value.bit_length()} bits; at most {MAX_INTEGER_BITS}"
        )
    if isinstance(value, float) and not math.isfinite(value):
        raise ExpressionError(f"{role} is not a finite number ({value!r})")
    return value


def _resolve(path: Path, env: Mapping[str, Any]) -> Any:
    value = env.get(path.root)
    for part in path.parts:
        if isinstance(part, int):
            value = value[part] if isinstance(value, list) and -len(value) <= part < len(value) else None
        elif isinstance(value, Mapping):
            value = value.get(part)
        else:
            value = None
    return value


def _eval(node: Node, env: Mapping[str, Any], meter: Meter) -> Any:
    meter.tick()
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, Path):
        return _resolve(node, env)
    if isinstance(node, ListExpr):
        return [_eval(item, env, meter) for item in node.items]
    if isinstance(node, Unary):
        operand = _eval(node.operand, env, meter)
        return _at(node, _negate if node.op == "-" else _not, operand)
    if node.op == "and":
        left = _eval(node.left, env, meter)
        return _eval(node.right, env, meter) if truthy(left) else left
    if node.op == "or":
        left = _eval(node.left, env, meter)
        return left if truthy(left) else _eval(node.right, env, meter)
    left = _eval(node.left, env, meter)
    right = _eval(node.right, env, meter)
    return _at(node, lambda a, b: _binary(node.op, a, b, meter), left, right)


def _at(node: Node, operation: Callable[..., Any], *operands: Any) -> Any:
    """Apply `operation` for `node`: any failure (an ExpressionError, or anything Python raises, e.g.
    comparing very deeply nested data) becomes a failure naming the node."""
    try:
        return operation(*operands)
    except BudgetExceeded:
        raise
    except ExpressionError as error:
        raise _Failure(node, error.reason) from None
    except Exception as error:
        raise _Failure(node, f"{type(error).__name__}: {_excerpt(str(error), 200)}") from None


def _not(operand: Any) -> bool:
    return not truthy(operand)


def _negate(operand: Any) -> Any:
    if not _is_number(operand):
        raise ExpressionError(f"cannot negate a {_type_name(operand)} ({brief_repr(operand)})")
    return -_bounded(operand, "the operand")


def _binary(op: str, left: Any, right: Any, meter: Meter) -> Any:
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op in ("in", "not in"):
        return _contains(left, right, meter) == (op == "in")
    if op in ("<", "<=", ">", ">="):
        if not (
            (_is_number(left) and _is_number(right)) or (isinstance(left, str) and isinstance(right, str))
        ):
            raise ExpressionError(
                f"cannot compare {_described(left)} {op} {_described(right)}: "
                "both sides must be numbers or both strings"
            )
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    if op == "+" and (
        (isinstance(left, str) and isinstance(right, str))
        or (isinstance(left, list) and isinstance(right, list))
    ):
        return _concatenate(left, right)
    if not (_is_number(left) and _is_number(right)):
        raise ExpressionError(f"cannot apply {op!r} to {_described(left)} and {_described(right)}")
    _bounded(left, "the left operand")
    _bounded(right, "the right operand")
    return _bounded(_arithmetic(op, left, right), "the result")


def _concatenate(left: Any, right: Any) -> Any:
    """Two strings or two lists, within MAX_CONCAT_LENGTH."""
    if len(left) + len(right) > MAX_CONCAT_LENGTH:
        raise ExpressionError(
            f"'+' would make a {_type_name(left)} of {len(left) + len(right)} "
            f"{'characters' if isinstance(left, str) else 'items'}; at most {MAX_CONCAT_LENGTH}"
        )
    return left + right


def _arithmetic(op: str, left: int | float, right: int | float) -> int | float:
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise ExpressionError(f"division by zero in {brief_repr(left)} {op} 0")
    if op == "%":
        if isinstance(left, float) or isinstance(right, float):
            return math.fmod(left, right)
        return left % right
    if isinstance(left, int) and isinstance(right, int):
        # Exact when it divides; else the correctly rounded quotient (both sides are bounded).
        return left // right if left % right == 0 else left / right
    result = left / right
    # A whole quotient of floats reads as an integer where a float holds it exactly.
    return int(result) if result.is_integer() and abs(result) <= 2**53 else result


def _contains(left: Any, right: Any, meter: Meter) -> bool:
    if isinstance(right, str):
        if not isinstance(left, str):
            raise ExpressionError(f"'in' a string needs a string on the left, got {_type_name(left)}")
        return left in right
    if isinstance(right, list):
        # A list of a 256 KB event holds up to ~100,000 items, compared one by one: metered by chunks.
        for start in range(0, len(right), CHECK_EVERY):
            meter.tick(CHECK_EVERY)
            if any(_equal(left, item) for item in right[start : start + CHECK_EVERY]):
                return True
        return False
    if isinstance(right, dict):
        return isinstance(left, str) and left in right
    if right is None:
        return False
    raise ExpressionError(f"'in' needs a list, string or object on the right, got {_type_name(right)}")


def _equal(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


# --- cost estimate ----------------------------------------------------------------------------------


def estimate_cost(expression: Expression, root_bytes: Mapping[str, int]) -> int:
    """An upper bound of one evaluation's work, in bytes read, before it runs (as CEL estimates cost): each
    tree node and path part counts 1, and each operation whose time grows with its operands counts their
    size as JSON, a path's being the most its root can hold (`root_bytes`; a root not given: the largest
    given). Comparisons count the smaller side (Python compares lengths and types first), `in` its right
    side (a list is walked item by item), `+` both sides (a copy), and a result that may be a list or an
    object the walk that measures it (at most MAX_VALUE_BYTES)."""
    default = max(root_bytes.values(), default=MAX_VALUE_BYTES)
    cost, size = _estimate(expression.tree, root_bytes, default)
    if _may_be_container(expression.tree):
        cost += min(size, MAX_VALUE_BYTES)
    return cost


_SCALAR_BYTES = 8


def _estimate(node: Node, root_bytes: Mapping[str, int], default: int) -> tuple[int, int]:
    """(cost, largest size as JSON) of `node` (the tree is at most MAX_DEPTH deep: recursion is safe)."""
    if isinstance(node, Literal):
        return 1, len(node.value) + 2 if isinstance(node.value, str) else _SCALAR_BYTES
    if isinstance(node, Path):
        return 1 + len(node.parts), root_bytes.get(node.root, default)
    if isinstance(node, ListExpr):
        items = [_estimate(item, root_bytes, default) for item in node.items]
        return 1 + sum(cost for cost, _ in items), 2 + sum(size + 1 for _, size in items)
    if isinstance(node, Unary):
        return 1 + _estimate(node.operand, root_bytes, default)[0], _SCALAR_BYTES
    left_cost, left_size = _estimate(node.left, root_bytes, default)
    right_cost, right_size = _estimate(node.right, root_bytes, default)
    cost = 1 + left_cost + right_cost
    if node.op in ("and", "or"):
        return cost, max(left_size, right_size)
    if node.op in ("in", "not in"):
        return cost + right_size, _SCALAR_BYTES
    if _BINARY_PRECEDENCE[node.op] == _COMPARE_PRECEDENCE:
        return cost + min(left_size, right_size), _SCALAR_BYTES
    if node.op == "+":  # strings or lists are copied; numbers cost nothing more
        return cost + left_size + right_size, left_size + right_size
    return cost, _SCALAR_BYTES


def _may_be_container(node: Node) -> bool:
    """Whether `node`'s value may be a list or an object (then measured as JSON: see Expression.evaluate)."""
    if isinstance(node, (Path, ListExpr)):
        return True
    if isinstance(node, Binary) and node.op in ("and", "or", "+"):
        return _may_be_container(node.left) or _may_be_container(node.right)
    return False
