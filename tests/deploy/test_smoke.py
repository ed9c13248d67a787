"""Smoke tests of the deployed stack on each backend: messages through the work queue reach the deployed
handler (on moto through the harness's runtime, on LocalStack through its own event source mapping and
Stepwell's runtime-executor plugin), an execution started with the client completes, and the reconciler
schedule fired by the harness reaches the queue."""

from __future__ import annotations

import json
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from stepwell.client import StepwellClient
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer

from deploy.queues import set_mapping_enabled, short_visibility

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


def test_a_message_that_is_no_engine_message_ends_in_the_dlq(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    marker = f"not-an-engine-message-{uuid.uuid4().hex}"
    with short_visibility(
        backend, config["work_queue_url"], seconds=1, function_name=config["worker_function_name"]
    ):
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
    clients = deployed_stack.backend.aws_clients(lambda_runtime.lambda_endpoint_url)
    client = StepwellClient.from_client_config(deployed_stack.client_config, clients)
    order = {"order_id": "o-42", "lines": [{"quantity": 2, "unit_price_cents": 1250}]}
    execution_id = client.start_execution(
        "orders.confirm", order, execution_name=f"order-{uuid.uuid4().hex[:8]}"
    )
    # The start wakes it by an asynchronous invoke of the worker's alias, with no SQS message.
    calls = clients.counter.snapshot()["calls"]
    assert (calls.get("lambda.Invoke"), calls.get("sqs.SendMessage", 0)) == (1, 0), calls
    deadline = time.monotonic() + WAIT_SECONDS
    description = client.describe_execution(execution_id)
    while description["Status"] not in ("SUCCEEDED", "FAILED", "TIMED_OUT", "STOPPED"):
        assert time.monotonic() < deadline, f"execution never finished: {description}"
        lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
        description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == {
        "order_id": "o-42",
        "status": "confirmed",
        "total_cents": 2500,
    }
    # Listings by workflow and by status read the KEYS_ONLY indexes, then the items (BatchGetItem).
    by_workflow = [record.execution_id for record in client.list_executions(workflow="orders.confirm").items]
    assert execution_id in by_workflow
    succeeded = client.list_executions(status="SUCCEEDED", limit=1000).items
    assert execution_id in [record.execution_id for record in succeeded]
    assert all(record.status.value == "SUCCEEDED" for record in succeeded)
    assert execution_id not in [
        record.execution_id for record in client.list_executions(status="RUNNING").items
    ]


def test_the_reconciler_schedule_fired_by_the_harness_reaches_the_work_queue(
    deployed_stack: DeployedStack, scheduler_firer: SchedulerFirer
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    function_name = config["worker_function_name"]
    # Pause the worker's mapping so the message stays on the queue for the test to read.
    set_mapping_enabled(backend, function_name, False)
    try:
        scheduler_firer.advance(timedelta(minutes=6))
        fired = scheduler_firer.fire_due()
        reconcile_name = deployed_stack.outputs["reconcile_schedule_name"]
        assert (config["schedule_group_name"], reconcile_name) in [(f.group_name, f.name) for f in fired]
        assert _find_in_queue(backend, config["work_queue_url"], '"reconcile"') == {"kind": "reconcile"}
    finally:
        set_mapping_enabled(backend, function_name, True)


def _callback_ids(history: Any) -> list[str]:
    """Every CallbackId in an execution's history, wherever the event carries it."""
    found: list[str] = []
    if isinstance(history, dict):
        for key, value in history.items():
            if key == "CallbackId" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_callback_ids(value))
    elif isinstance(history, list):
        for item in history:
            found.extend(_callback_ids(item))
    return found


@pytest.mark.moto
def test_the_order_story_with_a_three_day_wait_and_a_callback_completes(
    deployed_stack: DeployedStack,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    """examples/complete's orders.fulfil: a retried step, a three-day wait the scheduler fast-forwards
    (the runtime moves the worker's clock with it), a manager's callback, then a parallel fan-out."""
    clients = deployed_stack.backend.aws_clients(lambda_runtime.lambda_endpoint_url)
    client = StepwellClient.from_client_config(deployed_stack.client_config, clients)
    order = {
        "order_id": "o-77",
        "lines": [{"quantity": 3, "unit_price_cents": 500}],
        "email": "a@example.com",
    }
    execution_id = client.start_execution(
        "orders.fulfil", order, execution_name=f"story-{uuid.uuid4().hex[:8]}"
    )
    answered: set[str] = set()
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        lambda_runtime.drain(timeout_seconds=WAIT_SECONDS)
        description = client.describe_execution(execution_id)
        if description["Status"] != "RUNNING":
            break
        assert time.monotonic() < deadline, (
            f"the story never finished: {json.dumps(description, default=str)}"
        )
        pending = [
            cid for cid in _callback_ids(client.get_execution_history(execution_id)) if cid not in answered
        ]
        if pending:
            client.send_callback_success(pending[0], result=json.dumps({"approved_by": "manager"}))
            answered.add(pending[0])
        else:
            scheduler_firer.advance(timedelta(hours=12))
            scheduler_firer.fire_due()
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    # The start and the callback result woke it by invoking the worker's alias, with no SQS message.
    calls = clients.counter.snapshot()["calls"]
    assert (calls.get("lambda.Invoke"), calls.get("sqs.SendMessage", 0)) == (2, 0), calls
    output = json.loads(description["Result"])
    assert output["charge"] == {"charge_id": "ch-o-77", "amount_cents": 1500, "attempt": 2}
    assert output["approval"] == {"approved_by": "manager"}
    assert output["invoice"] == "INV-o-77"
    assert output["shipment"] == "SHIP-o-77-1"
    assert len(answered) == 1
