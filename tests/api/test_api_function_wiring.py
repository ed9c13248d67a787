"""The API function's engine (stepwell.wiring.api_function) knows the deployment's invoke targets and remote
durable functions as the worker does: a remote function's chained invoke is resolved by the API's data
plane."""

from __future__ import annotations

import json

import pytest
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
