"""A context always ends with its execution, whatever fails; events nested too deep are refused at the
router; context data over its limit fails the context with the limit named (issue 37, items 2 and 3)."""

from __future__ import annotations

from typing import Any

import pytest
from adapters.deployment import Deployment
from adapters.driver import QueueDriver
from aws_durable_execution_sdk_python.exceptions import ExecutionError
from stepwell.client import StepwellClient
from stepwell.features.definitions import interpreter as interpreter_module
from stepwell.features.definitions.actions import default_actions
from stepwell.features.definitions.router import MAX_EVENT_NESTING, nesting_depth
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.store import (
    MAX_CONTEXT_DATA_BYTES,
    ContextDataTooLarge,
    ContextRecord,
    MemoryContextStore,
)
from stepwell.wiring.entry import EntryRuntime

from .harness import Harness, envelope
from .test_nodes import graph
from .test_worker_path import bus_event
from .test_worker_path import stack as stack  # the worker-path fixture (moto)

LIMIT_TEXT = f"at most {MAX_CONTEXT_DATA_BYTES:,} bytes (MAX_CONTEXT_DATA_BYTES)"


def nested(levels: int) -> dict[str, Any]:
    """An object `levels` deep: {"a": {"a": ... {}}}."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def waits(workflow_id: str = "journey", event: str = "go") -> dict[str, Any]:
    """Starts on `event`, stores its data while it waits an hour for `done`, then ends."""
    return graph(
        [
            {"id": "t", "type": "trigger", "event": event},
            {"id": "w", "type": "trigger_or_timeout", "event": "done", "timeout": "1h"},
            {"id": "e", "type": "end"},
        ],
        [("t", "w"), ("w", "e", "event"), ("w", "e", "timeout")],
        workflow_id=workflow_id,
    )


def grows(then: str) -> dict[str, Any]:
    """An action whose output takes the data past its limit, then a wait (`then` = "wait") or the end."""
    nodes: list[dict[str, Any]] = [
        {"id": "t", "type": "trigger", "event": "go"},
        {"id": "big", "type": "action", "action": "big", "output": "blob"},
        {"id": "e", "type": "end"},
    ]
    edges: list[tuple[str, ...]] = [("t", "big")]
    if then == "wait":
        nodes.append({"id": "w", "type": "trigger_or_timeout", "event": "done", "timeout": "1h"})
        edges += [("big", "w"), ("w", "e", "event"), ("w", "e", "timeout")]
    else:
        edges.append(("big", "e"))
    return graph(nodes, edges, workflow_id="grows")


# --- nesting at the router ---


def test_nesting_depth_counts_objects_and_arrays_without_recursion() -> None:
    values: list[Any] = [1, "x", None, {}, [], {"a": []}, [{"b": [1]}]]
    assert [nesting_depth(value) for value in values] == [0, 0, 0, 1, 1, 2, 3]
    assert nesting_depth(nested(100_000)) == 100_000  # far past the recursion limit
    looped: dict[str, Any] = {"a": 1}
    looped["self"] = looped  # a Python caller's object; JSON cannot hold one
    assert nesting_depth(looped) == 1


def test_an_event_nested_500_levels_is_refused_at_the_router_with_nothing_started(harness: Harness) -> None:
    harness.put(waits())
    outcome = harness.send("go", "u1", data=nested(500), event_id="deep-1")

    assert outcome.status == "rejected" and outcome.started == []
    # The envelope and `detail` are two levels more than the data.
    assert outcome.reason == (
        f"the event nests objects and arrays 502 levels deep; at most {MAX_EVENT_NESTING} levels "
        "(MAX_EVENT_NESTING) are allowed"
    )
    assert harness.contexts("u1") == []
    assert harness.local.engine.list_executions(domain="acme").items == []
    (rejected,) = harness.runtime.events.list_rejected()
    assert rejected["eventId"] == "deep-1" and rejected["event"] == ""  # the reason, not the event


def test_an_event_at_the_nesting_limit_runs_and_one_level_past_it_is_refused(harness: Harness) -> None:
    harness.put(waits())
    at_limit = envelope("go", "u1", nested(MAX_EVENT_NESTING - 2))
    assert nesting_depth(at_limit) == MAX_EVENT_NESTING
    accepted = harness.router.process_event(at_limit)
    harness.local.run_until_idle()
    assert accepted.status == "processed" and len(accepted.started) == 1
    assert harness.context("journey", "u1").status == "RUNNING"  # waiting, its data stored
    harness.advance(3600)
    context = harness.context("journey", "u1")
    assert context.status == "SUCCEEDED" and nesting_depth(context.data) == MAX_EVENT_NESTING - 2

    past = envelope("go", "u2", nested(MAX_EVENT_NESTING - 1))
    refused = harness.router.process_event(past)
    assert refused.status == "rejected" and refused.started == []
    assert refused.reason is not None and f"{MAX_EVENT_NESTING + 1} levels deep" in refused.reason
    assert f"at most {MAX_EVENT_NESTING} levels" in refused.reason
    assert harness.contexts("u2") == []


# --- a context ends with its execution, whatever fails ---


def test_a_run_failing_before_its_walk_ends_its_context_failed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the probe's deep data did: a RecursionError while the run set up its state."""

    def too_deep(event: Any) -> str:
        raise RecursionError("maximum recursion depth exceeded while calling a Python object")

    monkeypatch.setattr(interpreter_module, "event_chain", too_deep)
    harness.put(waits())
    (started,) = harness.send("go", "u1", data={"plan": "pro"}).started

    context = harness.context("journey", "u1")
    assert harness.status(context) == "FAILED"
    assert context.status == "FAILED" and context.error is not None
    assert context.error["ErrorType"] == "RecursionError"
    assert context.data == {"plan": "pro"}  # what it stored at its start
    assert context.execution_id == started


def test_an_sdk_execution_error_ends_the_context_failed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's ExecutionError (a replay mismatch, say) fails the execution: the context fails with it."""

    def mismatch(*args: Any, **kwargs: Any) -> None:
        raise ExecutionError("the replay took another path")

    monkeypatch.setattr(interpreter_module.Walker, "run_path", mismatch)
    harness.put(waits())
    harness.send("go", "u1")

    context = harness.context("journey", "u1")
    assert harness.status(context) == "FAILED" and context.status == "FAILED"
    assert context.error == {"ErrorType": "ExecutionError", "ErrorMessage": "the replay took another path"}


def test_a_failure_escaping_the_interpreter_ends_the_context_through_its_end_observer(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler that fails before the interpreter knows its context (here: reading its input): the
    worker tells the end observer of every failed end, which ends the context with the execution's error."""

    def unreadable(cls: Any, payload: Any, execution_id: str) -> Any:
        raise MemoryError("no memory left to read the input")

    monkeypatch.setattr(interpreter_module.StartInput, "parse", classmethod(unreadable))
    harness.put(waits())
    (started,) = harness.send("go", "u1").started

    context = harness.context("journey", "u1")
    assert harness.status(context) == "FAILED" and context.status == "FAILED"
    assert context.error is not None and context.error["ErrorType"] == "MemoryError"
    assert context.error == harness.local.engine.store.get_execution(started).error  # type: ignore[union-attr]


# --- context data over its limit ---


def test_the_memory_store_keeps_the_context_data_limit() -> None:
    store = MemoryContextStore()
    record = ContextRecord(
        domain="acme",
        workflow_id="wf",
        subject_id="u1",
        instance_id="i1",
        version=1,
        execution_id="x",
        data={"s": ""},
    )
    overhead = len('{"s":""}')
    record.data["s"] = "a" * (MAX_CONTEXT_DATA_BYTES - overhead)  # exactly at the limit
    assert store.create_context(record)
    too_large = {"s": "a" * (MAX_CONTEXT_DATA_BYTES - overhead + 1)}
    with pytest.raises(ContextDataTooLarge) as refused:
        store.set_waiting(record, node_id="w", event_name="go", callback_id="cb", data=too_large)
    assert str(refused.value) == (
        f"context data is {MAX_CONTEXT_DATA_BYTES + 1:,} bytes as JSON; {LIMIT_TEXT} may be stored"
    )
    with pytest.raises(ContextDataTooLarge):
        store.finish(record, "SUCCEEDED", too_large)
    stored = store.get_context("acme", "wf", "u1", "i1")
    assert stored is not None and stored.status == "RUNNING" and stored.waiting == {}  # nothing written
    assert store.finish(record, "FAILED", None, {"ErrorType": "E", "ErrorMessage": "m"})
    ended = store.get_context("acme", "wf", "u1", "i1")
    assert ended is not None and ended.status == "FAILED" and ended.data == record.data  # data kept


# An action's output at the operation payload limit (its step result, the string's JSON, is 262,144 bytes:
# stepwell.limits), which the context data, holding it under a key with the event's data, then exceeds.
BIG_OUTPUT = MAX_CONTEXT_DATA_BYTES - 2


def big_action(harness: Harness, size: int = BIG_OUTPUT) -> None:
    harness.actions.register("big", lambda inputs, context: "b" * size)


def test_context_data_over_the_limit_at_a_wait_fails_the_context_naming_the_node_and_the_limit(
    harness: Harness,
) -> None:
    big_action(harness)
    harness.put(grows(then="wait"))
    (started,) = harness.send("go", "u1", data={"plan": "pro"}).started

    context = harness.context("grows", "u1")
    assert harness.status(context) == "FAILED" and context.status == "FAILED"
    assert context.error is not None and context.error["ErrorType"] == "DefinitionRuntimeError"
    message = context.error["ErrorMessage"]
    assert message.startswith("node 'w' (trigger_or_timeout): context data is ") and LIMIT_TEXT in message
    assert context.data == {"plan": "pro"} and context.waiting == {}
    assert harness.local.describe(started)["Status"] == "FAILED"


def test_context_data_over_the_limit_at_the_end_fails_the_context_and_its_execution(
    harness: Harness,
) -> None:
    big_action(harness)
    harness.put(grows(then="end"))
    (started,) = harness.send("go", "u1", data={"plan": "pro"}).started

    context = harness.context("grows", "u1")
    assert context.status == "FAILED" and context.error is not None
    assert context.error["ErrorType"] == "ContextDataTooLarge" and LIMIT_TEXT in context.error["ErrorMessage"]
    assert context.data == {"plan": "pro"}
    assert harness.local.describe(started)["Status"] == "FAILED"


def test_an_event_whose_data_is_over_the_limit_fails_its_context_at_the_start(harness: Harness) -> None:
    """An operator's event (the bus caps events at 256 KB) whose data cannot be a context's data."""
    harness.put(waits())
    event = envelope("go", "u1", {"s": "a" * MAX_CONTEXT_DATA_BYTES})
    outcome = harness.router.process_event(event, domain="acme")

    assert outcome.started == []
    context = harness.context("journey", "u1")
    assert context.status == "FAILED" and context.data == {} and context.error is not None
    assert context.error["ErrorType"] == "ContextDataTooLarge" and LIMIT_TEXT in context.error["ErrorMessage"]
    assert harness.local.engine.list_executions(domain="acme").items == []


# --- on DynamoDB (moto), through the work queue ---


@pytest.fixture
def big_default_action(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's actions (the process-wide registry) know "big" for this test only."""
    monkeypatch.setitem(default_actions._actions, "big", lambda inputs, context: "b" * BIG_OUTPUT)


def test_on_dynamodb_deep_events_are_refused_and_too_large_data_ends_the_context_with_its_ttl(
    stack: tuple[Deployment, EntryRuntime, QueueDriver, list[Any]], big_default_action: None
) -> None:
    deployment, _runtime, driver, _sent = stack
    service = DefinitionsService.for_client(StepwellClient(deployment.config, deployment.clients))
    service.put_definition("acme", waits())
    service.put_definition("acme", grows(then="end"))

    bus_event(deployment, "go", "acme", "deep", "evt-deep", nested(500))
    driver.run_until_quiet(fire_schedules=False)
    assert driver.failed_message_ids == []
    assert service.list_contexts("acme", "deep").items == []

    bus_event(deployment, "go", "acme", "u1", "evt-big", {"plan": "pro"})
    driver.run_until_quiet(fire_schedules=False)
    assert driver.failed_message_ids == []
    (grown,) = service.list_contexts("acme", "u1", workflow_id="grows").items
    assert grown.status == "FAILED" and grown.error is not None and grown.data == {"plan": "pro"}
    assert grown.error["ErrorType"] == "ContextDataTooLarge" and LIMIT_TEXT in grown.error["ErrorMessage"]
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.executions_table,
        Key={"contextKey": {"S": grown.context_key}, "instanceId": {"S": grown.instance_id}},
    )["Item"]
    assert "ttl" in item  # it expires like every ended context (a running one has none)
