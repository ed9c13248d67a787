"""Hostile requests straight to the handler, as a signed operator sends them: every one is refused with the
modeled error naming the value, within bounded work, and nothing starts."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.api.conftest import OPERATOR, ApiStack

INVOKE = "/2015-03-31/functions/greet/invocations"
LIST = "/2025-12-01/functions/greet/durable-executions"


def _event(
    path: str,
    method: str = "POST",
    body: str | None = None,
    query: str = "",
    headers: dict[str, str] | None = None,
    base64_encoded: bool = False,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "version": "2.0",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {"x-amz-invocation-type": "Event", **(headers or {})},
        "requestContext": {
            "http": {"method": method},
            "authorizer": {"iam": {"userArn": OPERATOR.arn, "accountId": OPERATOR.account}},
        },
        "isBase64Encoded": base64_encoded,
    }
    if body is not None:
        event["body"] = body
    return event


def _refusal(stack: ApiStack, event: Any) -> tuple[int, str, str]:
    answer = stack.handler.handle(event)
    assert answer["statusCode"] >= 400, answer
    body = json.loads(answer["body"])
    assert body["Message"] == body["message"]
    assert body["Type"] == ("Service" if answer["statusCode"] >= 500 else "User")
    return answer["statusCode"], answer["headers"]["x-amzn-ErrorType"], body["Message"]


@pytest.mark.parametrize(
    ("event", "code", "named"),
    [
        ({"version": "1.0"}, "InvalidParameterValueException", "payload format 2.0"),
        ("not an event", "InvalidParameterValueException", "payload format 2.0"),
        (_event(INVOKE, method="TRACE"), "InvalidParameterValueException", "TRACE"),
        (_event("/" + "a" * 5000), "InvalidParameterValueException", "path"),
        (_event("/%ff%fe"), "InvalidParameterValueException", "percent-encoded"),
        (_event(INVOKE, body="{not json"), "InvalidRequestContentException", "JSON"),
        (_event(INVOKE, body='{"a": NaN}'), "InvalidRequestContentException", "NaN"),
        (_event(INVOKE, body="!!!", base64_encoded=True), "InvalidParameterValueException", "base64"),
        (
            _event(INVOKE, body=base64.b64encode(b"\xff\xfe").decode(), base64_encoded=True),
            "InvalidRequestContentException",
            "JSON",
        ),
        (_event(INVOKE, body="x" * (9 * 1024 * 1024)), "RequestTooLargeException", "bytes"),
        (
            _event(INVOKE, body="{}", headers={"x-amz-invocation-type": "Later"}),
            "InvalidParameterValueException",
            "Later",
        ),
        (
            _event(INVOKE, body="{}", headers={"x-amz-durable-execution-name": "a b"}),
            "InvalidParameterValueException",
            "'a b'",
        ),
        (
            _event(INVOKE, body="{}", headers={"x-amz-durable-execution-name": "n" * 65}),
            "InvalidParameterValueException",
            "DurableExecutionName",
        ),
        (
            _event(INVOKE, body="{}", headers={"x-amz-tenant-id": "acme corp"}),
            "InvalidParameterValueException",
            "'acme corp'",
        ),
        (
            _event(INVOKE, body="{}", headers={"x-amz-client-context": "c" * 10_000}),
            "InvalidParameterValueException",
            "X-Amz-Client-Context",
        ),
        (
            _event(INVOKE, body="{}", headers={"x-amz-log-type": "Everything"}),
            "InvalidParameterValueException",
            "Everything",
        ),
        (_event(LIST, "GET", query="MaxItems=1001"), "InvalidParameterValueException", "MaxItems"),
        (_event(LIST, "GET", query="MaxItems=%C2%B2"), "InvalidParameterValueException", "MaxItems"),
        (_event(LIST, "GET", query="MaxItems=1&MaxItems=2"), "InvalidParameterValueException", "2 times"),
        (_event(LIST, "GET", query="ReverseOrder=yes"), "InvalidParameterValueException", "ReverseOrder"),
        (_event(LIST, "GET", query="StartedAfter=tomorrow"), "InvalidParameterValueException", "tomorrow"),
        (
            _event(LIST, "GET", query="&".join(["Statuses=RUNNING"] * 11)),
            "InvalidParameterValueException",
            "11",
        ),
        (_event(LIST, "GET", query="a=1&" * 40), "InvalidParameterValueException", "query"),
        (_event(LIST, "GET", query="Marker=" + "m" * 5000), "InvalidParameterValueException", "Marker"),
        (
            _event("/2025-12-01/durable-execution-callbacks/cb%0A/succeed"),
            "InvalidParameterValueException",
            "CallbackId",
        ),
        (
            _event("/2025-12-01/durable-execution-callbacks/cbAAAA/heartbeat", body='{"x": 1}'),
            "InvalidParameterValueException",
            "no body",
        ),
        (
            _event("/2025-12-01/durable-execution-callbacks/cbAAAA/fail", body="[1]"),
            "InvalidParameterValueException",
            "JSON object",
        ),
        (
            _event("/2025-12-01/durable-executions/a%23b/stop", body="{}"),
            "InvalidParameterValueException",
            "a#b",
        ),
        (_event("/2015-03-31/functions/greet/configuration", "GET"), "UnknownOperationException", "serves"),
    ],
)
def test_a_hostile_request_is_refused_naming_what_is_wrong_and_starts_nothing(
    stack: ApiStack, event: Any, code: str, named: str
) -> None:
    status, error_type, message = _refusal(stack, event)
    assert error_type == code, message
    assert named in message
    assert status < 500
    assert stack.local.queue.sent == 0
    assert stack.local.engine.list_executions(workflow="greet").items == []


def test_a_payload_over_the_execution_input_limit_is_413_and_the_name_stays_free(stack: ApiStack) -> None:
    body = json.dumps({"blob": "x" * 300_000})
    named = {"x-amz-durable-execution-name": "big"}
    status, code, message = _refusal(stack, _event(INVOKE, body=body, headers=named))
    assert (status, code) == (413, "RequestTooLargeException")
    assert "bytes" in message
    answer = stack.handler.handle(_event(INVOKE, body='{"name": "x"}', headers=named))
    assert answer["statusCode"] == 202


def test_an_unexpected_failure_is_a_service_exception_that_tells_nothing_of_the_request(
    stack: ApiStack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret-detail")

    monkeypatch.setattr(stack.local.engine, "describe_execution", broken)
    path = "/2025-12-01/durable-executions/default%23greet%23a%2Fa"
    status, code, message = _refusal(stack, _event(path, "GET"))
    assert (status, code) == (500, "ServiceException")
    assert "secret-detail" not in message
    assert "secret-detail" not in caplog.text
    assert "RuntimeError" in caplog.text
