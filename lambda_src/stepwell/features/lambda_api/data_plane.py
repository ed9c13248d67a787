"""CheckpointDurableExecution and GetDurableExecutionState on the wire (botocore's `lambda` model): the
SDKs' two calls from a remote durable function the worker invoked (issue 41). The token checks, the
updates' rules and the paging are the engine's (stepwell.core.remote_checkpoints); this module reads the
request as hostile input (bounded, validated) and writes the model's answer.
"""

from __future__ import annotations

import re
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import Operation, OperationUpdate

from stepwell.core.arns import as_handed
from stepwell.core.remote_checkpoints import (
    INVALID_TOKEN,
    MAX_CHECKPOINT_BYTES,
    MAX_CHECKPOINT_UPDATES,
    RemoteCheckpoints,
)
from stepwell.core.remote_functions import decode_token
from stepwell.errors import StaleCheckpointToken
from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import ApiError, invalid
from stepwell.features.lambda_api.wire import Request, Response, client_token
from stepwell.limits import PayloadOverLimit
from stepwell.model import ExecutionId

MAX_TOKEN_LENGTH = 2048
MAX_MARKER_LENGTH = 64
MAX_SHOWN = 300
# The ARN remote functions were handed before they were handed the API's (stepwell.core.arns): the id part
# is the execution's instance id (a key part). Still taken, with the token that names the execution, from an
# invocation that began before the change.
_REMOTE_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]{0,20}):lambda:(?P<region>[a-z0-9-]{1,32}):(?P<account>[0-9]{12}):"
    r"function:(?P<function>[A-Za-z0-9_.-]{1,64}):\$LATEST/durable-execution/[A-Za-z0-9_-]{1,64}/"
    r"(?P<id>[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127})"
)
# The model's OperationUpdate members and their types (an object's members likewise), checked before the
# SDK's from_dict builds it: a wrong type is the caller's error, never the engine's.
_UPDATE_FIELDS: dict[str, Any] = {
    "Id": str,
    "ParentId": str,
    "Name": str,
    "Type": str,
    "SubType": str,
    "Action": str,
    "Payload": str,
    "Error": {"ErrorType": str, "ErrorMessage": str, "ErrorData": str, "StackTrace": list},
    "ContextOptions": {"ReplayChildren": bool},
    "StepOptions": {"NextAttemptDelaySeconds": int},
    "WaitOptions": {"WaitSeconds": int},
    "CallbackOptions": {"TimeoutSeconds": int, "HeartbeatTimeoutSeconds": int},
    "ChainedInvokeOptions": {"FunctionName": str, "TenantId": str},
}


def execution_of(api: ApiContext, arn: str, token: str) -> str:
    """The execution a data-plane call names: the DurableExecutionArn as the worker handed it to the function
    (the API's ARN of the execution: any form the other operations take, ApiArns.execution_id) or, from an
    invocation that began before functions were handed that, the ARN ending with the instance id, which
    must name the token's execution."""
    match = _REMOTE_ARN.fullmatch(arn)
    decoded = decode_token(token)
    if match is not None and decoded is not None:
        here = (match["partition"], match["region"], match["account"])
        ids = ExecutionId.parse(decoded.execution_id)
        if (
            here == (api.arns.partition, api.arns.region, api.arns.account)
            and ids.workflow_id == match["function"]
            and ids.instance_id == match["id"]
        ):
            return decoded.execution_id
    try:
        return api.arns.execution_id(arn)
    except ApiError:
        if match is None:
            raise
    raise invalid(
        f"{INVALID_TOKEN}: the CheckpointToken is not the current one of {arn[:MAX_SHOWN]} (it belongs to "
        "another execution, or is no token of this deployment)"
    )


def get_state(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    max_items = request.query_int("MaxItems", 0, 1000) or 0
    marker = request.query_string("Marker", MAX_MARKER_LENGTH)
    token = _token(request.query_string("CheckpointToken", MAX_TOKEN_LENGTH))
    execution_id = execution_of(api, params["execution"], token)
    try:
        page = RemoteCheckpoints(api.engine).get_state(execution_id, token, marker, max_items)
    except StaleCheckpointToken as stale:
        raise invalid(str(stale)) from None
    answer: dict[str, Any] = {"Operations": _wire(page.operations, execution_id, params["execution"])}
    if page.next_marker is not None:
        answer["NextMarker"] = page.next_marker
    return Response.json(answer)


def checkpoint(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    if len(request.body) > MAX_CHECKPOINT_BYTES:
        raise ApiError(
            "RequestTooLargeException",
            f"the checkpoint request is {len(request.body)} bytes; at most {MAX_CHECKPOINT_BYTES}",
        )
    body = request.json_object("checkpoint request") or {}
    unknown = sorted(set(body) - {"CheckpointToken", "Updates", "ClientToken"})
    if unknown:
        raise invalid(
            f"unknown checkpoint request fields {unknown[:5]}; allowed: CheckpointToken, Updates, ClientToken"
        )
    token = _token(body.get("CheckpointToken"))
    execution_id = execution_of(api, params["execution"], token)
    token_of_retry = client_token(body)
    updates = _updates(body.get("Updates"))
    try:
        answer = RemoteCheckpoints(api.engine).checkpoint(execution_id, token, updates, token_of_retry)
    except (StaleCheckpointToken, PayloadOverLimit) as refused:
        raise invalid(str(refused)) from None
    except ValueError as error:  # an update the journal's rules refuse (an action its type has not)
        raise invalid(f"Updates: {error}") from None
    operations = _wire(answer.operations, execution_id, params["execution"])
    result: dict[str, Any] = {"NewExecutionState": {"Operations": operations}}
    if answer.token is not None:
        result["CheckpointToken"] = answer.token
    return Response.json(result)


def _token(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_TOKEN_LENGTH:
        raise invalid(f"CheckpointToken is required: 1 to {MAX_TOKEN_LENGTH} characters")
    return value


def _updates(value: object) -> list[OperationUpdate]:
    """The request's Updates as the SDK's OperationUpdate, each checked for its required fields."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid(f"Updates must be a list of operation updates, got {type(value).__name__}")
    if len(value) > MAX_CHECKPOINT_UPDATES:
        raise invalid(f"Updates has {len(value)} updates; at most {MAX_CHECKPOINT_UPDATES} per checkpoint")
    updates = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise invalid(f"Updates[{index}] must be an object, got {type(item).__name__}")
        _check_fields(f"Updates[{index}]", item, _UPDATE_FIELDS)
        try:
            update = OperationUpdate.from_dict(item)
        except (KeyError, ValueError, TypeError, AttributeError) as error:
            raise invalid(
                f"Updates[{index}] is no operation update (Id, Type and Action are required): {error}"
            ) from None
        if not 1 <= len(update.operation_id) <= 64:
            raise invalid(f"Updates[{index}].Id must be 1 to 64 characters")
        updates.append(update)
    return updates


def _check_fields(where: str, item: dict[str, Any], fields: dict[str, Any]) -> None:
    """InvalidParameterValueException naming the member of `item` that is unknown or of the wrong type."""
    for key, value in item.items():
        expected = fields.get(key)
        if expected is None:
            raise invalid(f"{where} has an unknown member {str(key)[:64]!r}; allowed: {', '.join(fields)}")
        if value is None:
            continue
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                raise invalid(f"{where}.{key} must be an object")
            _check_fields(f"{where}.{key}", value, expected)
        elif not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise invalid(f"{where}.{key} must be a {expected.__name__}, got {type(value).__name__}")


def _wire(operations: list[Operation], execution_id: str, arn: str) -> list[dict[str, Any]]:
    """Operations as the model's Operation (timestamps as datetimes: Response writes epoch seconds), as
    the function holding `arn` is handed them (the EXECUTION operation under the ARN's last segment)."""
    return [dict(op.to_dict()) for op in as_handed(operations, execution_id=execution_id, arn=arn)]


__all__ = ["checkpoint", "get_state"]
