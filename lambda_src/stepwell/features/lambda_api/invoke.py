"""Invoke of a workflow: starts a durable execution, as Invoke of a durable function does on AWS.

- FunctionName is the workflow (a name, a partial or a full ARN); Qualifier (or a qualifier in the name)
  may be $LATEST or $LATEST.PUBLISHED (the live version: its worker runs the execution first and pins it),
  or a published worker version, by number or alias: the execution starts pinned to that version, which
  runs it to its end as it does any pinned execution (the live worker forwards it); a version the
  deployment does not have is ResourceNotFoundException.
- A tenant-scoped caller (tenants.py) starts executions only with a TenantId among its tenants.
- X-Amz-Durable-Execution-Name is the execution name: the same name with the same payload is the same
  execution; with another payload, DurableExecutionAlreadyStartedException.
- X-Amz-Tenant-Id is the execution's domain (its tenant), default "default".
- Event: 202 and the execution's ARN (X-Amz-Durable-Execution-Arn). RequestResponse: as AWS documents for
  durable functions, the invocation waits for the whole execution and answers its result (or its error,
  with X-Amz-Function-Error: Unhandled) and the ARN; past the wait this endpoint allows (the function's
  timeout), the answer is the error type `Stepwell.ExecutionStillRunning` and the ARN, and the execution
  goes on. DryRun: 204 once everything is checked, nothing started.
"""

from __future__ import annotations

import json
import re
from typing import Any

from stepwell.core.tracing import caller_trace_header
from stepwell.errors import VersionNotFound
from stepwell.features.definitions.interpreter import INTERPRETER_NAME
from stepwell.features.lambda_api.arns import LATEST, LATEST_PUBLISHED, FunctionRef
from stepwell.features.lambda_api.context import ApiContext
from stepwell.features.lambda_api.errors import invalid, not_found
from stepwell.features.lambda_api.executions import check_workflow, error_object, function_ref
from stepwell.features.lambda_api.tenants import DEFAULT_TENANT, is_tenant
from stepwell.features.lambda_api.wire import Request, Response
from stepwell.model import KEY_PART_RULE, InvokeMessage

INVOCATION_TYPES = ("RequestResponse", "Event", "DryRun")
STILL_RUNNING = "Stepwell.ExecutionStillRunning"
TERMINAL_STATUSES = frozenset({"SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"})
FIRST_POLL_SECONDS = 0.05
LONGEST_POLL_SECONDS = 1.0
# The model's pattern of the execution name.
_EXECUTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_CLIENT_CONTEXT = 3583 * 2


def invoke(api: ApiContext, request: Request, params: dict[str, str]) -> Response:
    function = function_ref(api, params["function"], request.query_string("Qualifier", 128))
    invocation_type = request.header("X-Amz-Invocation-Type", 32) or "RequestResponse"
    if invocation_type not in INVOCATION_TYPES:
        raise invalid(
            f"X-Amz-Invocation-Type {invocation_type!r} is not one of {', '.join(INVOCATION_TYPES)}"
        )
    log_type = request.header("X-Amz-Log-Type", 16)
    if log_type not in (None, "None", "Tail"):
        raise invalid(f"X-Amz-Log-Type {log_type!r} is not None or Tail")
    request.header("X-Amz-Client-Context", MAX_CLIENT_CONTEXT)  # bounded; durable executions ignore it
    name = request.header("X-Amz-Durable-Execution-Name", 128)
    if name is not None and not _EXECUTION_NAME.fullmatch(name):
        raise invalid(f"DurableExecutionName {name!r} must be 1 to 64 letters, digits, '-' or '_'")
    tenant = request.header("X-Amz-Tenant-Id", 512)
    if tenant is not None and not is_tenant(tenant):
        raise invalid(f"TenantId {tenant!r} is no tenant (an execution's domain): {KEY_PART_RULE}")
    if api.scope is not None:
        shown = api.arns.function_arn(function.name, function.qualifier)
        api.scope.check(tenant or DEFAULT_TENANT, "Invoke", f"{shown} (TenantId {tenant or DEFAULT_TENANT})")
    payload = _payload(request)
    # The caller's trace, as Lambda takes X-Amzn-Trace-Id: a malformed or over-long one starts a fresh trace.
    trace = caller_trace_header(request.headers.get("x-amzn-trace-id"))
    version = _start_version(api, function)
    if invocation_type == "DryRun":
        api.engine.limits.execution_input.check(f"the input of workflow {function.name!r}", payload)
        return Response(204)
    if version is None:
        execution_id = api.engine.start_execution_json(
            function.name,
            payload,
            execution_name=name,
            domain=tenant or DEFAULT_TENANT,
            trace_header=trace,
        )
    else:
        execution_id = _start_pinned(
            api,
            function.name,
            payload,
            name=name,
            tenant=tenant or DEFAULT_TENANT,
            version=version,
            trace=trace,
        )
    arn = api.arns.execution_arn(execution_id)
    if invocation_type == "Event":
        return Response(202, headers={"X-Amz-Durable-Execution-Arn": arn})
    return _answer(api, arn, _wait(api, execution_id))


def _payload(request: Request) -> str:
    """The execution's input: the body's JSON text as sent ({} when empty, as Lambda gives a handler)."""
    if not request.body:
        return "{}"
    request.json_body("Payload")  # only checked: the text is kept as sent, so a repeat compares equal
    return request.body.decode("utf-8")


def _start_version(api: ApiContext, function: FunctionRef) -> str | None:
    """The worker version the execution is to start pinned to; None: unpinned, the live version's worker
    runs (and pins) it. ResourceNotFoundException for a workflow or a version the deployment does not
    have."""
    if function.name == INTERPRETER_NAME:
        raise not_found(
            f"Function not found: {api.arns.function_arn(function.name)} (the definitions' interpreter: a "
            "definition's context starts from its trigger event, never by Invoke)"
        )
    check_workflow(api, function.name)
    qualifier = function.qualifier
    if qualifier is None or qualifier in (LATEST, LATEST_PUBLISHED):
        return None
    arn = api.arns.function_arn(function.name, qualifier)
    versions = api.engine.functions
    if versions is None:
        raise not_found(
            f"Function not found: {arn} (this deployment's worker "
            "is not versioned: invoke it without a qualifier or with $LATEST)"
        )
    try:
        # The live version too: the alias may move before the first run, and the caller asked for this one.
        return api.engine.resolve_version(qualifier)
    except VersionNotFound as error:
        raise not_found(f"Function not found: {arn} ({error})") from None


def _start_pinned(
    api: ApiContext,
    workflow: str,
    payload: str,
    *,
    name: str | None,
    tenant: str,
    version: str,
    trace: str | None = None,
) -> str:
    """Start the execution pinned to the published worker `version` before its first run, which the
    live worker then forwards to that version (as it does an execution pinned by its own first run).

    The execution is created without its first message, pinned (a conditional write), then woken: no run
    can begin before the pin. A repeated Invoke finds it as the first left it: one that is unpinned and
    has not run (the first Invoke died before its pin) is pinned and woken; one pinned to the version and not
    run yet is woken again (its message may have died with the first Invoke); one that ran, or another
    version has, is left as it is."""
    engine = api.engine
    record, created = engine.start_execution_to_run(
        workflow, json.loads(payload), execution_name=name, domain=tenant, trace_header=trace
    )
    execution_id = record.execution_id
    if created:
        if engine.store.pin_version(execution_id, version, expected=None):
            engine.queue.enqueue(InvokeMessage(execution_id).to_body())
        return execution_id
    if record.status.is_terminal or engine.store.load_batches(execution_id, limit=1)[0]:
        return execution_id
    if record.code_version == version or (
        record.code_version is None and engine.store.pin_version(execution_id, version, expected=None)
    ):
        engine.queue.enqueue(InvokeMessage(execution_id).to_body())
    return execution_id


def _wait(api: ApiContext, execution_id: str) -> dict[str, Any]:
    """The execution's description once it has ended, or as it is when the wait runs out."""
    deadline = api.wait_deadline()
    delay = FIRST_POLL_SECONDS
    while True:
        described = api.engine.describe_execution(execution_id)
        now = api.monotonic()
        if described["Status"] in TERMINAL_STATUSES or now >= deadline:
            return described
        api.sleep(min(delay, deadline - now))
        delay = min(delay * 2, LONGEST_POLL_SECONDS)


def _answer(api: ApiContext, arn: str, described: dict[str, Any]) -> Response:
    headers = {
        "Content-Type": "application/json",
        "X-Amz-Durable-Execution-Arn": arn,
        "X-Amz-Executed-Version": described.get("Version") or LATEST,
    }
    status = described["Status"]
    if status == "SUCCEEDED":
        result = described.get("Result")
        return Response(200, (result if result is not None else "null").encode("utf-8"), headers)
    if status in TERMINAL_STATUSES:
        error = error_object(described.get("Error")) or {}
        payload: dict[str, Any] = {
            "errorType": error.get("ErrorType") or status,
            "errorMessage": error.get("ErrorMessage") or f"the durable execution ended {status}",
        }
        if error.get("ErrorData") is not None:
            payload["errorData"] = error["ErrorData"]
        if error.get("StackTrace") is not None:
            payload["stackTrace"] = error["StackTrace"]
    else:
        payload = {
            "errorType": STILL_RUNNING,
            "errorMessage": (
                f"the durable execution {arn} is still {status} after the longest wait this endpoint allows "
                "(its function's timeout); it goes on: read its outcome with GetDurableExecution"
            ),
        }
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return Response(200, body, {**headers, "X-Amz-Function-Error": "Unhandled"})
