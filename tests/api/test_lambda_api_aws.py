"""The API function's Lambda handler (stepwell.wiring.api_function) on the AWS adapters, in moto's in-process
mock: built from the environment modules/api sets, it answers boto3 through the AWS_IAM front end, and every
AWS call it makes is one its role (modules/api/main.tf) grants."""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.client
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.config import StepwellConfig
from stepwell.core.registry import Registry
from stepwell.features.lambda_api.access import Principal
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.testing.mock_deployment import REGION, create_deployment
from stepwell.wiring import api_function
from stepwell.wiring.entry import EntryRuntime

from tests.adapters.deployment import Deployment
from tests.adapters.driver import QueueDriver, callback_id_of
from tests.api.conftest import CLIENT_CONFIG, OPERATOR, OPERATOR_ROLE
from tests.api.iam_url_front import IamFunctionUrlFront
from tests.engine import workflows

MODULE = Path(__file__).resolve().parents[2] / "modules" / "api" / "main.tf"
ACCOUNT = "123456789012"


class LambdaContext:
    invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:sw-test-api"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def module_environment(config: StepwellConfig) -> dict[str, str]:
    """The API function's environment as modules/api sets it."""
    return {
        "STEPWELL_NAME": config.name,
        "STEPWELL_EXECUTIONS_TABLE": config.executions_table,
        "STEPWELL_OPERATIONS_TABLE": config.operations_table,
        "STEPWELL_COORDINATION_TABLE": config.coordination_table,
        "STEPWELL_SUBJECT_INDEX": config.subject_index_name,
        "STEPWELL_WORK_QUEUE_URL": config.work_queue_url,
        "STEPWELL_WORK_QUEUE_ARN": config.work_queue_arn,
        "STEPWELL_PAYLOAD_BUCKET": config.payload_bucket,
        "STEPWELL_SCHEDULE_GROUP": config.schedule_group_name,
        "STEPWELL_WORKER_FUNCTION_NAME": config.worker_function_name,
        "STEPWELL_WORKER_ALIAS": "live",
        "STEPWELL_RETENTION_DAYS": "30",
        "STEPWELL_LOG_LEVEL": "INFO",
        "STEPWELL_MAX_EXECUTION_INPUT_BYTES": "262144",
        "STEPWELL_MAX_CALLBACK_RESULT_BYTES": "262144",
        "STEPWELL_API_READ_PRINCIPALS": json.dumps([OPERATOR_ROLE]),
        "STEPWELL_API_OPERATE_PRINCIPALS": json.dumps([OPERATOR_ROLE]),
        "STEPWELL_API_CALLBACK_PRINCIPALS": json.dumps([OPERATOR_ROLE]),
        "STEPWELL_API_WORKFLOWS": json.dumps(["approval", "three_day_wait"]),
        "STEPWELL_API_MAX_WAIT_SECONDS": "60",
    }


def granted_actions() -> set[str]:
    """Every action modules/api's role policy names."""
    return set(re.findall(r'"((?:dynamodb|sqs|s3|scheduler|lambda|logs|kms):[A-Za-z]+)"', MODULE.read_text()))


# What modules/api's role may do on the coordination table, by the key's prefix (its dynamodb:LeadingKeys
# conditions; tests/terraform/api.tftest.hcl asserts the policy exactly): read and complete callback
# records, read an execution's lease record (its carried batch: history and describe read it).
COORDINATION_GRANTS = {"dynamodb:GetItem": {"cb#", "lease#"}, "dynamodb:UpdateItem": {"cb#"}}


def coordination_keys(operation: str, params: Any, table: str) -> list[tuple[str, str]]:
    """(action, key prefix) of each coordination-table item a DynamoDB call names."""
    keys: list[Any] = []
    if params.get("TableName") == table:
        keys = [params.get("Key") or params.get("Item") or {}]
    for name, request in (params.get("RequestItems") or {}).items():
        if name == table:
            keys += list(request.get("Keys", []))
            keys += [entry.get("DeleteRequest", entry.get("PutRequest", {})) for entry in request]
    found = []
    for key in keys:
        value = str(key.get("Key", key).get("key", {}).get("S", ""))
        found.append((f"dynamodb:{operation}", value.split("#", 1)[0] + "#"))
    return found


@pytest.fixture
def deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    with mock_aws():
        yield Deployment(config=create_deployment(), clients=AwsClients(region=REGION))


def test_the_handler_serves_boto3_on_the_aws_adapters_with_only_what_its_role_grants(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = deployment.config
    for variable, value in module_environment(config).items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(api_function, "_handler", None)

    # The AWS calls the handler makes while it answers a request (the worker's own are not its role's).
    serving = threading.Event()
    used: set[str] = set()
    coordination: set[tuple[str, str]] = set()
    original = botocore.client.BaseClient._make_api_call

    def recording(self: Any, operation: str, params: Any) -> Any:
        if serving.is_set():
            service = self.meta.service_model.signing_name
            used.add(f"{service}:{operation}")
            if service == "dynamodb":
                coordination.update(coordination_keys(operation, params, config.coordination_table))
        return original(self, operation, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", recording)

    def invoke(event: dict[str, Any]) -> Any:
        serving.set()
        try:
            return api_function.handler(event, LambdaContext())
        finally:
            serving.clear()

    front = IamFunctionUrlFront(invoke, REGION, lambda: [Principal.parse(OPERATOR_ROLE)])
    try:
        front.register(OPERATOR)
        api = boto3.client(
            "lambda",
            endpoint_url=front.url,
            region_name=REGION,
            config=CLIENT_CONFIG,
            **OPERATOR.client_kwargs(),
        )
        registry = Registry()
        registry.register("approval", workflows.approval)
        registry.register("three_day_wait", workflows.three_day_wait)
        clock = VirtualClock()
        client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
        driver = QueueDriver(
            deployment,
            EntryRuntime.from_config(config, deployment.clients, registry=registry, clock=clock),
            clock,
        )

        # An input over the inline limit goes to the payload bucket, and comes back from it.
        big = {"note": "x" * 210_000}
        started = api.invoke(
            FunctionName="approval",
            Payload=json.dumps(big),
            InvocationType="Event",
            DurableExecutionName="big",
        )
        arn = started["DurableExecutionArn"]
        driver.run_until_quiet(fire_schedules=False)
        described = api.get_durable_execution(DurableExecutionArn=arn)
        assert described["Status"] == "RUNNING" and json.loads(described["InputPayload"]) == big
        assert [
            item["DurableExecutionArn"]
            for item in api.list_durable_executions_by_function(FunctionName="approval")["DurableExecutions"]
        ] == [arn]

        execution_id = ArnContext.from_function_arn(LambdaContext.invoked_function_arn).execution_id(arn)
        assert execution_id == "default#approval#big/big"
        # The client shows the execution by the ARN the API answered (its config's account and region).
        assert client.describe_execution(execution_id)["executionArn"] == arn
        callback_id = callback_id_of(client, execution_id)
        api.send_durable_execution_callback_heartbeat(CallbackId=callback_id)
        api.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'{"ok": true}')
        driver.run_until_quiet(fire_schedules=False)
        assert api.get_durable_execution(DurableExecutionArn=arn)["Status"] == "SUCCEEDED"
        events = api.get_durable_execution_history(DurableExecutionArn=arn, MaxItems=3)
        assert len(events["Events"]) == 3 and events["NextMarker"]
        # An ended execution is deleted: DELETING until the worker has removed it.
        api.delete_durable_execution(DurableExecutionArn=arn)
        assert api.get_durable_execution(DurableExecutionArn=arn)["Status"] == "DELETING"
        driver.run_until_quiet(fire_schedules=False)
        with pytest.raises(api.exceptions.ResourceNotFoundException):
            api.get_durable_execution(DurableExecutionArn=arn)

        # A stop deletes the execution's pending wake-up (a schedule: it is three days away).
        waiting = api.invoke(FunctionName="three_day_wait", Payload=b"{}", InvocationType="Event")[
            "DurableExecutionArn"
        ]
        driver.run_until_quiet(fire_schedules=False)
        assert driver.deployment.clients.scheduler.list_schedules(GroupName=config.schedule_group_name)[
            "Schedules"
        ]
        # Its history and description read the batch its suspended run carried on its lease record.
        history = api.get_durable_execution_history(DurableExecutionArn=waiting)["Events"]
        assert "WaitStarted" in [event["EventType"] for event in history]
        api.pause_durable_execution(DurableExecutionArn=waiting, Reason="maintenance")
        driver.run_until_quiet(fire_schedules=False)
        paused = api.get_durable_execution(DurableExecutionArn=waiting)
        assert paused["Status"] == "PAUSED" and paused["PauseDetails"]["Reason"] == "maintenance"
        api.resume_durable_execution(DurableExecutionArn=waiting)
        driver.run_until_quiet(fire_schedules=False)
        assert api.get_durable_execution(DurableExecutionArn=waiting)["Status"] == "RUNNING"
        api.stop_durable_execution(DurableExecutionArn=waiting)
        assert not driver.deployment.clients.scheduler.list_schedules(GroupName=config.schedule_group_name)[
            "Schedules"
        ]
        driver.run_until_quiet(fire_schedules=False)
        assert api.get_durable_execution(DurableExecutionArn=waiting)["Status"] == "STOPPED"
        with pytest.raises(api.exceptions.ResourceNotFoundException):
            api.invoke(FunctionName="greet", Payload=b"{}", InvocationType="Event")
    finally:
        front.close()

    assert front.refusals == []
    assert used, "the handler made no AWS call"
    missing = used - granted_actions()
    assert not missing, f"the handler used {sorted(missing)}, which modules/api's role does not grant"
    # Reads, starts, stops and callbacks each touched what the role grants them for.
    assert {"dynamodb:PutItem", "dynamodb:Query", "sqs:SendMessage", "s3:PutObject", "s3:GetObject"} <= used
    assert {"scheduler:ListSchedules", "scheduler:DeleteSchedule", "dynamodb:UpdateItem"} <= used
    refused = {
        (action, prefix)
        for action, prefix in coordination
        if prefix not in COORDINATION_GRANTS.get(action, ())
    }
    assert not refused, f"the handler used coordination items {sorted(refused)} its role's LeadingKeys refuse"
    assert ("dynamodb:GetItem", "lease#") in coordination  # the carried batch
    policy = MODULE.read_text()
    for prefixes in COORDINATION_GRANTS.values():
        for prefix in prefixes:
            assert f'"dynamodb:LeadingKeys" = ["{prefix}*"]' in policy


def test_a_tenant_scoped_listing_on_dynamodb_pages_its_tenant_and_its_markers_name_none_of_another(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DynamoDB store's page tokens carry the key of the item a page ended at: a tenant-scoped
    caller's NextMarker must always be one positioned at its own execution."""
    from tests.api.test_lambda_api_tenants import ACME, ACME_ROLE

    config = deployment.config
    environment = module_environment(config)
    environment["STEPWELL_API_READ_PRINCIPALS"] = json.dumps([OPERATOR_ROLE, ACME_ROLE])
    environment["STEPWELL_API_TENANT_PRINCIPALS"] = json.dumps({"acme": [ACME_ROLE]})
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(api_function, "_handler", None)
    front = IamFunctionUrlFront(
        lambda event: api_function.handler(event, LambdaContext()),
        REGION,
        lambda: [Principal.parse(OPERATOR_ROLE), Principal.parse(ACME_ROLE)],
    )
    try:
        front.register(ACME)
        api = boto3.client(
            "lambda", endpoint_url=front.url, region_name=REGION, config=CLIENT_CONFIG, **ACME.client_kwargs()
        )
        registry = Registry()
        registry.register("approval", workflows.approval)
        clock = VirtualClock()
        clock.advance_to(1_800_000_000.0)
        client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
        acme: list[str] = []
        for index in range(10):
            # Two of globex's between each of acme's, so pages end among globex's entries.
            tenant = "acme" if index % 3 == 0 else "globex"
            execution_id = client.start_execution("approval", {}, execution_name=f"e{index}", domain=tenant)
            if tenant == "acme":
                acme.append(execution_id)
            clock.advance(1.0)
        arns = ArnContext.from_function_arn(LambdaContext.invoked_function_arn)

        for options, expected in (({}, acme[::-1]), ({"ReverseOrder": True}, acme)):
            for size in (1, 2, 3):
                pages: list[list[str]] = []
                marker: dict[str, str] = {}
                while True:
                    page = api.list_durable_executions_by_function(
                        FunctionName="approval", MaxItems=size, **options, **marker
                    )
                    pages.append(
                        [arns.execution_id(item["DurableExecutionArn"]) for item in page["DurableExecutions"]]
                    )
                    if "NextMarker" not in page:
                        break
                    token = page["NextMarker"]
                    decoded = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
                    assert "globex" not in decoded and "acme#approval#" in decoded, decoded
                    marker = {"Marker": token}
                assert [each for chunk in pages for each in chunk] == expected, (options, size)
                # Full pages but the last (which may be empty when the last one filled its page).
                assert all(len(chunk) == size for chunk in pages[:-1]), pages
        with pytest.raises(ClientError) as refused:
            api.get_durable_execution(DurableExecutionArn=arns.execution_arn("globex#approval#e1/e1"))
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
    finally:
        front.close()
