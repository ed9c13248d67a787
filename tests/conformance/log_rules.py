"""`ExpectedLogs`, judged by AWS's conformance validator's rules (its `cloudwatch.py`, read for the facts).

A log record is a field map: the JSON object Lambda writes for a Python log line in its JSON log format
(`timestamp`, `level`, `message`, `logger`, and the record's extra fields, among them the durable logger's
`executionArn`), ordered by the time it was written. Only an execution's own records count (AWS's filter:
`executionArn` or `durableExecutionArn` equal to the execution's ARN).

An `ExpectedLogs` entry:
- `match`: a non-empty field -> value mapping, every field required (AND). A string is compared exactly,
  both sides stripped, or as a regex search when it is `/.../`; booleans by identity; numbers by value;
  anything else as strings. Known variables are substituted in the whole entry first.
- `count` (exact), else `min_count` / `max_count`; with none of the three, at least one match.
- `before` / `after`: one matcher or a list; every match of the entry comes at or before (after) every
  record matching each anchor; records written at the same millisecond are concurrent and satisfy either;
  an anchor that matches nothing is an error.

This module is copied into the deployed stack's conformance package (`record_fields` builds the records
there), so it imports only the standard library.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The attributes every logging.LogRecord has; the rest of a record's attributes are its extra fields.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


# A record standing for a JSON object printed to stdout (the `plugin` suite's records) carries it here:
# CloudWatch parses such a line as that object, with no fields of the logging record's own.
PRINTED_JSON = "stdoutJson"


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The JSON object Lambda's Python runtime writes for `record` in its JSON log format (the printed
    object itself for a record carrying PRINTED_JSON)."""
    printed = record.__dict__.get(PRINTED_JSON)
    if isinstance(printed, dict):
        return dict(printed)
    try:
        message = record.getMessage()
    except Exception:
        message = str(record.msg)
    stamp = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
    fields: dict[str, Any] = {
        "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "level": record.levelname,
        "message": message,
        "logger": record.name,
    }
    for key, value in record.__dict__.items():
        if key not in _STANDARD and not key.startswith("_"):
            fields[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
    return fields


@dataclass(frozen=True)
class LogLine:
    """One record as the validator sees it: when it was written (ms) and its fields."""

    written_ms: int
    fields: dict[str, Any]

    @classmethod
    def of(cls, record: logging.LogRecord) -> LogLine:
        return cls(int(record.created * 1000), record_fields(record))

    def to_json(self) -> str:
        return json.dumps({"written_ms": self.written_ms, "fields": self.fields}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> LogLine:
        data = json.loads(text)
        return cls(int(data["written_ms"]), dict(data["fields"]))


def reported_arn(described: dict[str, Any]) -> str | None:
    """The ARN a backend reports for an execution, which AWS's validator filters its logs by:
    GetDurableExecution's DurableExecutionArn, or the Stepwell client's describe's executionArn."""
    for key in ("DurableExecutionArn", "executionArn"):
        value = described.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def of_execution(lines: list[LogLine], execution_arn: str) -> list[LogLine]:
    """AWS's retrieval filter: the records whose executionArn or durableExecutionArn is the execution's."""
    return [
        line
        for line in lines
        if execution_arn in (line.fields.get("executionArn"), line.fields.get("durableExecutionArn"))
    ]


def _value_matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str):
        text = str(actual).strip()
        if len(expected) >= 2 and expected.startswith("/") and expected.endswith("/"):
            return re.search(expected[1:-1], text) is not None
        return text == expected.strip()
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    return str(expected) == str(actual)


def _matching(matcher: dict[str, Any], lines: list[LogLine]) -> list[int]:
    return [
        index
        for index, line in enumerate(lines)
        if all(
            key in line.fields and _value_matches(value, line.fields[key]) for key, value in matcher.items()
        )
    ]


def _anchors(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if isinstance(raw, dict):
        return [raw]
    if isinstance(raw, list) and all(isinstance(item, dict) for item in raw):
        return list(raw)
    raise TypeError("'before'/'after' must be a matcher mapping or a list of matcher mappings")


def _count_errors(label: str, entry: dict[str, Any], found: int) -> list[str]:
    count, low, high = entry.get("count"), entry.get("min_count"), entry.get("max_count")
    if count is not None:
        return [] if found == count else [f"{label}: expected exactly {count} match(es), got {found}"]
    if low is None and high is None:
        low = 1
    errors = []
    if low is not None and found < low:
        errors.append(f"{label}: expected at least {low} match(es), got {found}")
    if high is not None and found > high:
        errors.append(f"{label}: expected at most {high} match(es), got {found}")
    return errors


def check_logs(
    expected: list[dict[str, Any]] | None, lines: list[LogLine], substitute: Callable[[Any], Any]
) -> list[str]:
    """The errors of `expected` (a case's ExpectedLogs) against one execution's `lines`."""
    ordered = sorted(lines, key=lambda line: line.written_ms)
    keys = [line.written_ms for line in ordered]
    errors: list[str] = []
    for index, raw in enumerate(expected or []):
        entry = substitute(raw)
        matcher = entry.get("match") if isinstance(entry, dict) else None
        if not isinstance(matcher, dict) or not matcher:
            errors.append(
                f"ExpectedLogs[{index}]: invalid entry — 'match' must be a non-empty field->value mapping"
            )
            continue
        try:
            orders = [("after", _anchors(entry.get("after"))), ("before", _anchors(entry.get("before")))]
        except TypeError as error:
            errors.append(f"ExpectedLogs[{index}]: invalid entry — {error}")
            continue
        label = f"ExpectedLogs[{index}] match({', '.join(f'{k}={v!r}' for k, v in matcher.items())})"
        own = _matching(matcher, ordered)
        errors += _count_errors(label, entry, len(own))
        for direction, anchors in orders:
            for anchor in anchors:
                found = _matching(anchor, ordered)
                if not found:
                    errors.append(f"{label}: {direction} anchor {anchor!r} matched no log records")
                elif own and direction == "after" and keys[own[0]] < keys[found[-1]]:
                    errors.append(
                        f"{label}: expected all matches after {anchor!r} (log records out of order)"
                    )
                elif own and direction == "before" and keys[own[-1]] > keys[found[0]]:
                    errors.append(
                        f"{label}: expected all matches before {anchor!r} (log records out of order)"
                    )
    return errors
