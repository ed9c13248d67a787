"""Offloaded payloads on the local backend: stored once, never retired while the execution runs, all
retired when it ends (also when the worker dies between the end and retiring them).

The S3 side (what retiring does to an object, and the bucket's lifecycle rule expiring only retired
objects) is tested in tests/adapters/test_payloads_queue_timers.py and, on the deployed stack, in
tests/deploy/test_payload_retention_deployed.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.errors import ExecutionAlreadyExists, PayloadMissing
from stepwell.model import ExecutionStatus, OutcomeAction
from stepwell.testing.local import LocalStepwell

BIG = 240 * 1024  # over the engine's inline limit (offloaded), within the payload limits (256 KiB)


@durable_execution
def long_wait(event: dict[str, Any], context: DurableContext) -> dict[str, int]:
    def big_result(_: StepContext) -> str:
        return "r" * BIG

    result = context.step(big_result, name="big-result")
    context.wait(Duration.from_days(31))
    approval = context.create_callback(name="approval").result()
    context.wait(Duration.from_days(31))
    return {"input": len(event["blob"]), "result": len(result), "callback": len(approval or "")}


def _start(local: LocalStepwell) -> str:
    local.register("payloads.long_wait", long_wait)
    return local.start("payloads.long_wait", {"blob": "i" * BIG}, execution_name="long")


def _send_callback_once(execution_id: str) -> Any:
    sent: list[str] = []

    def on_idle(local: LocalStepwell) -> bool:
        if sent:
            return False
        # While the execution waits: nothing of it has been retired yet.
        assert local.payloads.references(execution_id)
        assert not local.payloads.retired
        try:
            sent.append(local.callback_id(execution_id, "approval"))
        except LookupError:  # still in the first wait
            return False
        local.engine.send_callback_success(sent[0], "c" * BIG)
        return True

    return on_idle


def test_an_offloaded_input_is_stored_once_and_every_payload_is_retired_only_at_the_end(
    stepwell_local: LocalStepwell,
) -> None:
    execution_id = _start(stepwell_local)

    record = stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "{}") == {"input": BIG, "result": BIG, "callback": BIG}
    references = stepwell_local.payloads.references(execution_id)
    holding_input = [ref for ref in references if "i" * BIG in stepwell_local.payloads.get(ref)]
    assert len(holding_input) == 1, f"the input is stored in {holding_input}"
    assert stepwell_local.payloads.retired == set(references)
    # The input still reads back where the log refers to it instead of copying it.
    assert stepwell_local.describe(execution_id)["InputPayload"] == json.dumps({"blob": "i" * BIG})
    started = stepwell_local.history(execution_id)[0]
    assert started["ExecutionStartedDetails"]["Input"]["Payload"] == json.dumps({"blob": "i" * BIG})


def test_a_worker_that_dies_before_retiring_leaves_it_to_the_next_message(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution_id = _start(stepwell_local)
    payloads = stepwell_local.payloads
    retire = payloads.retire

    def dies(_: str) -> int:
        raise SystemExit("the worker's process died after logging the end")

    monkeypatch.setattr(payloads, "retire", dies)
    with pytest.raises(SystemExit):
        stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))
    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert not payloads.retired

    monkeypatch.setattr(payloads, "retire", retire)
    outcome = stepwell_local.worker.run(execution_id)  # SQS delivers the message again

    assert outcome.details == {"reason": "ended"}
    assert payloads.retired == set(payloads.references(execution_id))


def test_a_message_for_an_ended_execution_whose_payloads_expired_is_done_not_retried(
    stepwell_local: LocalStepwell,
) -> None:
    # S3's lifecycle rule and the tables' TTL both start at the end, but neither is exact: the payloads
    # may be gone while the execution's items are still there, and a late message must not fail forever.
    execution_id = _start(stepwell_local)
    stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))
    payloads = stepwell_local.payloads
    for reference in payloads.references(execution_id):
        payloads.expire(reference)

    outcome = stepwell_local.worker.run(execution_id)  # a duplicated or late message

    assert outcome.action is OutcomeAction.IGNORED
    assert outcome.details == {"reason": "ended; payloads expired"}
    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    with pytest.raises(PayloadMissing):
        stepwell_local.describe(execution_id)


def test_starting_an_ended_execution_again_leaves_its_payloads_retired(stepwell_local: LocalStepwell) -> None:
    execution_id = _start(stepwell_local)
    stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))

    # The same start again (idempotent) returns the execution and writes nothing.
    assert _start(stepwell_local) == execution_id

    assert stepwell_local.payloads.retired == set(stepwell_local.payloads.references(execution_id))


def _count_writes(local: LocalStepwell, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The payload store's puts and retires, by execution id."""
    writes: list[str] = []
    put, retire = local.payloads.put, local.payloads.retire

    def counting_put(execution_id: str, label: str, data: str) -> str:
        writes.append(f"put {label}")
        return put(execution_id, label, data)

    def counting_retire(execution_id: str) -> int:
        writes.append("retire")
        return retire(execution_id)

    monkeypatch.setattr(local.payloads, "put", counting_put)
    monkeypatch.setattr(local.payloads, "retire", counting_retire)
    return writes


def test_a_refused_start_under_an_ended_name_writes_no_payload(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A different large input under an ended execution's name: refused, and nothing is put or retired
    (a put is a new object, whose retention would start again), however often it is retried."""
    execution_id = _start(stepwell_local)
    stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))
    references = stepwell_local.payloads.references(execution_id)
    assert references and stepwell_local.payloads.retired == set(references)
    writes = _count_writes(stepwell_local, monkeypatch)

    for _ in range(2):
        with pytest.raises(ExecutionAlreadyExists, match=r"'long'.*already exists with a different input"):
            stepwell_local.start("payloads.long_wait", {"blob": "j" * BIG}, execution_name="long")
    assert writes == []
    assert stepwell_local.payloads.references(execution_id) == references
    assert stepwell_local.payloads.retired == set(references)


def test_an_accepted_start_puts_its_input_once_and_a_start_that_died_before_the_put_is_repaired_by_its_retry(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record names its input's object before the object is put: a start that dies in between left no
    message either, and its caller's retry (the same start) puts the object and sends the message."""
    stepwell_local.register("payloads.long_wait", long_wait)
    writes = _count_writes(stepwell_local, monkeypatch)
    put = stepwell_local.payloads.put
    failing = {"left": 1}

    def dies_once(execution_id: str, label: str, data: str) -> str:
        if failing["left"]:
            failing["left"] -= 1
            raise ConnectionError("the process died before the put")
        return put(execution_id, label, data)

    monkeypatch.setattr(stepwell_local.payloads, "put", dies_once)
    with pytest.raises(ConnectionError):
        stepwell_local.start("payloads.long_wait", {"blob": "i" * BIG}, execution_name="long")
    (created,) = stepwell_local.engine.list_executions(workflow="payloads.long_wait").items
    assert stepwell_local.payloads.references(created.execution_id) == []
    monkeypatch.setattr(stepwell_local.payloads, "put", put)

    execution_id = _start(stepwell_local)  # the caller's retry
    assert execution_id == created.execution_id
    assert len(stepwell_local.payloads.references(execution_id)) == 1
    record = stepwell_local.run_to_completion(execution_id, on_idle=_send_callback_once(execution_id))
    assert record.status is ExecutionStatus.SUCCEEDED
    assert writes.count("put input") == 1  # the retry's one put (the attempt that died wrote nothing)


@durable_execution
def small(event: dict[str, Any], context: DurableContext) -> str:
    return context.step(lambda _: "done", name="only-step")


@durable_execution
def waits_for_approval(event: dict[str, Any], context: DurableContext) -> str | None:
    result: str | None = context.create_callback(name="approval").result()
    return result


def _count_retires(local: LocalStepwell, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    retire = local.payloads.retire

    def counting(execution_id: str) -> int:
        calls.append(execution_id)
        return retire(execution_id)

    monkeypatch.setattr(local.payloads, "retire", counting)
    return calls


def test_an_execution_that_offloaded_nothing_does_not_look_for_payloads_to_retire(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Retiring lists the execution's folder (a ListObjectsV2 on S3): most executions have nothing there.
    calls = _count_retires(stepwell_local, monkeypatch)
    stepwell_local.register("payloads.small", small)
    execution_id = stepwell_local.start("payloads.small", {"n": 1})

    record = stepwell_local.run_to_completion(execution_id)
    stepwell_local.engine.queue.enqueue({"kind": "invoke", "executionId": execution_id})  # a duplicate
    stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert stepwell_local.payloads.references(execution_id) == []
    assert calls == []


def test_a_pending_offloaded_callback_payload_of_a_stopped_execution_is_retired(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_retires(stepwell_local, monkeypatch)
    stepwell_local.register("payloads.waits_for_approval", waits_for_approval)
    execution_id = stepwell_local.start("payloads.waits_for_approval", {"n": 1})
    sent: list[str] = []

    def complete_then_stop(local: LocalStepwell) -> bool:
        if sent:
            return False
        sent.append(local.callback_id(execution_id, "approval"))
        # The big result is offloaded at once; the stop ends the execution before it is absorbed.
        local.engine.send_callback_success(sent[0], "c" * BIG)
        local.engine.stop_execution(execution_id)
        return True

    record = stepwell_local.run_to_completion(execution_id, on_idle=complete_then_stop)

    assert record.status is ExecutionStatus.STOPPED
    references = stepwell_local.payloads.references(execution_id)
    assert references and stepwell_local.payloads.retired == set(references)
    assert calls and set(calls) == {execution_id}
