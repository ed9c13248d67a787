"""The AWS durable execution API on the deployed stack (examples/complete: enable_api, an operator, a
reader and tenant acme's role), on both backends: boto3's own `lambda` client and the AWS CLI, signed as the
stack's roles, start, read, list, complete a callback and stop executions through the deployed API function;
the tenant's role reaches only its tenant's executions.

Lambda's front end for an AWS_IAM function URL (check the signature and the resource policy, name the
caller) is played by tests/api/iam_url_front.py on both backends: moto's harness refuses AWS_IAM URLs and
LocalStack serves them without checking anything or naming the caller. It runs the deployed function
through the harness (lambda_runtime.invoke), as the URL would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from deployed_backend import FINISHED, DeployedTarget
from stepwell.features.lambda_api.access import Principal
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime

from tests.api.iam_url_front import IamFunctionUrlFront, Identity

CALLBACK_WORKFLOW = "callbacks.deadline"  # a callback with a one-day deadline (a schedule)
WAIT_SECONDS = 240.0
CLI_TIMEOUT_SECONDS = 120.0
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 2}, read_timeout=180, connect_timeout=10)


@dataclass
class DeployedApi:
    front: IamFunctionUrlFront
    identities: dict[str, Identity]
    arns: ArnContext
    region: str

    def client(self, role: str = "operator") -> Any:
        return boto3.client(
            "lambda",
            endpoint_url=self.front.url,
            region_name=self.region,
            config=CLIENT_CONFIG,
            **self.identities[role].client_kwargs(),
        )


def _policy_principals(lambda_client: Any, function_name: str) -> Callable[[], list[Principal]]:
    """The principals the API function's resource policy lets call its URL (read per request)."""

    def read() -> list[Principal]:
        policy = json.loads(lambda_client.get_policy(FunctionName=function_name)["Policy"])
        principals: list[Principal] = []
        for statement in policy.get("Statement", []):
            if statement.get("Action") != "lambda:InvokeFunctionUrl" or statement.get("Effect") != "Allow":
                continue
            given = statement.get("Principal")
            named = given.get("AWS") if isinstance(given, dict) else given
            for text in named if isinstance(named, list) else [named]:
                principals.append(Principal.parse(text))
        return principals

    return read


@pytest.fixture(scope="module")
def deployed_api(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> Iterator[DeployedApi]:
    outputs = deployed_stack.outputs
    assert outputs.get("api_url") and outputs.get("api_function_name"), (
        "the deployed stack has no durable execution API: examples/complete must set enable_api = true "
        f"with api_principals (outputs: {sorted(outputs)})"
    )
    function_name = str(outputs["api_function_name"])
    backend = deployed_stack.backend
    lambda_client = backend.client("lambda")
    function_arn = lambda_client.get_function(FunctionName=function_name)["Configuration"]["FunctionArn"]

    def invoke(event: dict[str, Any]) -> Any:
        result = lambda_runtime.invoke(function_name, event)
        if result.error is not None:
            raise RuntimeError(f"the API function failed: {result.error}")
        return result.payload

    front = IamFunctionUrlFront(invoke, backend.region, _policy_principals(lambda_client, function_name))
    sts = backend.client("sts")
    identities: dict[str, Identity] = {}
    for role, role_arn in dict(outputs["api_caller_role_arns"]).items():
        session = sts.assume_role(RoleArn=role_arn, RoleSessionName=f"api-test-{role}")
        keys, user = session["Credentials"], session["AssumedRoleUser"]
        identities[role] = front.register(
            Identity(
                keys["AccessKeyId"],
                keys["SecretAccessKey"],
                user["Arn"],
                user["Arn"].split(":")[4],
                user["AssumedRoleId"],
                keys["SessionToken"],
            )
        )
    try:
        yield DeployedApi(front, identities, ArnContext.from_function_arn(function_arn), backend.region)
    finally:
        front.close()


def _finish(target: DeployedTarget, api: Any, arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        described: dict[str, Any] = api.get_durable_execution(DurableExecutionArn=arn)
        if described["Status"] in FINISHED:
            return described
        assert time.monotonic() < deadline, f"never finished: {described}"
        time.sleep(0.2)


def _callback_id(target: DeployedTarget, api: Any, arn: str) -> str:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        for event in api.get_durable_execution_history(DurableExecutionArn=arn)["Events"]:
            if event["EventType"] == "CallbackStarted":
                callback_id: str = event["CallbackStartedDetails"]["CallbackId"]
                return callback_id
        assert time.monotonic() < deadline, "the execution never started its callback"
        time.sleep(0.2)


def test_boto3s_lambda_client_starts_reads_lists_calls_back_and_stops_executions(
    deployed_api: DeployedApi, deployed_target: DeployedTarget
) -> None:
    api = deployed_api.client("operator")
    run = uuid.uuid4().hex[:10]
    started = api.invoke(
        FunctionName=CALLBACK_WORKFLOW,
        InvocationType="Event",
        DurableExecutionName=f"api-{run}",
        Payload=json.dumps({"run": run}),
    )
    assert started["StatusCode"] == 202
    arn = started["DurableExecutionArn"]
    assert arn.startswith(f"{deployed_api.arns.function_arn(CALLBACK_WORKFLOW)}/durable-execution/api-{run}/")
    callback_id = _callback_id(deployed_target, api, arn)
    described = api.get_durable_execution(DurableExecutionArn=arn)
    assert described["Status"] == "RUNNING" and json.loads(described["InputPayload"]) == {"run": run}
    listed = api.list_durable_executions_by_function(
        FunctionName=CALLBACK_WORKFLOW, DurableExecutionName=f"api-{run}", Statuses=["RUNNING"]
    )
    assert [item["DurableExecutionArn"] for item in listed["DurableExecutions"]] == [arn]

    api.send_durable_execution_callback_heartbeat(CallbackId=callback_id)
    api.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'"approved"')
    finished = _finish(deployed_target, api, arn)
    assert finished["Status"] == "SUCCEEDED" and json.loads(finished["Result"]) == '"approved"'
    kinds = [
        event["EventType"] for event in api.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    ]
    assert (
        kinds[0] == "ExecutionStarted" and "CallbackSucceeded" in kinds and kinds[-1] == "ExecutionSucceeded"
    )
    with pytest.raises(api.exceptions.CallbackTimeoutException):
        api.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'"again"')
    with pytest.raises(api.exceptions.DurableExecutionAlreadyStartedException):
        api.invoke(
            FunctionName=CALLBACK_WORKFLOW,
            InvocationType="Event",
            DurableExecutionName=f"api-{run}",
            Payload=json.dumps({"run": "other"}),
        )

    # A stop ends a waiting execution (and deletes its one-day deadline's schedule).
    waiting = api.invoke(
        FunctionName=CALLBACK_WORKFLOW, InvocationType="Event", Payload=json.dumps({"run": f"{run}-stop"})
    )["DurableExecutionArn"]
    _callback_id(deployed_target, api, waiting)
    stopped = api.stop_durable_execution(
        DurableExecutionArn=waiting, Error={"ErrorType": "Cancelled", "ErrorMessage": "by the API test"}
    )
    final = _finish(deployed_target, api, waiting)
    assert final["Status"] == "STOPPED" and final["Error"]["ErrorType"] == "Cancelled"
    assert abs((final["EndTimestamp"] - stopped["StopTimestamp"]).total_seconds()) < 5

    # RequestResponse waits for the whole execution: the queue is worked meanwhile.
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(
            api.invoke, FunctionName="orders.confirm", Payload=json.dumps({"order_id": run, "lines": []})
        )
        deadline = time.monotonic() + WAIT_SECONDS
        while not answer.done():
            deployed_target.process_queue()
            assert time.monotonic() < deadline, "the RequestResponse invoke never answered"
            time.sleep(0.2)
        synchronous = answer.result()
    assert synchronous["StatusCode"] == 200 and "FunctionError" not in synchronous
    assert json.loads(synchronous["Payload"].read()) == {
        "order_id": run,
        "status": "confirmed",
        "total_cents": 0,
    }


def test_refused_calls_on_the_deployed_stack(deployed_api: DeployedApi) -> None:
    operator, reader = deployed_api.client("operator"), deployed_api.client("reader")
    arn = operator.invoke(
        FunctionName=CALLBACK_WORKFLOW, InvocationType="Event", Payload=b'{"run": "refused"}'
    )["DurableExecutionArn"]
    assert reader.get_durable_execution(DurableExecutionArn=arn)["DurableExecutionArn"] == arn
    with pytest.raises(ClientError) as denied:
        reader.stop_durable_execution(DurableExecutionArn=arn)
    assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
    assert "api_principals.operate" in denied.value.response["Error"]["Message"]
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(
            f"{deployed_api.front.url}/2025-12-01/functions/orders.confirm/durable-executions"
        )
    assert unsigned.value.code == 403
    with pytest.raises(operator.exceptions.ResourceNotFoundException):
        operator.get_durable_execution(DurableExecutionArn=deployed_api.arns.execution_arn("default#x#y/z"))
    with pytest.raises(operator.exceptions.InvalidParameterValueException):
        operator.get_durable_execution_history(DurableExecutionArn="arn:aws:lambda:nowhere")
    with pytest.raises(ClientError) as unknown:
        operator.list_functions()
    assert unknown.value.response["Error"]["Code"] == "UnknownOperationException"
    operator.stop_durable_execution(DurableExecutionArn=arn)


def _refusal(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as refused:
        call()
    response = refused.value.response
    return {
        "code": response["Error"]["Code"],
        "status": response["ResponseMetadata"]["HTTPStatusCode"],
        "message": response["Error"]["Message"],
    }


def test_a_tenant_caller_reaches_only_its_tenants_executions(deployed_api: DeployedApi) -> None:
    """examples/complete's acme role is listed under tenant acme (api_tenant_principals): it starts,
    reads, stops and lists acme's executions only, and another tenant's execution is refused as a
    missing one of that tenant is."""
    operator, acme = deployed_api.client("operator"), deployed_api.client("acme")
    acme_arn = deployed_api.identities["acme"].arn
    run = uuid.uuid4().hex[:10]
    name = f"tenant-{run}"  # the same name in both tenants: two executions, told apart by their tenant

    def start(client: Any, tenant: str | None) -> str:
        extra = {"TenantId": tenant} if tenant is not None else {}
        answer = client.invoke(
            FunctionName=CALLBACK_WORKFLOW,
            InvocationType="Event",
            DurableExecutionName=name,
            Payload=json.dumps({"run": run}),
            **extra,
        )
        arn: str = answer["DurableExecutionArn"]
        return arn

    mine = start(acme, "acme")
    assert deployed_api.arns.execution_id(mine).startswith(f"acme#{CALLBACK_WORKFLOW}#{name}/")
    for tenant in ("globex", None):
        refused = _refusal(lambda tenant=tenant: start(acme, tenant))  # type: ignore[misc]
        assert refused["code"] == "AccessDeniedException" and refused["status"] == 403, refused
        assert acme_arn in refused["message"] and "lambda:Invoke " in refused["message"]
        assert "is limited to tenant acme" in refused["message"]
        assert f"(TenantId {tenant or 'default'})" in refused["message"]
    described = acme.get_durable_execution(DurableExecutionArn=mine)
    assert described["DurableExecutionArn"] == mine and json.loads(described["InputPayload"]) == {"run": run}

    theirs = start(operator, "globex")
    assert deployed_api.arns.execution_id(theirs).startswith(f"globex#{CALLBACK_WORKFLOW}#{name}/")
    missing = deployed_api.arns.execution_arn(f"globex#{CALLBACK_WORKFLOW}#nobody-{run}/nobody-{run}")
    calls: dict[str, Callable[[str], Any]] = {
        "GetDurableExecution": lambda arn: acme.get_durable_execution(DurableExecutionArn=arn),
        "StopDurableExecution": lambda arn: acme.stop_durable_execution(DurableExecutionArn=arn),
    }
    for operation, call in calls.items():
        answers = []
        for arn in (theirs, missing):
            refused = _refusal(lambda call=call, arn=arn: call(arn))  # type: ignore[misc]
            assert refused["code"] == "AccessDeniedException" and refused["status"] == 403, operation
            assert f"lambda:{operation} on resource: {arn} " in refused["message"], refused
            assert "limited to tenant acme" in refused["message"], refused
            answers.append({**refused, "message": refused["message"].replace(arn, "<ARN>")})
        # The same answer whether the other tenant's execution exists or never was.
        assert answers[0] == answers[1], operation
    # The refused stop left it running; the operator (no tenant limit) reads both tenants' executions.
    assert operator.get_durable_execution(DurableExecutionArn=theirs)["Status"] not in FINISHED
    with pytest.raises(operator.exceptions.ResourceNotFoundException):
        operator.get_durable_execution(DurableExecutionArn=missing)

    def listed(client: Any, **options: Any) -> list[str]:
        arns: list[str] = []
        marker: dict[str, str] = {}
        while True:
            answer = client.list_durable_executions_by_function(
                FunctionName=CALLBACK_WORKFLOW, **options, **marker
            )
            arns.extend(item["DurableExecutionArn"] for item in answer["DurableExecutions"])
            if "NextMarker" not in answer:
                return arns
            marker = {"Marker": answer["NextMarker"]}

    assert listed(acme, DurableExecutionName=name) == [mine]
    assert sorted(listed(operator, DurableExecutionName=name)) == sorted([mine, theirs])
    everything = listed(acme)
    assert mine in everything and theirs not in everything
    tenants = {deployed_api.arns.execution_id(arn).split("#", 1)[0] for arn in everything}
    assert tenants == {"acme"}, everything
    # The operator's listing holds other tenants' executions too (the other tests' start in default).
    assert {deployed_api.arns.execution_id(arn).split("#", 1)[0] for arn in listed(operator)} > {"acme"}

    acme.stop_durable_execution(DurableExecutionArn=mine)
    operator.stop_durable_execution(DurableExecutionArn=theirs)


def _aws_cli() -> str:
    found = shutil.which("aws", path=str(Path(sys.executable).parent)) or shutil.which("aws")
    assert found, "the AWS CLI is missing: pip install awscli (the dev extra has it)"
    return found


def test_the_aws_cli_drives_the_api(
    deployed_api: DeployedApi, deployed_target: DeployedTarget, tmp_path: Path
) -> None:
    cli = _aws_cli()
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWS_") or key == "AWS_CA_BUNDLE"
    }
    environment.update(deployed_api.identities["operator"].environment())
    environment.update(
        {
            "AWS_DEFAULT_REGION": deployed_api.region,
            "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
            "AWS_MAX_ATTEMPTS": "2",
        }
    )

    def aws(*arguments: str, ok: bool = True) -> Any:
        finished = subprocess.run(
            [cli, "lambda", *arguments, "--endpoint-url", deployed_api.front.url, "--output", "json"],
            capture_output=True,
            text=True,
            env=environment,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )
        if not ok:
            assert finished.returncode != 0, finished.stdout
            return finished.stderr
        assert finished.returncode == 0, finished.stderr
        return json.loads(finished.stdout) if finished.stdout.strip() else None

    run = uuid.uuid4().hex[:10]
    out = tmp_path / "invoke.json"
    started = aws(
        "invoke",
        "--function-name",
        CALLBACK_WORKFLOW,
        "--invocation-type",
        "Event",
        "--durable-execution-name",
        f"cli-{run}",
        "--payload",
        json.dumps({"run": run}),
        str(out),
    )
    assert started["StatusCode"] == 202
    arn = started["DurableExecutionArn"]
    callback_id = _callback_id(deployed_target, deployed_api.client(), arn)
    described = aws("get-durable-execution", "--durable-execution-arn", arn)
    assert described["Status"] == "RUNNING" and described["DurableExecutionName"] == f"cli-{run}"
    history = aws("get-durable-execution-history", "--durable-execution-arn", arn)
    assert "CallbackStarted" in [event["EventType"] for event in history["Events"]]
    listed = aws("list-durable-executions-by-function", "--function-name", CALLBACK_WORKFLOW)
    assert arn in [item["DurableExecutionArn"] for item in listed["DurableExecutions"]]
    aws(
        "send-durable-execution-callback-success",
        "--callback-id",
        callback_id,
        "--result",
        '"from the cli"',
    )
    finished = _finish(deployed_target, deployed_api.client(), arn)
    assert finished["Status"] == "SUCCEEDED" and json.loads(finished["Result"]) == '"from the cli"'

    waiting = aws(
        "invoke",
        "--function-name",
        CALLBACK_WORKFLOW,
        "--invocation-type",
        "Event",
        "--payload",
        json.dumps({"run": f"{run}-stop"}),
        str(out),
    )["DurableExecutionArn"]
    stopped = aws("stop-durable-execution", "--durable-execution-arn", waiting)
    assert stopped["StopTimestamp"]
    assert _finish(deployed_target, deployed_api.client(), waiting)["Status"] == "STOPPED"
    refused = aws(
        "get-durable-execution",
        "--durable-execution-arn",
        deployed_api.arns.execution_arn("default#x#y/z"),
        ok=False,
    )
    assert "ResourceNotFoundException" in refused
