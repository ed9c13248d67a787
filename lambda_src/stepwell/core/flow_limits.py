"""Flow control declarations: per-key concurrency and rate limits of a workflow, and their resolution.

A workflow declares at most one `Concurrency` (at most N of its executions running at once per key) and
one `Rate` (at most R starts per period per key) at registration (`@workflow(name, concurrency=...,
rate=...)`); a definition declares them in its JSON (`flowControl`). A key is an expression over the
execution's input: a path such as `$.customer.id` or, in code, a callable of the input; no key means one
key for the whole workflow. When an execution is created its limits are resolved to `FlowLimit`s (the
key's value, the limit and the period) and kept on its record, so a waiting execution keeps the limits
it was started with whatever the code or the definition says later. `stepwell.core.flow_control` enforces
them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepwell.errors import InvalidArgument
from stepwell.model import FlowLimit

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_FLOW_KEY_LENGTH",
    "MAX_RATE",
    "MAX_RATE_PERIOD_SECONDS",
    "Concurrency",
    "FlowLimit",
    "FlowResolver",
    "KeySpec",
    "Rate",
    "check_key_path",
    "flow_key_value",
    "resolve_flow",
]

# The holders of a concurrency key are one item (a map of execution ids): 100 keep it under ~10 KB.
MAX_CONCURRENCY = 100
# A rate key's item keeps the start times of its last R starts: 1000 keep it under ~12 KB.
MAX_RATE = 1000
MAX_RATE_PERIOD_SECONDS = 7 * 24 * 3600
MAX_FLOW_KEY_LENGTH = 256
KEY_PATH_RULE = "'$' followed by '.name' or '[index]' segments, e.g. '$.customer.id' or '$.items[0].sku'"
_PATH_PATTERN = re.compile(r"^\$((\.[A-Za-z_][A-Za-z0-9_-]*)|(\[[0-9]{1,6}\]))*\Z")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d{1,6})\]")

# A key: a path over the input, a callable of the input (code only), or None (one key per workflow).
KeySpec = str | Callable[[Any], object] | None
# What the registry keeps for a workflow whose limits come from its input (the definitions'
# interpreter): (domain, parsed input) -> the execution's limits.
FlowResolver = Callable[[str, Any], "tuple[FlowLimit, ...]"]


def check_key_path(path: object, where: str) -> str:
    """`path` if it is a key path, else InvalidArgument naming it, `where` it is and the rule."""
    if not isinstance(path, str) or not _PATH_PATTERN.match(path):
        raise InvalidArgument(f"invalid key {path!r} of {where}: a key is {KEY_PATH_RULE}")
    return path


def _check_key_spec(key: object, where: str) -> KeySpec:
    if key is None or callable(key):
        return key
    return check_key_path(key, where)


def _check_int(value: object, low: int, high: int, *, label: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f"invalid {label} {value!r} of {where}: a whole number from {low} to {high}")
    return value


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` executions per key between their start and their end; the others wait in the order
    they were started and start as slots free. An execution holds its slot while it waits (a timer, a
    callback), as it is running until it ends."""

    limit: int
    key: KeySpec = None

    def __post_init__(self) -> None:
        _check_int(self.limit, 1, MAX_CONCURRENCY, label="limit", where="a concurrency limit")
        _check_key_spec(self.key, "a concurrency limit")


@dataclass(frozen=True)
class Rate:
    """At most `limit` starts per key in any `period` seconds; the others are delayed, in the order they
    were started, to the first time they fit (never dropped)."""

    limit: int
    period: int
    key: KeySpec = None

    def __post_init__(self) -> None:
        _check_int(self.limit, 1, MAX_RATE, label="limit", where="a rate limit")
        _check_int(self.period, 1, MAX_RATE_PERIOD_SECONDS, label="period (seconds)", where="a rate limit")
        _check_key_spec(self.key, "a rate limit")


def _walk(value: Any, path: str) -> Any:
    for name, index in _SEGMENT.findall(path):
        if name:
            if not isinstance(value, Mapping) or name not in value:
                raise KeyError(name)
            value = value[name]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                raise KeyError(index)
            value = value[int(index)]
    return value


def flow_key_value(key: KeySpec, source: Any, where: str) -> str:
    """The value of `key` over `source` (the execution's input) as a key: a non-empty string of at most
    MAX_FLOW_KEY_LENGTH printable characters, or an integer (as its digits). InvalidArgument naming the key
    and what it found otherwise."""
    if key is None:
        return ""
    label = key if isinstance(key, str) else getattr(key, "__qualname__", "the key function")
    if isinstance(key, str):
        try:
            value = _walk(source, key)
        except KeyError:
            raise InvalidArgument(f"the {where} key {label!r} names nothing in the input") from None
    else:
        try:
            value = key(source)
        except Exception as error:  # a user's key function: its failure is the start's error
            raise InvalidArgument(
                f"the {where} key {label!r} failed: {type(error).__name__}: {error}"
            ) from None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_FLOW_KEY_LENGTH or not value.isprintable():
        shown = repr(value)[:80]
        raise InvalidArgument(
            f"the {where} key {label!r} gave {shown}: a key's value is a string of 1-{MAX_FLOW_KEY_LENGTH} "
            "printable characters or an integer"
        )
    return value


def resolve_flow(
    domain: str,
    workflow: str,
    *,
    concurrency: Concurrency | None,
    rate: Rate | None,
    source: Any,
) -> tuple[FlowLimit, ...]:
    """The limits of an execution of `workflow` in `domain` whose input is `source` (parsed JSON)."""
    limits: list[FlowLimit] = []
    if concurrency is not None:
        key = flow_key_value(concurrency.key, source, f"concurrency limit of {workflow!r}")
        limits.append(
            FlowLimit(kind="concurrency", domain=domain, workflow=workflow, key=key, limit=concurrency.limit)
        )
    if rate is not None:
        key = flow_key_value(rate.key, source, f"rate limit of {workflow!r}")
        limits.append(
            FlowLimit(
                kind="rate", domain=domain, workflow=workflow, key=key, limit=rate.limit, period=rate.period
            )
        )
    return tuple(limits)
