"""The Event invoke of remote durable functions (BotoLambdaInvoker.invoke_event, botocore's Stubber: the
request Lambda gets, and its refusals told from errors worth a retry) and the entry's wiring of
STEPWELL_DURABLE_FUNCTIONS at cold start."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from stepwell.aws.clients import AwsClients
from stepwell.aws.lambda_invoker import BotoLambdaInvoker
from stepwell.config import StepwellConfig
from stepwell.core.arns import execution_arn_of_function
from stepwell.core.invoke_targets import LambdaInvokeRefused
from stepwell.core.registry import Registry
from stepwell.core.remote_functions import RemoteFunction
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.wiring.entry import EntryRuntime

REGION = "us-east-1"
ORDERS = f"arn:aws:lambda:{REGION}:123456789012:function:orders"


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> AwsClients:
    # Fake credentials, so nothing can reach a real account.
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_LAMBDA"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return AwsClients(region=REGION)


def test_the_invoke_is_an_event_with_the_registered_qualifier(clients: AwsClients) -> None:
    with Stubber(clients.lambda_) as stubber:
        stubber.add_response(
            "invoke",
            {"StatusCode": 202},
            {"FunctionName": ORDERS, "InvocationType": "Event", "Payload": b'{"a": 1}', "Qualifier": "live"},
        )
        stubber.add_response(
            "invoke",
            {"StatusCode": 202},
            {"FunctionName": ORDERS, "InvocationType": "Event", "Payload": b"{}"},
        )
        invoker = BotoLambdaInvoker(clients)
        invoker.invoke_event(ORDERS, "live", b'{"a": 1}')
        invoker.invoke_event(ORDERS, None, b"{}")
        stubber.assert_no_pending_responses()


def test_a_refusal_is_final_and_throttling_or_a_service_error_is_raised_for_a_retry(
    clients: AwsClients,
) -> None:
    with Stubber(clients.lambda_) as stubber:
        stubber.add_client_error(
            "invoke", "ResourceNotFoundException", "Function not found", http_status_code=404
        )
        stubber.add_client_error("invoke", "AccessDeniedException", "not authorized", http_status_code=403)
        stubber.add_client_error("invoke", "TooManyRequestsException", "Rate exceeded", http_status_code=429)
        stubber.add_client_error("invoke", "ServiceException", "internal", http_status_code=500)
        invoker = BotoLambdaInvoker(clients)
        for code in ("ResourceNotFoundException", "AccessDeniedException"):
            with pytest.raises(LambdaInvokeRefused) as refused:
                invoker.invoke_event(ORDERS, None, b"{}")
            assert refused.value.error_type == code
        for code in ("TooManyRequestsException", "ServiceException"):
            with pytest.raises(ClientError) as raised:
                invoker.invoke_event(ORDERS, None, b"{}")
            assert raised.value.response["Error"]["Code"] == code


def test_the_entry_registers_the_configured_functions(clients: AwsClients) -> None:
    config = StepwellConfig(
        name="dev",
        executions_table="e",
        operations_table="o",
        coordination_table="c",
        work_queue_url="https://sqs.example/q",
        region=REGION,
        durable_functions={"orders": {"function_arn": ORDERS, "qualifier": "3", "timeout_seconds": 30}},
    )
    runtime = EntryRuntime.from_config(config, clients, registry=Registry())
    registry = runtime.engine.registry
    assert registry.remote("orders") == RemoteFunction(ORDERS, "3", 30)
    assert isinstance(registry.remote_invoker(), BotoLambdaInvoker)
    # The API's ARN of the execution, in the function's account (the API's), which the API reads back
    arn = execution_arn_of_function("default#orders#order-7/run-1", ORDERS)
    api_arns = ArnContext.from_function_arn(ORDERS)
    assert arn == api_arns.execution_arn("default#orders#order-7/run-1")
    assert arn.startswith(f"{ORDERS}:$LATEST/durable-execution/run-1/")
    assert api_arns.execution_id(arn) == "default#orders#order-7/run-1"
    # A runtime without them has none
    plain = EntryRuntime.from_config(
        StepwellConfig(**{**config.to_client_config(), "durable_functions": {}}), clients, registry=Registry()
    )
    assert plain.engine.registry.remote("orders") is None
