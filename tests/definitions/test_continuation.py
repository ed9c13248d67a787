"""A long context continues in new executions (stepwell.features.definitions.continuation): it stays one
context, its limits carry over, nothing is lost or run twice across a hand-off, even a crashed one, and a
context started before continuations existed still finishes."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from stepwell.features.definitions import interpreter
from stepwell.features.definitions.actions import ActionContext
from stepwell.features.definitions.continuation import (
    CONTINUATION_TRIGGER,
    CONTINUE_AFTER_VISITS,
    continuation_id,
)
from stepwell.features.definitions.interpreter import INTERPRETER_NAME
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.store import ContextRecord
from stepwell.features.definitions.validation import validate_definition
from stepwell.model import ExecutionStatus

from .harness import DOMAIN, Harness

# Count to data.limit, one action and one 1 s wait per turn: three top-level visits a turn.
COUNTER: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "counter",
    "nodes": [
        {"id": "t", "type": "trigger", "event": "start"},
        {"id": "more", "type": "condition", "expression": "data.count < data.limit"},
        {"id": "tick", "type": "action", "action": "tick", "output": "count"},
        {"id": "w", "type": "wait", "duration": 1},
        {"id": "e", "type": "end"},
    ],
    "edges": [
        {"from": "t", "to": "more"},
        {"from": "more", "to": "tick", "branch": "true"},
        {"from": "more", "to": "e", "branch": "false"},
        {"from": "tick", "to": "w"},
        {"from": "w", "to": "more"},
    ],
}

# Wait for each `ping` (its data kept in data.last) and record its n, until one with a negative n.
PINGS: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "listener",
    "nodes": [
        {"id": "t", "type": "trigger", "event": "start"},
        {"id": "wait", "type": "trigger_or_timeout", "event": "ping", "timeout": "1d", "output": "last"},
        {"id": "stop", "type": "condition", "expression": "data.last.n < 0"},
        {"id": "got", "type": "action", "action": "got", "input": {"n": "data.last.n"}},
        {"id": "e", "type": "end"},
    ],
    "edges": [
        {"from": "t", "to": "wait"},
        {"from": "wait", "to": "stop", "branch": "event"},
        {"from": "wait", "to": "e", "branch": "timeout"},
        {"from": "stop", "to": "e", "branch": "true"},
        {"from": "stop", "to": "got", "branch": "false"},
        {"from": "got", "to": "wait"},
    ],
}


def _counter(harness: Harness) -> list[int]:
    """Register `tick`, which returns how many times it ran; the values it returned."""
    ticks: list[int] = []

    def tick(inputs: dict[str, Any], context: ActionContext) -> int:
        ticks.append(len(ticks) + 1)
        return ticks[-1]

    harness.actions.register("tick", tick)
    return ticks


def _count(record: ContextRecord) -> int:
    """Which continuation the context item names (0: its first execution)."""
    suffix = record.execution_id.rpartition(".c")[2]
    return int(suffix) if record.execution_id.rpartition("/")[2] != record.instance_id else 0


def test_a_long_loop_continues_in_new_executions_and_stays_one_context() -> None:
    harness = Harness()
    ticks = _counter(harness)
    harness.put(COUNTER)
    turns = 2 * CONTINUE_AFTER_VISITS  # about six hand-offs at three visits a turn
    harness.send("start", "s1", {"count": 0, "limit": turns})
    harness.run_all()

    (context,) = harness.contexts("s1")
    assert context.status == "SUCCEEDED" and context.error is None
    assert context.data == {"count": turns, "limit": turns}
    assert ticks == list(range(1, turns + 1))  # every turn once: nothing lost or run twice
    continuations = _count(context)
    assert continuations >= 5
    engine = harness.local.engine
    chain = [continuation_id(context, count) for count in range(continuations + 1)]
    # Each execution before the last ended naming the next; the last ended the context.
    for earlier, later in itertools.pairwise(chain):
        described = engine.describe_execution(earlier)
        assert described["Status"] == "SUCCEEDED"
        assert json.loads(described["Result"]) == {"continuedAs": later}
    assert engine.describe_execution(chain[-1])["Status"] == "SUCCEEDED"
    # A wake-up replays one execution's log: never more than the bound's visits (a wait per turn).
    for execution_id in chain:
        waits = [e for e in engine.get_execution_history(execution_id) if e["EventType"] == "WaitStarted"]
        assert len(waits) <= CONTINUE_AFTER_VISITS // 3 + 1

    # Every reader sees one context: the listing, and show with every execution's history.
    service = DefinitionsService(engine, harness.runtime, harness.router)
    (listed,) = service.list_contexts(DOMAIN, "s1").items
    assert listed.instance_id == context.instance_id and listed.status == "SUCCEEDED"
    shown = service.show_context(DOMAIN, "counter", "s1", context.instance_id)
    assert shown["executions"] == chain
    assert shown["execution"]["Status"] == "SUCCEEDED"
    ticked = [
        e for e in shown["history"] if e["EventType"] == "StepSucceeded" and e["Name"].startswith("tick")
    ]
    assert len(ticked) == turns


def test_the_node_visit_limit_counts_across_continuations(monkeypatch: pytest.MonkeyPatch) -> None:
    limit = 2 * CONTINUE_AFTER_VISITS
    monkeypatch.setattr(interpreter, "MAX_NODE_VISITS", limit)
    harness = Harness()
    ticks = _counter(harness)
    harness.put(COUNTER)
    harness.send("start", "s1", {"count": 0, "limit": 10 * limit})  # would run on for 10x the limit
    harness.run_all()

    (context,) = harness.contexts("s1")
    assert context.status == "FAILED"
    assert context.error is not None
    assert f"visited more than {limit} times" in context.error["ErrorMessage"]
    assert _count(context) >= 2  # the limit was reached in a later execution, counting the earlier ones
    assert len(ticks) == limit


def test_events_reach_the_context_across_its_hand_offs() -> None:
    harness = Harness()
    got: list[Any] = []
    harness.actions.register("got", lambda inputs, context: got.append(inputs) or None)
    harness.put(PINGS)
    harness.send("start", "s1")
    pings = CONTINUE_AFTER_VISITS
    for n in range(pings):
        outcome = harness.send("ping", "s1", {"n": n})
        assert outcome.resumed, f"ping {n} found no wait: {outcome.skipped}"
    (context,) = harness.contexts("s1")
    assert _count(context) >= 2 and context.status == "RUNNING"
    assert [inputs["n"] for inputs in got] == list(range(pings))
    harness.send("ping", "s1", {"n": -1})
    (context,) = harness.contexts("s1")
    assert context.status == "SUCCEEDED"


class Crash(BaseException):
    """A process that dies (not an error the SDK could catch and retry as a step's)."""


def test_a_crash_in_the_hand_off_recovers_with_nothing_lost_or_run_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harness = Harness()
    ticks = _counter(harness)
    harness.put(COUNTER)
    contexts = harness.runtime.contexts
    repoint = contexts.continue_to
    crashes: list[str] = []

    def crash_once(record: ContextRecord, execution_id: str, successor_id: str) -> bool:
        # The new execution is started already; the item still names the old one.
        if not crashes:
            crashes.append(successor_id)
            assert harness.local.engine.describe_execution(successor_id)["Status"] == "RUNNING"
            raise Crash("the worker died in the hand-off")
        return repoint(record, execution_id, successor_id)

    monkeypatch.setattr(contexts, "continue_to", crash_once)
    turns = CONTINUE_AFTER_VISITS
    harness.send("start", "s1", {"count": 0, "limit": turns})
    harness.run_all()

    assert len(crashes) == 1
    (context,) = harness.contexts("s1")
    assert context.status == "SUCCEEDED" and context.data["count"] == turns
    assert ticks == list(range(1, turns + 1))
    first = continuation_id(context, 0)
    assert json.loads(harness.local.engine.describe_execution(first)["Result"]) == {"continuedAs": crashes[0]}


def test_a_stop_of_a_continued_context_stops_it() -> None:
    harness = Harness()
    ticks = _counter(harness)
    harness.put(COUNTER)
    harness.send("start", "s1", {"count": 0, "limit": 1000})
    while _count(harness.contexts("s1")[0]) < 2:
        harness.advance(1)
    (context,) = harness.contexts("s1")
    harness.local.engine.stop_execution(context.execution_id)
    done = len(ticks)
    harness.run_all()
    (context,) = harness.contexts("s1")
    assert context.status == "STOPPED"
    assert len(ticks) == done
    executions = harness.local.engine.list_executions(domain=DOMAIN, subject_id="s1", limit=1000).items
    assert {e.workflow_id for e in executions} == {INTERPRETER_NAME} and len(executions) >= 3
    assert not [e.execution_id for e in executions if not e.status.is_terminal]


def test_a_context_started_before_continuations_still_finishes() -> None:
    """Its execution's log holds more visits than the bound and no hand-off: a replay follows that log
    (the walk goes on where the log went on), and its first new wait hands off."""
    harness = Harness()
    ticks = _counter(harness)
    harness.put(COUNTER)
    engine = harness.runtime.engine
    harness.runtime.engine = None  # as the interpreter before continuations: it never hands off
    turns = 2 * CONTINUE_AFTER_VISITS
    harness.send("start", "s1", {"count": 0, "limit": turns})
    harness.advance(CONTINUE_AFTER_VISITS)  # about 3x the bound's visits in one log
    (context,) = harness.contexts("s1")
    assert _count(context) == 0 and len(ticks) > CONTINUE_AFTER_VISITS // 2

    harness.runtime.engine = engine  # the new interpreter takes over the running context
    harness.run_all()
    (context,) = harness.contexts("s1")
    assert context.status == "SUCCEEDED" and context.data["count"] == turns
    assert ticks == list(range(1, turns + 1))
    assert _count(context) >= 1
    assert engine is not None
    first = engine.describe_execution(continuation_id(context, 0))
    assert first["Status"] == ExecutionStatus.SUCCEEDED.value


def test_a_context_under_flow_control_does_not_continue() -> None:
    """A new execution would queue for the key's slot behind other contexts: it keeps its one execution."""
    harness = Harness()
    ticks = _counter(harness)
    harness.put({**COUNTER, "flowControl": {"concurrency": {"limit": 1, "key": "subject"}}})
    turns = CONTINUE_AFTER_VISITS
    harness.send("start", "s1", {"count": 0, "limit": turns})
    harness.run_all()
    (context,) = harness.contexts("s1")
    assert context.status == "SUCCEEDED" and ticks == list(range(1, turns + 1))
    assert _count(context) == 0


def test_a_continuation_names_a_trigger_no_definition_can_have() -> None:
    """An interpreter from before continuations (a rollback) would walk a continuation from its trigger
    again, running its actions twice: it finds no such node and fails the execution instead."""
    harness = Harness()
    _counter(harness)
    harness.put(COUNTER)
    harness.send("start", "s1", {"count": 0, "limit": CONTINUE_AFTER_VISITS})
    harness.run_all()
    (context,) = harness.contexts("s1")
    described = harness.local.engine.describe_execution(continuation_id(context, 1))
    start = json.loads(described["InputPayload"])
    assert start["trigger"] == CONTINUATION_TRIGGER and start["continuation"]["count"] == 1
    assert start["continuation"]["visits"]["more"] >= CONTINUE_AFTER_VISITS // 3
    named = {**COUNTER, "nodes": [*COUNTER["nodes"], {"id": CONTINUATION_TRIGGER, "type": "end"}]}
    assert any(CONTINUATION_TRIGGER in error for error in validate_definition(named))
