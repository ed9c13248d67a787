"""A definition's `flowControl` block (limits, period, key expressions) as the engine's flow limits
(stepwell.core.flow_limits: Concurrency, Rate), every problem named with its field. The interpreter
declares the limits it parses; validation lists their problems with the rest of the definition's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from stepwell.core.flow_limits import MAX_CONCURRENCY, MAX_RATE, MAX_RATE_PERIOD_SECONDS, Concurrency, Rate
from stepwell.errors import InvalidArgument
from stepwell.features.definitions.expressions import (
    Expression,
    ExpressionError,
    brief_repr,
    compile_expression,
)
from stepwell.features.definitions.model import (
    DURATION_RULE,
    FLOW_KEY_ROOTS,
    DefinitionInvalid,
    parse_duration,
)

_FLOW_KINDS: dict[str, tuple[str, ...]] = {
    "concurrency": ("limit", "key"),
    "rate": ("limit", "period", "key"),
}
_FLOW_LIMIT_RULES = {
    "concurrency": f"a whole number from 1 to {MAX_CONCURRENCY}: contexts running at once per key",
    "rate": f"a whole number from 1 to {MAX_RATE}: starts per period per key",
}
PERIOD_RULE = f"whole seconds from 1 to {MAX_RATE_PERIOD_SECONDS:,} (7 days) as a duration: {DURATION_RULE}"


def parse_flow_control(raw: object) -> tuple[Concurrency | None, Rate | None]:
    """A definition's `flowControl` block (None: no limits) as the engine's declarations; DefinitionInvalid
    listing every problem, each naming its field."""
    errors: list[str] = []
    limits = flow_control_into(raw, errors)
    if errors:
        raise DefinitionInvalid(errors)
    return limits


def flow_control_into(raw: object, errors: list[str]) -> tuple[Concurrency | None, Rate | None]:
    """parse_flow_control that adds its problems to `errors` (parse_definition lists them all)."""
    if raw is None:
        return None, None
    if not isinstance(raw, Mapping):
        errors.append(
            f"flowControl must be an object with 'concurrency' and/or 'rate', got {brief_repr(raw)}"
        )
        return None, None
    unknown = sorted(set(raw) - set(_FLOW_KINDS))
    if unknown:
        errors.append(f"flowControl: unknown keys {unknown} (allowed: {sorted(_FLOW_KINDS)})")
    concurrency, rate = (
        _parse_flow_limit(kind, raw[kind], errors) if kind in raw else None for kind in _FLOW_KINDS
    )
    return (
        concurrency if isinstance(concurrency, Concurrency) else None,
        rate if isinstance(rate, Rate) else None,
    )


def _parse_flow_limit(kind: str, raw: object, errors: list[str]) -> Concurrency | Rate | None:
    where, fields = f"flowControl.{kind}", _FLOW_KINDS[kind]
    if not isinstance(raw, Mapping):
        errors.append(f"{where} must be an object with {list(fields)}, got {brief_repr(raw)}")
        return None
    count = len(errors)
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        errors.append(f"{where}: unknown keys {unknown} (allowed: {sorted(fields)})")
    if "limit" not in raw:
        errors.append(f"{where}: missing 'limit' ({_FLOW_LIMIT_RULES[kind]})")
    period = 0
    if kind == "rate":
        if "period" not in raw:
            errors.append(f"{where}: missing 'period' ({PERIOD_RULE})")
        else:
            period = _flow_period(where, raw["period"], errors)
    key: Callable[[Any], object] | None = None
    if "key" in raw:
        try:
            key = flow_key(compile_expression(raw["key"], FLOW_KEY_ROOTS))
        except ExpressionError as error:
            errors.append(f"{where}.key: bad expression: {error}")
    if len(errors) > count:
        return None
    limit = raw["limit"]
    try:  # the declarations check the limit's type and range
        return Concurrency(limit, key) if kind == "concurrency" else Rate(limit, period, key)
    except InvalidArgument:
        errors.append(f"{where}.limit: {brief_repr(limit)} is not allowed: {_FLOW_LIMIT_RULES[kind]}")
        return None


def _flow_period(where: str, value: object, errors: list[str]) -> int:
    try:
        seconds = parse_duration(value)
    except ValueError:
        seconds = 0.0
    if not 1 <= seconds <= MAX_RATE_PERIOD_SECONDS or seconds != int(seconds):
        errors.append(f"{where}.period: {brief_repr(value)} is not allowed: {PERIOD_RULE}")
        return 0
    return int(seconds)


def flow_key(expression: Expression) -> Callable[[Any], object]:
    """A flowControl key as the engine's key function: evaluated over the interpreter's start input
    (its trigger `event`, `subjectId` and `domain`)."""

    def key(start: Any) -> object:
        start = start if isinstance(start, Mapping) else {}
        return expression.evaluate(
            {"event": start.get("event"), "subject": start.get("subjectId"), "domain": start.get("domain")}
        )

    # The engine names a key function by its __qualname__ in its errors: the expression says what it is.
    key.__qualname__ = expression.text
    return key
