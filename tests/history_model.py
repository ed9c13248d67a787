"""Check history events against GetDurableExecutionHistory's shapes in botocore's Lambda service model.

`check_history_against_model(events)` walks each event through the `Event` shape: unknown keys, missing
required keys, wrong types (timestamps are datetimes, as botocore parses them), enum values, lengths,
ranges and patterns. Stepwell renders a few fields differently on purpose; KEPT_DIFFERENCES names them
with the reason (docs/engine.md, Differences from AWS), and the check lets exactly those through.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Any

import botocore.session
from botocore.model import ListShape, ServiceModel, Shape, StringShape, StructureShape

# (shape name, member) -> why Stepwell renders it differently from AWS.
KEPT_DIFFERENCES: dict[tuple[str, str], str] = {
    ("ExecutionStartedDetails", "ExecutionTimeout"): (
        "required by the model: every AWS durable function has an execution timeout; a Stepwell workflow "
        "registered without one has none, so the key is left out rather than invented"
    ),
    ("ChainedInvokeStartedDetails", "DurableExecutionArn"): (
        "the pattern is a Lambda durable-execution ARN; a Stepwell execution id "
        "(domain#workflow#subject/name) is what describe_execution and get_execution_history resolve"
    ),
    ("CallbackStartedDetails", "CallbackId"): (
        "the pattern is standard base64; Stepwell's ids are URL-safe base64 ('-' and '_'), so they pass "
        "through command lines, URLs and EventBridge details unescaped"
    ),
}


@cache
def _model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("lambda")


def check_history_against_model(events: list[dict[str, Any]]) -> list[str]:
    """Problems of `events` against the model's `Event` shape (empty: the history conforms)."""
    event_shape = _model().shape_for("Event")
    problems: list[str] = []
    for index, event in enumerate(events):
        where = (
            f"event[{index}] {event.get('EventType', '?')}" if isinstance(event, dict) else f"event[{index}]"
        )
        _check(event, event_shape, where, problems, owner=None)
        if isinstance(event, dict):
            problems += _check_details_key(event, where)
    return problems


def _check_details_key(event: dict[str, Any], where: str) -> list[str]:
    """An event carries exactly the details of its own type (`<EventType>Details`)."""
    event_type = event.get("EventType")
    details = [key for key in event if key.endswith("Details")]
    expected = f"{event_type}Details"
    if details != [expected]:
        return [f"{where}: details keys {details}, expected exactly [{expected!r}]"]
    return []


def _check(value: Any, shape: Shape, where: str, problems: list[str], owner: str | None) -> None:
    kind = shape.type_name
    if kind == "structure":
        _check_structure(value, shape, where, problems)
    elif kind == "list":
        if not isinstance(value, list):
            problems.append(f"{where}: expected a list, got {type(value).__name__} {value!r}")
            return
        assert isinstance(shape, ListShape)
        _check_bounds(len(value), shape, where, problems, "length ")
        for position, item in enumerate(value):
            _check(item, shape.member, f"{where}[{position}]", problems, owner)
    elif kind == "string":
        assert isinstance(shape, StringShape)
        _check_string(value, shape, where, problems, owner)
    elif kind in ("integer", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{where}: expected an integer, got {type(value).__name__} {value!r}")
            return
        _check_bounds(value, shape, where, problems, "")
    elif kind == "boolean":
        if not isinstance(value, bool):
            problems.append(f"{where}: expected a boolean, got {type(value).__name__} {value!r}")
    elif kind == "timestamp":
        if not isinstance(value, datetime) or value.tzinfo is None:
            problems.append(
                f"{where}: expected a timezone-aware datetime, got {type(value).__name__} {value!r}"
            )
    else:
        problems.append(f"{where}: the checker does not know shape type {kind!r} ({shape.name})")


def _check_structure(value: Any, shape: Shape, where: str, problems: list[str]) -> None:
    assert isinstance(shape, StructureShape)
    if not isinstance(value, dict):
        problems.append(f"{where}: expected an object ({shape.name}), got {type(value).__name__} {value!r}")
        return
    members = shape.members
    for key in value:
        if key not in members:
            problems.append(f"{where}: unknown key {key!r} (a {shape.name} has {sorted(members)})")
    for key in shape.required_members:
        if key not in value and (shape.name, key) not in KEPT_DIFFERENCES:
            problems.append(f"{where}: missing required key {key!r} of {shape.name}")
    for key, item in value.items():
        if key in members:
            _check(item, members[key], f"{where}.{key}", problems, owner=shape.name)


def _check_string(value: Any, shape: StringShape, where: str, problems: list[str], owner: str | None) -> None:
    if not isinstance(value, str):
        problems.append(f"{where}: expected a string, got {type(value).__name__} {value!r}")
        return
    if shape.enum and value not in shape.enum:
        problems.append(f"{where}: {value!r} is not one of {shape.enum}")
    _check_bounds(len(value), shape, where, problems, "length ")
    pattern = shape.metadata.get("pattern")
    member = where.rsplit(".", 1)[-1]
    if pattern and (owner, member) not in KEPT_DIFFERENCES and not _pattern(pattern).fullmatch(value):
        problems.append(f"{where}: {value!r} does not match the pattern {pattern!r} of {shape.name}")


def _check_bounds(measure: int, shape: Shape, where: str, problems: list[str], label: str) -> None:
    """The shape's min and max on a value or (label "length ") on a string's or list's length."""
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and measure < low:
        problems.append(f"{where}: {label}{measure} is under the minimum {low} of {shape.name}")
    if high is not None and measure > high:
        problems.append(f"{where}: {label}{measure} is over the maximum {high} of {shape.name}")


@cache
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.DOTALL)
