"""The API function's engine (stepwell.wiring.api_function) knows the deployment's invoke targets and remote
durable functions as the worker does: a remote function's chained invoke is resolved by the API's data
plane."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from stepwell.core.remote_functions import RemoteFunction
from stepwell.wiring import api_function

ACCOUNT = "123456789012"
API_ARN = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:dev-api"
ORDERS = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:orders"
PLAIN = f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:plain-target"
ENVIRONMENT = {
    "STEPWELL_NAME": "dev",
    "STEPWELL_REGION": "eu-west-1",
    "STEPWELL_EXECUTIONS_TABLE": "e",
    "STEPWELL_OPERATIONS_TABLE": "o",
    "STEPWELL_COORDINATION_TABLE": "c",
    "STEPWELL_WORK_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
    "STEPWELL_API_OPERATE_PRINCIPALS": json.dumps([ACCOUNT]),
    "STEPWELL_API_FUNCTION_PRINCIPALS": json.dumps([f"arn:aws:iam::{ACCOUNT}:role/orders-fn"]),
    "STEPWELL_DURABLE_FUNCTIONS": json.dumps({"orders": {"function_arn": ORDERS, "timeout_seconds": 60}}),
    "STEPWELL_INVOKE_FUNCTIONS": json.dumps([PLAIN]),
}


def test_the_api_engine_allows_the_deployments_targets_and_remote_functions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(api_function, "_handler", None)
    handler = api_function.load_handler(API_ARN, ENVIRONMENT)
    registry = handler.engine.registry
    assert registry.remote("orders") == RemoteFunction(ORDERS, None, 60)
    assert registry.lambda_targets() == [PLAIN]
    assert "any-workflow" in registry  # the API starts any valid name; the worker has the code
    functions = [principal.text for principal in handler.settings.access.functions]
    assert functions == [f"arn:aws:iam::{ACCOUNT}:role/orders-fn"]


def test_without_them_the_api_engine_allows_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api_function, "_handler", None)
    bare = {key: value for key, value in ENVIRONMENT.items() if "FUNCTIONS" not in key}
    handler = api_function.load_handler(API_ARN, bare)
    assert handler.engine.registry.remote("orders") is None and handler.engine.registry.lambda_targets() == []


def test_the_api_reads_the_durable_functions_their_roles_and_names_from_the_parameter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The module's way (issue 41): the environment names the parameter only; the functions' roles join the
    data plane's principals and their names the deployment's workflows."""
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(api_function, "_handler", None)
    role = f"arn:aws:iam::{ACCOUNT}:role/orders-fn"
    document = {
        "functions": {
            "orders": {"function_arn": ORDERS, "qualifier": "7", "timeout_seconds": 60, "role_arn": role}
        }
    }
    environment = {key: value for key, value in ENVIRONMENT.items() if "FUNCTION" not in key}
    environment["STEPWELL_API_WORKFLOWS"] = json.dumps(["billing"])
    environment["STEPWELL_DURABLE_FUNCTIONS_PARAMETER"] = "/stepwell/dev/durable-functions"
    with mock_aws():
        boto3.client("ssm", region_name="eu-west-1").put_parameter(
            Name="/stepwell/dev/durable-functions", Value=json.dumps(document), Type="String"
        )
        monkeypatch.setenv("AWS_REGION", "eu-west-1")
        handler = api_function.load_handler(API_ARN, environment)
    assert handler.engine.registry.remote("orders") == RemoteFunction(ORDERS, "7", 60)
    assert [principal.text for principal in handler.settings.access.functions] == [role]
    assert handler.settings.workflows == frozenset({"billing", "orders"})
