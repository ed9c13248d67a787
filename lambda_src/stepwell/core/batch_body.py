"""How a batch body is written and read: the JSON object a log batch stores (its keys:
stepwell.core.batch_keys), with the SDK's Operation JSON for operations and compact history events.

The journal (stepwell.core.journal_state) folds bodies and flushes its changes as one; the engine reads and
writes them (stepwell.core.log_io); the history restores events from them (stepwell.core.history).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import Operation, OperationType

from stepwell.core.batch_keys import (
    ABSORBED_INPUTS,
    EVENT_DETAILS,
    EVENT_IDENTITY,
    EVENT_OPERATION,
    EVENT_RESULT_OF_OPERATION,
    EVENT_STAMP,
    EVENT_TYPE,
    EVENTS,
    INPUT_REF,
    OPERATIONS,
    PRIVATE_STATE,
)

# A history event as the journal keeps it until its flush: (type, epoch ms, operation id, details).
PendingEvent = tuple[str, int, str | None, dict[str, Any]]


def operation_to_json(op: Operation) -> dict[str, Any]:
    return dict(op.to_json_dict())


def operation_from_json(data: dict[str, Any]) -> Operation:
    # The dict was just parsed from JSON and is ours: convert timestamps in place (no deep copy).
    for key in ("StartTimestamp", "EndTimestamp"):
        if (value := data.get(key)) is not None:
            data[key] = datetime.fromtimestamp(value / 1000, tz=UTC)
    if (step := data.get("StepDetails")) and (value := step.get("NextAttemptTimestamp")) is not None:
        step["NextAttemptTimestamp"] = datetime.fromtimestamp(value / 1000, tz=UTC)
    if (wait := data.get("WaitDetails")) and (value := wait.get("ScheduledEndTimestamp")) is not None:
        wait["ScheduledEndTimestamp"] = datetime.fromtimestamp(value / 1000, tz=UTC)
    return Operation.from_dict(data)


def stored_event(
    event: PendingEvent,
    positions: dict[str, int],
    stored_operations: list[dict[str, Any]],
    operations: Mapping[str, Operation],
) -> dict[str, Any]:
    """An event as stored: {EVENT_TYPE: type, EVENT_STAMP: epoch ms, EVENT_OPERATION: index of its
    operation in this batch (`positions`, of `stored_operations`), EVENT_DETAILS: details,
    EVENT_RESULT_OF_OPERATION: 1 when Result.Payload is the operation's stored result}. The operation's Id,
    Name, SubType and ParentId and a repeated result are not stored twice (stepwell.core.history restores
    them), which keeps a step's batch under one DynamoDB write unit. An operation the batch did not change
    keeps its identity in the event itself (EVENT_IDENTITY, from `operations`)."""
    event_type, stamp, op_id, details = event
    stored: dict[str, Any] = {EVENT_TYPE: event_type, EVENT_STAMP: stamp}
    if op_id is not None:
        index = positions.get(op_id)
        if index is None:
            op = operations[op_id]
            stored[EVENT_IDENTITY] = {
                "Id": op_id,
                "Name": op.name,
                "SubType": op.sub_type,
                "ParentId": op.parent_id,
            }
        else:
            stored[EVENT_OPERATION] = index
            result = details.get("Result")
            payload = result.get("Payload") if isinstance(result, dict) else None
            if (
                isinstance(result, dict)
                and payload is not None
                and payload == operation_result(stored_operations[index])
            ):
                details = {**details, "Result": {k: v for k, v in result.items() if k != "Payload"}}
                stored[EVENT_RESULT_OF_OPERATION] = 1
    if details:
        stored[EVENT_DETAILS] = details
    return stored


def after_carried(carried: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """One batch body of a carried batch followed by `body`: the carried operations, events and private
    state first (an operation in both ends as `body` has it, as folding them in turn would), `body`'s
    events renumbered to name their operations by position in the joined OPERATIONS, and `body`'s flags
    over the carried ones."""
    carried_operations = carried.get(OPERATIONS, [])
    joined = {**carried, **body}
    operations = [*carried_operations, *body.get(OPERATIONS, [])]
    if operations:
        joined[OPERATIONS] = operations
    shift = len(carried_operations)
    events = [
        *carried.get(EVENTS, []),
        *(
            {**event, EVENT_OPERATION: event[EVENT_OPERATION] + shift} if EVENT_OPERATION in event else event
            for event in body.get(EVENTS, [])
        ),
    ]
    if events:
        joined[EVENTS] = events
    meta = {**carried.get(PRIVATE_STATE, {}), **body.get(PRIVATE_STATE, {})}
    if meta:
        joined[PRIVATE_STATE] = meta
    absorbed = [*carried.get(ABSORBED_INPUTS, []), *body.get(ABSORBED_INPUTS, [])]
    if absorbed:
        joined[ABSORBED_INPUTS] = absorbed
    return joined


def operation_result(stored_operation: dict[str, Any]) -> str | None:
    """The result payload inside a stored operation (its type's details), if any."""
    for key in ("StepDetails", "ContextDetails", "CallbackDetails", "ChainedInvokeDetails"):
        details = stored_operation.get(key)
        if isinstance(details, dict):
            result = details.get("Result")
            return result if isinstance(result, str) else None
    return None


def strip_execution_input(body: dict[str, Any], input_ref: str) -> None:
    """Store the reference of an offloaded execution input in place of the input (the EXECUTION
    operation and ExecutionStarted carry it; each would otherwise be a copy of the whole input)."""
    stripped = False
    for op in body.get(OPERATIONS, ()):
        details = op.get("ExecutionDetails")
        if op.get("Type") == OperationType.EXECUTION.value and isinstance(details, dict):
            details.pop("InputPayload", None)
            stripped = True
    for event in body.get(EVENTS, ()):
        if _started_with_input(event):
            event[EVENT_DETAILS]["Input"].pop("Payload", None)
            stripped = True
    if stripped:
        body[INPUT_REF] = input_ref


def restore_execution_input(body: dict[str, Any], input_payload: str) -> None:
    """Undo strip_execution_input on a loaded body, given the input its INPUT_REF reference names."""
    for op in body.get(OPERATIONS, ()):
        if op.get("Type") == OperationType.EXECUTION.value and isinstance(op.get("ExecutionDetails"), dict):
            op["ExecutionDetails"]["InputPayload"] = input_payload
    for event in body.get(EVENTS, ()):
        if _started_with_input(event):
            event[EVENT_DETAILS]["Input"]["Payload"] = input_payload


def _started_with_input(event: dict[str, Any]) -> bool:
    """Whether a stored event is an ExecutionStarted whose details hold an Input."""
    return event.get(EVENT_TYPE) == "ExecutionStarted" and isinstance(
        event.get(EVENT_DETAILS, {}).get("Input"), dict
    )


def encode_body(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"))


def decode_body(text: str) -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"a batch body must be a JSON object, got {type(data).__name__}")
    return data
