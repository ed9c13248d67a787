from __future__ import annotations

from typing import Any

import pytest
from stepwell.features.definitions.expressions import ExpressionError, compile_expression

ENV: dict[str, Any] = {
    "data": {"age": 30, "plan": "pro", "tags": ["a", "b"], "nested": {"x": [1, {"y": 5}]}, "flag": False},
    "event": {"name": "paid", "data": {"amount": 12.5}},
    "subject": "u1",
    "domain": "acme",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data.age > 18", True),
        ("data.age >= 30 and data.plan == 'pro'", True),
        ('data.age < 18 or data.plan != "pro"', False),
        ("not data.flag", True),
        ("not (data.age == 30)", False),
        ("data.age + 5 * 2", 40),
        ("(data.age + 5) * 2", 70),
        ("data.age / 4", 7.5),
        ("data.age / 3", 10),
        ("data.age % 7", 2),
        ("-data.age", -30),
        ("'a' in data.tags", True),
        ("'z' not in data.tags", True),
        ("'ro' in data.plan", True),
        ("data.nested.x[1].y", 5),
        ("data.nested['x'][0]", 1),
        ("data.missing.deeper", None),
        ("data.missing == null", True),
        ("event.data.amount > 10", True),
        ("subject == 'u1' and domain == 'acme'", True),
        ("[1, 2, data.age]", [1, 2, 30]),
        ("data.plan + '-plan'", "pro-plan"),
        ("true == 1", False),
        ("1.5e2", 150.0),
        ("'it\\'s'", "it's"),
        ("data.age in [29, 30]", True),
        ("data.flag or 'fallback'", "fallback"),
        ("data.missing != null and data.missing > 10", False),  # the README's guard for a missing key
        ("not data.age == 30 or -data.age * 2 < -59 and 1 + 2 * 3 == 7", True),
    ],
)
def test_evaluates(text: str, expected: Any) -> None:
    assert compile_expression(text).evaluate(ENV) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty expression"),
        ("data.age >", "expected a value at the end"),
        ("data.age > > 3", "expected a value at position 11"),
        ("__import__('os').system('x')", "unknown name '__import__'"),
        ("os.system", "unknown name 'os'"),
        ("data.age ; 1", "unexpected character ';'"),
        ("(data.age", "expected '\\)' at the end"),
        ("data.", "expected a key after '.'"),
        ("data[x]", "expected an index"),
        ("1 2", "unexpected token"),
        ("lambda: 1", "unexpected character ':'"),
        ("data.a = 1", "unexpected character '='"),
    ],
)
def test_rejects_bad_expressions(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        compile_expression(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data.plan > 3", "cannot compare string 'pro' > number 3"),
        ("data.age / 0", "division by zero"),
        ("data.plan * 2", "cannot apply '\\*'"),
        ("-data.plan", "cannot negate a string"),
        ("1 in 5", "'in' needs a list, string or object"),
    ],
)
def test_evaluation_errors_name_the_expression(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message) as info:
        compile_expression(text).evaluate(ENV)
    assert repr(text) in str(info.value)


def test_limits() -> None:
    with pytest.raises(ExpressionError, match="at most 2000"):
        compile_expression("1 + " * 600 + "1")
    with pytest.raises(ExpressionError, match="nested deeper"):
        compile_expression("(" * 100 + "1" + ")" * 100)
    with pytest.raises(ExpressionError, match="must be a string"):
        compile_expression(42)


@pytest.mark.parametrize(
    "text",
    [
        "1" + "+1" * 999,  # a left-associative chain, under the length limit
        "data.age" + " or data.age" * 150,
        "-" * 1500 + "1",
        "not " * 400 + "true",
        "[" * 900 + "]" * 900,
        "data.age == data.age == data.age",
    ],
)
def test_no_construct_exhausts_the_stack(text: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_expression(text)
    assert info.value.position is not None
    assert info.value.expression == text


def test_a_value_is_bounded_in_size_however_it_is_built() -> None:
    big = "x" * 200_000  # one event's data may hold this much
    env = {**ENV, "data": {"s": big, "deep": _nested(100_000)}}
    six = compile_expression("[" + ", ".join(["data.s"] * 6) + "]")
    with pytest.raises(ExpressionError, match="the value is over 1,048,576 bytes as JSON") as info:
        six.evaluate(env)
    assert info.value.position == 0
    # Lists joined by '+' count their items' size too, and so do objects reached by a path.
    with pytest.raises(ExpressionError, match="over 1,048,576 bytes"):
        compile_expression("[data.s, data.s, data.s] + [data, data]").evaluate(env)
    # Within the limit, a value is what it was; deeply nested data is measured without recursion.
    assert compile_expression("[data.s, data.s, data.s, data.s, data.s]").evaluate(env) == [big] * 5
    assert compile_expression("[data.deep]").evaluate(env) == [env["data"]["deep"]]
    assert compile_expression("data.s + data.s").evaluate(env) == big * 2  # a string: MAX_CONCAT_LENGTH


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_chain_within_the_depth_limit_evaluates() -> None:
    assert compile_expression("1" + "+1" * 62).evaluate(ENV) == 63


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9007199254740993", 9007199254740993),  # 2^53 + 1: not through a float
        ("9007199254740993 + 0", 9007199254740993),
        ("data.big + 2", 2**60 + 3),
        ("data.big * 4 / 4", 2**60 + 1),
        ("data.big / 2", (2**60 + 1) / 2),
        ("data.big - 1 == 1152921504606846976", True),
        ("170141183460469231731687303715884105727", 2**127 - 1),
        ("7.5 / 2.5", 3),
    ],
)
def test_integers_are_exact(text: str, expected: Any) -> None:
    assert compile_expression(text).evaluate({**ENV, "data": {"big": 2**60 + 1}}) == expected


@pytest.mark.parametrize(
    ("text", "fragment", "reason"),
    [
        ("data.huge / 3", "data.huge / 3", "the left operand is an integer of"),
        ("data.huge - data.huge", "data.huge - data.huge", "at most 128"),
        ("1 + data.n * data.n * data.n", "data.n * data.n * data.n", "the result is an integer of"),
        ("1e300 * 1e300", "1e300 * 1e300", "not a finite number"),
        ("-data.huge", "-data.huge", "integer of"),
        ("data.s + data.s", "data.s + data.s", "at most 400000"),
        ("data.deep == data.other", "data.deep == data.other", "RecursionError"),
    ],
)
def test_arithmetic_is_bounded_and_failures_name_the_node(text: str, fragment: str, reason: str) -> None:
    deep: list[Any] = []
    other: list[Any] = []
    for _ in range(100_000):  # deeper than Python compares without recursing too far
        deep, other = [deep], [other]
    data = {"huge": 10**4000, "n": 2**50, "s": "x" * 300_000, "deep": deep, "other": other}
    with pytest.raises(ExpressionError, match=reason) as info:
        compile_expression(text).evaluate({**ENV, "data": data})
    assert info.value.fragment == fragment
    assert info.value.position == text.index(fragment)
    assert f"at position {info.value.position}" in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1" + "0" * 39, "integer out of range"),
        ("1e999", "number out of range"),
        ("\u0663 + 1", "unexpected character"),  # an Arabic-Indic digit is not a number here
        ("data.age\u00a0> 1", "unexpected character"),
    ],
)
def test_literals_are_bounded_and_ascii(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        compile_expression(text)
