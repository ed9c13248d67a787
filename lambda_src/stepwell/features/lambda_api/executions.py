"""The operations on executions: GetDurableExecution, GetDurableExecutionHistory, StopDurableExecution
(ListDurableExecutionsByFunction: listing.py), and the SDK's own GetDurableExecutionState and
CheckpointDurableExecution (a remote durable function's calls: data_plane.py). Each translates the
engine's answer (Engine.describe_execution, get_execution_history_page, list_executions, stop_execution)
into the model's shape; none duplicates what the engine does."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stepwell.core.registry import MAX_EXECUTION_TIMEOUT_SECONDS
from stepwell.features.definitions.interpreter import INTERPRETER_NAME
from stepwell.features.lambda_api import data_plane
from stepwell.features.lambda_api.arns import LATEST, LATEST_PUBLISHED, QUALIFIER_PATTERN, FunctionRef
from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import invalid, not_found
from stepwell.features.lambda_api.wire import MAX_RESPONSE_BYTES, Request, Response

MAX_MARKER_LENGTH = 4096
_ERROR_FIELDS = ("ErrorType", "ErrorMessage", "ErrorData", "StackTrace")
# The events of the EXECUTION operation itself, which AWS's history names by that operation's Id.
_EXECUTION_EVENTS = frozenset(
    ("ExecutionStarted", "ExecutionSucceeded", "ExecutionFailed", "ExecutionTimedOut", "ExecutionStopped")
)
# The model's OperationId: an event's Id must match it, so a longer ARN segment is no Id there.
_OPERATION_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def error_object(error: object) -> dict[str, Any] | None:
    """An ErrorObject of the model from an engine's error (its four fields only)."""
    if not isinstance(error, Mapping):
        return None
    return {key: error[key] for key in _ERROR_FIELDS if error.get(key) is not None}


def get_execution(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = api.arns.execution_id(params["execution"])
    include = request.query_bool("IncludeExecutionData", True)
    described = api.engine.describe_execution(execution_id)
    answer: dict[str, Any] = {
        "DurableExecutionArn": api.arns.execution_arn(described["ExecutionId"]),
        "DurableExecutionName": described["ExecutionName"],
        "FunctionArn": api.arns.function_arn(described["WorkflowName"], described.get("Version")),
        "Status": described["Status"],
        "StartTimestamp": described["StartTimestamp"],
        "ExecutionDataIncluded": include,
        "DurableConfig": durable_config(api),
    }
    if described.get("EndTimestamp") is not None:
        answer["EndTimestamp"] = described["EndTimestamp"]
    version = described.get("Version") or (LATEST if api.engine.functions is None else None)
    if version is not None:
        answer["Version"] = version
    if include:
        if described.get("InputPayload") is not None:
            answer["InputPayload"] = described["InputPayload"]
        if described.get("Result") is not None:
            answer["Result"] = described["Result"]
        error = error_object(described.get("Error"))
        if error is not None:
            answer["Error"] = error
    pause = described.get("PauseDetails")
    if isinstance(pause, Mapping):
        answer["PauseDetails"] = pause_details(pause, include)
    if described.get("ExpectedExecutionTimeoutTimestamp") is not None:
        answer["ExpectedExecutionTimeoutTimestamp"] = described["ExpectedExecutionTimeoutTimestamp"]
    if described.get("TraceHeader") is not None:
        answer["TraceHeader"] = {"XAmznTraceId": described["TraceHeader"]}
    return Response.json(answer)


def pause_details(pause: Mapping[str, Any], include: bool) -> dict[str, Any]:
    """The model's PauseDetails from describe_execution's: its Reason only with execution data, as the
    model documents (a reason may hold what the data would)."""
    details = {
        "PauseRequestTimestamp": pause["PauseRequestTimestamp"],
        "ExecutionTimeoutPaused": pause["ExecutionTimeoutPaused"],
    }
    if include and pause.get("Reason") is not None:
        details["Reason"] = pause["Reason"]
    return details


def durable_config(api: ApiContext) -> dict[str, Any]:
    config: dict[str, Any] = {"RetentionPeriodInDays": api.settings.retention_days}
    if api.settings.kms_key_arn:
        config["KMSKeyArn"] = api.settings.kms_key_arn
    return config


def get_history(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = api.arns.execution_id(params["execution"])
    include = request.query_bool("IncludeExecutionData", True)
    reverse = request.query_bool("ReverseOrder", False)
    max_items = request.query_int("MaxItems", 0, 1000) or None
    marker = request.query_string("Marker", MAX_MARKER_LENGTH)
    # The EXECUTION operation's Id as GetDurableExecutionState and the handler name it (core.arns.as_handed):
    # the ARN's last segment, when it is short enough to be an OperationId (an execution id of at most 48
    # bytes); a longer one is left out, as the log keeps none for these events.
    handed = api.arns.execution_arn(execution_id).rsplit("/", 1)[-1]
    operation_id = handed if _OPERATION_ID.fullmatch(handed) else None
    while True:
        page = api.engine.get_execution_history_page(
            execution_id,
            include_execution_data=include,
            reverse_order=reverse,
            max_items=max_items,
            marker=marker,
        )
        events = [
            _started_with_timeout(_event_with_arns(api, _named(event, operation_id)))
            for event in page["Events"]
        ]
        answer: dict[str, Any] = {"Events": events}
        if page.get("NextMarker"):
            answer["NextMarker"] = page["NextMarker"]
        response = Response.json(answer)
        # A page the function URL could not carry is made smaller; the next one goes on from its end.
        if len(response.body) <= MAX_RESPONSE_BYTES or len(events) <= 1:
            return response
        max_items = max(1, len(events) // 2)


def _named(event: dict[str, Any], operation_id: str | None) -> dict[str, Any]:
    """An event of the EXECUTION operation with that operation's `Id` (the log keeps none for them)."""
    if operation_id is None or event.get("EventType") not in _EXECUTION_EVENTS:
        return event
    return {**event, "Id": operation_id}


def _event_with_arns(api: ApiContext, event: dict[str, Any]) -> dict[str, Any]:
    """A history event whose child execution (ChainedInvokeStarted) is named by its ARN."""
    details = event.get("ChainedInvokeStartedDetails")
    if not isinstance(details, dict) or not isinstance(details.get("DurableExecutionArn"), str):
        return event
    child: str = details["DurableExecutionArn"]
    try:
        arn = api.arns.execution_arn(child)
    except ValueError:
        return event
    return {**event, "ChainedInvokeStartedDetails": {**details, "DurableExecutionArn": arn}}


def _started_with_timeout(event: dict[str, Any]) -> dict[str, Any]:
    """ExecutionStartedDetails with the ExecutionTimeout the model requires: the engine's event has it only
    for a workflow with an execution_timeout; one without answers the model's longest (366 days), which
    Stepwell never ends it at (docs/reference/lambda-api.md)."""
    details = event.get("ExecutionStartedDetails")
    if not isinstance(details, dict) or details.get("ExecutionTimeout") is not None:
        return event
    started = {**details, "ExecutionTimeout": MAX_EXECUTION_TIMEOUT_SECONDS}
    return {**event, "ExecutionStartedDetails": started}


def function_ref(api: ApiContext, function_name: str, qualifier: str | None) -> FunctionRef:
    """The workflow a FunctionName names (with the Qualifier parameter, which must agree with a qualifier
    in the name), one this deployment has."""
    function = api.arns.function(function_name)
    if qualifier is not None:
        if not QUALIFIER_PATTERN.fullmatch(qualifier):
            raise invalid(f"Qualifier {qualifier!r} is not a version, an alias, $LATEST or $LATEST.PUBLISHED")
        if function.qualifier is not None and function.qualifier != qualifier:
            raise invalid(
                f"The derived qualifier from the function name ({function.qualifier}) does not match the "
                f"specified qualifier ({qualifier})"
            )
        function = FunctionRef(function.name, qualifier)
    check_workflow(api, function.name)
    return function


def check_workflow(api: ApiContext, name: str) -> None:
    """ResourceNotFoundException unless this deployment has the workflow (when it lists them)."""
    workflows = api.settings.workflows
    if workflows is not None and name not in workflows and name != INTERPRETER_NAME:
        listed = ", ".join(sorted(workflows)) or "none"
        raise not_found(
            f"Function not found: {api.arns.function_arn(name)} (this deployment's workflows: {listed})"
        )


def version_filter(api: ApiContext, qualifier: str | None) -> str | None:
    """The version executions must run on to be listed ($LATEST: not pinned to any); None: any."""
    if qualifier is None or qualifier == LATEST:
        return qualifier
    if qualifier == LATEST_PUBLISHED:
        current = api.engine.functions.current_version() if api.engine.functions is not None else None
        return current or LATEST
    return api.engine.resolve_version(qualifier)


def stop(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    execution_id = api.arns.execution_id(params["execution"])
    error = request.json_object("stop error")
    stopped_at = api.engine.clock.now()
    if api.engine.stop_execution(execution_id, error):
        return Response.json({"StopTimestamp": stopped_at})
    described = api.engine.describe_execution(execution_id)
    if described["Status"] == "STOPPED":  # a repeated stop: the first one's answer
        return Response.json({"StopTimestamp": described["EndTimestamp"]})
    raise invalid(
        f"durable execution {api.arns.execution_arn(execution_id)} has already ended {described['Status']}: "
        "only a running execution can be stopped"
    )


def get_state(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    """GetDurableExecutionState of a remote durable function's invocation (data_plane.py)."""
    return data_plane.get_state(api, request, params)


def checkpoint(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    """CheckpointDurableExecution of a remote durable function's invocation (data_plane.py)."""
    return data_plane.checkpoint(api, request, params)
