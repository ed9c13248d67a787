"""Every node type on the local backend (virtual clock): each context is an execution of the interpreter."""

from __future__ import annotations

import threading
import time
from typing import Any

from stepwell.features.definitions.actions import ActionContext, PermanentActionError
from stepwell.features.definitions.interpreter import MAX_ACTIONS_AT_ONCE

from .harness import Harness


def graph(
    nodes: list[dict[str, Any]], edges: list[tuple[str, ...]], workflow_id: str = "wf", **extra: Any
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "nodes": nodes,
        "edges": [{"from": e[0], "to": e[1], **({"branch": e[2]} if len(e) > 2 else {})} for e in edges],
        **extra,
    }


def test_trigger_filter_action_output_and_end(harness: Harness) -> None:
    harness.recording_action("welcome", {"sent": True})
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "signed_up", "filter": "data.plan == 'pro'"},
                {
                    "id": "w",
                    "type": "action",
                    "action": "welcome",
                    "input": {"to": "data.email", "n": 3, "who": "subject"},
                    "output": "welcome",
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "w"), ("w", "e")],
        )
    )
    skipped = harness.send("signed_up", "u0", {"plan": "free", "email": "free@x"})
    assert skipped.started == [] and "filter of 't' is false" in skipped.skipped[0]
    outcome = harness.send("signed_up", "u1", {"plan": "pro", "email": "pro@x"})
    assert len(outcome.started) == 1
    harness.run_all()
    context = harness.context("wf", "u1")
    assert context.status == "SUCCEEDED" and harness.status(context) == "SUCCEEDED"
    assert context.data == {"plan": "pro", "email": "pro@x", "welcome": {"sent": True}}
    assert harness.calls_of("welcome") == [{"to": "pro@x", "n": 3, "who": "u1"}]
    _, _, action_context = harness.calls[0]
    assert (action_context.domain, action_context.workflow_id, action_context.subject_id) == (
        "acme",
        "wf",
        "u1",
    )
    assert harness.runtime.contexts.get_contexts("acme", "wf", "u0") == []


def test_action_retry_policy_then_success(harness: Harness) -> None:
    attempts: list[int] = []

    def flaky(inputs: dict[str, Any], context: ActionContext) -> Any:
        attempts.append(context.attempt)
        if len(attempts) < 3:
            raise RuntimeError("upstream down")
        return "ok"

    harness.actions.register("flaky", flaky)
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {
                    "id": "a",
                    "type": "action",
                    "action": "flaky",
                    "output": "r",
                    "retry": {"maxAttempts": 3, "initialDelay": "10s", "jitter": "none"},
                },
                {"id": "e", "type": "end"},
            ],
            [("t", "a"), ("a", "e")],
        )
    )
    harness.send("go", "s1")
    harness.run_all()
    context = harness.context("wf", "s1")
    assert context.status == "SUCCEEDED" and context.data["r"] == "ok"
    assert attempts == [1, 2, 3]
    assert harness.elapsed() >= 10 + 20  # the retry delays were waited on the virtual clock


def test_action_failures_fail_the_context(harness: Harness) -> None:
    calls: list[str] = []

    def always(inputs: dict[str, Any], context: ActionContext) -> Any:
        calls.append("always")
        raise RuntimeError("still down")

    def permanent(inputs: dict[str, Any], context: ActionContext) -> Any:
        calls.append("permanent")
        raise PermanentActionError("bad input")

    harness.actions.register("always", always)
    harness.actions.register("permanent", permanent)
    for workflow_id, name in (("wf-a", "always"), ("wf-p", "permanent")):
        harness.put(
            graph(
                [
                    {"id": "t", "type": "trigger", "event": f"go-{name}"},
                    {
                        "id": "a",
                        "type": "action",
                        "action": name,
                        "retry": {"maxAttempts": 2, "initialDelay": "1s"},
                    },
                    {"id": "e", "type": "end"},
                ],
                [("t", "a"), ("a", "e")],
                workflow_id=workflow_id,
            )
        )
        harness.send(f"go-{name}", "s1")
    harness.run_all()
    assert calls.count("always") == 2 and calls.count("permanent") == 1
    for workflow_id in ("wf-a", "wf-p"):
        context = harness.context(workflow_id, "s1")
        assert context.status == "FAILED" and harness.status(context) == "FAILED"
        assert context.error is not None


def test_wait_duration_and_until(harness: Harness) -> None:
    harness.recording_action("mark")
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {"id": "w", "type": "wait", "duration": "2h"},
                {"id": "m", "type": "action", "action": "mark", "input": {"at": "'after-2h'"}},
                {"id": "u", "type": "wait", "until": "data.deadline"},
                {"id": "m2", "type": "action", "action": "mark", "input": {"at": "'after-until'"}},
                {"id": "e", "type": "end"},
            ],
            [("t", "w"), ("w", "m"), ("m", "u"), ("u", "m2"), ("m2", "e")],
        )
    )
    deadline = harness.local.clock.now() + 86400
    harness.send("go", "s1", {"deadline": deadline})
    harness.advance(7199)
    assert harness.calls_of("mark") == []
    harness.advance(2)
    assert harness.calls_of("mark") == [{"at": "after-2h"}]
    harness.advance(86400 - 7201 - 5)
    assert len(harness.calls_of("mark")) == 1
    harness.advance(10)
    assert harness.calls_of("mark")[-1] == {"at": "after-until"}
    assert harness.context("wf", "s1").status == "SUCCEEDED"


def test_wait_until_iso_time_in_the_past_does_not_wait(harness: Harness) -> None:
    harness.recording_action("mark")
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {"id": "u", "type": "wait", "until": "data.when"},
                {"id": "m", "type": "action", "action": "mark"},
                {"id": "e", "type": "end"},
            ],
            [("t", "u"), ("u", "m"), ("m", "e")],
        )
    )
    harness.send("go", "s1", {"when": "2001-01-01T00:00:00Z"})
    assert len(harness.calls_of("mark")) == 1
    harness.send("go", "s2", {"when": "not a time"})
    context = harness.context("wf", "s2")
    assert context.status == "FAILED" and context.error is not None
    assert "'until' must give epoch seconds or an ISO 8601 time" in context.error["ErrorMessage"]


def onboarding_like() -> dict[str, Any]:
    return graph(
        [
            {"id": "t", "type": "trigger", "event": "signed_up"},
            {
                "id": "wait_act",
                "type": "trigger_or_timeout",
                "event": "activated",
                "timeout": "3d",
                "output": "activation",
            },
            {"id": "thanks", "type": "action", "action": "thanks", "input": {"via": "event.data.via"}},
            {"id": "remind", "type": "action", "action": "remind"},
            {"id": "e", "type": "end"},
        ],
        [
            ("t", "wait_act"),
            ("wait_act", "thanks", "event"),
            ("wait_act", "remind", "timeout"),
            ("thanks", "e"),
            ("remind", "e"),
        ],
    )


def test_trigger_or_timeout_event_branch(harness: Harness) -> None:
    harness.recording_action("thanks")
    harness.recording_action("remind")
    harness.put(onboarding_like())
    harness.send("signed_up", "u1")
    context = harness.context("wf", "u1")
    assert context.waits_for("activated") and context.status == "RUNNING"
    harness.advance(86400)
    outcome = harness.send("activated", "u1", {"via": "email"})
    assert outcome.resumed == [context.execution_id]
    context = harness.context("wf", "u1")
    assert context.status == "SUCCEEDED" and context.waiting == {}
    assert context.data["activation"] == {"via": "email"}
    assert harness.calls_of("thanks") == [{"via": "email"}] and harness.calls_of("remind") == []


def test_trigger_or_timeout_timeout_branch(harness: Harness) -> None:
    harness.recording_action("thanks")
    harness.recording_action("remind")
    harness.put(onboarding_like())
    harness.send("signed_up", "u1")
    harness.advance(3 * 86400 - 60)
    assert harness.calls_of("remind") == []
    harness.advance(120)
    assert len(harness.calls_of("remind")) == 1 and harness.calls_of("thanks") == []
    context = harness.context("wf", "u1")
    assert context.status == "SUCCEEDED"
    # Too late: the context no longer waits, the event resumes nothing.
    assert harness.send("activated", "u1").resumed == []


def test_condition_branches(harness: Harness) -> None:
    harness.recording_action("big")
    harness.recording_action("small")
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "order"},
                {
                    "id": "c",
                    "type": "condition",
                    "expression": "data.total * 2 >= 100 and data.country in ['DE', 'FR']",
                },
                {"id": "b", "type": "action", "action": "big"},
                {"id": "s", "type": "action", "action": "small"},
                {"id": "e", "type": "end"},
            ],
            [("t", "c"), ("c", "b", "true"), ("c", "s", "false"), ("b", "e"), ("s", "e")],
            policy={"concurrency": "multiple"},
        )
    )
    harness.send("order", "o1", {"total": 50, "country": "DE"})
    harness.send("order", "o2", {"total": 49, "country": "DE"})
    harness.send("order", "o3", {"total": 80, "country": "US"})
    assert len(harness.calls_of("big")) == 1 and len(harness.calls_of("small")) == 2


def test_condition_error_fails_the_context(harness: Harness) -> None:
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "order"},
                {"id": "c", "type": "condition", "expression": "data.total > 10"},
                {"id": "e", "type": "end"},
            ],
            [("t", "c"), ("c", "e", "true"), ("c", "e", "false")],
        )
    )
    harness.send("order", "o1", {"total": "lots"})
    context = harness.context("wf", "o1")
    assert context.status == "FAILED" and context.error is not None
    assert "node 'c' (condition): cannot compare string 'lots' > number 10" in context.error["ErrorMessage"]


def fan_out(mode: str, n: int | None = None) -> dict[str, Any]:
    join: dict[str, Any] = {"id": "j", "type": "join", "mode": mode}
    if n is not None:
        join["n"] = n
    return graph(
        [
            {"id": "t", "type": "trigger", "event": "paid"},
            {"id": "p", "type": "parallel"},
            {"id": "inv", "type": "action", "action": "invoice", "output": "invoice"},
            {"id": "ship_wait", "type": "trigger_or_timeout", "event": "packed", "timeout": "2d"},
            {"id": "ship", "type": "action", "action": "ship", "output": "shipment"},
            {"id": "slow", "type": "wait", "duration": "5d"},
            {"id": "late", "type": "action", "action": "late", "output": "late"},
            join,
            {"id": "done", "type": "action", "action": "done"},
            {"id": "e", "type": "end"},
        ],
        [
            ("t", "p"),
            ("p", "inv"),
            ("p", "ship_wait"),
            ("p", "slow"),
            ("inv", "j"),
            ("ship_wait", "ship", "event"),
            ("ship_wait", "j", "timeout"),
            ("ship", "j"),
            ("slow", "late"),
            ("late", "j"),
            ("j", "done"),
            ("done", "e"),
        ],
    )


def record_all(harness: Harness) -> None:
    harness.recording_action("invoice", "INV-1")
    harness.recording_action("ship", "SHIP-1")
    harness.recording_action("late", "LATE")
    harness.recording_action("done")


def test_parallel_join_all(harness: Harness) -> None:
    record_all(harness)
    harness.put(fan_out("all"))
    harness.send("paid", "o1")
    assert len(harness.calls_of("invoice")) == 1
    harness.advance(3600)
    harness.send("packed", "o1")
    assert harness.calls_of("done") == []  # the slow branch still waits
    harness.advance(5 * 86400)
    assert len(harness.calls_of("done")) == 1
    context = harness.context("wf", "o1")
    assert context.status == "SUCCEEDED"
    assert context.data == {"invoice": "INV-1", "shipment": "SHIP-1", "late": "LATE"}


def test_parallel_join_any(harness: Harness) -> None:
    record_all(harness)
    harness.put(fan_out("any"))
    harness.send("paid", "o1")
    assert len(harness.calls_of("done")) == 1  # invoicing finished at once
    context = harness.context("wf", "o1")
    assert context.status == "SUCCEEDED" and context.data["invoice"] == "INV-1"
    assert context.waiting == {}


def test_parallel_join_n_of_m(harness: Harness) -> None:
    record_all(harness)
    harness.put(fan_out("n", 2))
    harness.send("paid", "o1")
    assert harness.calls_of("done") == []
    harness.advance(600)
    outcome = harness.send("packed", "o1")
    assert len(outcome.resumed) == 1
    assert len(harness.calls_of("done")) == 1 and harness.calls_of("late") == []
    context = harness.context("wf", "o1")
    assert context.status == "SUCCEEDED" and context.waiting == {}
    assert context.data["invoice"] == "INV-1" and context.data["shipment"] == "SHIP-1"


def test_loop_with_a_wait(harness: Harness) -> None:
    harness.recording_action("remind")
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "signed_up"},
                {"id": "w", "type": "trigger_or_timeout", "event": "activated", "timeout": "1d"},
                {"id": "r", "type": "action", "action": "remind"},
                {"id": "e", "type": "end"},
            ],
            [("t", "w"), ("w", "e", "event"), ("w", "r", "timeout"), ("r", "w")],
        )
    )
    harness.send("signed_up", "u1")
    harness.advance(3 * 86400 + 60)
    assert len(harness.calls_of("remind")) == 3
    harness.send("activated", "u1")
    assert harness.context("wf", "u1").status == "SUCCEEDED"
    harness.advance(5 * 86400)
    assert len(harness.calls_of("remind")) == 3


def test_an_invalid_definition_in_the_input_fails_its_context(harness: Harness) -> None:
    from stepwell.features.definitions.interpreter import INTERPRETER_NAME
    from stepwell.features.definitions.store import ContextRecord

    record = ContextRecord(
        domain="acme",
        workflow_id="wf",
        subject_id="s1",
        instance_id="i1",
        version=1,
        execution_id=f"acme#{INTERPRETER_NAME}#s1/i1",
    )
    harness.runtime.contexts.create_context(record)
    bad = graph([{"id": "t", "type": "trigger", "event": "go"}], [("t", "ghost")])
    execution_id = harness.local.start(
        INTERPRETER_NAME,
        {
            "domain": "acme",
            "workflowId": "wf",
            "subjectId": "s1",
            "instanceId": "i1",
            "version": 1,
            "definition": bad,
            "trigger": "t",
            "event": {"id": "e", "name": "go", "data": {}},
        },
        execution_name="i1",
        domain="acme",
        subject_id="s1",
    )
    harness.run_all()
    assert execution_id == record.execution_id and harness.status(record) == "FAILED"
    context = harness.context("wf", "s1")
    assert context.status == "FAILED" and context.error is not None
    assert "dangling edge" in context.error["ErrorMessage"]


def test_wait_until_more_than_366_days_ahead_fails_the_context_naming_the_node(harness: Harness) -> None:
    """A far-future time from event data overflowed the engine's timestamps on every run of the context."""
    harness.recording_action("mark")
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {"id": "u", "type": "wait", "until": "data.when"},
                {"id": "m", "type": "action", "action": "mark"},
                {"id": "e", "type": "end"},
            ],
            [("t", "u"), ("u", "m"), ("m", "e")],
        )
    )
    now = harness.local.clock.now()
    too_far = [now + 366 * 86400 + 2, 253402300800, 10**30, 10**400, 1e300, "9999-12-31T23:59:59Z"]
    for index, when in enumerate(too_far):
        outcome = harness.send("go", f"far{index}", {"when": when})
        harness.run_all()
        context = harness.context("wf", f"far{index}")
        assert context.status == "FAILED" and context.error is not None, when
        assert harness.local.record(outcome.started[0]).status.value == "FAILED", when
        message = context.error["ErrorMessage"]
        assert message.startswith("node 'u' (wait): 'until' gave ") and "more than 366 days ahead" in message
    assert harness.calls_of("mark") == []
    harness.send("go", "near", {"when": now + 366 * 86400 - 60})
    harness.run_all()
    assert harness.context("wf", "near").status == "SUCCEEDED" and len(harness.calls_of("mark")) == 1


def test_parallel_branches_run_at_most_a_few_actions_at_once(harness: Harness) -> None:
    """Each action may hold a large answer: all branches run, but never more than
    MAX_ACTIONS_AT_ONCE of their actions together, so one definition cannot take the worker's memory."""
    running, peak, lock = [0], [0], threading.Lock()
    all_in = threading.Barrier(MAX_ACTIONS_AT_ONCE, timeout=10)

    def fetch(inputs: dict[str, Any], context: ActionContext) -> Any:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        all_in.wait()  # the branches do overlap: each MAX_ACTIONS_AT_ONCE meet here
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return inputs["n"]

    harness.actions.register("fetch", fetch)
    branches = [f"b{i}" for i in range(3 * MAX_ACTIONS_AT_ONCE)]
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "go"},
                {"id": "p", "type": "parallel"},
                *(
                    {"id": b, "type": "action", "action": "fetch", "input": {"n": i}, "output": b}
                    for i, b in enumerate(branches)
                ),
                {"id": "j", "type": "join", "mode": "all"},
                {"id": "e", "type": "end"},
            ],
            [("t", "p"), *(("p", b) for b in branches), *((b, "j") for b in branches), ("j", "e")],
        )
    )
    harness.send("go", "s1")
    context = harness.context("wf", "s1")
    assert context.status == "SUCCEEDED"
    assert context.data == {b: i for i, b in enumerate(branches)}
    assert peak[0] == MAX_ACTIONS_AT_ONCE
