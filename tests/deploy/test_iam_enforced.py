"""The deployed stack on moto with IAM enforced (issue 37, item 5): every call is allowed or refused by
the policies the module wrote, so a missing permission fails a run and an excessive one a refused call.

examples/complete is applied by an admin user (the server's only free requests create it:
stepwell.testing.iam_enforced). Then the worker and the callbacks function run under STS sessions of
their own roles (assumed as lambda.amazonaws.com, as Lambda does), the client and the CLI as IAM users
that carry exactly the access policies the module outputs (operator, reader, callback_sender, one
event producer per source). What moto leaves unchecked even so: docs/security.md ("IAM-enforced tests").
Only on moto (LocalStack's IAM enforcement is a Pro feature).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from stepwell.client import StepwellClient
from stepwell.config import StepwellConfig
from stepwell.console.timeline import open_callbacks
from stepwell.testing.deployed_fixtures import deployed_backends_for
from stepwell.testing.iam_enforced import Keys, Principals, iam_enforced_backend
from stepwell.testing.lambda_runtime import FunctionSpec, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer
from stepwell.testing.terraform import TerraformStack

pytestmark = [pytest.mark.deployed, pytest.mark.xdist_group(name="iam-enforced")]

ORDER = {"order_id": "IAM-1", "email": "iam@example.com", "lines": [{"quantity": 2, "unit_price_cents": 150}]}
APPROVAL = {"approved_by": "iam-test"}
MAX_ROUNDS = 40
CLI_TIMEOUT_SECONDS = 300.0


@dataclass
class EnforcedStack:
    principals: Principals
    outputs: dict[str, Any]
    runtime: LambdaRuntime
    firer: SchedulerFirer
    work_dir: Path

    @property
    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self.outputs["client_config"]
        return config

    @property
    def policies(self) -> dict[str, Any]:
        policies: dict[str, Any] = self.outputs["access_policies"]
        return policies

    def keys(self, principal: str) -> Keys:
        """An IAM user carrying the module's policy for ``principal`` (``producer:<source>`` for a
        producer)."""
        if principal.startswith("producer:"):
            return self.principals.user(
                principal, self.policies["event_producers"][principal.split(":", 1)[1]]
            )
        return self.principals.user(principal, self.policies[principal])

    def client_as(self, principal: str) -> StepwellClient:
        """A Stepwell client as ``principal``; it wakes executions through the work queue (the harness
        drains it) rather than by an invoke the local runtime would run unchecked."""
        backend = self.principals.backend_as(self.keys(principal))
        config = StepwellConfig.from_client_config({**self.config, "direct_wake_ups": False})
        return StepwellClient(config, backend.aws_clients(self.runtime.lambda_endpoint_url))

    def worker_keys(self) -> Keys:
        return self.principals.role_session(self.outputs["worker_role_arn"])

    def cli(self, principal: str, *arguments: str) -> subprocess.CompletedProcess[str]:
        """The `stepwell` CLI as ``principal``, with only that principal's credentials."""
        config_file = self.work_dir / "client_config.json"
        config_file.write_text(json.dumps({"value": {**self.config, "direct_wake_ups": False}}))
        environment = {
            **os.environ,
            **self.principals.backend.environment(),
            **self.keys(principal).environment(),
        }
        return subprocess.run(
            [sys.executable, "-m", "stepwell.cli", "--config", str(config_file), *arguments],
            env=environment,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_SECONDS,
            check=False,
        )


def _module_outputs(stack: TerraformStack) -> dict[str, Any]:
    """examples/complete's outputs plus the root module's access policies and worker role (the example
    does not re-export them): read from the state by `terraform output` of a scratch output file."""
    (stack.working_dir / "iam_enforced_outputs.tf").write_text(
        'output "access_policies" {\n  value = module.stepwell.access_policies\n}\n'
        'output "worker_role_arn" {\n  value = module.stepwell.worker_role_arn\n}\n'
    )
    return stack.apply()


@pytest.fixture(scope="module")
def enforced(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EnforcedStack]:
    if "moto" not in deployed_backends_for(request.config):
        pytest.skip("the IAM-enforced run is moto's (not in the deployed backends)")
    work_dir = tmp_path_factory.mktemp("iam-enforced")
    with iam_enforced_backend(log_path=str(work_dir / "moto-server.log")) as backend:
        stack = TerraformStack(
            backend, module_dir="examples/complete", work_root=work_dir, source_root=request.config.rootpath
        )
        stack.variables["region"] = backend.region
        try:
            outputs = _module_outputs(stack)
        except Exception:
            stack.destroy()
            raise
        principals = Principals(backend)

        def credentials(spec: FunctionSpec) -> dict[str, str]:
            return principals.role_session(spec.role).environment()

        firer_holder: list[SchedulerFirer] = []
        runtime = LambdaRuntime(
            backend.client,
            backend.lambda_code,
            backend.environment(),
            work_dir / "lambda",
            region=backend.region,
            clock_offset=lambda: firer_holder[0].clock.offset.total_seconds(),
            function_credentials=credentials,
        )
        # Schedules are fired by the harness (as admin): a wake-up invokes the worker's alias locally.
        firer = SchedulerFirer(backend.client, lambda_invoker=runtime.invoke_event)
        firer_holder.append(firer)
        try:
            yield EnforcedStack(principals, outputs, runtime, firer, work_dir)
        finally:
            runtime.close()
            firer.stop()
            stack.destroy()
            stack.cleanup()


def _refused(call: Callable[[], Any]) -> str:
    """The refusal's text; fails when the call is allowed."""
    try:
        call()
    except Exception as error:  # botocore's ClientError, or the client's wrapping of it
        text = f"{type(error).__name__}: {error}"
        assert "AccessDenied" in text, f"refused for another reason: {text}"
        return text
    raise AssertionError("the call was allowed")


def _access_denials(runtime: LambdaRuntime) -> list[str]:
    denials = [str(result.error) for result in runtime.invocations if "AccessDenied" in str(result.error)]
    for path in (runtime.work_dir / "logs").glob("*.log"):
        denials += [line for line in path.read_text(errors="replace").splitlines() if "AccessDenied" in line]
    return denials


def _next_schedule_delay(firer: SchedulerFirer) -> timedelta | None:
    now = firer.now()
    due = [
        firer.due_time(schedule, now + timedelta(days=3650))
        for schedule in firer.list_schedules()
        if str(schedule.get("ScheduleExpression", "")).startswith("at(")
    ]
    times = [time for time in due if time is not None]
    return max(min(times) - now, timedelta(0)) + timedelta(seconds=1) if times else None


# -- a missing permission fails a run ---------------------------------------------------------------


def test_an_order_runs_end_to_end_under_the_modules_roles_and_policies(enforced: EnforcedStack) -> None:
    """orders.fulfil (a retried step, a 3-day Scheduler wait, a callback, a parallel fan-out) with the
    worker on its role's session, started by the operator's client, the approval sent by the callback
    sender's CLI through the bus, read back by the reader: no call is refused."""
    operator = enforced.client_as("operator")
    execution_id = operator.start_execution("orders.fulfil", ORDER, execution_name="iam-order-1")
    approved: set[str] = set()
    for _ in range(MAX_ROUNDS):
        enforced.runtime.drain()
        if operator.describe_execution(execution_id)["Status"] != "RUNNING":
            break
        history = operator.get_execution_history(execution_id)
        pending = [callback_id for callback_id, _ in open_callbacks(history) if callback_id not in approved]
        for callback_id in pending:
            done = enforced.cli(
                "callback_sender",
                "callback",
                "success",
                callback_id,
                "--result",
                json.dumps(APPROVAL),
                "--via-bus",
            )
            assert done.returncode == 0, done.stderr
            approved.add(callback_id)
        if pending:
            continue
        delay = _next_schedule_delay(enforced.firer)
        if delay is not None:
            enforced.firer.advance_and_fire(delay)
    assert _access_denials(enforced.runtime) == []
    reader = enforced.client_as("reader")
    description = reader.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED", description
    assert json.loads(description["Result"])["approval"] == APPROVAL
    assert approved, "the run never waited for its approval"
    shown = enforced.cli("reader", "history", execution_id)
    assert shown.returncode == 0, shown.stderr


def test_a_permission_taken_from_the_worker_role_fails_its_run(enforced: EnforcedStack) -> None:
    """The check above can fail: without its DynamoDB statement the worker's run is refused, and with it
    back the same execution ends."""
    iam = enforced.principals.backend.client("iam")
    role = enforced.outputs["worker_role_arn"].rsplit("/", 1)[-1]
    (name,) = iam.list_role_policies(RoleName=role)["PolicyNames"]
    original = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
    document = original if isinstance(original, dict) else json.loads(original)
    without_tables = {**document, "Statement": [s for s in document["Statement"] if s.get("Sid") != "Tables"]}
    operator = enforced.client_as("operator")
    before = len(enforced.runtime.invocations)
    iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(without_tables))
    try:
        execution_id = operator.start_execution("orders.confirm", {"order_id": "IAM-2", "lines": []})
        enforced.runtime.drain(max_batches=1, timeout_seconds=60)
        # The worker hands the message back (a batch item failure) and logs the refusal (its message is
        # shortened in the log: the AccessDeniedException is what shows).
        assert _access_denials(enforced.runtime)
        assert len(enforced.runtime.invocations) > before
    finally:
        iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(document))
    enforced.runtime.drain()
    assert operator.describe_execution(execution_id)["Status"] == "SUCCEEDED"


# -- an excessive permission shows as an allowed call -------------------------------------------------


def test_the_reader_cannot_write_or_start(enforced: EnforcedStack) -> None:
    reader = enforced.client_as("reader")
    keys = enforced.keys("reader")
    config = enforced.config
    _refused(lambda: reader.start_execution("orders.confirm", {"order_id": "R-1", "lines": []}))
    dynamodb = enforced.principals.client("dynamodb", keys)
    _refused(
        lambda: dynamodb.put_item(
            TableName=config["executions_table"], Item={"pk": {"S": "x"}, "sk": {"S": "x"}}
        )
    )
    _refused(
        lambda: enforced.principals.client("sqs", keys).send_message(
            QueueUrl=config["work_queue_url"], MessageBody="{}"
        )
    )
    _refused(
        lambda: enforced.principals.client("s3", keys).put_object(
            Bucket=config["payload_bucket"], Key="ex/x", Body=b"x"
        )
    )
    _refused(lambda: reader.publish_callback_event("success", "any-callback", {"ok": True}))
    refused = enforced.cli("reader", "start", "orders.confirm", "--input", "{}")
    assert refused.returncode != 0 and "AccessDenied" in refused.stderr, refused.stderr
    # What it may do, it can: the refusals above are the policy's, not bad credentials.
    dynamodb.describe_table(TableName=config["executions_table"])


def test_the_callback_sender_can_only_complete_callbacks(enforced: EnforcedStack) -> None:
    keys = enforced.keys("callback_sender")
    sender = enforced.client_as("callback_sender")
    config = enforced.config
    events = enforced.principals.client("events", keys)
    bus = config["event_bus_name"]
    _refused(lambda: sender.start_execution("orders.confirm", {"order_id": "C-1", "lines": []}))
    dynamodb = enforced.principals.client("dynamodb", keys)
    _refused(
        lambda: dynamodb.put_item(
            TableName=config["executions_table"], Item={"pk": {"S": "x"}, "sk": {"S": "x"}}
        )
    )
    _refused(
        lambda: dynamodb.get_item(
            TableName=config["executions_table"], Key={"pk": {"S": "x"}, "sk": {"S": "x"}}
        )
    )
    _refused(
        lambda: enforced.principals.client("sqs", keys).send_message(
            QueueUrl=config["work_queue_url"], MessageBody="{}"
        )
    )

    def put(source: str, detail_type: str) -> None:
        events.put_events(
            Entries=[{"EventBusName": bus, "Source": source, "DetailType": detail_type, "Detail": "{}"}]
        )

    # Events other than callback commands: another source, or the client's source with another type.
    _refused(lambda: put("com.example.acme", "order.placed"))
    _refused(lambda: put("stepwell.client", "stepwell.start"))
    put("stepwell.client", "stepwell.callback.heartbeat")  # allowed (no such callback: the worker drops it)
    enforced.runtime.drain()


def test_a_tenants_producer_cannot_put_events_for_another_tenants_source(enforced: EnforcedStack) -> None:
    events = enforced.principals.client("events", enforced.keys("producer:com.example.acme"))
    bus = enforced.config["event_bus_name"]

    def put(source: str) -> None:
        events.put_events(
            Entries=[{"EventBusName": bus, "Source": source, "DetailType": "noted", "Detail": "{}"}]
        )

    _refused(lambda: put("com.example.globex"))
    _refused(lambda: put("stepwell.client"))
    put("com.example.acme")
    enforced.runtime.drain()


def test_the_worker_cannot_touch_another_deployments_tables_queue_or_bucket(enforced: EnforcedStack) -> None:
    """Look-alikes of another deployment (created by the admin) refuse the worker's role, while its own
    table, queue and bucket answer the same calls."""
    admin = enforced.principals.backend
    name = enforced.config["name"]
    other = f"{name}-other"
    table = f"{other}-executions"
    schema = admin.client("dynamodb").describe_table(TableName=enforced.config["executions_table"])["Table"]
    keyed = {k["AttributeName"] for k in schema["KeySchema"]}
    admin.client("dynamodb").create_table(
        TableName=table,
        KeySchema=schema["KeySchema"],
        AttributeDefinitions=[a for a in schema["AttributeDefinitions"] if a["AttributeName"] in keyed],
        BillingMode="PAY_PER_REQUEST",
    )
    queue_url = admin.client("sqs").create_queue(QueueName=f"{other}-work")["QueueUrl"]
    bucket = f"{other}-payloads"
    admin.client("s3").create_bucket(Bucket=bucket)
    keys = enforced.worker_keys()
    dynamodb = enforced.principals.client("dynamodb", keys)
    sqs = enforced.principals.client("sqs", keys)
    s3 = enforced.principals.client("s3", keys)
    own = admin.client("dynamodb").describe_table(TableName=enforced.config["executions_table"])["Table"]
    types = {a["AttributeName"]: a["AttributeType"] for a in own["AttributeDefinitions"]}
    # A key of the executions table's schema (the look-alike gets the same schema).
    key = {
        k["AttributeName"]: {types[k["AttributeName"]]: "1" if types[k["AttributeName"]] == "N" else "x"}
        for k in own["KeySchema"]
    }
    try:
        _refused(lambda: dynamodb.get_item(TableName=table, Key=key))
        _refused(lambda: dynamodb.put_item(TableName=table, Item=key))
        _refused(lambda: sqs.send_message(QueueUrl=queue_url, MessageBody="{}"))
        _refused(lambda: sqs.receive_message(QueueUrl=queue_url))
        _refused(lambda: s3.put_object(Bucket=bucket, Key="ex/x", Body=b"x"))
        _refused(lambda: s3.get_object(Bucket=bucket, Key="ex/x"))
        # Its own: the same calls are allowed (a missing item is not a refusal).
        dynamodb.get_item(TableName=enforced.config["executions_table"], Key=key)
        sqs.get_queue_attributes(QueueUrl=enforced.config["work_queue_url"], AttributeNames=["All"])
        s3.list_objects_v2(Bucket=enforced.config["payload_bucket"], Prefix="ex/none/")
        _refused(lambda: s3.list_objects_v2(Bucket=enforced.config["payload_bucket"]))  # only ex/ folders
    finally:
        admin.client("dynamodb").delete_table(TableName=table)
        admin.client("sqs").delete_queue(QueueUrl=queue_url)
        admin.client("s3").delete_bucket(Bucket=bucket)


def test_only_lambda_may_assume_the_functions_roles(enforced: EnforcedStack) -> None:
    """The roles' trust policies are checked too: the reader cannot become the worker."""
    sts = enforced.principals.client("sts", enforced.keys("reader"))
    _refused(lambda: sts.assume_role(RoleArn=enforced.outputs["worker_role_arn"], RoleSessionName="reader"))


# -- every policy document the module renders, linted -----------------------------------------------

PARLIAMENT_FAILING_SEVERITIES = ("MEDIUM", "HIGH", "CRITICAL")
# Findings parliament reports that are known to be wrong for these documents: (policy label prefix, issue,
# a text of the finding's detail, why).
PARLIAMENT_ALLOWED: list[tuple[str, str, str, str]] = [
    (
        "role stepwell-demo-api-",
        "UNKNOWN_CONDITION_FOR_ACTION",
        "lambda:InvokedViaFunctionUrl",
        "the API's caller policy (api_caller_policy_json) limits lambda:InvokeFunction to function URL "
        "requests with this key, which AWS added in 2025 and parliament 1.6's IAM data predates",
    ),
]


def _rendered_policies(enforced: EnforcedStack) -> dict[str, str]:
    """Every identity policy document of the applied stack: the roles' inline and attached policies (the
    module's and the example's) and the module's access policies."""
    iam = enforced.principals.backend.client("iam")
    documents: dict[str, str] = {}
    for page in iam.get_paginator("list_roles").paginate():
        for role in page["Roles"]:
            name = role["RoleName"]
            for policy_name in iam.list_role_policies(RoleName=name)["PolicyNames"]:
                document = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
                documents[f"role {name}/{policy_name}"] = (
                    document if isinstance(document, str) else json.dumps(document)
                )
            for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
                version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
                document = iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)
                body = document["PolicyVersion"]["Document"]
                documents[f"role {name}/{attached['PolicyName']}"] = (
                    body if isinstance(body, str) else json.dumps(body)
                )
    for principal, document in enforced.policies.items():
        if principal == "event_producers":
            documents.update({f"access {principal}/{source}": text for source, text in document.items()})
        else:
            documents[f"access {principal}"] = document
    return documents


def test_every_policy_the_module_renders_passes_parliament(enforced: EnforcedStack) -> None:
    from parliament import analyze_policy_string, config

    documents = _rendered_policies(enforced)
    # The worker, scheduler and callbacks roles, the reader/operator/sender/producer policies at least.
    assert {"access reader", "access operator", "access callback_sender"} <= set(documents)
    assert sum(label.startswith("role ") for label in documents) >= 3, sorted(documents)
    problems = []
    for label, document in sorted(documents.items()):
        for finding in analyze_policy_string(document).findings:
            severity = config.get(finding.issue, {}).get("severity", "MEDIUM")
            allowed = any(
                label.startswith(prefix) and finding.issue == issue and text in str(finding.detail)
                for prefix, issue, text, _ in PARLIAMENT_ALLOWED
            )
            if severity in PARLIAMENT_FAILING_SEVERITIES and not allowed:
                problems.append(f"{label}: {finding.issue} ({severity}) {finding.detail}")
    assert problems == []
