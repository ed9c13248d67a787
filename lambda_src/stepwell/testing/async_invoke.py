"""Lambda's asynchronous invocation, played locally (neither moto nor LocalStack runs Lambda code here).

EventBridge Scheduler invokes a Lambda target asynchronously, as does an Invoke with InvocationType
Event. Lambda then runs the event; when the function fails it runs it again, up to the function's
MaximumRetryAttempts (default 2, so three attempts in all), and then sends an on-failure destination
record to the destination its event invoke config names (here: an SQS queue), or drops the event; an
event that succeeds goes to its on-success destination, if any. `play_event` does the same without
Lambda's waits between attempts (one minute, then two), so tests, the bench and `make chaos` see the
retries and the destination at once.

MaximumEventAgeInSeconds (default six hours): an event whose next attempt would come when it is older
than that is not run again but sent to its on-failure destination with the condition EventAgeExceeded.
The age counts the waits Lambda would have made (played, not slept) plus the real time the attempts took,
so a maximum of 60 seconds ends a failed event before its first retry, as in Lambda.

The record's shape is Lambda's (docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records):
version, timestamp, requestContext (requestId: the invocation's, the same in every attempt; functionArn:
the version or alias that ran, qualified; condition; approximateInvokeCount), requestPayload,
responseContext (statusCode, executedVersion, and functionError when it failed) and responsePayload
(the function's answer, or its error object).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 2
DEFAULT_MAXIMUM_EVENT_AGE_SECONDS = 6 * 3600
MINIMUM_EVENT_AGE_SECONDS = 60  # Lambda's range for MaximumEventAgeInSeconds: 60 to 21600
# Lambda's waits before the second and the third attempt of a failed event.
RETRY_WAITS_SECONDS = (60, 120)


class Condition(Enum):
    """Why a destination record was sent (its requestContext.condition)."""

    SUCCESS = "Success"
    RETRIES_EXHAUSTED = "RetriesExhausted"
    EVENT_AGE_EXCEEDED = "EventAgeExceeded"


@dataclass(frozen=True)
class Attempt:
    """One run of an event: the function's answer, or its error object ({errorType, errorMessage, ...})."""

    payload: Any = None
    error: dict[str, Any] | None = None


@dataclass(frozen=True)
class AsyncInvokeOutcome:
    """How an asynchronous invocation ended: `attempts` runs, the last `error` (None: it succeeded), and
    whether its destination record was sent, with the record's `condition`."""

    attempts: int
    error: dict[str, Any] | None = None
    sent_to_destination: bool = False
    condition: Condition = Condition.SUCCESS


def _timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def destination_record(
    payload: Any,
    function_arn: str,
    attempts: int,
    error: dict[str, Any],
    *,
    executed_version: str = "$LATEST",
    condition: str = Condition.RETRIES_EXHAUSTED.value,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The on-failure destination record Lambda sends for an event whose attempts all failed (or that aged
    out: `condition` EventAgeExceeded)."""
    return {
        "version": "1.0",
        "timestamp": _timestamp(),
        "requestContext": {
            "requestId": request_id or str(uuid.uuid4()),
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


def success_record(
    payload: Any,
    function_arn: str,
    attempts: int,
    response: Any,
    *,
    executed_version: str = "$LATEST",
    request_id: str | None = None,
) -> dict[str, Any]:
    """The on-success destination record Lambda sends for an event the function answered: its answer is
    the responsePayload, and responseContext has no functionError."""
    return {
        "version": "1.0",
        "timestamp": _timestamp(),
        "requestContext": {
            "requestId": request_id or str(uuid.uuid4()),
            "functionArn": function_arn,
            "condition": Condition.SUCCESS.value,
            "approximateInvokeCount": attempts,
        },
        "requestPayload": payload,
        "responseContext": {"statusCode": 200, "executedVersion": executed_version},
        "responsePayload": response,
    }


def play_event(
    run: Callable[[Any], Attempt],
    payload: Any,
    function_arn: str,
    *,
    maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
    maximum_event_age_seconds: int = DEFAULT_MAXIMUM_EVENT_AGE_SECONDS,
    on_success: Callable[[dict[str, Any]], None] | None = None,
    on_failure: Callable[[dict[str, Any]], None] | None = None,
    executed_version: str = "$LATEST",
    request_id: str | None = None,
) -> AsyncInvokeOutcome:
    """Run `payload` as Lambda runs an asynchronous event: a failed attempt is run again up to
    `maximum_retry_attempts` times while the event is young enough, then handed to `on_failure` as a
    destination record; a successful one goes to `on_success`. `function_arn` is the qualified ARN that
    ran it, `request_id` the invocation's (one is made when None)."""
    if not 0 <= maximum_retry_attempts <= 2:
        raise ValueError(
            f"maximum_retry_attempts must be 0, 1 or 2 (Lambda's range), got {maximum_retry_attempts}"
        )
    if not MINIMUM_EVENT_AGE_SECONDS <= maximum_event_age_seconds <= DEFAULT_MAXIMUM_EVENT_AGE_SECONDS:
        raise ValueError(
            f"maximum_event_age_seconds must be {MINIMUM_EVENT_AGE_SECONDS} to "
            f"{DEFAULT_MAXIMUM_EVENT_AGE_SECONDS} (Lambda's range), got {maximum_event_age_seconds}"
        )
    request_id = request_id or str(uuid.uuid4())
    started = time.monotonic()
    waited = 0  # the waits Lambda would have made before the attempts so far
    attempts = 0
    condition = Condition.RETRIES_EXHAUSTED
    while True:
        attempts += 1
        outcome = run(payload)
        if outcome.error is None:
            if on_success is None:
                return AsyncInvokeOutcome(attempts)
            record = success_record(
                payload,
                function_arn,
                attempts,
                outcome.payload,
                executed_version=executed_version,
                request_id=request_id,
            )
            on_success(record)
            return AsyncInvokeOutcome(attempts, sent_to_destination=True)
        if attempts > maximum_retry_attempts:
            break
        waited += RETRY_WAITS_SECONDS[attempts - 1]
        if time.monotonic() - started + waited > maximum_event_age_seconds:
            condition = Condition.EVENT_AGE_EXCEEDED
            break
    if on_failure is None:
        return AsyncInvokeOutcome(attempts, outcome.error, condition=condition)
    on_failure(
        destination_record(
            payload,
            function_arn,
            attempts,
            outcome.error,
            executed_version=executed_version,
            condition=condition.value,
            request_id=request_id,
        )
    )
    return AsyncInvokeOutcome(attempts, outcome.error, sent_to_destination=True, condition=condition)


def invoke_asynchronously(
    run: Callable[[Any], dict[str, Any] | None],
    payload: Any,
    function_arn: str,
    *,
    maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
    on_failure: Callable[[dict[str, Any]], None] | None = None,
    executed_version: str = "$LATEST",
) -> AsyncInvokeOutcome:
    """`play_event` for a `run` that returns None when the function succeeded and its error object when
    it failed (no answer, so no on-success destination)."""

    def attempt(event: Any) -> Attempt:
        return Attempt(error=run(event))

    return play_event(
        attempt,
        payload,
        function_arn,
        maximum_retry_attempts=maximum_retry_attempts,
        on_failure=on_failure,
        executed_version=executed_version,
    )


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
