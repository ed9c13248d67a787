"""Callbacks: a result wakes the execution, deadlines and heartbeats move or withdraw its wake-up, a
callback times out or closes with its execution, and senders' bad input is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.errors import CallbackNotFound, ExecutionAlreadyEnded, InvalidArgument
from stepwell.model import ExecutionStatus, OutcomeAction
from stepwell.testing.local import LocalStepwell


def test_a_callback_completes_and_wakes_the_execution(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id, "approval")
    assert len(callback_id) >= 32  # at least 128 random bits, URL-safe
    with pytest.raises(LookupError, match="no open callback named 'other'"):
        stepwell_local.callback_id(execution_id, "other")

    stepwell_local.engine.send_callback_heartbeat(callback_id)
    stepwell_local.engine.send_callback_success(callback_id, json.dumps({"approved": True}))
    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    # The SDK hands a callback's result over as the raw text that was sent.
    assert json.loads(record.result or "null") == '{"approved": true}'
    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, "1")


def test_a_callback_answered_before_its_deadline_leaves_no_wake_up(stepwell_local: LocalStepwell) -> None:
    """Its deadline was armed as a wake-up an hour ahead (on AWS a one-time schedule): the run the result
    ends withdraws it, instead of it coming an hour later to find nothing due."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    assert stepwell_local.queue.next_due_at() == pytest.approx(stepwell_local.clock.now() + 3600, abs=1)

    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id), '"yes"')
    assert stepwell_local.run_until_idle() == 1

    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert len(stepwell_local.queue) == 0


def test_a_deadline_still_ahead_stays_armed_when_an_earlier_one_is_withdrawn(
    stepwell_local: LocalStepwell,
) -> None:
    """Two callbacks, deadlines in 1 h and 3 h: the 1 h one is answered, so its wake-up is withdrawn and
    the 3 h one armed in its place, and that callback still times out at its deadline."""
    stepwell_local.register("two_deadlines", workflows.two_deadlines)
    started = stepwell_local.clock.now()
    execution_id = stepwell_local.start("two_deadlines", None)
    stepwell_local.run_until_idle()
    assert stepwell_local.queue.next_due_at() == pytest.approx(started + 3600, abs=1)

    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id, "sooner"), '"a"')
    stepwell_local.run_until_idle()
    assert len(stepwell_local.queue) == 1
    assert stepwell_local.queue.next_due_at() == pytest.approx(started + 3 * 3600, abs=1)

    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.FAILED
    assert stepwell_local.clock.now() == pytest.approx(started + 3 * 3600, abs=1)
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert [event["Name"] for event in timed_out] == ["later"]


def test_an_unknown_callback_id_is_refused(stepwell_local: LocalStepwell) -> None:
    with pytest.raises(CallbackNotFound, match="no-such-id"):
        stepwell_local.engine.send_callback_success("no-such-id", "1")


def test_a_callback_without_an_answer_times_out(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert timed_out[0]["CallbackTimedOutDetails"]["Error"]["Payload"]["ErrorType"] == "Callback.Timeout"


def test_a_callback_open_when_its_execution_ends_is_closed_with_it(stepwell_local: LocalStepwell) -> None:
    """Stopped while it waits for a callback: the callback's record is closed by the end (so it expires
    with the execution), and a sender is told the execution ended."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id)
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed

    assert stepwell_local.engine.stop_execution(execution_id) is True
    stepwell_local.run_until_idle()
    closed = stepwell_local.store.get_callback(callback_id)
    assert closed is not None and closed.completed
    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, "1")
    kinds = [event["EventType"] for event in stepwell_local.history(execution_id)]
    assert kinds[-1] == "ExecutionStopped" and "CallbackTimedOut" not in kinds


def test_a_completion_for_an_ended_execution_is_undone(stepwell_local: LocalStepwell) -> None:
    """Stopped, and a result arrives before a worker settled the stop: the completion, written without a
    read, finds the execution ended and is undone; the sender is told; nothing is left for a run to read."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id)
    assert stepwell_local.engine.stop_execution(execution_id) is True

    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, '"late"')
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed
    assert stepwell_local.store.get_callback_results([callback_id]) == []
    with pytest.raises(CallbackNotFound, match="no callback"):
        stepwell_local.engine.send_callback_success("cb-unknown", '"x"')


def test_a_callback_result_must_be_json_text(stepwell_local: LocalStepwell) -> None:
    with pytest.raises(InvalidArgument, match=r"callback result must be JSON text .* got dict"):
        stepwell_local.engine.send_callback_success("cb-any", {"approved": True})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="callback result must be UTF-8 text"):
        stepwell_local.engine.send_callback_success("cb-any", b"\xff\xfe")


def test_a_heartbeat_while_waiting_does_not_rerun_the_handler(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    stepwell_local.engine.send_callback_heartbeat(stepwell_local.callback_id(execution_id, "approval"))
    stepwell_local.run_until_idle()  # the heartbeat is absorbed; nothing for the handler to do
    history = stepwell_local.history(execution_id)

    again = stepwell_local.worker.run(execution_id)  # a duplicate message afterwards

    assert again.action is OutcomeAction.IDLE
    assert stepwell_local.history(execution_id) == history
    assert [e["EventType"] for e in history].count("InvocationCompleted") == 1


@durable_execution
def _heartbeat_approval(event: Any, context: DurableContext) -> Any:
    config = CallbackConfig(timeout=Duration.from_hours(1), heartbeat_timeout=Duration.from_seconds(20))
    return context.create_callback(name="approval", config=config).result()


def test_a_heartbeat_moves_the_wake_up_to_its_new_deadline_and_a_silent_sender_times_out(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("heartbeat-approval", _heartbeat_approval)
    execution_id = stepwell_local.start("heartbeat-approval", None)
    stepwell_local.run_until_idle()
    started = stepwell_local.clock.now()
    stepwell_local.clock.advance(15)
    stepwell_local.engine.send_callback_heartbeat(stepwell_local.callback_id(execution_id, "approval"))
    stepwell_local.run_until_idle()  # absorbed: the heartbeat deadline is now 20 s after it

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert len(timed_out) == 1
    assert timed_out[0]["EventTimestamp"].timestamp() == pytest.approx(started + 35, abs=1)
