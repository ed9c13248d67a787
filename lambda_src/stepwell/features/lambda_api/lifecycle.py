"""PauseDurableExecution, ResumeDurableExecution and DeleteDurableExecution: the one place that wires
them to the engine. Their requests are read and checked here as the model defines them (the execution's
ARN, ClientToken, Reason, ExecutionTimeoutPaused); the engine has no pause, resume or delete yet, so an
existing execution's request is answered with InvalidParameterValueException saying so (a client error:
an SDK does not retry it). Once the engine has them, each function calls it and answers the model's shape:
202 with an empty body for pause and resume, 202 with DeletionRequestTimestamp for delete.
"""

from __future__ import annotations

import re

from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import ApiError, invalid
from stepwell.features.lambda_api.wire import Request, Response

MAX_REASON_LENGTH = 1024
_CLIENT_TOKEN = re.compile(r"[\x21-\x7e]{1,64}")


def _read(api: ApiContext, request: Request, params: dict[str, str], with_timeout: bool) -> str:
    """The execution's id, once the body (ClientToken, Reason, and ExecutionTimeoutPaused for a pause) is
    as the model allows and the execution exists."""
    execution_id = api.arns.execution_id(params["execution"])
    body = request.json_object("request") or {}
    allowed = {"ClientToken", "Reason", *(["ExecutionTimeoutPaused"] if with_timeout else [])}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise invalid(f"unknown request fields {unknown}; allowed: {sorted(allowed)}")
    token = body.get("ClientToken")
    if token is not None and not (isinstance(token, str) and _CLIENT_TOKEN.fullmatch(token)):
        raise invalid("ClientToken must be 1 to 64 printable ASCII characters without spaces")
    reason = body.get("Reason")
    if reason is not None and not (isinstance(reason, str) and len(reason) <= MAX_REASON_LENGTH):
        raise invalid(f"Reason must be a string of at most {MAX_REASON_LENGTH} characters")
    paused = body.get("ExecutionTimeoutPaused")
    if paused is not None and not isinstance(paused, bool):
        raise invalid(f"ExecutionTimeoutPaused must be true or false, got {paused!r}")
    api.engine.describe_execution(execution_id)  # ResourceNotFoundException for an unknown one
    return execution_id


def _not_yet(api: ApiContext, operation: str, execution_id: str) -> ApiError:
    return invalid(
        f"{operation} of {api.arns.execution_arn(execution_id)} is not available: this Stepwell deployment "
        "does not pause, resume or delete executions yet (StopDurableExecution ends one)"
    )


def pause(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = _read(api, request, params, with_timeout=True)
    raise _not_yet(api, "PauseDurableExecution", execution_id)


def resume(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = _read(api, request, params, with_timeout=False)
    raise _not_yet(api, "ResumeDurableExecution", execution_id)


def delete(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = api.arns.execution_id(params["execution"])
    if request.json_object("request"):
        raise invalid("DeleteDurableExecution takes no body")
    api.engine.describe_execution(execution_id)
    raise _not_yet(api, "DeleteDurableExecution", execution_id)
