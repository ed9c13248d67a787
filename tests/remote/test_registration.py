"""Registering remote durable functions (STEPWELL_DURABLE_FUNCTIONS), their tokens, and the data plane's
access class (issue 41)."""

from __future__ import annotations

import json

import pytest
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.registry import Registry
from stepwell.core.remote_functions import (
    CheckpointToken,
    RemoteFunction,
    decode_token,
    parse_durable_functions,
)
from stepwell.errors import DuplicateWorkflow, InvalidArgument, WorkflowNotFound
from stepwell.features.lambda_api.access import AccessPolicy, Caller, OperationClass
from stepwell.features.lambda_api.errors import ApiError
from stepwell.features.lambda_api.routes import route

from tests.remote.harness import FakeLambda, function_arn

ARN = function_arn("orders")
OPS = "arn:aws:iam::123456789012:role/ops"
_ARN = "arn:aws:lambda:us-east-1:123456789012:function:orders:$LATEST/durable-execution/x/y"
DATA_PLANE_PATHS = {
    "CheckpointDurableExecution": f"/2025-12-01/durable-executions/{_ARN}/checkpoint",
    "GetDurableExecutionState": f"/2025-12-01/durable-executions/{_ARN}/state",
}
BASE = {
    "name": "dev",
    "executions_table": "e",
    "operations_table": "o",
    "coordination_table": "c",
    "work_queue_url": "https://sqs.example/q",
}


def test_the_environment_registers_functions_with_their_qualifier_and_timeout() -> None:
    text = json.dumps({"orders": {"function_arn": ARN, "qualifier": "live", "timeout_seconds": 60}})
    config = StepwellConfig.from_env(
        {
            "STEPWELL_NAME": "dev",
            "STEPWELL_EXECUTIONS_TABLE": "e",
            "STEPWELL_OPERATIONS_TABLE": "o",
            "STEPWELL_COORDINATION_TABLE": "c",
            "STEPWELL_WORK_QUEUE_URL": "https://sqs.example/q",
            "STEPWELL_DURABLE_FUNCTIONS": text,
        }
    )
    function = config.remote_functions["orders"]
    assert function == RemoteFunction(ARN, "live", 60)
    assert function.qualified_arn == ARN + ":live" and function.lease_seconds == 180
    assert json.loads(config.to_env()["STEPWELL_DURABLE_FUNCTIONS"]) == json.loads(text)


@pytest.mark.parametrize(
    ("functions", "named"),
    [
        ({"orders": {"function_arn": ARN + ":live"}}, "function_arn"),
        ({"orders": {"function_arn": ARN, "qualifier": "a b"}}, "qualifier"),
        ({"orders": {"function_arn": ARN, "timeout_seconds": 901}}, "timeout_seconds"),
        ({"orders": {"function_arn": ARN, "memory": 128}}, "memory"),
        ({"9-orders": {"function_arn": ARN}}, "9-orders"),
    ],
)
def test_a_bad_registration_is_refused_naming_the_value(functions: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        StepwellConfig(**BASE, durable_functions=functions)
    assert "STEPWELL_DURABLE_FUNCTIONS" in str(refused.value) and named in str(refused.value)
    with pytest.raises(InvalidArgument):
        parse_durable_functions("[1, 2]")


def test_a_remote_workflow_is_a_durable_workflow_of_the_registry_without_a_handler() -> None:
    registry = Registry()
    registry.allow_remote_functions({"orders": RemoteFunction(ARN)}, FakeLambda())
    assert "orders" in registry and registry.is_durable("orders") and registry.names() == ["orders"]
    assert registry.remote("orders") == RemoteFunction(ARN) and registry.remote("other") is None
    assert registry.executed_version("orders", None) == "$LATEST"
    with pytest.raises(WorkflowNotFound, match="remote durable function"):
        registry.get("orders")
    assert registry.copy().remote("orders") == RemoteFunction(ARN)
    registry.register_function("plain", lambda event, context: event)
    with pytest.raises(DuplicateWorkflow):
        registry.allow_remote_functions({"plain": RemoteFunction(ARN)}, FakeLambda())


def test_a_token_reads_back_and_nothing_else_reads_as_one() -> None:
    token = CheckpointToken(
        execution_id="default#orders#s/i-1",
        owner="a" * 32,
        seq=12,
        request_id="b" * 32,
        started_ms=1_000,
        wake_ms=2_000,
    )
    text = token.encode()
    assert text.isalnum() and text.upper() == text and len(text) <= 2048
    assert decode_token(text) == token and decode_token(token.next(13).encode()) == token.next(13)
    for forged in ("", "dG9rZW4=", text[:-3], text + "A", "A" * 3000, None, 7):
        assert decode_token(forged) is None


def test_only_the_functions_roles_may_call_the_data_plane() -> None:
    role_arn = "arn:aws:iam::123456789012:role/orders-fn"
    # An operator (read and operate) is no function: the data plane is the functions' class alone.
    access = AccessPolicy.from_json(json.dumps([OPS]), json.dumps([OPS]), "", json.dumps([role_arn]))
    role = Caller("arn:aws:sts::123456789012:assumed-role/orders-fn/i-1", "123456789012", "aws", "orders-fn")
    operator = Caller("arn:aws:sts::123456789012:assumed-role/ops/i-1", "123456789012", "aws", "ops")
    for operation in ("CheckpointDurableExecution", "GetDurableExecutionState"):
        kind = route("POST" if operation.startswith("Checkpoint") else "GET", DATA_PLANE_PATHS[operation])
        assert kind.operation.kind is OperationClass.FUNCTIONS
        access.check(role, OperationClass.FUNCTIONS, operation, "arn")
        for caller in (operator, None):
            with pytest.raises(ApiError) as denied:
                access.check(caller, OperationClass.FUNCTIONS, operation, "arn")
            assert denied.value.code == "AccessDeniedException"
        access.check(operator, OperationClass.READ, "GetDurableExecution", "arn")
