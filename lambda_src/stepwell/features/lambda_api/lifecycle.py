"""PauseDurableExecution, ResumeDurableExecution and DeleteDurableExecution: the one place that wires
them to the engine. Their requests are read and checked here as the model defines them (the execution's
ARN, ClientToken, Reason, ExecutionTimeoutPaused), then each calls the engine (stepwell.core.lifecycle:
Engine.pause_execution, resume_execution, delete_execution) and answers the model's shape: 202 with an
empty body for pause and resume (also when it was paused, or not paused, already: a repeat succeeds), 202
with DeletionRequestTimestamp for delete. A status that does not allow the request (a pause or resume of an
ended execution, a delete of one that has not ended) is ResourceConflictException.
"""

from __future__ import annotations

from stepwell.errors import ExecutionStateConflict
from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import ApiError, invalid
from stepwell.features.lambda_api.wire import Request, Response, client_token

MAX_REASON_LENGTH = 1024


def _read(api: ApiContext, request: Request, params: dict[str, str], with_timeout: bool) -> str:
    """The execution's id, once the body (ClientToken, Reason, and ExecutionTimeoutPaused for a pause) is
    as the model allows and the execution exists."""
    execution_id = api.arns.execution_id(params["execution"])
    body = request.json_object("request") or {}
    allowed = {"ClientToken", "Reason", *(["ExecutionTimeoutPaused"] if with_timeout else [])}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise invalid(f"unknown request fields {unknown}; allowed: {sorted(allowed)}")
    client_token(body)  # checked as the model bounds it; a repeated call changes nothing anyway
    reason = body.get("Reason")
    if reason is not None and not (isinstance(reason, str) and len(reason) <= MAX_REASON_LENGTH):
        raise invalid(f"Reason must be a string of at most {MAX_REASON_LENGTH} characters")
    paused = body.get("ExecutionTimeoutPaused")
    if paused is not None and not isinstance(paused, bool):
        raise invalid(f"ExecutionTimeoutPaused must be true or false, got {paused!r}")
    api.engine.describe_execution(execution_id)  # ResourceNotFoundException for an unknown one
    return execution_id


def _conflict(error: ExecutionStateConflict) -> ApiError:
    return ApiError("ResourceConflictException", str(error))


def pause(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = _read(api, request, params, with_timeout=True)
    body = request.json_object("request") or {}
    timeout_paused = body.get("ExecutionTimeoutPaused")
    try:
        api.engine.pause_execution(
            execution_id, body.get("Reason"), True if timeout_paused is None else timeout_paused
        )
    except ExecutionStateConflict as error:
        raise _conflict(error) from None
    return Response(202)


def resume(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = _read(api, request, params, with_timeout=False)
    body = request.json_object("request") or {}
    try:
        api.engine.resume_execution(execution_id, body.get("Reason"))
    except ExecutionStateConflict as error:
        raise _conflict(error) from None
    return Response(202)


def delete(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = api.arns.execution_id(params["execution"])
    if request.json_object("request"):
        raise invalid("DeleteDurableExecution takes no body")
    try:
        requested_at = api.engine.delete_execution(execution_id)
    except ExecutionStateConflict as error:
        raise _conflict(error) from None
    return Response.json({"DeletionRequestTimestamp": requested_at}, status=202)
