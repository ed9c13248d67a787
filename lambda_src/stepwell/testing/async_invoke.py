"""Lambda's asynchronous invocation, played locally (neither moto nor LocalStack runs Lambda code here).

EventBridge Scheduler invokes a Lambda target asynchronously, as does an Invoke with InvocationType
Event. Lambda then runs the event; when the function fails it runs it again, up to the function's
MaximumRetryAttempts (default 2, so three attempts in all), and then sends an on-failure destination
record to the destination its event invoke config names (here: an SQS queue), or drops the event.
`invoke_asynchronously` does the same without Lambda's waits between attempts (one minute, then two), so
tests, the bench and `make chaos` see the retries and the destination at once.

The record's shape is Lambda's (docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records):
version, timestamp, requestContext (requestId, functionArn, condition, approximateInvokeCount),
requestPayload, responseContext (statusCode, executedVersion, functionError) and responsePayload.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 2


@dataclass(frozen=True)
class AsyncInvokeOutcome:
    """How an asynchronous invocation ended: `attempts` runs, the last `error` (None: it succeeded), and
    whether its destination record was sent."""

    attempts: int
    error: dict[str, Any] | None = None
    sent_to_destination: bool = False


def destination_record(
    payload: Any,
    function_arn: str,
    attempts: int,
    error: dict[str, Any],
    *,
    executed_version: str = "$LATEST",
    condition: str = "RetriesExhausted",
) -> dict[str, Any]:
    """The on-failure destination record Lambda sends for an event whose attempts all failed."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": condition,
            "approximateInvokeCount": attempts,
        },
        "requestPayload": payload,
        "responseContext": {
            "statusCode": 200,
            "executedVersion": executed_version,
            "functionError": "Unhandled",
        },
        "responsePayload": error,
    }


def invoke_asynchronously(
    run: Callable[[Any], dict[str, Any] | None],
    payload: Any,
    function_arn: str,
    *,
    maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
    on_failure: Callable[[dict[str, Any]], None] | None = None,
    executed_version: str = "$LATEST",
) -> AsyncInvokeOutcome:
    """Run `payload` as Lambda runs an asynchronous event: `run` returns None when the function succeeded
    and its error object ({errorType, errorMessage, ...}) when it failed; a failed event is run again up
    to `maximum_retry_attempts` times, then handed to `on_failure` as a destination record (naming
    `executed_version`, the version that ran it)."""
    if not 0 <= maximum_retry_attempts <= 2:
        raise ValueError(
            f"maximum_retry_attempts must be 0, 1 or 2 (Lambda's range), got {maximum_retry_attempts}"
        )
    attempts = 1 + maximum_retry_attempts
    error: dict[str, Any] | None = None
    for attempt in range(1, attempts + 1):
        error = run(payload)
        if error is None:
            return AsyncInvokeOutcome(attempt)
    assert error is not None
    if on_failure is None:
        return AsyncInvokeOutcome(attempts, error)
    on_failure(destination_record(payload, function_arn, attempts, error, executed_version=executed_version))
    return AsyncInvokeOutcome(attempts, error, sent_to_destination=True)


def handler_error(error: BaseException) -> dict[str, Any]:
    """A Python exception as the error object Lambda reports for an unhandled one."""
    return {"errorType": type(error).__name__, "errorMessage": str(error), "stackTrace": []}


def attempt_in_process(handler: Callable[[Any, Any], Any]) -> Callable[[Any], dict[str, Any] | None]:
    """A `run` for `invoke_asynchronously` that calls a Lambda handler (`handler(event, context)`) in this
    process: None when it returned, its error object when it raised."""

    def attempt(event: Any) -> dict[str, Any] | None:
        try:
            handler(event, None)
        except Exception as error:
            return handler_error(error)
        return None

    return attempt


def take_event_invokes(lambda_client: Any, take: Callable[[str, Any], None]) -> None:
    """Answer `lambda_client`'s Event invokes as Lambda does (202, the event kept) without sending them:
    `take(function, payload)` gets each, to run as the harness plays Lambda (for a client's wake-ups in
    moto's in-process mock, which runs no code). Other invocation types are sent as before."""
    from urllib.parse import unquote

    from botocore.awsrequest import AWSResponse, HTTPHeaders

    def before_call(params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if params["headers"].get("X-Amz-Invocation-Type") != "Event":
            return None
        function = unquote(params["url_path"].split("/")[3])  # /2015-03-31/functions/{name}/invocations
        body = params["body"]
        take(function, json.loads(body.read() if hasattr(body, "read") else body))
        return AWSResponse(function, 202, HTTPHeaders(), None), {"StatusCode": 202}

    lambda_client.meta.events.register("before-call.lambda.Invoke", before_call)
