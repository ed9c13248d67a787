"""Property-based tests (Hypothesis) of the expression language and the definition validator: random and
adversarial inputs never raise anything but the documented errors (ExpressionError, DefinitionInvalid),
and each call finishes within the deadline."""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stepwell.features.definitions.expressions import (
    MAX_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_INTEGER_BITS,
    ExpressionError,
    compile_expression,
)
from stepwell.features.definitions.model import DefinitionInvalid, parse_duration
from stepwell.features.definitions.validation import parse_definition, validate_definition

from .test_validation import base

# Generous per-call bounds: the machine running the suite may be busy; a runaway input takes far longer.
BOUNDED = settings(
    max_examples=150,
    deadline=timedelta(seconds=2),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

huge_integers = st.sampled_from([2**53 + 1, 2**127, 2**128, -(2**129), 10**400, 10**4000])
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | huge_integers
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, -1e308, 5e-324])
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=25,
)

# Tokens an attacker would string together: every operator, deep openers, huge and odd numbers, odd text.
VOCABULARY = [
    "(", ")", "[", "]", ",", ".", "-", "+", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=",
    "not", "in", "and", "or", "true", "false", "null", "data", "event", "subject", "domain",
    "data.a", "data.b", "data.a.b", "data['x']", "data[0]", "event.data", "0", "1", "7", "2.5",
    "1e308", "1e999", "9" * 60, "170141183460469231731687303715884105728", "'s'", '"\\""', "'é'",
    "'\U0001f600'", "\u0663", "\u00a0", "__import__", "lambda", "$", "#",
    "1 +", "data.a or", "(1) *", "- 1 -", "[1] +", "'a' +",  # chain links, for runs of them
]  # fmt: skip
# Runs of one token (deep nesting, long chains) mixed with random ones, at most the length limit.
token_runs = st.tuples(st.sampled_from(VOCABULARY), st.integers(1, 3) | st.integers(60, 1000))
token_soups = st.lists(token_runs, max_size=8).map(
    lambda runs: " ".join(" ".join([token] * count) for token, count in runs)[:MAX_EXPRESSION_LENGTH]
)


# Hypothesis raises the recursion limit while it runs; the language promises a bounded stack instead: its
# calls must fit in this many frames above the caller (the worker calls them well below Python's 1000).
STACK_FRAMES = 400


@contextlib.contextmanager
def bounded_stack() -> Iterator[None]:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + STACK_FRAMES)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def environment(data: Any) -> dict[str, Any]:
    return {"data": data, "event": {"name": "e", "data": data}, "subject": "s", "domain": "d"}


def compile_or_refuse(text: str) -> Any:
    try:
        with bounded_stack():
            return compile_expression(text)
    except ExpressionError as error:
        assert str(error)
        return None


@BOUNDED
@given(st.text(max_size=MAX_EXPRESSION_LENGTH + 10))
def test_any_text_compiles_or_is_an_expression_error(text: str) -> None:
    compile_or_refuse(text)


@BOUNDED
@given(token_soups, json_values)
def test_token_soups_parse_and_evaluate_to_a_value_or_an_expression_error(text: str, data: Any) -> None:
    expression = compile_or_refuse(text)
    if expression is None:
        return
    try:
        with bounded_stack():
            expression.evaluate(environment(data))
    except ExpressionError as error:
        assert error.position is not None and error.fragment is not None
        assert error.fragment == text[error.position : error.position + len(error.fragment)]


def _operand(depth: int) -> st.SearchStrategy[str]:
    leaves = st.sampled_from(["data.a", "data.b", "1", "0", "2.5", "'x'", "null", "true", "data.a.b"])
    if depth == 0:
        return leaves
    inner = _operand(depth - 1)
    return st.one_of(
        leaves,
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%", "==", "<", "in", "and", "or"]), inner).map(
            " ".join
        ),
        inner.map(lambda text: f"({text})"),
        inner.map(lambda text: f"-{text}"),
        inner.map(lambda text: f"not {text}"),
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
    )


@BOUNDED
@given(_operand(4), st.integers(min_value=0, max_value=300), json_values, json_values)
def test_well_formed_but_deep_or_long_expressions(text: str, wrap: int, a: Any, b: Any) -> None:
    """Wrapped in many parentheses or made into a long chain: an ExpressionError past the limits."""
    for candidate in ("(" * wrap + text + ")" * wrap, " + ".join([text] * max(1, wrap // 8))):
        expression = compile_or_refuse(candidate)
        if expression is None:
            continue
        with contextlib.suppress(ExpressionError), bounded_stack():
            expression.evaluate(environment({"a": a, "b": b}))


@BOUNDED
@given(
    st.integers(min_value=1, max_value=(MAX_EXPRESSION_LENGTH - 1) // 2) | st.integers(900, 999),
    st.sampled_from(["+", "-", "*", " or ", " and "]),
)
def test_a_chain_evaluates_exactly_or_is_refused_for_its_depth(length: int, op: str) -> None:
    text = "1" + f"{op}1" * length
    if len(text) > MAX_EXPRESSION_LENGTH:
        return
    expected = {"+": length + 1, "-": 1 - length, "*": 1, " or ": 1, " and ": 1}[op]
    try:
        with bounded_stack():
            assert compile_expression(text).evaluate({}) == expected
    except ExpressionError as error:
        assert length >= MAX_DEPTH and "nested deeper" in str(error)


bounded_integers = st.integers(min_value=-(2**MAX_INTEGER_BITS), max_value=2**MAX_INTEGER_BITS)


@BOUNDED
@given(bounded_integers, bounded_integers, st.sampled_from(["+", "-", "*", "/", "%"]))
def test_integer_arithmetic_is_exact_or_refused_beyond_the_bound(left: int, right: int, op: str) -> None:
    env = {"data": {"l": left, "r": right}}
    try:
        result = compile_expression(f"data.l {op} data.r").evaluate(env)
    except ExpressionError as error:
        beyond = max(abs(left), abs(right)).bit_length() > MAX_INTEGER_BITS
        assert beyond or (op in "/%" and right == 0) or "the result is an integer of" in str(error)
        return
    if op == "+":
        assert result == left + right
    elif op == "-":
        assert result == left - right
    elif op == "*":
        assert result == left * right
    elif op == "%":
        assert result == left % right
    elif left % right == 0:
        assert result == left // right and isinstance(result, int)
    else:
        assert result == left / right


@BOUNDED
@given(bounded_integers, st.integers(min_value=1, max_value=2**64) | st.integers(-1000, -1))
def test_a_division_that_divides_is_exact(quotient: int, divisor: int) -> None:
    if (quotient * divisor).bit_length() > MAX_INTEGER_BITS:
        return
    env = {"data": {"l": quotient * divisor, "r": divisor}}
    assert compile_expression("data.l / data.r").evaluate(env) == quotient


@BOUNDED
@given(json_values)
def test_any_json_document_validates_or_is_definition_invalid(document: Any) -> None:
    try:
        parse_definition(document)
    except DefinitionInvalid as invalid:
        assert invalid.errors and all(isinstance(error, str) for error in invalid.errors)
    assert isinstance(validate_definition(document, actions=["send"]), list)


@BOUNDED
@given(json_leaves | huge_integers | st.from_regex(r"\A[0-9.]{1,400}[a-zA-Z]{0,3}\Z"))
def test_a_duration_is_seconds_or_a_value_error(value: Any) -> None:
    try:
        seconds = parse_duration(value)
    except ValueError as error:
        assert "bad duration" in str(error)
    else:
        assert 0 < seconds <= 366 * 86400


FIELDS = [
    "id", "type", "event", "filter", "action", "input", "output", "retry", "duration", "until",
    "timeout", "expression", "mode", "n", "from", "to", "branch", "label",
]  # fmt: skip


@BOUNDED
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["nodes", "edges", "top"]),
            st.integers(min_value=0, max_value=20),
            st.sampled_from([*FIELDS, "schemaVersion", "policy"]),
            json_values | token_soups,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_a_valid_definition_with_random_fields_changed_validates_or_is_invalid(
    changes: list[tuple[str, int, str, Any]],
) -> None:
    document = base()
    for where, index, key, value in changes:
        if where == "top":
            document[key] = value
        else:
            items = document[where]
            items[index % len(items)][key] = copy.deepcopy(value)
    try:
        parse_definition(document, actions=["send"])
    except DefinitionInvalid as invalid:
        assert invalid.errors
