"""The journal (log fold, events, idempotent completions) and the service client's fencing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.lambda_service import (
    CallbackOptions,
    ErrorObject,
    OperationAction,
    OperationStatus,
    OperationType,
    OperationUpdate,
    WaitOptions,
)
from stepwell.core import batch_keys
from stepwell.core.journal import Journal, decode_body
from stepwell.core.registry import Registry
from stepwell.core.service import StoreServiceClient
from stepwell.core.worker import parse_invoke_message
from stepwell.errors import DuplicateWorkflow, InvalidMessage, InvalidWorkflowName, SequenceConflict
from stepwell.model import Batch, ExecutionRecord, ExecutionStatus, ExternalInput, InputKind
from stepwell.testing.local import LocalStepwell

EXECUTION = "default#wf#subject/instance"
NOW = 1_800_000_000.0


def update(op_id: str, op_type: OperationType, action: OperationAction, **fields: Any) -> OperationUpdate:
    return OperationUpdate(
        operation_id=op_id, operation_type=op_type, action=action, name=f"name-{op_id}", **fields
    )


STEP, WAIT, CALLBACK = OperationType.STEP, OperationType.WAIT, OperationType.CALLBACK
START, SUCCEED, FAIL = OperationAction.START, OperationAction.SUCCEED, OperationAction.FAIL


def test_a_repeated_succeed_of_a_finished_step_is_a_no_op() -> None:
    journal = Journal(EXECUTION)
    journal.apply_update(update("a", STEP, START), NOW)
    journal.apply_update(update("a", STEP, SUCCEED, payload='"first"'), NOW)
    journal.apply_update(update("a", STEP, SUCCEED, payload='"second"'), NOW + 1)
    journal.apply_update(update("a", STEP, FAIL, error=ErrorObject("late", "Late", None, None)), NOW + 2)

    body = journal.flush().body
    assert [event["t"] for event in body["e"]] == ["StepStarted", "StepSucceeded"]
    operation = journal.operations["a"]
    assert operation.status is OperationStatus.SUCCEEDED
    assert operation.step_details is not None and operation.step_details.result == '"first"'


def test_folding_the_flushed_batches_rebuilds_the_same_state() -> None:
    journal = Journal(EXECUTION)
    journal.start_execution('{"x": 1}', NOW)
    journal.apply_update(update("a", STEP, START), NOW)
    journal.apply_update(update("a", STEP, SUCCEED, payload="42"), NOW)
    first = journal.flush().body
    journal.apply_update(update("w", WAIT, START, wait_options=WaitOptions(wait_seconds=60)), NOW + 1)
    second = journal.flush().body

    folded = Journal(EXECUTION)
    for seq, body in enumerate([first, second]):
        folded.fold(seq, decode_body(json.dumps(body)))
    folded.finish_loading()

    assert folded.operations == journal.operations
    assert folded.next_event_id == journal.next_event_id == 5
    assert folded.next_wake_at() == pytest.approx(NOW + 61)


def test_due_timers_complete_waits_and_time_out_callbacks_in_order() -> None:
    journal = Journal(EXECUTION)
    journal.apply_update(update("w", WAIT, START, wait_options=WaitOptions(wait_seconds=10)), NOW)
    journal.flush()

    assert journal.fire_due_timers(NOW + 5) == 0
    assert journal.fire_due_timers(NOW + 10) == 1
    events = journal.flush().body["e"]
    assert [event["t"] for event in events] == ["WaitSucceeded"]
    assert events[0]["d"] == {"Duration": 10}
    assert journal.next_wake_at() is None


def test_external_inputs_are_absorbed_once() -> None:
    journal = Journal(EXECUTION)
    journal.apply_update(update("cb", CALLBACK, START, callback_options=CallbackOptions()), NOW)
    journal.flush()
    success = ExternalInput("0001#a", InputKind.CALLBACK_SUCCEEDED, NOW, operation_id="cb", payload='"yes"')
    failure = ExternalInput(
        "0002#b", InputKind.CALLBACK_FAILED, NOW, operation_id="cb", error={"ErrorType": "X"}
    )

    assert journal.absorb([success, failure, success], NOW) == 1
    body = journal.flush().body
    assert [event["t"] for event in body["e"]] == ["CallbackSucceeded"]
    assert body["i"] == ["0001#a", "0002#b"]


def test_a_stale_invocation_is_fenced_by_the_log_sequence() -> None:
    local = LocalStepwell()
    record_id = "default#wf#s/i"
    local.store.create_execution(
        ExecutionRecord(
            execution_id=record_id,
            domain="default",
            workflow_id="wf",
            subject_id="s",
            instance_id="i",
            execution_name="i",
            status=ExecutionStatus.RUNNING,
            created_at=NOW,
            updated_at=NOW,
            input_payload="null",
        )
    )
    record = local.record(record_id)
    stale = local.engine.load_journal(record_id)
    stale.start_execution("null", NOW, "i")
    client = StoreServiceClient(local.engine, record, stale, owner="stale-worker")
    # A newer worker took seq 0 meanwhile.
    local.store.append_batch(record_id, Batch(seq=0, body="{}", created_at=NOW))

    output = client.checkpoint(record_id, client.token, [update("a", STEP, START)], None)

    assert output.checkpoint_token is None  # revoked: the SDK ends this invocation with PENDING
    assert client.fenced
    with pytest.raises(SequenceConflict):
        local.store.append_batch(record_id, Batch(seq=0, body="{}", created_at=NOW))


def test_registry_validates_names_and_duplicates() -> None:
    registry = Registry()

    @durable_execution
    def first(event: object, context: DurableContext) -> None:
        return None

    @durable_execution
    def second(event: object, context: DurableContext) -> None:
        return None

    registry.register("orders.v1", first)
    registry.register("orders.v1", first)  # the same handler again (module re-import) is fine
    with pytest.raises(DuplicateWorkflow, match=r"'orders\.v1' is already registered"):
        registry.register("orders.v1", second)
    for bad in ("", "1abc", "has space", "a" * 65, "slash/name"):
        with pytest.raises(InvalidWorkflowName, match="invalid workflow name"):
            registry.register(bad, first)


def test_non_engine_messages_are_rejected_with_the_reason() -> None:
    with pytest.raises(InvalidMessage, match="kind 'hello'"):
        parse_invoke_message({"kind": "hello"})
    with pytest.raises(InvalidMessage, match="executionId"):
        parse_invoke_message({"kind": "invoke", "executionId": 7})
    message = parse_invoke_message({"kind": "invoke", "executionId": EXECUTION, "dueAt": 5})
    assert message.execution_id == EXECUTION and message.due_at == 5.0


def test_the_batch_keys_are_the_stored_ones() -> None:
    """Stored batches depend on these exact strings (and the deflate dictionary repeats them)."""
    keys = {name: value for name, value in vars(batch_keys).items() if name.isupper()}
    assert keys == {
        "OPERATIONS": "o",
        "EVENTS": "e",
        "ABSORBED_INPUTS": "i",
        "PRIVATE_STATE": "d",
        "NEEDS_INVOCATION": "w",
        "CONSECUTIVE_CRASHES": "c",
        "ENDED": "z",
        "RESULT": "r",
        "ERROR": "x",
        "INPUT_REF": "ir",
        "CODE_VERSION": "v",
        "EXECUTION_TIMEOUT": "to",
        "PAYLOAD_OBJECTS": "po",
        "CLIENT_TOKEN": "ck",
        "EVENT_TYPE": "t",
        "EVENT_STAMP": "s",
        "EVENT_OPERATION": "o",
        "EVENT_IDENTITY": "id",
        "EVENT_DETAILS": "d",
        "EVENT_RESULT_OF_OPERATION": "r",
    }
