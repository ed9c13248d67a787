"""The team's TypeScript durable function (../src/orders.ts) as the Stepwell workflow "shop.fulfil", on the
example's root module applied to moto and to LocalStack: the Stepwell client starts it, the worker invokes
the function asynchronously with AWS's durable invocation input, the backend runs it in a Node.js worker
(the harness's runtime on moto, LocalStack's stepwell-local executor there), its SDK checkpoints through the
API function, and its answer comes back to the worker as Lambda's destination record. The test plays the
payment service (the callback) and the scheduler's clock (the wait).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from durable_function_harness import DurableFunction
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer

# The project's default backends (make test) run it on moto only: LocalStack's apply and destroy would add
# about three minutes, and LocalStack's Node.js executor has its own tests
# (tests/deploy/test_lambda_runtime_node_localstack.py). Backends named explicitly
# (STEPWELL_DEPLOYED_BACKENDS=localstack) run it there too.
_MOTO_ONLY = [] if os.environ.get("STEPWELL_DEPLOYED_BACKENDS") else [pytest.mark.moto]
pytestmark = [pytest.mark.deployed, *_MOTO_ONLY]

WORKFLOW = "shop.fulfil"
ORDER = {"orderId": "A-17", "items": ["kettle", "mug"]}
WAIT_SECONDS = 180.0
DRAIN_SECONDS = 5.0


@pytest.fixture(scope="module")
def client(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> StepwellClient:
    clients = deployed_stack.backend.aws_clients(lambda_runtime.lambda_endpoint_url)
    return StepwellClient.from_client_config(deployed_stack.client_config, clients)


def pending(client: StepwellClient, execution_id: str) -> tuple[str | None, bool]:
    """From the history: the id of the callback still open (what the function logged for the payment
    service), and whether a wait is still running."""
    events = client.get_execution_history(execution_id)
    ended = {event.get("Id") for event in events if not event["EventType"].endswith("Started")}
    callback_id: str | None = None
    for event in events:
        if event["EventType"] == "CallbackStarted" and event.get("Id") not in ended:
            callback_id = event["CallbackStartedDetails"]["CallbackId"]
    waiting = any(event["EventType"] == "WaitStarted" and event.get("Id") not in ended for event in events)
    return callback_id, waiting


def run(
    client: StepwellClient,
    execution_id: str,
    runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler: SchedulerFirer,
    *,
    answer: Any,
) -> dict[str, Any]:
    """Work the queues until the execution ends: the payment callback answered by `answer` (a result, or
    an error object to fail it) once it is open, the scheduler's clock moved an hour while a wait runs."""
    deadline = time.monotonic() + WAIT_SECONDS
    answered: set[str] = set()
    while True:
        # A bounded round: between rounds the test acts (answers the callback, moves the clock).
        runtime.drain(timeout_seconds=DRAIN_SECONDS)
        if isinstance(runtime, LambdaRuntime):
            assert not runtime.background_errors, runtime.background_errors
        description = client.describe_execution(execution_id)
        if description["Status"] != "RUNNING":
            return description
        if time.monotonic() > deadline:
            history = json.dumps(client.get_execution_history(execution_id), default=str)
            raise AssertionError(f"still running: {json.dumps(description, default=str)}; history: {history}")
        callback_id, waiting = pending(client, execution_id)
        if callback_id is not None and callback_id not in answered:
            answered.add(callback_id)
            if isinstance(answer, dict) and "ErrorType" in answer:
                client.send_callback_failure(callback_id, answer)
            else:
                client.send_callback_success(callback_id, answer)
        elif waiting:
            scheduler.advance(timedelta(hours=1))
            scheduler.fire_due()


def steps(client: StepwellClient, execution_id: str) -> list[tuple[str, str | None]]:
    """The history's operation events (type, name), without the invocations the engine logs around them."""
    return [
        (event["EventType"], event.get("Name"))
        for event in client.get_execution_history(execution_id)
        if not event["EventType"].startswith("Invocation")
    ]


def test_an_order_paid_for_ships(
    client: StepwellClient,
    durable_function: DurableFunction,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    execution_id = client.start_execution(WORKFLOW, ORDER, execution_name=f"A-{uuid.uuid4().hex[:8]}")

    description = run(client, execution_id, lambda_runtime, scheduler_firer, answer={"paymentId": "pay-9"})

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == {
        "orderId": "A-17",
        "reservationId": "rsv-A-17-2",
        "paymentId": "pay-9",
        "trackingId": "trk-A-17-pay-9",
    }
    assert steps(client, execution_id) == [
        ("ExecutionStarted", None),
        ("StepStarted", "reserve-stock"),
        ("StepSucceeded", "reserve-stock"),
        ("CallbackStarted", "payment"),
        ("CallbackSucceeded", "payment"),
        ("WaitStarted", "packing"),
        ("WaitSucceeded", "packing"),
        ("StepStarted", "ship"),
        ("StepSucceeded", "ship"),
        ("ExecutionSucceeded", None),
    ]
    # Every run of the function was the team's own, checkpointing as its role: on moto the harness ran it;
    # LocalStack runs it itself, and what the harness sees of it is its requests to the API through the front.
    ran = [result for result in lambda_runtime.invocations if result.function_name == durable_function.name]
    if isinstance(lambda_runtime, BackendLambdaDriver):
        ran = list(lambda_runtime.invocations)
    assert ran and all(result.error is None for result in ran)
    assert not durable_function.front.refusals


def test_a_declined_payment_fails_with_the_handlers_error(
    client: StepwellClient,
    durable_function: DurableFunction,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    execution_id = client.start_execution(WORKFLOW, ORDER, execution_name=f"A-{uuid.uuid4().hex[:8]}")
    declined = {"ErrorType": "CardDeclined", "ErrorMessage": "insufficient funds"}

    description = run(client, execution_id, lambda_runtime, scheduler_firer, answer=declined)

    assert description["Status"] == "FAILED", json.dumps(description, default=str)
    error = description["Error"]
    assert error["ErrorType"] == "PaymentDeclined", error
    assert error["ErrorMessage"].startswith("payment for order A-17 was declined: "), error
    assert "insufficient funds" in error["ErrorMessage"], error
    assert steps(client, execution_id) == [
        ("ExecutionStarted", None),
        ("StepStarted", "reserve-stock"),
        ("StepSucceeded", "reserve-stock"),
        ("CallbackStarted", "payment"),
        ("CallbackFailed", "payment"),
        ("StepStarted", "release-stock"),
        ("StepSucceeded", "release-stock"),
        ("ExecutionFailed", None),
    ]
    assert not durable_function.front.refusals
