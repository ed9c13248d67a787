"""Smoke tests of the deployed stack on each backend: messages through the work queue reach the deployed
handler (on moto through the harness's runtime, on LocalStack through its own event source mapping and
Stepwell's runtime-executor plugin), an execution started with the client completes, and the reconciler
schedule fired by the harness reaches the queue."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import boto3
from stepwell.aws import AwsClients
from stepwell.client import StepwellClient
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack, event_source_mappings_for
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer

WAIT_SECONDS = 180.0


def _queue_counts(backend: Backend, queue_url: str) -> dict[str, int]:
    attributes = backend.client("sqs").get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return {key: int(value) for key, value in attributes.items()}


def _find_in_queue(backend: Backend, queue_url: str, marker: str) -> dict[str, Any] | None:
    """Long-poll a queue for a message whose body carries ``marker``; delete and return it."""
    sqs = backend.client("sqs")
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        response = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=2)
        for message in response.get("Messages", []):
            if marker in message["Body"]:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                body: dict[str, Any] = json.loads(message["Body"])
                return body
            sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
    return None


@contextmanager
def _short_visibility(backend: Backend, queue_url: str, seconds: int) -> Iterator[None]:
    """Failed messages return after the queue's visibility timeout (360 s in the example): shorten it for
    the test so the backend's own poller retries and redrives quickly; restore it so plans stay clean."""
    sqs = backend.client("sqs")
    original = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])[
        "Attributes"
    ]["VisibilityTimeout"]
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": str(seconds)})
    try:
        yield
    finally:
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"VisibilityTimeout": original})


def _set_mapping_enabled(backend: Backend, function_name: str, enabled: bool) -> None:
    lam = backend.client("lambda")
    [mapping] = event_source_mappings_for(backend, function_name)
    lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=enabled)
    wanted = "Enabled" if enabled else "Disabled"
    deadline = time.monotonic() + WAIT_SECONDS
    while lam.get_event_source_mapping(UUID=mapping["UUID"])["State"] != wanted:
        assert time.monotonic() < deadline, f"the event source mapping never became {wanted}"
        time.sleep(0.5)


def test_a_message_that_is_no_engine_message_ends_in_the_dlq(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    marker = f"not-an-engine-message-{uuid.uuid4().hex}"
    with _short_visibility(backend, config["work_queue_url"], seconds=1):
        backend.client("sqs").send_message(
            QueueUrl=config["work_queue_url"], MessageBody=json.dumps({"marker": marker})
        )
        outcome = lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
        dead = _find_in_queue(backend, config["dlq_url"], marker)
    assert outcome.settled
    assert dead == {"marker": marker}


def test_a_reconcile_message_is_handled_and_deleted(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    backend.client("sqs").send_message(
        QueueUrl=config["work_queue_url"], MessageBody=json.dumps({"kind": "reconcile"})
    )
    outcome = lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
    assert outcome.settled, "the reconcile message was not handled (it stays in flight after a failure)"
    assert _queue_counts(backend, config["work_queue_url"]) == {
        "ApproximateNumberOfMessages": 0,
        "ApproximateNumberOfMessagesNotVisible": 0,
    }
    if isinstance(lambda_runtime, LambdaRuntime):
        last = lambda_runtime.invocations[-1]
        assert last.succeeded, last.error
        assert last.payload == {"batchItemFailures": []}


def test_an_execution_started_with_the_client_completes(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> None:
    backend = deployed_stack.backend
    session = boto3.Session(**backend.credentials, region_name=backend.region)
    clients = AwsClients(region=backend.region, endpoint_url=backend.endpoint_url, session=session)
    client = StepwellClient.from_client_config(deployed_stack.client_config, clients)
    order = {"order_id": "o-42", "lines": [{"quantity": 2, "unit_price_cents": 1250}]}
    execution_id = client.start_execution(
        "orders.confirm", order, execution_name=f"order-{uuid.uuid4().hex[:8]}"
    )
    deadline = time.monotonic() + WAIT_SECONDS
    description = client.describe_execution(execution_id)
    while description["Status"] not in ("SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"):
        assert time.monotonic() < deadline, f"execution never finished: {description}"
        lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
        description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Output"]) == {
        "order_id": "o-42",
        "status": "confirmed",
        "total_cents": 2500,
    }


def test_the_reconciler_schedule_fired_by_the_harness_reaches_the_work_queue(
    deployed_stack: DeployedStack, scheduler_firer: SchedulerFirer
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    function_name = config["worker_function_name"]
    # Pause the worker's mapping so the message stays on the queue for the test to read.
    _set_mapping_enabled(backend, function_name, False)
    try:
        scheduler_firer.advance(timedelta(minutes=6))
        fired = scheduler_firer.fire_due()
        reconcile_name = deployed_stack.outputs["reconcile_schedule_name"]
        assert (config["schedule_group_name"], reconcile_name) in [(f.group_name, f.name) for f in fired]
        assert _find_in_queue(backend, config["work_queue_url"], '"reconcile"') == {"kind": "reconcile"}
    finally:
        _set_mapping_enabled(backend, function_name, True)
