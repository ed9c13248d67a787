from __future__ import annotations

from typing import Any

import pytest
from stepwell.definitions.expressions import ExpressionError, compile_expression

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
