"""Callback URLs on the deployed stack (examples/complete, callback_urls on), on both backends: a third
party with no AWS credentials completes, fails and heartbeats a callback with plain HTTP requests to the
URLs ``stepwell.callback_url()`` gave the workflow; refusals (unknown id, method, route, body, a second
completion) answer their status and change nothing."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from deployed_backend import FINISHED, DeployedTarget
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.function_urls import FunctionUrls

WAIT_SECONDS = 240.0
WORKFLOW = "callbacks.by_url"
JSON = {"Content-Type": "application/json"}


def _urls(target: DeployedTarget, client: StepwellClient, execution_id: str) -> dict[str, str]:
    """The callback URLs the workflow's step "urls" recorded (its result in the history)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        for event in client.get_execution_history(execution_id):
            if event.get("EventType") == "StepSucceeded" and event.get("Name") == "urls":
                # The step's result is the URLs as JSON text (a string stays plain in the history).
                text = json.loads(event["StepSucceededDetails"]["Result"]["Payload"])
                urls: dict[str, str] = json.loads(text)
                return urls
        description = client.describe_execution(execution_id)
        assert description["Status"] == "RUNNING", json.dumps(description, default=str)
        assert time.monotonic() < deadline, "the workflow never recorded its callback URLs"


def _finish(target: DeployedTarget, client: StepwellClient, execution_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        description = client.describe_execution(execution_id)
        if description["Status"] in FINISHED:
            return description
        assert time.monotonic() < deadline, f"never finished: {json.dumps(description, default=str)}"
        time.sleep(0.2)


def _start(target: DeployedTarget, client: StepwellClient, label: str) -> tuple[str, dict[str, str]]:
    run = uuid.uuid4().hex[:12]
    execution_id = client.start_execution(WORKFLOW, {"run": run}, f"{label}-{run}")
    return execution_id, _urls(target, client, execution_id)


def _callback_events(client: StepwellClient, execution_id: str) -> list[str]:
    return [
        str(event["EventType"])
        for event in client.get_execution_history(execution_id)
        if str(event.get("EventType", "")).startswith("Callback")
    ]


def test_a_third_party_completes_a_callback_over_http_and_a_second_completion_is_a_conflict(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    function_urls: FunctionUrls,
) -> None:
    base = deployed_stack.outputs["callback_url"]
    assert isinstance(base, str) and ".lambda-url." in base
    assert deployed_stack.client_config["callback_url"] == base
    execution_id, urls = _start(deployed_target, deployed_client, "url-ok")
    for outcome in ("success", "failure", "heartbeat"):
        assert urls[outcome].startswith(base.rstrip("/") + "/callbacks/")
        assert urls[outcome].endswith(f"/{outcome}")

    heartbeat = function_urls.post(urls["heartbeat"])
    assert heartbeat.status == 202, heartbeat.body
    assert deployed_client.describe_execution(execution_id)["Status"] == "RUNNING"

    result = {"approved": True, "by": "payment-provider", "amount": 42}
    accepted = function_urls.post(urls["success"], json.dumps(result), JSON)
    assert accepted.status == 202, accepted.body
    assert accepted.json() == {"accepted": "success"}
    assert json.dumps(result).encode() not in accepted.body  # the body is never echoed

    description = _finish(deployed_target, deployed_client, execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == result

    again = function_urls.post(urls["success"], '"again"', JSON)
    assert again.status == 409, again.body
    late_failure = function_urls.post(urls["failure"], "{}", JSON)
    assert late_failure.status == 409, late_failure.body
    assert _callback_events(deployed_client, execution_id) == ["CallbackStarted", "CallbackSucceeded"]
    assert json.loads(deployed_client.describe_execution(execution_id)["Result"]) == result


def test_a_third_party_fails_a_callback_over_http(
    deployed_target: DeployedTarget, deployed_client: StepwellClient, function_urls: FunctionUrls
) -> None:
    execution_id, urls = _start(deployed_target, deployed_client, "url-fail")
    failure = {"ErrorType": "PaymentDeclined", "ErrorMessage": "card declined", "ErrorData": "{}"}
    answer = function_urls.post(urls["failure"], json.dumps(failure), JSON)
    assert answer.status == 202, answer.body
    description = _finish(deployed_target, deployed_client, execution_id)
    assert description["Status"] == "FAILED", json.dumps(description, default=str)
    # The workflow did not catch it: the SDK's CallbackExternalError with the third party's message.
    assert "card declined" in json.dumps(description, default=str)
    [failed] = [
        event
        for event in deployed_client.get_execution_history(execution_id)
        if event.get("EventType") == "CallbackFailed"
    ]
    recorded = json.dumps(failed["CallbackFailedDetails"], default=str)
    assert "PaymentDeclined" in recorded and "card declined" in recorded
    assert _callback_events(deployed_client, execution_id) == ["CallbackStarted", "CallbackFailed"]


def test_refused_requests_answer_their_status_and_change_nothing(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    function_urls: FunctionUrls,
) -> None:
    execution_id, urls = _start(deployed_target, deployed_client, "url-refused")
    base = str(deployed_stack.outputs["callback_url"]).rstrip("/")

    unknown = function_urls.post(f"{base}/callbacks/cb{'A' * 30}/success", '"x"', JSON)
    assert unknown.status == 404, unknown.body
    wrong_method = function_urls.request("GET", urls["success"])
    assert wrong_method.status == 405, wrong_method.body
    assert wrong_method.headers.get("allow") == "POST"
    put = function_urls.request("PUT", urls["success"], '"x"', JSON)
    assert put.status == 405, put.body
    no_route = function_urls.post(f"{base}/executions", "{}", JSON)
    assert no_route.status == 404, no_route.body
    other_outcome = function_urls.post(urls["success"].rsplit("/", 1)[0] + "/cancel", "{}", JSON)
    assert other_outcome.status == 404, other_outcome.body
    not_json = function_urls.post(urls["success"], "{not json: secret-value", JSON)
    assert not_json.status == 400, not_json.body
    assert b"secret-value" not in not_json.body
    bad_failure = function_urls.post(urls["failure"], '{"ErrorType": 7}', JSON)
    assert bad_failure.status == 400, bad_failure.body
    assert b"ErrorType" in bad_failure.body
    too_large = function_urls.post(urls["success"], json.dumps("x" * 70_000), JSON)
    assert too_large.status == 413, too_large.body
    heartbeat_with_body = function_urls.post(urls["heartbeat"], "{}", JSON)
    assert heartbeat_with_body.status == 400, heartbeat_with_body.body

    deployed_target.process_queue()
    assert deployed_client.describe_execution(execution_id)["Status"] == "RUNNING"
    assert _callback_events(deployed_client, execution_id) == ["CallbackStarted"]
    # Still open: the real completion goes through.
    assert function_urls.post(urls["success"], '"late but fine"', JSON).status == 202
    description = _finish(deployed_target, deployed_client, execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == "late but fine"


def test_the_signing_secret_is_read_from_secrets_manager_and_ssm_on_the_backend(
    deployed_stack: DeployedStack, monkeypatch: Any
) -> None:
    """The callbacks function's secret reads (GetSecretValue, GetParameter with decryption) against the
    backend itself, as the function makes them at its cold start: boto3 pointed there by its environment."""
    from stepwell.features.callback_urls import read_secret

    backend = deployed_stack.backend
    for name, value in backend.environment().items():
        monkeypatch.setenv(name, value)
    label = uuid.uuid4().hex[:8]
    secrets = backend.client("secretsmanager")
    text_arn = secrets.create_secret(Name=f"cb-text-{label}", SecretString="s3cret-text")["ARN"]
    binary_arn = secrets.create_secret(Name=f"cb-bin-{label}", SecretBinary=b"\x00\x01key")["ARN"]
    ssm = backend.client("ssm")
    ssm.put_parameter(Name=f"/stepwell/cb-{label}", Value="s3cret-param", Type="SecureString")
    parameter_arn = ssm.get_parameter(Name=f"/stepwell/cb-{label}")["Parameter"]["ARN"]
    try:
        assert read_secret(text_arn) == b"s3cret-text"
        assert read_secret(binary_arn) == b"\x00\x01key"
        assert read_secret(parameter_arn) == b"s3cret-param"
    finally:
        for arn in (text_arn, binary_arn):
            secrets.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
        ssm.delete_parameter(Name=f"/stepwell/cb-{label}")


def test_the_callbacks_function_reserves_its_concurrency_and_is_capped_there(
    deployed_stack: DeployedStack,
) -> None:
    # examples/complete sets callback_url_reserved_concurrency = 20: a flood of URL requests gets Lambda's
    # 429 beyond 20 at once and leaves the rest of the account's concurrency to the worker.
    functions = deployed_stack.backend.client("lambda")
    name = str(deployed_stack.outputs["callback_function_name"])
    assert functions.get_function_concurrency(FunctionName=name).get("ReservedConcurrentExecutions") == 20
