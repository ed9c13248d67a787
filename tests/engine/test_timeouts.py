"""Execution timeouts (`register(..., execution_timeout=...)`, AWS's DurableConfig ExecutionTimeout): at its
start plus the timeout an execution ends TIMED_OUT whatever it waits for, on the virtual clock."""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from history_model import check_history_against_model
from stepwell.errors import ExecutionAlreadyEnded
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell, metric_totals

TIMEOUT = 60


def _timed_out_error(seconds: int = TIMEOUT) -> dict[str, str]:
    return {
        "ErrorType": "Execution.TimedOut",
        "ErrorMessage": f"the execution ran past its execution timeout of {seconds} seconds from its start",
    }


@durable_execution
def sleeps_an_hour(event: Any, context: DurableContext) -> str:
    context.step(lambda _: "before", name="before")
    context.wait(Duration.from_hours(1), name="hour")
    return "woke"


@durable_execution
def waits_for_approval(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name="approval").result()


@durable_execution
def quick(event: Any, context: DurableContext) -> str:
    context.wait(Duration.from_seconds(10), name="short")
    return "done"


@durable_execution
def calls_child(event: Any, context: DurableContext) -> Any:
    return context.invoke(event["target"], {"n": 1}, name="call")


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("sleeper", sleeps_an_hour, execution_timeout=TIMEOUT)
    local.register("approval", waits_for_approval, execution_timeout=30)
    local.register("quick", quick, execution_timeout=TIMEOUT)
    local.register("slow.child", sleeps_an_hour, execution_timeout=TIMEOUT)
    local.register("endless.child", sleeps_an_hour)
    local.register("caller", calls_child)
    local.register("impatient.caller", calls_child, execution_timeout=TIMEOUT)
    return local


def _history(local: LocalStepwell, execution_id: str) -> list[dict[str, Any]]:
    events = local.history(execution_id)
    assert check_history_against_model(events) == []
    return events


def _details(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return event["EventType"], event[f"{event['EventType']}Details"]


def test_a_wait_longer_than_the_timeout_ends_timed_out_at_the_deadline(local: LocalStepwell) -> None:
    started_at = local.clock.now()
    execution_id = local.start("sleeper", {"order": 7})
    local.run_to_completion(execution_id)

    described = local.describe(execution_id)
    assert (described["Status"], described["Error"]) == ("TIMED_OUT", _timed_out_error())
    # The deadline fired through the virtual clock: the timeout after the start, not the wait's end (an
    # hour). The clock is real time plus the skips, so the run lands the moment after its wake-up that the
    # machine took to get there: a loaded one takes more than 10 ms.
    assert described["EndTimestamp"] - described["StartTimestamp"] == pytest.approx(TIMEOUT, abs=1)
    assert described["StartTimestamp"] == pytest.approx(started_at, abs=1)
    events = _history(local, execution_id)
    assert _details(events[0]) == (
        "ExecutionStarted",
        {"Input": {"Payload": '{"order": 7}', "Truncated": False}, "ExecutionTimeout": 60},
    )
    assert _details(events[-1]) == (
        "ExecutionTimedOut",
        {"Error": {"Payload": _timed_out_error(), "Truncated": False}},
    )
    kinds = [event["EventType"] for event in events]
    assert "WaitStarted" in kinds and "WaitSucceeded" not in kinds
    # Its pending wake-up (the hour's end) is gone, and nothing runs after.
    assert local.queue.next_due_at() is None
    assert [r.execution_id for r in local.engine.list_executions(status="TIMED_OUT").items] == [execution_id]
    assert local.status_events.statuses(execution_id) == ["RUNNING", "TIMED_OUT"]
    assert metric_totals(local.metrics.records, "sleeper").get("ExecutionsTimedOut") == 1


def test_a_callback_never_completed_times_out_with_the_execution(local: LocalStepwell) -> None:
    execution_id = local.start("approval", None)
    local.run_until_idle()
    callback_id = local.callback_id(execution_id, "approval")
    local.run_to_completion(execution_id)

    assert local.describe(execution_id)["Error"] == _timed_out_error(30)
    events = _history(local, execution_id)
    assert _details(events[0]) == (
        "ExecutionStarted",
        {"Input": {"Payload": "null", "Truncated": False}, "ExecutionTimeout": 30},
    )
    assert _details(events[-1]) == (
        "ExecutionTimedOut",
        {"Error": {"Payload": _timed_out_error(30), "Truncated": False}},
    )
    with pytest.raises(ExecutionAlreadyEnded, match="has ended"):
        local.engine.send_callback_success(callback_id, '"late"')


def test_a_late_message_past_the_deadline_records_nothing_but_the_time_out(local: LocalStepwell) -> None:
    """A worker that runs after both the deadline and the wait's end (a backlog) must not record the
    wait's end first; a callback result that arrived past the deadline is dropped too."""
    sleeper = local.start("sleeper", None)
    approval = local.start("approval", None)
    local.run_until_idle()
    callback_id = local.callback_id(approval, "approval")
    before = {execution_id: len(_history(local, execution_id)) for execution_id in (sleeper, approval)}
    local.clock.advance(4000)  # past the deadlines (60 s, 30 s) and the hour's wait; no message ran yet
    local.engine.send_callback_success(callback_id, '"too late"')
    local.run_until_idle()

    for execution_id, timeout in ((sleeper, TIMEOUT), (approval, 30)):
        events = _history(local, execution_id)
        assert [event["EventType"] for event in events[before[execution_id] :]] == ["ExecutionTimedOut"]
        assert _details(events[-1]) == (
            "ExecutionTimedOut",
            {"Error": {"Payload": _timed_out_error(timeout), "Truncated": False}},
        )
        assert local.store.list_external_inputs(execution_id) == []


def test_an_execution_that_ends_in_time_succeeds_and_its_deadline_does_nothing(local: LocalStepwell) -> None:
    execution_id = local.start("quick", None)
    local.run_to_completion(execution_id)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    local.clock.advance(TIMEOUT * 2)
    local.run_until_idle()
    events = _history(local, execution_id)
    assert _details(events[0]) == (
        "ExecutionStarted",
        {"Input": {"Payload": "null", "Truncated": False}, "ExecutionTimeout": 60},
    )
    assert events[-1]["EventType"] == "ExecutionSucceeded"
    assert local.record(execution_id).status is ExecutionStatus.SUCCEEDED


def test_without_a_timeout_execution_started_has_none(local: LocalStepwell) -> None:
    execution_id = local.start("caller", {"target": "quick"})
    local.run_to_completion(execution_id)
    assert _details(_history(local, execution_id)[0]) == (
        "ExecutionStarted",
        {"Input": {"Payload": '{"target": "quick"}', "Truncated": False}},
    )


def test_a_child_that_times_out_is_a_chained_invoke_timed_out_in_its_parent(local: LocalStepwell) -> None:
    parent_id = local.start("caller", {"target": "slow.child"})
    local.run_to_completion(parent_id)
    events = _history(local, parent_id)
    (started,) = [e for e in events if e["EventType"] == "ChainedInvokeStarted"]
    child_id = started["ChainedInvokeStartedDetails"]["DurableExecutionArn"]
    assert local.describe(child_id)["Status"] == "TIMED_OUT"
    # As AWS reports it (not the child's own Execution.TimedOut): a fixed type, the child's timeout.
    invoke_error = {
        "ErrorType": "ChainedInvoke.Timeout",
        "ErrorMessage": "CHAINED_INVOKE timed out after 60 seconds.",
    }
    calls = [_details(event) for event in events if event.get("Name") == "call"]
    assert calls[1:] == [("ChainedInvokeTimedOut", {"Error": {"Payload": invoke_error, "Truncated": False}})]
    # The SDK raises InvokeError with that error: the parent fails with it.
    parent = local.describe(parent_id)
    assert (parent["Status"], parent["Error"]["ErrorMessage"]) == ("FAILED", invoke_error["ErrorMessage"])
    assert parent["Error"]["ErrorType"].endswith("InvokeError")


def test_a_parent_that_times_out_stops_its_running_child(local: LocalStepwell) -> None:
    parent_id = local.start("impatient.caller", {"target": "endless.child"})
    local.run_to_completion(parent_id)
    local.run_until_idle()
    events = _history(local, parent_id)
    (started,) = [e for e in events if e["EventType"] == "ChainedInvokeStarted"]
    child_id = started["ChainedInvokeStartedDetails"]["DurableExecutionArn"]
    assert _details(events[-1]) == (
        "ExecutionTimedOut",
        {"Error": {"Payload": _timed_out_error(), "Truncated": False}},
    )
    stopped = {
        "ErrorType": "ParentTimedOut",
        "ErrorMessage": f"parent execution {parent_id!r} ended TIMED_OUT",
    }
    child = local.describe(child_id)
    assert (child["Status"], child["Error"]) == ("STOPPED", stopped)
    assert _details(_history(local, child_id)[-1]) == (
        "ExecutionStopped",
        {"Error": {"Payload": stopped, "Truncated": False}},
    )
    # The child's stop reaches the ended parent, which records nothing more.
    assert _history(local, parent_id) == events
    assert local.queue.next_due_at() is None
