"""Pause, resume and delete (stepwell.core.lifecycle, AWS's PauseDurableExecution, ResumeDurableExecution
and DeleteDurableExecution) on the local backend: while paused nothing is invoked but waits and callbacks
complete, a run in flight pauses at its next checkpoint, the timeout is extended (or not), the history,
status events and metrics tell it, and a delete removes every item and payload of an ended execution."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from history_model import check_history_against_model
from local_history import event_types
from stepwell import Concurrency
from stepwell.errors import ExecutionNotFound, ExecutionStateConflict, InvalidArgument
from stepwell.model import MAX_PAUSED_TIMEOUT_SECONDS, ExecutionStatus, OutcomeAction
from stepwell.testing.local import LocalStepwell, metric_totals

# Handler calls (invocations, replays included) per test, by workflow.
CALLS: list[str] = []


@durable_execution
def callback_and_wait(event: Any, context: DurableContext) -> dict[str, Any]:
    """A callback and a one-minute wait pending at once: both may complete while the execution is paused."""
    CALLS.append("callback_and_wait")
    callback = context.create_callback(name="approval")
    context.wait(Duration.from_seconds(60), name="cool-off")
    return {"approval": callback.result(), "after": context.step(lambda _: "done", name="after")}


@durable_execution
def waits_for_approval(event: Any, context: DurableContext) -> Any:
    """A callback without a timeout of its own: only the execution's timeout ends the wait."""
    return context.create_callback(name="approval").result()


@pytest.fixture(autouse=True)
def no_calls() -> None:
    CALLS.clear()


def test_while_paused_a_wait_ends_and_a_callback_arrives_and_the_resume_completes_with_both(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("flow", callback_and_wait)
    execution_id = local.start("flow", {})
    local.run_until_idle()
    callback_id = local.callback_id(execution_id, "approval")

    assert local.engine.pause_execution(execution_id, reason="downstream degraded")
    local.run_until_idle()
    assert local.record(execution_id).status is ExecutionStatus.PAUSED
    calls_before = len(CALLS)

    local.engine.send_callback_success(callback_id, json.dumps("approved"))
    local.run_until_idle()
    local.clock.advance(61)  # the wait's wake-up comes while paused
    local.run_until_idle()

    assert len(CALLS) == calls_before  # nothing invoked
    assert local.record(execution_id).status is ExecutionStatus.PAUSED
    types = event_types(local, execution_id)
    paused_at = types.index("ExecutionPaused")
    assert {"CallbackSucceeded", "WaitSucceeded"} <= set(types[paused_at:])
    # Nothing armed soon (only the log's own keeping, days ahead): the invocation due waits for the resume.
    next_due = local.queue.next_due_at()
    assert next_due is None or next_due > local.clock.now() + 86_400

    assert local.engine.resume_execution(execution_id, reason="recovered")
    record = local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    result = json.loads(local.describe(execution_id)["Result"])
    assert result == {"approval": json.dumps("approved"), "after": "done"}  # a callback's result is text
    types = event_types(local, execution_id)
    assert types.count("ExecutionPaused") == types.count("ExecutionResumed") == 1
    assert types.index("ExecutionPaused") < types.index("WaitSucceeded") < types.index("ExecutionResumed")
    assert types.index("ExecutionResumed") < types.index("ExecutionSucceeded")


def test_a_pause_found_at_a_checkpoint_ends_the_run_in_flight_there(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.engine.pause_check_seconds = 0.0  # read the status at every written checkpoint
    seen: list[str] = []

    @durable_execution
    def three_steps(event: Any, context: DurableContext) -> list[str]:
        def pause_me(_: Any) -> str:
            assert local.engine.pause_execution(event["me"])  # an operator, while the run is in flight
            seen.append(local.describe(event["me"])["Status"])
            return "one"

        first = context.step(pause_me, name="one")
        second = context.step(lambda _: "two", name="two")
        return [first, second, context.step(lambda _: "three", name="three")]

    local.register("three-steps", three_steps)
    execution_id = "default#three-steps#run/run"
    local.start("three-steps", {"me": execution_id}, execution_name="run")
    local.run_until_idle()

    assert seen == ["PAUSING"]
    assert local.record(execution_id).status is ExecutionStatus.PAUSED
    history = local.history(execution_id)
    names = [event.get("Name") for event in history if event["EventType"] == "StepSucceeded"]
    assert names == ["one"]  # step one's checkpoint stored, and the invocation ended there
    assert [event["EventType"] for event in history][-2:] == ["InvocationCompleted", "ExecutionPaused"]
    assert local.describe(execution_id)["PauseDetails"]["ExecutionTimeoutPaused"] is True

    assert local.engine.resume_execution(execution_id)
    record = local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(local.describe(execution_id)["Result"]) == ["one", "two", "three"]


def test_a_resume_while_pausing_cancels_the_pause_and_the_run_goes_on(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.engine.pause_check_seconds = 0.0

    @durable_execution
    def changes_its_mind(event: Any, context: DurableContext) -> str:
        def pause_and_resume(_: Any) -> str:
            local.engine.pause_execution(event["me"])
            assert local.engine.resume_execution(event["me"])
            return "one"

        return context.step(pause_and_resume, name="one") + context.step(lambda _: "two", name="two")

    local.register("changes", changes_its_mind)
    execution_id = "default#changes#run/run"
    local.start("changes", {"me": execution_id}, execution_name="run")
    record = local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert "ExecutionPaused" not in event_types(local, execution_id)
    assert local.status_events.statuses(execution_id) == ["RUNNING", "SUCCEEDED"]


def test_a_pause_before_the_first_run_logs_nothing_and_the_resume_runs_it(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("greet", workflows.greet)
    execution_id = local.start("greet", {"name": "Ada"})

    assert local.engine.pause_execution(execution_id)
    local.run_until_idle()

    assert local.record(execution_id).status is ExecutionStatus.PAUSED
    assert local.history(execution_id) == []
    assert local.engine.resume_execution(execution_id)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    assert event_types(local, execution_id)[0] == "ExecutionStarted"


def test_a_wake_up_that_comes_while_paused_is_kept_and_one_still_ahead_stays_armed(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("wait", workflows.three_day_wait)
    late = local.start("wait", {}, execution_name="late")
    early = local.start("wait", {}, execution_name="early")
    local.run_until_idle()
    started = local.clock.now()
    for execution_id in (late, early):
        local.engine.pause_execution(execution_id)
    local.run_until_idle()

    local.clock.advance_to(started + 86_400)
    local.engine.resume_execution(early)  # resumed before its wait ends: it ends on time
    local.run_until_idle()
    local.clock.advance_to(started + 3 * 86_400 + 1)  # the wait's end: its wake-up finds `late` paused
    local.run_until_idle()
    assert local.record(early).status is ExecutionStatus.SUCCEEDED
    assert local.record(early).ended_at == pytest.approx(local.clock.now(), abs=1)
    assert local.record(late).status is ExecutionStatus.PAUSED
    assert "WaitSucceeded" in event_types(local, late)
    local.clock.advance_to(started + 4 * 86_400)

    local.engine.resume_execution(late)
    local.run_until_idle()  # the resume's run invokes it at once: its wait ended while it was paused

    assert local.record(late).status is ExecutionStatus.SUCCEEDED
    assert local.record(late).ended_at == pytest.approx(local.clock.now(), abs=1)


def test_a_paused_timeout_is_extended_by_the_time_spent_paused(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", waits_for_approval, execution_timeout=7200)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    created = local.record(execution_id).created_at
    assert local.describe(execution_id)["ExpectedExecutionTimeoutTimestamp"] == pytest.approx(created + 7200)

    local.clock.advance_to(created + 600)
    local.engine.pause_execution(execution_id)  # the timeout pauses too (the default)
    local.run_until_idle()
    assert local.describe(execution_id)["ExpectedExecutionTimeoutTimestamp"] == (
        created + MAX_PAUSED_TIMEOUT_SECONDS
    )
    local.clock.advance_to(created + 10_600)  # past the original deadline: still paused
    local.run_until_idle()
    assert local.record(execution_id).status is ExecutionStatus.PAUSED

    local.engine.resume_execution(execution_id)  # 10,000 s spent paused
    local.run_until_idle()
    # The virtual clock moves on a little as it is read: 10,000 s to a fraction of a second.
    deadline = local.describe(execution_id)["ExpectedExecutionTimeoutTimestamp"]
    assert deadline == pytest.approx(created + 7200 + 10_000, abs=1)
    local.clock.advance_to(deadline - 1)
    local.run_until_idle()
    assert local.record(execution_id).status is ExecutionStatus.RUNNING
    record = local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.TIMED_OUT
    # At its extended deadline, not before (the virtual clock runs on by the real time its reads take).
    assert record.ended_at is not None and deadline <= record.ended_at < deadline + 1


def test_a_timeout_that_keeps_running_times_a_paused_execution_out(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", waits_for_approval, execution_timeout=7200)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    created = local.record(execution_id).created_at

    assert local.engine.pause_execution(execution_id, timeout_paused=False)
    local.run_until_idle()
    assert local.describe(execution_id)["ExpectedExecutionTimeoutTimestamp"] == pytest.approx(created + 7200)
    record = local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.TIMED_OUT
    assert record.ended_at == pytest.approx(created + 7200, abs=0.001)
    assert event_types(local, execution_id)[-2:] == ["ExecutionPaused", "ExecutionTimedOut"]


def test_a_paused_execution_can_be_stopped(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    local.engine.pause_execution(execution_id)
    local.run_until_idle()

    assert local.engine.stop_execution(execution_id)
    local.run_until_idle()

    assert local.record(execution_id).status is ExecutionStatus.STOPPED
    assert "PauseDetails" not in local.describe(execution_id)
    assert event_types(local, execution_id)[-2:] == ["ExecutionPaused", "ExecutionStopped"]


def test_the_history_records_the_pause_and_the_resume_as_aws_does(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    paused_at = local.clock.now()
    local.engine.pause_execution(execution_id, reason="maintenance", timeout_paused=False)
    local.clock.advance(5)
    local.run_until_idle()
    local.clock.advance(5)
    resumed_at = local.clock.now()
    local.engine.resume_execution(execution_id)
    local.run_until_idle()

    events = {event["EventType"]: event for event in local.history(execution_id)}
    paused = events["ExecutionPaused"]
    details = paused["ExecutionPausedDetails"]
    assert details == {
        "PauseRequestTimestamp": details["PauseRequestTimestamp"],
        "ExecutionTimeoutPaused": False,
        "Reason": {"Payload": "maintenance", "Truncated": False},
    }
    assert isinstance(details["PauseRequestTimestamp"], datetime)  # in milliseconds, as every time
    assert details["PauseRequestTimestamp"].timestamp() == pytest.approx(paused_at, abs=0.001)
    assert paused["EventTimestamp"].timestamp() == pytest.approx(paused_at + 5, abs=0.001)  # when it paused
    resumed = events["ExecutionResumed"]
    assert list(resumed["ExecutionResumedDetails"]) == ["ResumeRequestTimestamp"]
    requested = resumed["ExecutionResumedDetails"]["ResumeRequestTimestamp"]
    assert requested.timestamp() == pytest.approx(resumed_at, abs=0.001)
    stripped = local.engine.get_execution_history(execution_id, include_execution_data=False)
    (paused,) = [event for event in stripped if event["EventType"] == "ExecutionPaused"]
    assert paused["ExecutionPausedDetails"]["Reason"] == {"Truncated": True}
    for history in (local.history(execution_id), stripped):  # botocore's shapes, as AWS answers
        assert check_history_against_model(history) == []


def test_pause_and_resume_announce_paused_and_running_and_count_them(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    local.engine.pause_execution(execution_id)
    local.run_until_idle()
    local.engine.resume_execution(execution_id)
    local.run_until_idle()
    local.engine.send_callback_success(local.callback_id(execution_id), json.dumps("ok"))
    record = local.run_to_completion(execution_id)

    assert local.status_events.statuses(execution_id) == ["RUNNING", "PAUSED", "RUNNING", "SUCCEEDED"]
    assert record.status is ExecutionStatus.SUCCEEDED
    ids = [detail["eventId"] for detail in local.status_events.published]
    assert len(set(ids)) == 4  # RUNNING again after the resume is another change
    paused = local.status_events.published[1]
    assert paused["endTime"] is None
    totals = metric_totals(local.metrics.records, "approval")
    assert (totals["ExecutionsPaused"], totals["ExecutionsResumed"]) == (1, 1)


def test_repeats_answer_false_and_an_ended_execution_is_refused(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", {})
    local.run_until_idle()

    assert not local.engine.resume_execution(execution_id)  # not paused
    assert local.engine.pause_execution(execution_id, reason="first")
    assert not local.engine.pause_execution(execution_id, reason="second")  # the first pause stands
    assert local.describe(execution_id)["PauseDetails"]["Reason"] == "first"
    with pytest.raises(InvalidArgument, match="1024"):
        local.engine.pause_execution(execution_id, reason="x" * 1025)
    assert local.engine.resume_execution(execution_id)
    local.engine.stop_execution(execution_id)
    local.run_until_idle()

    for call in (local.engine.pause_execution, local.engine.resume_execution):
        with pytest.raises(ExecutionStateConflict, match="has ended"):
            call(execution_id)
    with pytest.raises(ExecutionNotFound):
        local.engine.pause_execution("default#approval#nobody/nobody")


def test_a_paused_execution_keeps_its_slot_and_one_paused_in_the_queue_is_not_admitted() -> None:
    local = LocalStepwell()
    local.register("limited", waits_for_approval, concurrency=Concurrency(1))
    holder = local.start("limited", {}, execution_name="holder")
    queued = local.start("limited", {}, execution_name="queued")
    third = local.start("limited", {}, execution_name="third")
    local.run_until_idle()
    local.engine.pause_execution(holder)
    local.engine.pause_execution(queued)
    local.run_until_idle()
    assert event_types(local, third) == []  # the paused holder keeps its slot

    local.engine.resume_execution(holder)
    local.run_until_idle()
    local.engine.send_callback_success(local.callback_id(holder), json.dumps("ok"))
    local.run_until_idle()

    assert local.record(holder).status is ExecutionStatus.SUCCEEDED
    assert event_types(local, queued) == []  # skipped while paused: the next one in the queue runs
    assert event_types(local, third)[0] == "ExecutionStarted"
    local.engine.resume_execution(queued)
    local.run_until_idle()
    assert event_types(local, queued) == []  # queued again behind the running one
    local.engine.send_callback_success(local.callback_id(third), json.dumps("ok"))
    local.run_until_idle()
    assert event_types(local, queued)[0] == "ExecutionStarted"


@pytest.mark.parametrize("paused", [False, True])
def test_a_delete_is_refused_until_the_execution_has_ended(
    stepwell_local: LocalStepwell, paused: bool
) -> None:
    local = stepwell_local
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", {})
    local.run_until_idle()
    if paused:
        local.engine.pause_execution(execution_id)
        local.run_until_idle()

    with pytest.raises(ExecutionStateConflict, match="has not ended"):
        local.engine.delete_execution(execution_id)

    assert not local.record(execution_id).status.is_terminal


def test_a_delete_removes_every_item_and_payload_of_the_ended_execution() -> None:
    local = LocalStepwell(inline_limit=1024)  # the large input and result go to the payload store
    local.register("approval", workflows.approval)
    execution_id = local.start(
        "approval", {"pad": "x" * 4096}, execution_name="gone", tags={"team": "payments"}
    )
    local.run_until_idle()
    local.engine.send_callback_success(local.callback_id(execution_id), json.dumps("y" * 4096))
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    kept = local.start("approval", {}, execution_name="kept", tags={"team": "payments"})
    local.run_until_idle()
    store = local.store
    assert store.item_count(execution_id) >= 4  # record, batches, coordination record, callback
    assert local.payloads.references(execution_id)

    requested_at = local.engine.delete_execution(execution_id)

    assert local.describe(execution_id)["Status"] == "DELETING"
    assert "DELETING" not in local.status_events.statuses(execution_id)  # only the worker puts events
    assert local.engine.delete_execution(execution_id) == requested_at  # a repeat: the same request
    local.run_until_idle()
    with pytest.raises(ExecutionNotFound):
        local.describe(execution_id)
    assert store.item_count(execution_id) == 0
    assert local.payloads.references(execution_id) == []
    listed = local.engine.list_executions(tag=("team", "payments")).items
    assert [record.execution_id for record in listed] == [kept]
    assert store.item_count(kept) > 0
    assert local.status_events.statuses(execution_id).count("DELETING") == 1
    deleting = local.status_events.published[-1]
    assert deleting["eventId"] == hashlib.sha256(f"{execution_id}|DELETING".encode()).hexdigest()
    assert deleting["endTime"] is not None
    assert metric_totals(local.metrics.records, "approval")["ExecutionsDeleted"] == 1
    deleted = [outcome for outcome in local.outcomes if outcome.action is OutcomeAction.DELETED]
    assert len(deleted) == 1
    # A late message finds nothing, and writes nothing.
    local.queue.enqueue({"kind": "invoke", "executionId": execution_id})
    local.run_until_idle()
    assert store.item_count(execution_id) == 0
    # The name is free again: an execution started under it begins afresh.
    assert local.start("approval", {}, execution_name="gone") == execution_id
    local.run_until_idle()
    assert event_types(local, execution_id)[:2] == ["ExecutionStarted", "CallbackStarted"]
