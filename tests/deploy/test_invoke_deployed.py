"""`context.invoke` of a plain Lambda function on the deployed stack, on each backend.

examples/complete deploys `{name}-greeter` (examples/complete/functions/greeter.py) and lists its ARN in
`invoke_function_arns`; the workflow `invoke.lambda_target` (tests/deploy/workflows) invokes the target
its input names. The function runs as Lambda runs it (moto: the harness's runtime behind its local Invoke
API; LocalStack: the stepwell-local executor), and its answer, or its error, is the invoke's.
"""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deployed_backend import DeployedTarget
from history_model import check_history_against_model
from stepwell.aws.payloads import execution_folder
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack

from .test_failures_deployed import _drive

GREETER_SOURCE = Path(__file__).resolve().parents[2] / "examples" / "complete" / "functions" / "greeter.py"
LATEST = "$LATEST"
# Over the engine's 200 KB inline limit (the invoke's input and result go through the payload bucket),
# within its 256 KiB input limit.
LARGE_ECHO_BYTES = 240_000
ACTIVE_WAIT_SECONDS = 60.0

# A function the stack does not list: each call leaves a marker item, so a test sees whether it ran.
TRIPWIRE_SOURCE = """
import os, time, boto3

def handler(event, context):
    boto3.client("dynamodb").put_item(
        TableName=os.environ["MARKER_TABLE"],
        Item={"key": {"S": os.environ["MARKER_KEY"]}, "ttl": {"N": str(int(time.time()) + 86400)}},
    )
    return {"called": True}
"""


def _zip(name: str, source: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, source)
    return buffer.getvalue()


def _greeter_arn(stack: DeployedStack) -> str:
    return str(stack.outputs["greeter_function_arn"])


def _invoke(target: DeployedTarget, client: StepwellClient, function: str, payload: Any) -> dict[str, Any]:
    """Run `invoke.lambda_target` on (function, payload) to its end: its id, description and history
    (checked against the API model)."""
    run = uuid.uuid4().hex[:12]
    execution_id = client.start_execution(
        "invoke.lambda_target", {"target": function, "input": payload}, f"invoke-{run}"
    )
    description = _drive(target, execution_id)
    history = client.get_execution_history(execution_id)
    assert check_history_against_model(history) == []
    return {"description": description, "history": history, "id": execution_id}


def _payload(holder: dict[str, Any]) -> str:
    """An EventInput/EventResult's payload; Truncated, when rendered, is false (the data is all there)."""
    assert set(holder) <= {"Payload", "Truncated"}, holder
    assert holder.get("Truncated", False) is False
    return str(holder["Payload"])


def _invoke_events(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in history if str(event["EventType"]).startswith("ChainedInvoke")]


def _assert_started(event: dict[str, Any], function: str, payload: Any, executed_version: str) -> None:
    """ChainedInvokeStarted in full: no TenantId (none was passed) and no DurableExecutionArn (the
    target is no durable function), as AWS renders an invoke of a plain function."""
    assert (event["EventType"], event["SubType"], event["Name"]) == (
        "ChainedInvokeStarted",
        "ChainedInvoke",
        "call-target",
    )
    details = event["ChainedInvokeStartedDetails"]
    assert set(details) == {"FunctionName", "Input", "ExecutedVersion"}, details
    assert details["FunctionName"] == function
    assert json.loads(_payload(details["Input"])) == payload
    assert details["ExecutedVersion"] == executed_version


def _event_types(history: list[dict[str, Any]]) -> list[str]:
    return [str(event["EventType"]) for event in history]


def test_the_worker_may_invoke_exactly_the_listed_functions(deployed_stack: DeployedStack) -> None:
    """invoke_function_arns reaches the worker (STEPWELL_INVOKE_FUNCTIONS) and its role (the ARN and its
    versions and aliases, nothing else)."""
    arn = _greeter_arn(deployed_stack)
    config = deployed_stack.client_config
    lam, iam = deployed_stack.backend.client("lambda"), deployed_stack.backend.client("iam")
    function = lam.get_function_configuration(FunctionName=config["worker_function_name"])
    assert json.loads(function["Environment"]["Variables"]["STEPWELL_INVOKE_FUNCTIONS"]) == [arn]
    role_name = function["Role"].rsplit("/", 1)[-1]
    statements = []
    for policy_name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        statements.extend(document["Statement"])
    [invoke_targets] = [statement for statement in statements if statement.get("Sid") == "InvokeTargets"]
    assert invoke_targets == {
        "Sid": "InvokeTargets",
        "Effect": "Allow",
        "Action": "lambda:InvokeFunction",
        "Resource": [arn, f"{arn}:*"],
    }


def test_a_workflow_gets_the_return_value_of_a_lambda_function_it_invokes_by_arn(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    arn = _greeter_arn(deployed_stack)
    payload = {"name": "Ada", "echo": [1, "two", {"three": 3}]}
    ran = _invoke(deployed_target, deployed_client, arn, payload)

    expected = {"greeting": "Hello, Ada!", "version": LATEST, "echo": [1, "two", {"three": 3}]}
    assert ran["description"]["Status"] == "SUCCEEDED", json.dumps(ran["description"], default=str)
    assert json.loads(ran["description"]["Result"]) == expected
    assert _event_types(ran["history"]) == [
        "ExecutionStarted",
        "ChainedInvokeStarted",
        "InvocationCompleted",
        "ChainedInvokeSucceeded",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    started, succeeded = _invoke_events(ran["history"])
    _assert_started(started, arn, payload, LATEST)
    assert (succeeded["SubType"], succeeded["Id"], succeeded["Name"]) == (
        "ChainedInvoke",
        started["Id"],
        "call-target",
    )
    assert set(succeeded["ChainedInvokeSucceededDetails"]) == {"Result"}
    assert json.loads(_payload(succeeded["ChainedInvokeSucceededDetails"]["Result"])) == expected
    assert succeeded["EventTimestamp"] >= started["EventTimestamp"]


def test_a_published_version_named_by_function_name_runs_that_version(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    """`name:version` matches the listed ARN by name; the version runs and is the ExecutedVersion."""
    arn = _greeter_arn(deployed_stack)
    name = arn.rsplit(":", 1)[-1]
    lam = deployed_stack.backend.client("lambda")
    version = str(lam.publish_version(FunctionName=name)["Version"])
    _wait_active(lam, name, version)

    ran = _invoke(deployed_target, deployed_client, f"{name}:{version}", {"name": "Grace"})

    expected = {"greeting": "Hello, Grace!", "version": version, "echo": None}
    assert ran["description"]["Status"] == "SUCCEEDED", json.dumps(ran["description"], default=str)
    assert json.loads(ran["description"]["Result"]) == expected
    started, succeeded = _invoke_events(ran["history"])
    _assert_started(started, f"{name}:{version}", {"name": "Grace"}, version)
    assert json.loads(_payload(succeeded["ChainedInvokeSucceededDetails"]["Result"])) == expected


def test_a_large_input_and_result_travel_through_the_payload_bucket(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    arn = _greeter_arn(deployed_stack)
    payload = {"name": "Big", "echo": "x" * LARGE_ECHO_BYTES}
    ran = _invoke(deployed_target, deployed_client, arn, payload)

    assert ran["description"]["Status"] == "SUCCEEDED", json.dumps(ran["description"], default=str)[:2000]
    started, succeeded = _invoke_events(ran["history"])
    _assert_started(started, arn, payload, LATEST)
    result = json.loads(_payload(succeeded["ChainedInvokeSucceededDetails"]["Result"]))
    assert result == {"greeting": "Hello, Big!", "version": LATEST, "echo": "x" * LARGE_ECHO_BYTES}
    bucket = deployed_stack.client_config["payload_bucket"]
    folder = execution_folder(ran["id"])
    stored = deployed_stack.backend.client("s3").list_objects_v2(Bucket=bucket, Prefix=folder)
    assert stored.get("KeyCount", 0) > 0, f"nothing of the execution was offloaded to {bucket}/{folder}"


def test_a_function_error_becomes_chained_invoke_failed(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    """The function raises: its errorType, errorMessage and stackTrace (the handler's frames) are the
    invoke's Error, and the workflow, which does not catch it, fails."""
    arn = _greeter_arn(deployed_stack)
    ran = _invoke(deployed_target, deployed_client, arn, {"name": ""})

    assert ran["description"]["Status"] == "FAILED", json.dumps(ran["description"], default=str)
    assert _event_types(ran["history"]) == [
        "ExecutionStarted",
        "ChainedInvokeStarted",
        "InvocationCompleted",
        "ChainedInvokeFailed",
        "InvocationCompleted",
        "ExecutionFailed",
    ]
    started, failed = _invoke_events(ran["history"])
    _assert_started(started, arn, {"name": ""}, LATEST)
    assert (failed["SubType"], failed["Id"], failed["Name"]) == (
        "ChainedInvoke",
        started["Id"],
        "call-target",
    )
    assert set(failed["ChainedInvokeFailedDetails"]) == {"Error"}
    error = failed["ChainedInvokeFailedDetails"]["Error"]
    assert set(error) <= {"Payload", "Truncated"} and error.get("Truncated", False) is False
    reported = error["Payload"]
    assert set(reported) == {"ErrorType", "ErrorMessage", "StackTrace"}, reported
    assert reported["ErrorType"] == "GreetingRefused"
    assert reported["ErrorMessage"] == (
        "no name to greet: the event needs a non-empty string 'name', got {'name': ''}"
    )
    trace = reported["StackTrace"]
    assert isinstance(trace, list) and all(isinstance(frame, str) for frame in trace)
    assert "greeter.py" in trace[-1] and "raise GreetingRefused" in trace[-1], trace
    assert not [frame for frame in trace if "lambda_runtime/" in frame or "worker.py" in frame], trace
    execution_error = ran["history"][-1]["ExecutionFailedDetails"]["Error"]["Payload"]
    assert "no name to greet" in execution_error["ErrorMessage"], execution_error


@pytest.fixture
def tripwire(deployed_stack: DeployedStack) -> Iterator[dict[str, str]]:
    """A Lambda function not in invoke_function_arns; each call writes the marker item `key`."""
    backend = deployed_stack.backend
    lam, iam = backend.client("lambda"), backend.client("iam")
    suffix = uuid.uuid4().hex[:8]
    name = f"tripwire-{suffix}"
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(_LAMBDA_TRUST))["Role"]
    marker = {
        "table": str(deployed_stack.client_config["coordination_table"]),
        "key": f"test-marker#{suffix}#tripwire",
    }
    created = lam.create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role["Arn"],
        Handler="tripwire.handler",
        Code={"ZipFile": _zip("tripwire.py", TRIPWIRE_SOURCE)},
        Environment={"Variables": {"MARKER_TABLE": marker["table"], "MARKER_KEY": marker["key"]}},
        Timeout=30,
    )
    _wait_active(lam, name, None)
    try:
        yield {**marker, "name": name, "arn": str(created["FunctionArn"])}
    finally:
        lam.delete_function(FunctionName=name)
        iam.delete_role(RoleName=name)


_LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def _called(stack: DeployedStack, tripwire: dict[str, str]) -> bool:
    item = (
        stack.backend.client("dynamodb")
        .get_item(TableName=tripwire["table"], Key={"key": {"S": tripwire["key"]}}, ConsistentRead=True)
        .get("Item")
    )
    return item is not None


def test_a_function_not_listed_is_refused_without_a_call(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    tripwire: dict[str, str],
) -> None:
    ran = _invoke(deployed_target, deployed_client, tripwire["arn"], {"name": "Mallory"})

    assert ran["description"]["Status"] == "FAILED", json.dumps(ran["description"], default=str)
    [failed] = [e for e in _invoke_events(ran["history"]) if e["EventType"] == "ChainedInvokeFailed"]
    reported = failed["ChainedInvokeFailedDetails"]["Error"]["Payload"]
    # As AWS reports a target it cannot invoke; what is allowed goes to the worker's log, never into the
    # execution's history (a tenant must not learn the deployment's other functions).
    assert reported["ErrorType"] == "ResourceNotFoundException", reported
    assert reported["ErrorMessage"].startswith("Function not found: "), reported
    assert tripwire["name"] in reported["ErrorMessage"], reported
    assert _greeter_arn(deployed_stack) not in reported["ErrorMessage"], reported
    assert not _called(deployed_stack, tripwire), "the worker invoked a function it was not allowed to"

    # The tripwire does go off when called (through the backend's runtime), so the check above could
    # have seen a call.
    answer = deployed_target.runtime.invoke(tripwire["name"], {})
    assert answer.succeeded and answer.payload == {"called": True}, answer
    assert _called(deployed_stack, tripwire)


def test_an_explicit_latest_qualifier_invokes_the_unqualified_function(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    # Lambda's Invoke takes ARN:$LATEST as the unqualified function: so does the invoke.
    target = f"{_greeter_arn(deployed_stack)}:{LATEST}"
    ran = _invoke(deployed_target, deployed_client, target, {"name": "Ada"})

    assert ran["description"]["Status"] == "SUCCEEDED", json.dumps(ran["description"], default=str)
    result = json.loads(ran["description"]["Result"])
    assert (result["greeting"], result["version"]) == ("Hello, Ada!", LATEST), result


def _wait_active(lam: Any, name: str, qualifier: str | None) -> None:
    """Until the function (version) is Active: LocalStack prepares a new one asynchronously."""
    request = {"FunctionName": name, **({"Qualifier": qualifier} if qualifier else {})}
    deadline = time.monotonic() + ACTIVE_WAIT_SECONDS
    while (state := lam.get_function_configuration(**request).get("State", "Active")) != "Active":
        assert state == "Pending" and time.monotonic() < deadline, f"{name}:{qualifier} is {state}"
        time.sleep(0.2)
