"""Lambda functions as context.invoke targets: the Invoke adapter's request and answer (botocore's Stubber:
moto runs no function code), the settings that allow them, and the entry wiring them at cold start."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber
from stepwell.aws.clients import AwsClients
from stepwell.aws.lambda_invoker import BotoLambdaInvoker
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.invoke_targets import LambdaInvokeRefused, LambdaResponse, function_error
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import REGION, Deployment
from .driver import QueueDriver

PRICING = f"arn:aws:lambda:{REGION}:123456789012:function:pricing"


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


@pytest.fixture
def stubbed(aws_credentials: None) -> tuple[BotoLambdaInvoker, Stubber]:
    clients = AwsClients(region=REGION)
    stubber = Stubber(clients.lambda_invoke)
    stubber.activate()
    return BotoLambdaInvoker(clients), stubber


def test_the_invoke_is_synchronous_with_the_payload_and_maps_the_answer(
    stubbed: tuple[BotoLambdaInvoker, Stubber],
) -> None:
    invoker, stubber = stubbed
    stubber.add_response(
        "invoke",
        {"StatusCode": 200, "Payload": body(b'{"total": 12}'), "ExecutedVersion": "3"},
        {"FunctionName": f"{PRICING}:3", "InvocationType": "RequestResponse", "Payload": b'{"qty": 3}'},
    )
    assert invoker.invoke(f"{PRICING}:3", b'{"qty": 3}') == LambdaResponse(b'{"total": 12}', None, "3")
    stubber.assert_no_pending_responses()


def test_a_function_error_comes_back_with_its_payload(stubbed: tuple[BotoLambdaInvoker, Stubber]) -> None:
    invoker, stubber = stubbed
    report = {"errorType": "ValueError", "errorMessage": "bad sku", "stackTrace": ['  File "app.py"\n']}
    stubber.add_response(
        "invoke",
        {
            "StatusCode": 200,
            "FunctionError": "Unhandled",
            "Payload": body(json.dumps(report).encode()),
            "ExecutedVersion": "$LATEST",
        },
    )
    response = invoker.invoke(PRICING, b"{}")
    assert response.function_error == "Unhandled" and response.executed_version == "$LATEST"
    assert function_error(response.payload) == {
        "ErrorType": "ValueError",
        "ErrorMessage": "bad sku",
        "StackTrace": ['  File "app.py"\n'],
    }


def test_a_refusal_fails_the_invoke_and_throttling_is_raised_for_a_retry(
    stubbed: tuple[BotoLambdaInvoker, Stubber],
) -> None:
    invoker, stubber = stubbed
    stubber.add_client_error(
        "invoke", "ResourceNotFoundException", f"Function not found: {PRICING}", http_status_code=404
    )
    stubber.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", http_status_code=429)
    stubber.add_client_error("invoke", "ServiceException", "internal", http_status_code=500)

    with pytest.raises(LambdaInvokeRefused) as refused:
        invoker.invoke(PRICING, b"{}")
    assert (refused.value.error_type, refused.value.message) == (
        "ResourceNotFoundException",
        f"Function not found: {PRICING}",
    )
    for code in ("TooManyRequestsException", "ServiceException"):
        with pytest.raises(ClientError) as raised:
            invoker.invoke(PRICING, b"{}")
        assert raised.value.response["Error"]["Code"] == code


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (
            b"Task timed out after 3.00 seconds",
            {"ErrorType": "Lambda.FunctionError", "ErrorMessage": "Task timed out after 3.00 seconds"},
        ),
        (
            b'["not", "an object"]',
            {"ErrorType": "Lambda.FunctionError", "ErrorMessage": '["not", "an object"]'},
        ),
        (b'{"errorMessage": "no type"}', {"ErrorType": "Lambda.FunctionError", "ErrorMessage": "no type"}),
        (
            b'{"errorType": "Sandbox.Timedout", "errorMessage": "timed out", "stackTrace": []}',
            {"ErrorType": "Sandbox.Timedout", "ErrorMessage": "timed out"},
        ),
    ],
)
def test_a_function_error_payload_maps_to_the_invokes_error(payload: bytes, error: dict[str, Any]) -> None:
    assert function_error(payload) == error


# ---------------------------------------------------------------------------------------------- settings


def test_the_allowed_functions_come_from_the_environment_and_client_config(deployment: Deployment) -> None:
    env = {**deployment.config.to_env(), "STEPWELL_INVOKE_FUNCTIONS": json.dumps([PRICING])}
    config = StepwellConfig.from_env(env)
    assert config.invoke_functions == (PRICING,)
    assert StepwellConfig.from_env(config.to_env()) == config
    assert StepwellConfig.from_client_config(config.to_client_config()) == config
    assert StepwellConfig.from_env({**env, "STEPWELL_INVOKE_FUNCTIONS": "[]"}).invoke_functions == ()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "not json",
            "STEPWELL_INVOKE_FUNCTIONS is not valid JSON: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            json.dumps({"arn": PRICING}),
            "STEPWELL_INVOKE_FUNCTIONS must be a JSON list of Lambda function ARNs (strings), "
            f'got {{"arn": "{PRICING}"}}',
        ),
        ("[7]", "STEPWELL_INVOKE_FUNCTIONS must be a JSON list of Lambda function ARNs (strings), got [7]"),
        (
            json.dumps([f"{PRICING}:live"]),
            f"invoke_functions (STEPWELL_INVOKE_FUNCTIONS): invalid Lambda function ARN '{PRICING}:live': "
            "must be an unqualified Lambda function ARN: "
            "arn:<partition>:lambda:<region>:<account>:function:<name>",
        ),
    ],
)
def test_bad_allowed_functions_are_refused_naming_them(
    deployment: Deployment, value: str, message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        StepwellConfig.from_env({**deployment.config.to_env(), "STEPWELL_INVOKE_FUNCTIONS": value})
    assert str(raised.value) == message


# ---------------------------------------------------------------------------------------------- entry


@durable_execution
def invoke_pricing(event: Any, context: DurableContext) -> Any:
    return context.invoke(event["target"], {"qty": 2}, name="price")


def run_on_entry(deployment: Deployment, target: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run invoke_pricing through the entry of a worker whose environment allows PRICING."""
    config = dataclasses.replace(deployment.config, invoke_functions=(PRICING,))
    registry = Registry()
    registry.register("invoke-pricing", invoke_pricing)
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(config, deployment.clients, registry=registry, clock=clock)
    assert registry.lambda_targets() == [PRICING]
    client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
    execution_id = client.start_execution("invoke-pricing", {"target": target})
    QueueDriver(deployment, runtime, clock).run_until_quiet()
    return client.describe_execution(execution_id), client.get_execution_history(execution_id)


def test_the_entry_allows_the_configured_functions_and_invokes_them(deployment: Deployment) -> None:
    with Stubber(deployment.clients.lambda_invoke) as stubber:
        stubber.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": body(b'{"total": 8}'), "ExecutedVersion": "$LATEST"},
            {"FunctionName": PRICING, "InvocationType": "RequestResponse", "Payload": b'{"qty": 2}'},
        )
        description, history = run_on_entry(deployment, "pricing")
        stubber.assert_no_pending_responses()
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == {"total": 8}
    details = [e[e["EventType"] + "Details"] for e in history if e["EventType"].startswith("ChainedInvoke")]
    assert details == [
        {
            "FunctionName": "pricing",
            "Input": {"Payload": '{"qty": 2}', "Truncated": False},
            "ExecutedVersion": "$LATEST",
        },
        {"Result": {"Payload": '{"total": 8}', "Truncated": False}},
    ]


def test_a_function_lambda_does_not_have_fails_the_invoke(deployment: Deployment) -> None:
    # moto answers the real Invoke: the allowed function was never created.
    description, history = run_on_entry(deployment, f"{PRICING}:4")
    failed = [e for e in history if e["EventType"] == "ChainedInvokeFailed"]
    assert description["Status"] == "FAILED"
    assert failed[0]["ChainedInvokeFailedDetails"] == {
        "Error": {
            "Payload": {
                "ErrorType": "ResourceNotFoundException",
                "ErrorMessage": f"{PRICING}:4: Function not found: {PRICING}:4",
            },
            "Truncated": False,
        }
    }
