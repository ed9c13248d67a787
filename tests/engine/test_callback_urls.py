"""Callback URLs (stepwell.features.callback_urls): the function URL handler in-process, on the local engine.

Every refusal asserts that nothing changed: no external input, the callback still open, nothing queued.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from typing import Any

import pytest
import stepwell
from stepwell.errors import InvalidArgument
from stepwell.features.callback_urls import (
    CALLBACK_URL_ENV,
    DEFAULT_MAX_BODY_BYTES,
    CallbackUrlHandler,
    CallbackUrlsNotEnabled,
    callback_url,
    check_secret_arn,
    id_fingerprint,
    signature,
)
from stepwell.model import ExecutionStatus, InputKind
from stepwell.testing.local import LocalStepwell

from tests.engine import workflows

SECRET = b"s3cr3t-signing-key"
# Messages the local queue had sent when each test execution started waiting on its callback.
_SENT_WHEN_WAITING: dict[str, int] = {}
BASE = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"


def url_event(
    path: str,
    body: str | bytes | None = None,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    base64_encoded: bool = False,
) -> dict[str, Any]:
    """A function URL request as Lambda hands it over (payload format 2.0)."""
    text: str | None
    if isinstance(body, bytes):
        text = base64.b64encode(body).decode("ascii") if base64_encoded else body.decode("utf-8")
    elif body is not None and base64_encoded:
        text = base64.b64encode(body.encode("utf-8")).decode("ascii")
    else:
        text = body
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "host": "abc.lambda-url.eu-west-1.on.aws",
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "anonymous",
            "apiId": "abcdefghijklmnopqrstuvwxyz012345",
            "domainName": "abc.lambda-url.eu-west-1.on.aws",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9"},
            "requestId": "r-1",
            "routeKey": "$default",
            "stage": "$default",
        },
        "isBase64Encoded": base64_encoded,
    }
    if text is not None:
        event["body"] = text
    return event


def signed(
    body: str,
    path: str,
    secret: bytes = SECRET,
    timestamp: int | None = None,
    *,
    now: float,
    method: str = "POST",
) -> dict[str, str]:
    """The headers of a request to `path` signed as a sender does
    (stepwell.features.callback_urls.signature)."""
    stamp = str(int(now) if timestamp is None else timestamp)
    return {
        "X-Stepwell-Timestamp": stamp,
        "X-Stepwell-Signature": signature(secret, stamp, method, path, body=body.encode("utf-8")),
    }


def answer(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    assert response["headers"]["content-type"] == "application/json"
    return response["statusCode"], json.loads(response["body"])


@pytest.fixture
def waiting(stepwell_local: LocalStepwell) -> tuple[str, str]:
    """An execution waiting on its callback: (execution id, callback id)."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    _SENT_WHEN_WAITING[execution_id] = stepwell_local.queue.sent
    return execution_id, stepwell_local.callback_id(execution_id, "approval")


def assert_unchanged(local: LocalStepwell, execution_id: str, callback_id: str) -> None:
    """The callback still open, no external input written, no message sent since the execution waited."""
    ref = local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed
    assert local.store.list_external_inputs(execution_id) == []
    assert local.queue.sent == _SENT_WHEN_WAITING[execution_id]
    assert local.record(execution_id).status is ExecutionStatus.RUNNING


def test_success_completes_the_callback_and_the_execution_ends_with_its_result(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, body = answer(
        handler.handle(url_event(f"/callbacks/{callback_id}/success", '{"approved": true}'))
    )

    assert (status, body) == (202, {"accepted": "success"})
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == '{"approved": true}'


def test_an_empty_success_body_completes_without_a_result(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    assert handler.handle(url_event(f"/callbacks/{callback_id}/success"))["statusCode"] == 202

    assert stepwell_local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_a_base64_body_is_decoded(stepwell_local: LocalStepwell, waiting: tuple[str, str]) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    response = handler.handle(url_event(f"/callbacks/{callback_id}/success", "[1, 2]", base64_encoded=True))

    assert response["statusCode"] == 202
    assert json.loads(stepwell_local.run_to_completion(execution_id).result or "null") == "[1, 2]"


def test_failure_fails_the_callback_with_the_error(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)
    error = {"ErrorType": "Payment.Declined", "ErrorMessage": "card declined", "StackTrace": ["at provider"]}

    status, body = answer(handler.handle(url_event(f"/callbacks/{callback_id}/failure", json.dumps(error))))

    assert (status, body) == (202, {"accepted": "failure"})
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.FAILED
    failed = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackFailed"]
    assert failed[0]["CallbackFailedDetails"]["Error"]["Payload"]["ErrorType"] == "Payment.Declined"


def test_heartbeat_is_accepted_and_leaves_the_callback_open(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, body = answer(handler.handle(url_event(f"/callbacks/{callback_id}/heartbeat")))

    assert (status, body) == (202, {"accepted": "heartbeat"})
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed
    inputs = stepwell_local.store.list_external_inputs(execution_id)
    assert [item.kind for item in inputs] == [InputKind.CALLBACK_HEARTBEAT]
    # Still completable after the heartbeat.
    assert handler.handle(url_event(f"/callbacks/{callback_id}/success", '"ok"'))["statusCode"] == 202
    assert stepwell_local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_a_second_completion_is_409_and_changes_nothing(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)
    assert handler.handle(url_event(f"/callbacks/{callback_id}/success", '"first"'))["statusCode"] == 202
    inputs = stepwell_local.store.list_external_inputs(execution_id)

    for outcome, body in (("success", '"second"'), ("failure", "{}")):
        status, answered = answer(handler.handle(url_event(f"/callbacks/{callback_id}/{outcome}", body)))
        assert status == 409
        assert "already completed" in answered["error"]
    assert stepwell_local.store.list_external_inputs(execution_id) == inputs

    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == '"first"'
    # After the end: 409, the execution has ended.
    status, answered = answer(handler.handle(url_event(f"/callbacks/{callback_id}/heartbeat")))
    assert status == 409 and "ended" in answered["error"]


def test_a_callback_of_a_stopped_execution_is_409(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    stepwell_local.engine.stop_execution(execution_id)
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, body = answer(handler.handle(url_event(f"/callbacks/{callback_id}/success", "1")))

    assert status == 409 and body == {"error": "the callback's execution has ended"}
    assert stepwell_local.store.list_external_inputs(execution_id) == []


def test_an_unknown_callback_id_is_404(stepwell_local: LocalStepwell) -> None:
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, body = answer(
        handler.handle(url_event("/callbacks/cbNoSuchCallback0123456789abcdef/success", "1"))
    )

    assert (status, body) == (404, {"error": "no such callback"})


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/callbacks",
        "/callbacks/{id}",
        "/callbacks/{id}/complete",
        "/callbacks/{id}/success/extra",
        "/callbacks/../{id}/success",
        "/callbacks/cb%2F..%2Fx/success",
        "/other/{id}/success",
        "/callbacks/{id}/SUCCESS",
        "/callbacks/{id}/success\n",
    ],
)
def test_unknown_routes_are_404(stepwell_local: LocalStepwell, waiting: tuple[str, str], path: str) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, body = answer(handler.handle(url_event(path.format(id=callback_id), "1")))

    assert status == 404 and "not found" in body["error"]
    assert_unchanged(stepwell_local, execution_id, callback_id)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
def test_other_methods_are_405(stepwell_local: LocalStepwell, waiting: tuple[str, str], method: str) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    response = handler.handle(url_event(f"/callbacks/{callback_id}/success", "1", method=method))

    assert response["statusCode"] == 405 and response["headers"]["allow"] == "POST"
    assert_unchanged(stepwell_local, execution_id, callback_id)


@pytest.mark.parametrize(
    ("outcome", "body", "problem"),
    [
        ("success", "{not json", "not valid JSON"),
        ("success", "NaN", "not valid JSON"),
        ("success", '{"a": Infinity}', "not valid JSON"),
        ("failure", "[1]", "must be a JSON object"),
        ("failure", "not json", "not valid JSON"),
        ("failure", '{"ErrorType": 5}', "ErrorType must be a string"),
        ("failure", '{"Secret": "x"}', "unknown callback error fields"),
        ("failure", '{"StackTrace": "one line"}', "StackTrace must be a list of strings"),
        ("heartbeat", '{"a": 1}', "heartbeat takes an empty body"),
    ],
)
def test_a_bad_body_is_400_naming_the_problem(
    stepwell_local: LocalStepwell, waiting: tuple[str, str], outcome: str, body: str, problem: str
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    status, answered = answer(handler.handle(url_event(f"/callbacks/{callback_id}/{outcome}", body)))

    assert status == 400 and problem in answered["error"]
    assert body not in answered["error"]  # the body is never echoed back
    assert_unchanged(stepwell_local, execution_id, callback_id)


def test_bad_base64_and_non_utf8_bodies_are_400(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)
    path = f"/callbacks/{callback_id}/success"
    not_base64 = url_event(path, "1")
    not_base64["isBase64Encoded"] = True
    not_base64["body"] = "***"

    assert answer(handler.handle(not_base64)) == (400, {"error": "the body is not valid base64"})
    assert answer(handler.handle(url_event(path, b"\xff\xfe", base64_encoded=True))) == (
        400,
        {"error": "the body is not UTF-8 text"},
    )
    assert_unchanged(stepwell_local, execution_id, callback_id)


def test_a_body_over_the_limit_is_413(stepwell_local: LocalStepwell, waiting: tuple[str, str]) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, max_body_bytes=100)
    path = f"/callbacks/{callback_id}/success"
    at_limit = json.dumps("x" * 98)
    assert len(at_limit) == 100

    assert handler.handle(url_event(path, at_limit + " "))["statusCode"] == 413
    assert handler.handle(url_event(path, json.dumps("x" * 5000), base64_encoded=True))["statusCode"] == 413
    assert_unchanged(stepwell_local, execution_id, callback_id)
    assert handler.handle(url_event(path, at_limit))["statusCode"] == 202


def test_the_default_body_limit_is_64_kb(stepwell_local: LocalStepwell, waiting: tuple[str, str]) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)
    path = f"/callbacks/{callback_id}/success"

    assert DEFAULT_MAX_BODY_BYTES == 65536
    assert handler.handle(url_event(path, json.dumps("x" * 65536)))["statusCode"] == 413
    assert_unchanged(stepwell_local, execution_id, callback_id)


@pytest.mark.parametrize("limit", [0, -1, 200 * 1024 + 1])
def test_the_body_limit_is_checked(stepwell_local: LocalStepwell, limit: int) -> None:
    with pytest.raises(InvalidArgument, match=r"max_body_bytes must be 1\.\.204800"):
        CallbackUrlHandler(stepwell_local.engine, max_body_bytes=limit)


# --- signatures ---


def test_a_signed_request_is_accepted(stepwell_local: LocalStepwell, waiting: tuple[str, str]) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    body = '{"paid": 1200}'
    path = f"/callbacks/{callback_id}/success"
    headers = signed(body, path, now=stepwell_local.clock.now())

    assert handler.handle(url_event(path, body, headers=headers))["statusCode"] == 202
    assert json.loads(stepwell_local.run_to_completion(execution_id).result or "null") == body


def test_header_names_are_case_insensitive(stepwell_local: LocalStepwell, waiting: tuple[str, str]) -> None:
    _, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    path = f"/callbacks/{callback_id}/heartbeat"
    headers = {key.lower(): value for key, value in signed("", path, now=stepwell_local.clock.now()).items()}

    assert handler.handle(url_event(path, headers=headers))["statusCode"] == 202


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "no-timestamp",
        "wrong-secret",
        "other-body",
        "expired",
        "future",
        "not-a-number",
        "fullwidth-digits",
        "trailing-newline",
        "no-prefix",
        "other-outcome",
        "other-callback",
        "other-method",
        "unsigned-path",
    ],
)
def test_a_bad_signature_is_401_and_changes_nothing(
    stepwell_local: LocalStepwell, waiting: tuple[str, str], case: str
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    now = stepwell_local.clock.now()
    body = '"approved"'
    path = f"/callbacks/{callback_id}/success"
    good = signed(body, path, now=now)
    headers = {
        "missing": {},
        "no-timestamp": {"X-Stepwell-Signature": good["X-Stepwell-Signature"]},
        "wrong-secret": signed(body, path, secret=b"another key", now=now),
        "other-body": signed('"rejected"', path, now=now),
        "expired": signed(body, path, timestamp=int(now) - 301, now=now),
        "future": signed(body, path, timestamp=int(now) + 301, now=now),
        "not-a-number": {**good, "X-Stepwell-Timestamp": "soon"},
        "fullwidth-digits": {**good, "X-Stepwell-Timestamp": _fullwidth(str(int(now)))},
        "trailing-newline": {**good, "X-Stepwell-Timestamp": f"{int(now)}\n"},
        "no-prefix": {**good, "X-Stepwell-Signature": good["X-Stepwell-Signature"].removeprefix("sha256=")},
        "other-outcome": signed(body, f"/callbacks/{callback_id}/failure", now=now),
        "other-callback": signed(body, "/callbacks/cbAnotherCallback/success", now=now),
        "other-method": signed(body, path, now=now, method="PUT"),
        # The format before the method and path were signed: "<timestamp>.<body>".
        "unsigned-path": {
            "X-Stepwell-Timestamp": str(int(now)),
            "X-Stepwell-Signature": "sha256="
            + hmac.new(SECRET, f"{int(now)}.{body}".encode(), hashlib.sha256).hexdigest(),
        },
    }[case]

    status, answered = answer(handler.handle(url_event(path, body, headers=headers)))

    assert status == 401 and "X-Stepwell" in answered["error"]
    assert_unchanged(stepwell_local, execution_id, callback_id)


def test_a_captured_signature_works_only_for_its_own_callback_and_outcome(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    # A signed heartbeat (empty body) seen once must not fail the callback, nor complete another one.
    execution_id, callback_id = waiting
    other_execution = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    _SENT_WHEN_WAITING[other_execution] = stepwell_local.queue.sent
    _SENT_WHEN_WAITING[execution_id] = stepwell_local.queue.sent
    other_callback = stepwell_local.callback_id(other_execution, "approval")
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    heartbeat = f"/callbacks/{callback_id}/heartbeat"
    captured = signed("", heartbeat, now=stepwell_local.clock.now())

    replays = [
        f"/callbacks/{callback_id}/failure",
        f"/callbacks/{callback_id}/success",
        f"/callbacks/{other_callback}/failure",
        f"/callbacks/{other_callback}/success",
        f"/callbacks/{other_callback}/heartbeat",
    ]
    for path in replays:
        status, answered = answer(handler.handle(url_event(path, headers=captured)))
        assert status == 401 and "does not match" in answered["error"], path
    assert_unchanged(stepwell_local, execution_id, callback_id)
    assert_unchanged(stepwell_local, other_execution, other_callback)

    assert handler.handle(url_event(heartbeat, headers=captured))["statusCode"] == 202


@pytest.mark.parametrize(
    ("timestamp", "method", "path", "problem"),
    [
        ("\uff11\uff17", "POST", "/callbacks/cbAbc/success", "timestamp must be epoch seconds"),
        ("17", "post", "/callbacks/cbAbc/success", "method must be an upper-case HTTP method"),
        ("17", "POST", "https://example.com/callbacks/cbAbc/success", "path must be a callback path"),
        ("17", "POST", "/callbacks/cbAbc/success?x=1", "path must be a callback path"),
    ],
)
def test_signature_refuses_what_it_cannot_sign_precisely(
    timestamp: str, method: str, path: str, problem: str
) -> None:
    with pytest.raises(InvalidArgument, match=problem):
        signature(SECRET, timestamp, method, path, body=b"")


def _fullwidth(digits: str) -> str:
    """The same number in fullwidth digits (U+FF10..U+FF19): Unicode digits, but not ASCII."""
    return digits.translate({ord(digit): 0xFF10 + int(digit) for digit in "0123456789"})


def test_a_timestamp_of_unicode_digits_is_401_and_logs_no_error(
    stepwell_local: LocalStepwell, waiting: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    # An unauthenticated caller must not be able to raise an ERROR (and the alarms that watch for it).
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    stamp = _fullwidth(str(int(stepwell_local.clock.now())))
    headers = {"X-Stepwell-Timestamp": stamp, "X-Stepwell-Signature": "sha256=00"}

    with caplog.at_level(logging.INFO, logger="stepwell"):
        status, _ = answer(
            handler.handle(url_event(f"/callbacks/{callback_id}/success", "1", headers=headers))
        )

    assert status == 401
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []
    assert_unchanged(stepwell_local, execution_id, callback_id)


def test_a_timestamp_within_300_seconds_is_accepted(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    _, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    now = stepwell_local.clock.now()
    path = f"/callbacks/{callback_id}/heartbeat"
    headers = signed("", path, timestamp=int(now) - 290, now=now)

    assert handler.handle(url_event(path, headers=headers))["statusCode"] == 202


def test_the_signature_is_checked_before_the_callback_id(stepwell_local: LocalStepwell) -> None:
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)

    response = handler.handle(url_event("/callbacks/cbUnknown/success", "1"))

    assert response["statusCode"] == 401  # an unsigned request learns nothing about which ids exist


def test_the_secret_is_read_once_and_an_unreadable_secret_is_500(
    stepwell_local: LocalStepwell, waiting: tuple[str, str]
) -> None:
    execution_id, callback_id = waiting
    reads: list[int] = []

    def unreadable() -> bytes:
        reads.append(1)
        raise ConnectionError("secret store unreachable")

    failing = CallbackUrlHandler(stepwell_local.engine, secret_loader=unreadable)
    status, body = answer(failing.handle(url_event(f"/callbacks/{callback_id}/success", "1")))
    assert status == 500 and "secret" in body["error"]
    assert_unchanged(stepwell_local, execution_id, callback_id)

    def readable() -> bytes:
        reads.append(2)
        return SECRET

    handler = CallbackUrlHandler(stepwell_local.engine, secret_loader=readable)
    path = f"/callbacks/{callback_id}/heartbeat"
    for _ in range(3):
        headers = signed("", path, now=stepwell_local.clock.now())
        assert handler.handle(url_event(path, headers=headers))["statusCode"] == 202
    assert reads == [1, 2]


def test_logs_carry_neither_bodies_nor_signatures(
    stepwell_local: LocalStepwell, waiting: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    _, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine, secret=SECRET)
    body = '{"card": "4111-1111-1111-1111"}'
    success = f"/callbacks/{callback_id}/success"
    headers = signed(body, success, now=stepwell_local.clock.now())

    with caplog.at_level(logging.DEBUG, logger="stepwell"):
        handler.handle(url_event(success, body, headers={"X-Stepwell-Timestamp": "1"}))
        handler.handle(url_event(success, body, headers=headers))
        handler.handle(
            url_event(f"/callbacks/{callback_id}/failure", '{"ErrorMessage": 4111}', headers=headers)
        )

        handler.handle(url_event(success, "1", headers=signed("1", success, now=0)))
        handler.handle(url_event(success, "1", headers=signed("1", success, now=stepwell_local.clock.now())))

    text = caplog.text
    assert "4111" not in text and SECRET.decode() not in text
    assert headers["X-Stepwell-Signature"] not in text
    assert "(401)" in text and "(202)" in text and "(409)" in text
    # The id is the capability inside the URL: the logs name it by a digest only.
    assert callback_id not in text and id_fingerprint(callback_id) in text


# --- callback_url() ---


def test_callback_url_builds_on_the_worker_environment() -> None:
    environ = {CALLBACK_URL_ENV: BASE}

    assert callback_url("cbAbc-_1", environ=environ) == f"{BASE}callbacks/cbAbc-_1/success"
    assert callback_url("cbAbc", "failure", environ=environ) == f"{BASE}callbacks/cbAbc/failure"
    assert callback_url("cbAbc", "heartbeat", environ={CALLBACK_URL_ENV: BASE.rstrip("/")}).endswith(
        ".on.aws/callbacks/cbAbc/heartbeat"
    )


def test_callback_url_is_importable_from_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CALLBACK_URL_ENV, BASE)

    from stepwell import callback_url as exported

    assert exported is callback_url
    assert stepwell.callback_url("cbXyz") == f"{BASE}callbacks/cbXyz/success"


def test_callback_url_without_callback_urls_is_a_clear_error() -> None:
    with pytest.raises(CallbackUrlsNotEnabled, match="callback_urls = true"):
        callback_url("cbAbc", environ={})


@pytest.mark.parametrize(
    ("callback_id", "outcome", "problem"),
    [
        ("cb/../x", "success", "invalid callback id"),
        ("", "success", "invalid callback id"),
        ("cb?x=1", "success", "invalid callback id"),
        ("cbAbc\n", "success", "invalid callback id"),
        ("cbAbc", "complete", "outcome must be one of success, failure, heartbeat"),
    ],
)
def test_callback_url_refuses_bad_arguments(callback_id: str, outcome: str, problem: str) -> None:
    with pytest.raises(InvalidArgument, match=problem):
        callback_url(callback_id, outcome, environ={CALLBACK_URL_ENV: BASE})


def test_a_workflow_hands_out_its_url_and_the_url_completes_it(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CALLBACK_URL_ENV, BASE)
    from aws_durable_execution_sdk_python import DurableContext, durable_execution

    @durable_execution
    def payment(event: Any, context: DurableContext) -> Any:
        callback = context.create_callback(name="payment")
        context.step(lambda _: callback_url(callback.callback_id), name="hand out")
        return callback.result()

    stepwell_local.register("payment", payment)
    execution_id = stepwell_local.start("payment", None)
    stepwell_local.run_until_idle()
    handed_out = [
        json.loads(e["StepSucceededDetails"]["Result"]["Payload"])
        for e in stepwell_local.history(execution_id)
        if e["EventType"] == "StepSucceeded"
    ]
    assert len(handed_out) == 1 and handed_out[0].startswith(BASE + "callbacks/cb")

    path = "/" + handed_out[0].removeprefix(BASE)
    response = CallbackUrlHandler(stepwell_local.engine).handle(url_event(path, '{"paid": true}'))

    assert response["statusCode"] == 202
    assert json.loads(stepwell_local.run_to_completion(execution_id).result or "null") == '{"paid": true}'


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepwell/callbacks-AbCdEf",
        "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/callback-key",
    ],
)
def test_secret_arns_of_both_stores_are_accepted(arn: str) -> None:
    assert check_secret_arn(arn) == arn


@pytest.mark.parametrize(
    "arn",
    [
        "stepwell/callbacks",
        "arn:aws:s3:::bucket/key",
        "arn:aws:ssm:eu-west-1:123456789012:document/x",
        "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/key\n",
        "arn:aws:secretsmanager:eu-west-1:\uff11\uff12\uff13456789012:secret:stepwell/callbacks",
    ],
)
def test_other_secret_references_are_refused(arn: str) -> None:
    with pytest.raises(InvalidArgument, match="Secrets Manager secret ARN"):
        check_secret_arn(arn)


def test_a_transient_failure_is_500_and_the_callback_stays_open(
    stepwell_local: LocalStepwell, waiting: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    execution_id, callback_id = waiting
    handler = CallbackUrlHandler(stepwell_local.engine)

    def unavailable(body: Any, delay_seconds: int = 0) -> None:
        raise ConnectionError("queue unreachable: secret detail")

    monkeypatch.setattr(stepwell_local.queue, "enqueue", unavailable)
    status, body = answer(handler.handle(url_event(f"/callbacks/{callback_id}/success", '"paid"')))
    monkeypatch.undo()

    assert status == 500 and "secret detail" not in body["error"]
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed  # reopened: the sender's retry completes it
    assert handler.handle(url_event(f"/callbacks/{callback_id}/success", '"paid"'))["statusCode"] == 202
    assert json.loads(stepwell_local.run_to_completion(execution_id).result or "null") == '"paid"'
