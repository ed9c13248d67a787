"""The endpoint: a function URL event in, the operation's answer out. Route by method and path, check the
caller's class of operation (and, for a tenant-scoped caller, the execution's tenant), read and check the
request, run it on the engine, and answer in the model's shape or with the modeled error. A request never
sees a Python error: anything unexpected is a ServiceException (500) and the log says which kind of error
it was, never what the request carried."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from stepwell.core.engine import Engine
from stepwell.features.callback_urls import error_kind
from stepwell.features.lambda_api import callbacks, executions, invoke, lifecycle, listing
from stepwell.features.lambda_api.access import caller_of
from stepwell.features.lambda_api.context import ApiContext, ApiSettings
from stepwell.features.lambda_api.errors import ApiError, translate
from stepwell.features.lambda_api.routes import route
from stepwell.features.lambda_api.wire import MAX_RESPONSE_BYTES, Request, Response
from stepwell.model import ExecutionId

logger = logging.getLogger(__name__)

Operation = Callable[[ApiContext, Request, dict[str, str]], Response]

OPERATIONS: dict[str, Operation] = {
    "Invoke": invoke.invoke,
    "GetDurableExecution": executions.get_execution,
    "GetDurableExecutionHistory": executions.get_history,
    "GetDurableExecutionState": executions.get_state,
    "ListDurableExecutionsByFunction": listing.list_by_function,
    "StopDurableExecution": executions.stop,
    "CheckpointDurableExecution": executions.checkpoint,
    "PauseDurableExecution": lifecycle.pause,
    "ResumeDurableExecution": lifecycle.resume,
    "DeleteDurableExecution": lifecycle.delete,
    "SendDurableExecutionCallbackSuccess": callbacks.succeed,
    "SendDurableExecutionCallbackFailure": callbacks.fail,
    "SendDurableExecutionCallbackHeartbeat": callbacks.heartbeat,
}
MAX_RESOURCE_SHOWN = 300


class LambdaApiHandler:
    """Answers function URL events (payload format 2.0, AWS_IAM auth) with the durable execution API."""

    def __init__(
        self,
        engine: Engine,
        settings: ApiSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.sleep = sleep
        self.monotonic = monotonic

    def handle(self, event: Any, remaining_seconds: float | None = None) -> dict[str, Any]:
        """The function URL response for `event`; `remaining_seconds`: the time the invocation has left."""
        started = self.monotonic()
        operation = "-"
        caller = caller_of(event) if isinstance(event, dict) else None
        try:
            request = Request.from_event(event)
            found = route(request.method, request.path)
            operation = found.operation.name
            params = found.params
            resource = params.get("execution") or params.get("function") or params.get("callback") or "*"
            if len(resource) > MAX_RESOURCE_SHOWN:
                resource = resource[:MAX_RESOURCE_SHOWN] + "..."
            self.settings.access.check(caller, found.operation.kind, operation, resource)
            scope = self.settings.tenants.scope_of(caller)
            api = ApiContext(
                self.engine, self.settings, self.sleep, self.monotonic, remaining_seconds, started, scope
            )
            if scope is not None and not scope.tenants:
                raise scope.refusal(operation, resource)  # limits with no tenant in common: nothing to reach
            if scope is not None and "execution" in params:
                # The ARN names the tenant: refused before anything is read, whether it exists or not.
                execution_id = api.arns.execution_id(params["execution"])
                scope.check(ExecutionId.parse(execution_id).domain, operation, params["execution"])
            response = OPERATIONS[operation](api, request, params)
        except Exception as error:
            refused = translate(error, operation)
            if refused.status >= 500:
                logger.error("lambda api: %s failed (%s)", operation, error_kind(error))
            response = Response.error(refused)
        if len(response.body) > MAX_RESPONSE_BYTES:
            response = Response.error(
                ApiError(
                    "ServiceException",
                    f"the answer is {len(response.body)} bytes, over what a function URL carries "
                    f"({MAX_RESPONSE_BYTES}); ask for less (IncludeExecutionData=false, a smaller MaxItems)",
                )
            )
        logger.info(
            "lambda api: %s by %s: %d%s in %.0f ms",
            operation,
            caller.arn if caller is not None else "no signed caller",
            response.status,
            f" {response.headers['x-amzn-ErrorType']}" if "x-amzn-ErrorType" in response.headers else "",
            (self.monotonic() - started) * 1000,
        )
        return response.to_function_url()
