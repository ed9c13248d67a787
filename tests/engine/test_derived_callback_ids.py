"""An execution's callback ids are derived from its operation ids under a secret key made at its creation,
so a replay makes the same id again: a callback's start and its wait_for_callback's submitter are then
not written on their own (the lease's release carries them as the run suspends), only the record that
resolves the id. A worker that dies after handing an id out loses nothing: the replay runs the submitter
again, which hands the same id out, whose record keeps a completion sent meanwhile, and runs the
execution again to read it. Executions created before keys keep random ids, written at once."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ChildConfig
from stepwell.core.journal import decode_body, derived_callback_id, new_callback_key
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell

HANDED_OUT: list[str] = []


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    def submit(callback_id: str, _: Any) -> None:
        HANDED_OUT.append(callback_id)

    return context.wait_for_callback(submit, name="approve")


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("approval", approval)
    HANDED_OUT.clear()
    return local


def logged_events(local: LocalStepwell, execution_id: str) -> list[str]:
    batches, _ = local.store.load_batches(execution_id)
    return [event["t"] for batch in batches for event in decode_body(batch.body).get("e", [])]


def test_ids_are_derived_from_the_execution_key_and_operation() -> None:
    key = new_callback_key()
    first = derived_callback_id(key, "default#approval#s/e1", "op-1")
    assert first == derived_callback_id(key, "default#approval#s/e1", "op-1")  # made again on a replay
    assert first.startswith("cb") and len(first) == 34 and first.isascii()
    others = {
        derived_callback_id(key, "default#approval#s/e2", "op-1"),  # another execution
        derived_callback_id(key, "default#approval#s/e1", "op-2"),  # another operation
        derived_callback_id(new_callback_key(), "default#approval#s/e1", "op-1"),  # another key
    }
    assert first not in others and len(others) == 3
    assert new_callback_key() != new_callback_key()


def test_a_wait_for_callback_writes_only_its_record_and_rides_on_the_release(local: LocalStepwell) -> None:
    execution_id = local.start("approval")
    key = local.record(execution_id).callback_key
    assert key
    local.run_until_idle()

    (callback_id,) = HANDED_OUT
    assert callback_id == local.callback_id(execution_id)
    start = next(e for e in local.history(execution_id) if e["EventType"] == "CallbackStarted")
    assert callback_id == derived_callback_id(key, execution_id, start["Id"])
    # No log batch: the callback's start and the submitter's result ride on the lease's release, with
    # the invocation's end. Only the record that resolves the id was written on its own.
    batches, _ = local.store.load_batches(execution_id)
    assert batches == []
    carried = local.store.get_carried_batch(execution_id)
    assert carried is not None and carried.seq == 0
    assert {"CallbackStarted", "StepStarted", "StepSucceeded", "InvocationCompleted"} <= {
        event["t"] for event in decode_body(carried.body).get("e", [])
    }
    assert local.store.counters["put_callback"] == 1

    local.engine.send_callback_success(callback_id, '"approved"')
    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and "approved" in (record.result or "")
    # Its end rode on the release too: the whole history is the record's, the log never had a batch.
    assert local.store.load_batches(execution_id)[0] == []
    kinds = [event["EventType"] for event in local.history(execution_id)]
    assert kinds[0] == "ExecutionStarted" and kinds[-1] == "ExecutionSucceeded"
    assert kinds.count("StepSucceeded") == 1 and kinds.count("CallbackSucceeded") == 1


@durable_execution
def submitter_in_a_lookalike_context(event: Any, context: DurableContext) -> Any:
    # A child context that claims the wait_for_callback subtype, with a step of another name: a step
    # whose result user code reads. Its result is stored before the run goes on, as any step's.
    def inside(child: DurableContext) -> Any:
        return child.step(lambda _: event["n"], name="lookup")

    return context.run_in_child_context(
        inside, name="lookalike", config=ChildConfig(sub_type="WaitForCallback")
    )


def test_only_the_sdks_submitter_step_waits_for_the_next_batch(local: LocalStepwell) -> None:
    local.register("lookalike", submitter_in_a_lookalike_context)
    execution_id = local.start("lookalike", {"n": 3})
    append = local.store.append_batch
    logged: list[list[str]] = []

    def logs(execution: str, batch: Any) -> None:
        logged.append([event["t"] for event in decode_body(batch.body).get("e", [])])
        append(execution, batch)

    local.store.append_batch = logs  # type: ignore[method-assign]
    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and record.result == "3"
    assert logged and "StepSucceeded" in logged[0]  # written at once, not left to the release


def test_an_execution_created_before_keys_keeps_random_ids_written_at_once(local: LocalStepwell) -> None:
    execution_id = local.start("approval")
    # As an engine before callback keys stored it.
    local.store._executions[execution_id] = dataclasses.replace(local.record(execution_id), callback_key=None)
    local.run_until_idle()

    (callback_id,) = HANDED_OUT
    start = next(e for e in local.history(execution_id) if e["EventType"] == "CallbackStarted")
    assert callback_id == start["CallbackStartedDetails"]["CallbackId"]
    # Its start had a batch of its own, before the submitter's.
    batches, _ = local.store.load_batches(execution_id)
    assert len(batches) == 2 and "CallbackStarted" in logged_events(local, execution_id)
    local.engine.send_callback_success(callback_id, '"approved"')
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_a_worker_that_dies_after_handing_an_id_out_loses_nothing(local: LocalStepwell) -> None:
    execution_id = local.start("approval")
    release = local.store.release_lease
    died: list[bool] = []

    def dies_once_the_id_is_out(*args: Any, **kwargs: Any) -> None:
        if HANDED_OUT and not died:  # the release that would carry the start: the process is gone
            died.append(True)
            raise RuntimeError("the worker's process died")
        release(*args, **kwargs)

    local.store.release_lease = dies_once_the_id_is_out  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="process died"):
        local.run_until_idle()
    local.store.release_lease = release  # type: ignore[method-assign]
    assert died

    (handed_out,) = HANDED_OUT
    # Nothing of the callback was stored but its record: the id resolves, and the sender completes it.
    assert local.store.load_batches(execution_id)[0] == []
    assert local.store.get_carried_batch(execution_id) is None
    local.engine.send_callback_success(handed_out, '"approved"')
    sent_at = local.clock.now()

    # The replay (once the dead worker's lease expired) runs the submitter again, which hands the same id
    # out, finds its record completed and runs the execution again at once to read it: nothing is lost,
    # nobody has to send it again, and it does not wait for the next wake-up its suspension arms (its
    # log's keep-alive, days later).
    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and "approved" in (record.result or "")
    assert local.clock.now() - sent_at < 3600
    assert [handed_out, handed_out] == HANDED_OUT
    kinds = [event["EventType"] for event in local.history(execution_id)]
    assert kinds.count("CallbackStarted") == 1 and kinds.count("CallbackSucceeded") == 1
    assert kinds.count("StepSucceeded") == 1


def test_a_record_that_could_not_be_written_is_written_before_the_start_that_needs_it(
    local: LocalStepwell,
) -> None:
    execution_id = local.start("approval")
    put = local.store.put_callback
    refused: list[str] = []

    def refuses_once(ref: Any) -> bool:
        if not refused:
            refused.append(ref.callback_id)
            raise RuntimeError("throttled")
        return bool(put(ref))

    local.store.put_callback = refuses_once  # type: ignore[method-assign]
    local.run_until_idle()  # the checkpoint fails, and the run with it: the crash's batch records the start
    assert refused and "CallbackStarted" in logged_events(local, execution_id)
    assert local.store.get_callback(refused[0]) is not None  # resolved before that batch was written

    def send_when_handed_out(local: LocalStepwell) -> bool:
        if not HANDED_OUT or local.store.get_callback(HANDED_OUT[-1]) is None:
            return False
        local.engine.send_callback_success(HANDED_OUT.pop(), '"approved"')
        return True

    record = local.run_to_completion(execution_id, on_idle=send_when_handed_out)
    assert record.status is ExecutionStatus.SUCCEEDED and "approved" in (record.result or "")
