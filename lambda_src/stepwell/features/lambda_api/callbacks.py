"""SendDurableExecutionCallbackSuccess, ...Failure and ...Heartbeat on the engine's callback senders
(Engine.send_callback_success, send_callback_failure, send_callback_heartbeat).

The result of a success is the request's body as sent (the model's `Result` blob: the handler receives it
as text, as on AWS); a failure's body is an ErrorObject. A tenant-scoped caller (tenants.py) sends only
callbacks of its tenants' executions. An unknown callback id is ResourceNotFoundException;
one that completed or timed out, or whose execution has ended, CallbackTimeoutException (AWS: "the callback
... has already been closed").
"""

from __future__ import annotations

import re

from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import invalid
from stepwell.features.lambda_api.wire import Request, Response
from stepwell.model import ExecutionId

# AWS's callback ids are base64; Stepwell's are "cb" and URL-safe base64: either alphabet, bounded.
_CALLBACK_ID = re.compile(r"[A-Za-z0-9+/_-]{1,1024}={0,2}")


def _callback_id(api: ApiContext, params: dict[str, str], operation: str) -> str:
    callback_id = params["callback"]
    if not _CALLBACK_ID.fullmatch(callback_id):
        shown = callback_id if len(callback_id) <= 80 else callback_id[:80] + "..."
        raise invalid(f"CallbackId {shown!r} is no callback id: 1 to 1024 base64 characters")
    if api.scope is not None:
        # A callback id names no tenant: its record says whose execution it belongs to. An unknown id is
        # refused as another tenant's is, so a limited caller cannot tell them apart.
        ref = api.engine.store.get_callback(callback_id)
        if ref is None or not api.scope.allows(ExecutionId.parse(ref.execution_id).domain):
            raise api.scope.refusal(operation, callback_id)
    return callback_id


def succeed(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    callback_id = _callback_id(api, params, "SendDurableExecutionCallbackSuccess")
    api.engine.send_callback_success(callback_id, request.body or None)
    return Response(200)


def fail(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    callback_id = _callback_id(api, params, "SendDurableExecutionCallbackFailure")
    api.engine.send_callback_failure(callback_id, request.json_object("callback error"))
    return Response(200)


def heartbeat(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    callback_id = _callback_id(api, params, "SendDurableExecutionCallbackHeartbeat")
    if request.json_object("heartbeat request"):
        raise invalid("SendDurableExecutionCallbackHeartbeat takes no body (or an empty JSON object)")
    api.engine.send_callback_heartbeat(callback_id)
    return Response(200)
