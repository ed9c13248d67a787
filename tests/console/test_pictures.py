"""The timeline and graph pictures from plain histories and definitions (no AWS)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from stepwell.console import graph, timeline
from stepwell.features.definitions.validation import parse_definition

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ORDERS_DEFINITION = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "orders.json"


def _event(seconds: float, event_type: str, **fields: Any) -> dict[str, Any]:
    details = fields.pop("details", {})
    return {
        "EventType": event_type,
        "EventTimestamp": T0 + timedelta(seconds=seconds),
        **fields,
        f"{event_type}Details": details,
    }


def test_rows_nest_children_and_show_retries_waits_and_open_callbacks() -> None:
    retry = {
        "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 2},
        "Error": {"Payload": {"ErrorType": "Timeout", "ErrorMessage": "slow"}},
    }
    events = [
        _event(0, "ExecutionStarted"),
        _event(0.01, "StepStarted", Id="s", Name="pay", SubType="Step"),
        _event(0.02, "StepFailed", Id="s", Name="pay", SubType="Step", details=retry),
        _event(
            0.1,
            "InvocationCompleted",
            details={"StartTimestamp": T0, "EndTimestamp": T0 + timedelta(seconds=0.1)},
        ),
        _event(2.02, "StepStarted", Id="s", Name="pay", SubType="Step"),
        _event(2.03, "StepSucceeded", Id="s", Name="pay", SubType="Step"),
        _event(2.04, "WaitStarted", Id="w", Name="cool", SubType="Wait"),
        _event(3 * 86400, "WaitSucceeded", Id="w", Name="cool", SubType="Wait"),
        _event(3 * 86400 + 1, "ContextStarted", Id="p", Name="approve", SubType="WaitForCallback"),
        _event(
            3 * 86400 + 1,
            "CallbackStarted",
            Id="c",
            Name="approve cb",
            SubType="Callback",
            ParentId="p",
            details={"CallbackId": "cb-1"},
        ),
    ]
    rows = timeline.build_rows(events, now=T0 + timedelta(days=4))
    by_name = {row.label: row for row in rows}
    assert [row.label for row in rows] == ["execution", "invocations", "pay", "cool", "approve", "approve cb"]
    assert [segment.state for segment in by_name["pay"].segments] == ["retrying", "retry-delay", "succeeded"]
    assert "Timeout: slow" in by_name["pay"].segments[0].note
    assert by_name["cool"].segments[0].end - by_name["cool"].segments[0].start > timedelta(days=2)
    assert by_name["approve cb"].depth == by_name["approve"].depth + 1
    assert [segment.state for segment in by_name["approve cb"].segments] == ["waiting"]
    assert by_name["approve"].segments[0].state == "waiting"  # a wait_for_callback waits, as its callback
    assert by_name["execution"].segments[0].state == "running"
    assert timeline.open_callbacks(events) == [("cb-1", "approve cb")]

    svg = timeline.render_svg(rows)
    assert svg.startswith("<svg") and svg.count('<g class="row') == len(rows)
    # The compressed axis keeps a 10 ms attempt visible next to a three-day wait.
    attempt = by_name["pay"].segments[0]
    assert attempt.end - attempt.start == timedelta(milliseconds=10)
    assert 'data-state="retrying"' in svg and "+3d 00:00:01.000" in svg


def test_a_wait_for_condition_poll_that_checks_again_shows_its_delay() -> None:
    poll = {
        "Result": {"Payload": "1", "Truncated": False},
        "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 600},
    }
    events = [
        _event(0, "ExecutionStarted"),
        _event(1, "StepStarted", Id="q", Name="ready?", SubType="WaitForCondition"),
        _event(2, "StepSucceeded", Id="q", Name="ready?", SubType="WaitForCondition", details=poll),
        _event(602, "StepStarted", Id="q", Name="ready?", SubType="WaitForCondition"),
        _event(603, "StepSucceeded", Id="q", Name="ready?", SubType="WaitForCondition"),
    ]
    rows = {row.label: row for row in timeline.build_rows(events, now=T0 + timedelta(hours=1))}
    segments = rows["ready?"].segments
    assert [segment.state for segment in segments] == ["retrying", "retry-delay", "succeeded"]
    assert segments[1].note == "poll 1 in 600s"
    assert segments[1].end - segments[1].start == timedelta(seconds=600)


def test_an_ended_execution_closes_its_row_and_labels_are_escaped() -> None:
    events = [
        _event(0, "ExecutionStarted"),
        _event(1, "StepStarted", Id="s", Name="<b>x</b>", SubType="Step"),
        _event(
            2,
            "StepFailed",
            Id="s",
            Name="<b>x</b>",
            SubType="Step",
            details={"Error": {"Payload": {"ErrorType": "Boom", "ErrorMessage": "<i>no</i>"}}},
        ),
        _event(3, "ExecutionFailed", details={"Error": {"Payload": {"ErrorType": "Boom"}}}),
    ]
    rows = timeline.build_rows(events, now=T0)
    assert [segment.state for segment in rows[0].segments] == ["failed"]
    assert rows[0].segments[0].end == T0 + timedelta(seconds=3)
    svg = timeline.render_svg(rows)
    assert "<b>" not in svg and "<i>" not in svg and "&lt;b&gt;x&lt;/b&gt;" in svg
    assert timeline.render_svg(timeline.build_rows([], now=T0)) == '<p class="empty">No history yet.</p>'


def test_the_graph_lays_out_layers_and_colours_a_contexts_nodes() -> None:
    definition = parse_definition(json.loads(ORDERS_DEFINITION.read_text()))
    history = [
        {"EventType": "StepStarted", "Name": "invoice"},
        {"EventType": "StepSucceeded", "Name": "invoice"},
        {"EventType": "StepStarted", "Name": "request_shipment"},
        {
            "EventType": "StepFailed",
            "Name": "request_shipment",
            "StepFailedDetails": {"RetryDetails": {"NextAttemptDelaySeconds": 5}},
        },
        {"EventType": "StepStarted", "Name": "notify#2"},
        {"EventType": "StepFailed", "Name": "notify#2", "StepFailedDetails": {}},
        {"EventType": "ContextStarted", "Name": "await_shipped:listen"},
    ]
    states = graph.node_states(definition, history, waiting=["await_shipped"])
    assert states == {
        "invoice": "succeeded",
        "request_shipment": "running",  # failed once, retrying
        "notify": "failed",
        "await_shipped": "waiting",
    }
    svg = graph.render_svg(definition, states)
    assert svg.count('<g class="node') == len(definition.nodes)
    assert 'data-node="invoice" data-state="succeeded"' in svg
    assert 'data-node="done" data-state="pending"' in svg
    assert svg.count('class="edge"') == len(definition.edges)
    assert ">timeout<" in svg and ">true<" in svg  # branch labels


def test_a_loop_is_drawn_back_up_and_text_is_escaped() -> None:
    document = {
        "schemaVersion": 1,
        "id": "loop",
        "nodes": [
            {"id": "start", "type": "trigger", "event": "<go>"},
            {"id": "again", "type": "condition", "expression": "data.n < 3"},
            {"id": "pause", "type": "wait", "duration": "1h"},
            {"id": "done", "type": "end"},
        ],
        "edges": [
            {"from": "start", "to": "again"},
            {"from": "again", "to": "pause", "branch": "true"},
            {"from": "pause", "to": "again"},
            {"from": "again", "to": "done", "branch": "false"},
        ],
    }
    definition = parse_definition(document)
    svg = graph.render_svg(definition)
    assert "<go>" not in svg and "&lt;go&gt;" in svg
    assert svg.count(" C ") == 1  # the loop's edge is the one curve
