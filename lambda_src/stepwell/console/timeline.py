"""An execution's history as a Gantt-like picture: one row per operation, drawn as SVG.

Rows: the execution, its invocations, then every operation in order of first appearance, each child
context's and parallel branch's operations nested under it. A row's segments: a step's attempts (a
failed one that retries is followed by its retry delay), a wait, an open or answered callback, a child
context's span. Times here are datetimes as stepwell.core.history gives them. The operations the SDK makes
inside a wait_for_callback (its callback and submitter step: stepwell.core.sdk_operations) are left out
unless asked for: the wait_for_callback's own row tells their story.

The axis is compressed: between consecutive event times the width grows with the logarithm of the gap,
so a three-day wait and a two-millisecond step both stay visible; tick labels give the real offsets.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from typing import Any

from stepwell.core.history import format_offset
from stepwell.core.sdk_operations import WAIT_FOR_CALLBACK, internal_operations

# Segment states, their colours and legend text (the CSS classes are `seg-<state>`).
LEGEND: dict[str, tuple[str, str]] = {
    "succeeded": ("#2e9d5b", "succeeded"),
    "failed": ("#d2413a", "failed"),
    "retrying": ("#e8983e", "attempt failed, retried"),
    "retry-delay": ("#f4d7b0", "retry delay"),
    "waiting": ("#7aa6d8", "wait / callback pending"),
    "running": ("#b9c6d6", "running, not ended"),
    "timed-out": ("#9b59b6", "timed out"),
    "stopped": ("#777777", "stopped / cancelled"),
    "invocation": ("#4b5d73", "worker invocation"),
}
_END_STATES = {
    "Succeeded": "succeeded",
    "Failed": "failed",
    "TimedOut": "timed-out",
    "Stopped": "stopped",
    "Cancelled": "stopped",
}
_PHASES = ("Started", *_END_STATES)
# Pending (not yet ended) operations of these kinds (or subtypes) wait on something outside; others run.
_WAITING_KINDS = frozenset({"Wait", "Callback", "ChainedInvoke", WAIT_FOR_CALLBACK})

LABEL_WIDTH = 280
CHART_WIDTH = 760
ROW_HEIGHT = 24
AXIS_HEIGHT = 30
INDENT = 14
MIN_BAR = 4.0
# Gaps much shorter than this take little room on the compressed axis, much longer ones log-scaled room.
AXIS_UNIT_SECONDS = 0.1
MIN_TICK_SPACING = 90.0


@dataclass
class Segment:
    start: datetime
    end: datetime
    state: str
    note: str = ""


@dataclass
class Row:
    key: str
    label: str
    kind: str
    depth: int = 0
    segments: list[Segment] = field(default_factory=list)


def _split_type(event_type: str) -> tuple[str, str]:
    """("Step", "Failed") from "StepFailed"; ("", event_type) when it has no known phase."""
    for phase in _PHASES:
        if event_type.endswith(phase) and len(event_type) > len(phase):
            return event_type[: -len(phase)], phase
    return "", event_type


def _details(event: dict[str, Any]) -> dict[str, Any]:
    details = event.get(f"{event.get('EventType', '')}Details")
    return details if isinstance(details, dict) else {}


def _error_note(details: dict[str, Any]) -> str:
    error = details.get("Error")
    payload = error.get("Payload", error) if isinstance(error, dict) else None
    if not isinstance(payload, dict):
        return ""
    return f"{payload.get('ErrorType', 'Error')}: {payload.get('ErrorMessage', '')}".strip().rstrip(":")


def build_rows(events: Sequence[dict[str, Any]], now: datetime, *, show_internal: bool = False) -> list[Row]:
    """The timeline's rows from an execution's history; a segment still open ends at `now` (or at the
    last event, if that is later: a harness's virtual clock may run ahead). The SDK's own operations get
    rows only with `show_internal`."""
    stamps = [
        event["EventTimestamp"] for event in events if isinstance(event.get("EventTimestamp"), datetime)
    ]
    if not stamps:
        return []
    horizon = max([now, *stamps])
    execution = Row("execution", "execution", "Execution")
    invocations = Row("invocations", "invocations", "Invocation")
    operations: dict[str, Row] = {}
    parents: dict[str, str | None] = {}
    kinds: dict[str, str] = {}
    open_since: dict[str, datetime] = {}
    retry_from: dict[str, tuple[datetime, str]] = {}
    execution_start: datetime | None = None
    hidden: set[str] = set() if show_internal else set(internal_operations(events))
    for event in events:
        stamp = event.get("EventTimestamp")
        if not isinstance(stamp, datetime):
            continue
        event_type = str(event.get("EventType", ""))
        details = _details(event)
        if event_type == "ExecutionStarted":
            execution_start = stamp
            continue
        if event_type.startswith("Execution") and event_type != "ExecutionUpgraded":
            state = _END_STATES.get(event_type.removeprefix("Execution"), "stopped")
            execution.segments.append(
                Segment(execution_start or stamps[0], stamp, state, _error_note(details))
            )
            execution_start = None
            continue
        if event_type == "InvocationCompleted":
            begin, end = details.get("StartTimestamp"), details.get("EndTimestamp")
            if isinstance(begin, datetime) and isinstance(end, datetime):
                note = _error_note(details) or "invocation"
                invocations.segments.append(Segment(begin, end, "invocation", note))
            continue
        operation_id = event.get("Id")
        kind, phase = _split_type(event_type)
        if not operation_id or not kind or operation_id in hidden:
            continue
        row = operations.get(operation_id)
        if row is None:
            label = str(event.get("Name") or event.get("SubType") or kind)
            row = operations[operation_id] = Row(operation_id, label, str(event.get("SubType") or kind))
            parents[operation_id] = event.get("ParentId")
            kinds[operation_id] = kind
        if phase == "Started":
            if operation_id in retry_from:
                since, note = retry_from.pop(operation_id)
                row.segments.append(Segment(since, stamp, "retry-delay", note))
            open_since[operation_id] = stamp
            continue
        state = _END_STATES[phase]
        note = _error_note(details) or phase.lower()
        retry = details.get("RetryDetails")
        # A retried step ends an attempt with StepFailed; a wait_for_condition poll that checks again
        # ends it with StepSucceeded (its state as the result). Both wait NextAttemptDelaySeconds.
        if isinstance(retry, dict) and retry.get("NextAttemptDelaySeconds") is not None:
            state = "retrying"
            again = "retry" if phase == "Failed" else "poll"
            delay = f"{again} {retry.get('CurrentAttempt', '?')} in {retry['NextAttemptDelaySeconds']}s"
            retry_from[operation_id] = (stamp, delay)
        row.segments.append(Segment(open_since.pop(operation_id, stamp), stamp, state, note))
    if execution_start is not None:
        execution.segments.append(Segment(execution_start, horizon, "running", "running"))
    for operation_id, since in open_since.items():
        row = operations[operation_id]
        waits = kinds[operation_id] in _WAITING_KINDS or row.kind in _WAITING_KINDS
        state = "waiting" if waits else "running"
        row.segments.append(Segment(since, horizon, state, "not ended"))
    for operation_id, (since, note) in retry_from.items():
        operations[operation_id].segments.append(Segment(since, horizon, "retry-delay", note))
    return [execution, invocations, *_nested(operations, parents)]


def _nested(operations: dict[str, Row], parents: dict[str, str | None]) -> list[Row]:
    """Rows in order of first appearance, each operation's children right under it, indented."""
    children: dict[str | None, list[str]] = {}
    for operation_id in operations:
        parent = parents[operation_id]
        children.setdefault(parent if parent in operations else None, []).append(operation_id)
    ordered: list[Row] = []

    def visit(operation_id: str, depth: int) -> None:
        row = operations[operation_id]
        row.depth = depth
        ordered.append(row)
        for child in children.get(operation_id, ()):
            visit(child, depth + 1)

    for root in children.get(None, ()):
        visit(root, 0)
    return ordered


def open_callbacks(events: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """(callback id, operation name) of every callback that started and has not ended yet."""
    started: dict[str, tuple[str, str]] = {}
    ended: set[str] = set()
    for event in events:
        event_type = str(event.get("EventType", ""))
        if event_type == "CallbackStarted":
            callback_id = str(_details(event).get("CallbackId", ""))
            started[str(event.get("Id"))] = (callback_id, str(event.get("Name") or ""))
        elif event_type.startswith("Callback"):
            ended.add(str(event.get("Id")))
    return [callback for operation_id, callback in started.items() if operation_id not in ended]


class _Axis:
    """Time to x: the width between consecutive event times grows with log(1 + gap / 100 ms)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        times = sorted({moment for row in rows for s in row.segments for moment in (s.start, s.end)})
        self.origin = times[0]
        self.times = times
        widths = [
            math.log1p((b - a).total_seconds() / AXIS_UNIT_SECONDS) for a, b in itertools.pairwise(times)
        ]
        total = sum(widths) or 1.0
        self.xs = [0.0]
        for width in widths:
            self.xs.append(self.xs[-1] + width / total * CHART_WIDTH)

    def x(self, moment: datetime) -> float:
        index = self.times.index(moment)
        return LABEL_WIDTH + self.xs[index]

    def ticks(self) -> list[tuple[float, str]]:
        ticks: list[tuple[float, str]] = []
        for moment in self.times:
            x = self.x(moment)
            if ticks and x - ticks[-1][0] < MIN_TICK_SPACING:
                continue
            ticks.append((x, format_offset((moment - self.origin).total_seconds())))
        return ticks


def render_svg(rows: Sequence[Row]) -> str:
    """The rows as an SVG element (every text HTML-escaped); an empty history gives a short note."""
    if not any(row.segments for row in rows):
        return '<p class="empty">No history yet.</p>'
    axis = _Axis(rows)
    height = AXIS_HEIGHT + ROW_HEIGHT * len(rows) + 10
    width = LABEL_WIDTH + CHART_WIDTH + 20
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="execution timeline">'
    ]
    for x, text in axis.ticks():
        parts.append(
            f'<line class="tick" x1="{x:.1f}" y1="{AXIS_HEIGHT - 6}" x2="{x:.1f}" y2="{height - 10}" '
            'stroke="#e1e4e8"/>'
            f'<text class="tick-label" x="{x:.1f}" y="{AXIS_HEIGHT - 10}" font-size="10" fill="#6a737d" '
            f'text-anchor="middle">{escape(text)}</text>'
        )
    for index, row in enumerate(rows):
        top = AXIS_HEIGHT + index * ROW_HEIGHT
        parts.append(
            f'<g class="row row-{escape(row.kind.lower())}" data-name="{escape(row.label)}" '
            f'data-kind="{escape(row.kind)}">'
            f'<rect class="row-band" x="0" y="{top}" width="{width}" height="{ROW_HEIGHT}" '
            f'fill="{"#f3f5f7" if index % 2 else "none"}"/>'
            f'<text class="row-label" x="{6 + INDENT * row.depth}" y="{top + ROW_HEIGHT - 8}" '
            'font-size="12">'
            f"{escape(_shorten(row.label, 34 - 2 * row.depth))}"
            f"<title>{escape(row.label)} ({escape(row.kind)})</title></text>"
        )
        # A row's segments follow one another; a brief one keeps MIN_BAR and pushes the next one right.
        previous_right = 0.0
        for segment in row.segments:
            left = max(axis.x(segment.start), previous_right)
            bar = max(axis.x(segment.end) - left, MIN_BAR)
            previous_right = left + bar
            span = format_offset((segment.end - segment.start).total_seconds()).lstrip("+")
            since = format_offset((segment.start - axis.origin).total_seconds())
            title = f"{row.label}: {segment.note or segment.state} (for {span}, at {since})"
            parts.append(
                f'<rect class="seg seg-{segment.state}" data-state="{segment.state}" x="{left:.1f}" '
                f'y="{top + 5}" width="{bar:.1f}" height="{ROW_HEIGHT - 10}" rx="2" '
                f'fill="{LEGEND[segment.state][0]}"><title>{escape(title)}</title></rect>'
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "…"


def legend() -> list[tuple[str, str, str]]:
    """(state, colour, meaning) for the page's legend."""
    return [(state, colour, meaning) for state, (colour, meaning) in LEGEND.items()]
