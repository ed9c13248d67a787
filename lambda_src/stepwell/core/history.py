"""Execution history in the vocabulary of Lambda's GetDurableExecutionHistory.

Events are stored inside the log's batches (see stepwell.core.batch_body) with epoch-millisecond times;
here they are read back in EventId order with their timestamps as datetimes.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from stepwell.core.batch_body import operation_result
from stepwell.core.batch_keys import (
    EVENT_DETAILS,
    EVENT_IDENTITY,
    EVENT_OPERATION,
    EVENT_RESULT_OF_OPERATION,
    EVENT_STAMP,
    EVENT_TYPE,
    EVENTS,
    OPERATIONS,
)
from stepwell.errors import InvalidArgument

# The details' members that hold a payload: EventInput, EventResult, EventError, and the Event*Reason of
# ExecutionPaused and ExecutionResumed.
_PAYLOAD_HOLDERS = ("Input", "Result", "Error", "Reason")
_TIMESTAMP_KEYS = frozenset(
    {
        "EventTimestamp",
        "StartTimestamp",
        "EndTimestamp",
        "ScheduledEndTimestamp",
        "PauseRequestTimestamp",
        "ResumeRequestTimestamp",
    }
)
# GetDurableExecutionHistory's MaxItems when none (or 0) is given (botocore's Lambda model).
DEFAULT_HISTORY_PAGE_ITEMS = 100
_HISTORY_MARKER_PREFIX = "events-from-"


def _with_datetimes(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: (
                datetime.fromtimestamp(item / 1000, tz=UTC)
                if key in _TIMESTAMP_KEYS and isinstance(item, int | float)
                else _with_datetimes(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_with_datetimes(item) for item in value]
    return value


def events_from_bodies(bodies: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of the log's batches (in seq order), with EventIds by position from 1."""
    events: list[dict[str, Any]] = []
    for body in bodies:
        operations = body.get(OPERATIONS, [])
        for stored in body.get(EVENTS, ()):
            events.append(_with_datetimes(_restore_event(stored, operations, len(events) + 1)))
    return events


def _restore_event(stored: dict[str, Any], operations: list[dict[str, Any]], event_id: int) -> dict[str, Any]:
    event_type = stored[EVENT_TYPE]
    event: dict[str, Any] = {
        "EventType": event_type,
        "EventId": event_id,
        "EventTimestamp": stored[EVENT_STAMP],
    }
    identity: dict[str, Any] | None = None
    if EVENT_OPERATION in stored:
        identity = operations[stored[EVENT_OPERATION]]
    elif EVENT_IDENTITY in stored:
        identity = stored[EVENT_IDENTITY]
    if identity is not None:
        for key in ("SubType", "Id", "Name", "ParentId"):
            if identity.get(key):
                event[key] = identity[key]
    details = dict(stored.get(EVENT_DETAILS, {}))
    if stored.get(EVENT_RESULT_OF_OPERATION) and identity is not None:
        details["Result"] = {"Payload": operation_result(identity), **details.get("Result", {})}
    for key in _PAYLOAD_HOLDERS:
        holder = details.get(key)
        if isinstance(holder, dict):
            # AWS leaves out a payload that is not there (e.g. a callback completed without a result);
            # every input, result and error says whether it was truncated (never, with execution data:
            # Stepwell returns payloads whole). Added here, not stored, so batches stay small.
            details[key] = {
                **{name: value for name, value in holder.items() if value is not None or name != "Payload"},
                "Truncated": False,
            }
    event[f"{event_type}Details"] = details
    return event


def without_execution_data(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with every input, result and error payload left out and marked `Truncated`, as
    GetDurableExecutionHistory answers with IncludeExecutionData false."""
    stripped = []
    for event in events:
        details_key = f"{event.get('EventType')}Details"
        details = event.get(details_key)
        if isinstance(details, dict):
            details = {
                key: {"Truncated": True} if key in _PAYLOAD_HOLDERS and isinstance(value, dict) else value
                for key, value in details.items()
            }
            event = {**event, details_key: details}
        stripped.append(event)
    return stripped


def page_size(max_items: object) -> int:
    """A page's size as GetDurableExecutionHistory's MaxItems takes it: 1..1000, and None or 0 the default
    (DEFAULT_HISTORY_PAGE_ITEMS); InvalidArgument names anything else."""
    if max_items is not None and (
        isinstance(max_items, bool) or not isinstance(max_items, int) or not 0 <= max_items <= 1000
    ):
        raise InvalidArgument(
            f"invalid max_items {max_items!r}: an integer from 1 to 1000 (0 or None: the default, "
            f"{DEFAULT_HISTORY_PAGE_ITEMS})"
        )
    return max_items or DEFAULT_HISTORY_PAGE_ITEMS


def history_page(
    events: list[dict[str, Any]],
    *,
    include_execution_data: bool = True,
    reverse_order: bool = False,
    max_items: int | None,
    marker: str | None = None,
) -> dict[str, Any]:
    """{"Events": [...], "NextMarker": ...}: up to `max_items` (None: every one) of the history's `events`
    from `marker` (a previous page's NextMarker, for the same order), newest first with `reverse_order`;
    without `include_execution_data` every payload left out and marked Truncated, as AWS does."""
    if reverse_order:
        events = events[::-1]
    start = _history_marker_position(marker, len(events))
    end = len(events) if max_items is None else min(len(events), start + max_items)
    page = events[start:end]
    answer: dict[str, Any] = {"Events": page if include_execution_data else without_execution_data(page)}
    if end < len(events):
        answer["NextMarker"] = f"{_HISTORY_MARKER_PREFIX}{end}"
    return answer


def _history_marker_position(marker: str | None, count: int) -> int:
    """The position a NextMarker names; a marker this engine did not hand out is refused."""
    if marker is None:
        return 0
    text = marker.removeprefix(_HISTORY_MARKER_PREFIX) if isinstance(marker, str) else ""
    # 1-9 ASCII digits: isdigit() alone holds for superscript and fullwidth digits too.
    digits = text.isascii() and text.isdigit() and len(text) <= 9
    if not isinstance(marker, str) or text == marker or not digits or int(text) > count:
        raise InvalidArgument(
            f"invalid history marker {marker!r}: pass the NextMarker of a previous page of this "
            f"execution's history (of the form '{_HISTORY_MARKER_PREFIX}<position>', at most {count})"
        )
    return int(text)


def format_offset(seconds: float) -> str:
    """`+1.250s`, `+4m09.123s`, `+3d 00:00:49.779`: readable whether the gap is a step or a three-day wait."""
    whole_minutes, rest = divmod(seconds, 60)
    if whole_minutes == 0:
        return f"+{rest:.3f}s"
    hours, minutes = divmod(int(whole_minutes), 60)
    if hours == 0:
        return f"+{minutes}m{rest:06.3f}s"
    days, hours = divmod(hours, 24)
    return f"+{days}d {hours:02d}:{minutes:02d}:{rest:06.3f}"


def _event_note(event: dict[str, Any]) -> str:
    """The detail a reader looks for first: an error, a retry, a wait's end, an upgrade, a callback id."""
    details = event.get(f"{event.get('EventType', '')}Details")
    if not isinstance(details, dict):
        return ""
    notes = []
    error = details.get("Error")
    if isinstance(error, dict):
        payload = error.get("Payload", error)
        if isinstance(payload, dict):
            notes.append(f"{payload.get('ErrorType', 'Error')}: {payload.get('ErrorMessage', '')}".strip())
    retry = details.get("RetryDetails")
    if isinstance(retry, dict) and retry.get("NextAttemptDelaySeconds") is not None:
        notes.append(f"retry {retry.get('CurrentAttempt', '?')} in {retry['NextAttemptDelaySeconds']}s")
    if isinstance(details.get("ScheduledEndTimestamp"), datetime):
        notes.append(f"until {details['ScheduledEndTimestamp']:%Y-%m-%d %H:%M:%S}Z")
    if details.get("FromVersion") is not None and details.get("ToVersion") is not None:
        notes.append(f"version {details['FromVersion']} -> {details['ToVersion']}")
    if details.get("CallbackId"):
        notes.append(f"callback {details['CallbackId']}")
    if details.get("ExecutionTimeoutPaused") is not None:
        notes.append("timeout paused" if details["ExecutionTimeoutPaused"] else "timeout keeps running")
    reason = details.get("Reason")
    if isinstance(reason, dict) and reason.get("Payload") is not None:
        notes.append(f"reason: {reason['Payload']}")
    return "; ".join(notes)


def format_timeline(events: Iterable[dict[str, Any]]) -> str:
    """A readable timeline: one line per event (time since start, id, type, operation name, key detail)."""
    lines = []
    events = list(events)
    # Offsets count from the earliest event, so a timeline printed newest first reads the same.
    stamps = [
        event["EventTimestamp"] for event in events if isinstance(event.get("EventTimestamp"), datetime)
    ]
    first = min(stamps, default=None)
    for event in events:
        stamp = event.get("EventTimestamp")
        if isinstance(stamp, datetime) and first is not None:
            offset = format_offset((stamp - first).total_seconds())
        else:
            offset = ""
        label = event.get("Name") or event.get("Id") or ""
        note = _event_note(event)
        line = f"{offset:>17}  #{event.get('EventId', '?'):<4} {event.get('EventType', '?'):<22} {label}"
        lines.append(f"{line}  ({note})" if note else line.rstrip())
    return "\n".join(lines)
