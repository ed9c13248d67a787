"""Callback URLs on the AWS adapters (moto in-process): the module-level handler built from the callbacks
function's environment, its DynamoDB and SQS calls, and the signing secret from Secrets Manager or SSM."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.errors import InvalidArgument
from stepwell.features.callback_urls import read_secret, signature
from stepwell.wiring import callback_function
from stepwell.wiring.entry import EntryRuntime

from tests.engine.test_callback_urls import url_event

from .deployment import REGION, Deployment
from .driver import QueueDriver, callback_id_of

KEY = "webhook-signing-key"


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return callback.result()


def _signed(body: str, path: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {
        "X-Stepwell-Timestamp": stamp,
        "X-Stepwell-Signature": signature(KEY.encode(), stamp, "POST", path, body=body.encode()),
    }


def test_the_lambda_handler_completes_a_callback_on_dynamodb_and_sqs(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_arn = deployment.clients._session.client("secretsmanager", region_name=REGION).create_secret(
        Name="stepwell/callbacks", SecretString=KEY
    )["ARN"]
    config = deployment.config
    # The callbacks function's environment as modules/callback_urls sets it.
    environment = {
        "STEPWELL_NAME": config.name,
        "STEPWELL_EXECUTIONS_TABLE": config.executions_table,
        "STEPWELL_OPERATIONS_TABLE": config.operations_table,
        "STEPWELL_COORDINATION_TABLE": config.coordination_table,
        "STEPWELL_WORK_QUEUE_URL": config.work_queue_url,
        "STEPWELL_RETENTION_DAYS": "30",
        "STEPWELL_LOG_LEVEL": "INFO",
        "STEPWELL_CALLBACK_MAX_BODY_BYTES": "1024",
        "STEPWELL_CALLBACK_SECRET_ARN": secret_arn,
    }
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(callback_function, "_handler", None)

    registry = Registry()
    registry.register("approval", approval)
    clock = VirtualClock()
    client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(
        deployment,
        EntryRuntime.from_config(config, deployment.clients, registry=registry, clock=clock),
        clock,
    )
    execution_id = client.start_execution("approval", None, execution_name="by-url")
    driver.run_until_quiet(fire_schedules=False)
    callback_id = callback_id_of(client, execution_id)
    path = f"/callbacks/{callback_id}/success"

    unsigned = callback_function.handler(url_event(path, '"approved"'), None)
    too_large = callback_function.handler(
        url_event(path, json.dumps("x" * 1100), headers=_signed("", path)), None
    )
    unknown_path = "/callbacks/cbUnknown/success"
    unknown = callback_function.handler(
        url_event(unknown_path, "1", headers=_signed("1", unknown_path)), None
    )
    heartbeat_path = f"/callbacks/{callback_id}/heartbeat"
    heartbeat = callback_function.handler(
        url_event(heartbeat_path, headers=_signed("", heartbeat_path)), None
    )
    accepted = callback_function.handler(
        url_event(path, '"approved"', headers=_signed('"approved"', path)), None
    )
    again = callback_function.handler(url_event(path, '"again"', headers=_signed('"again"', path)), None)

    assert [r["statusCode"] for r in (unsigned, too_large, unknown, heartbeat, accepted, again)] == [
        401,
        413,
        404,
        202,
        202,
        409,
    ]
    driver.run_until_quiet(fire_schedules=False)
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"]) == '"approved"'


def test_the_secret_is_read_from_secrets_manager_and_ssm(deployment: Deployment) -> None:
    session = deployment.clients._session
    secrets = session.client("secretsmanager", region_name=REGION)
    text_arn = secrets.create_secret(Name="text-key", SecretString=KEY)["ARN"]
    binary_arn = secrets.create_secret(Name="binary-key", SecretBinary=b"\x00\x01key")["ARN"]
    ssm = session.client("ssm", region_name=REGION)
    ssm.put_parameter(Name="/stepwell/callback-key", Value=KEY, Type="SecureString")
    parameter_arn = ssm.get_parameter(Name="/stepwell/callback-key")["Parameter"]["ARN"]

    assert read_secret(text_arn) == KEY.encode()
    assert read_secret(binary_arn) == b"\x00\x01key"
    assert read_secret(parameter_arn) == KEY.encode()
    with pytest.raises(InvalidArgument, match="Secrets Manager secret ARN"):
        read_secret("text-key")
