"""The same order workflow deployed (docs/testing-your-workflows.md#the-same-workflow-deployed): the example's
root module (examples/testing/main.tf) applied to moto, the worker's zip run by the harness's Lambda runtime,
the three-day timeout brought forward by the harness's scheduler on its virtual clock.

`pytest -m "not deployed"` leaves these out; STEPWELL_DEPLOYED_BACKENDS=moto picks the backend.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orders
import pytest
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer

pytestmark = [pytest.mark.deployed, pytest.mark.moto]

ORDER = {"order_id": "D-2002", "amount_cents": 1250}
PICKED = {"parcel_id": "P-9", "picked_by": "bay-3"}
WAIT_SECONDS = 180.0


@pytest.fixture(scope="module")
def client(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> StepwellClient:
    """A client of the deployed stack, as an operator's is (its Lambda calls go to the local runtime)."""
    clients = deployed_stack.backend.aws_clients(lambda_runtime.lambda_endpoint_url)
    return StepwellClient.from_client_config(deployed_stack.client_config, clients)


def open_callback(client: StepwellClient, execution_id: str) -> str | None:
    """The id of the execution's callback that is still open, from its history (as the warehouse would get
    it from request_picking)."""
    events = client.get_execution_history(execution_id)
    ended = {
        event.get("Id")
        for event in events
        if event["EventType"] in ("CallbackSucceeded", "CallbackFailed", "CallbackTimedOut")
    }
    for event in events:
        if event["EventType"] == "CallbackStarted" and event.get("Id") not in ended:
            callback_id: str = event["CallbackStartedDetails"]["CallbackId"]
            return callback_id
    return None


def run_until_it_ends(
    client: StepwellClient,
    execution_id: str,
    runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler: SchedulerFirer,
    on_idle: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """The deployed counterpart of LocalStepwell.run_to_completion: the runtime works off the queues; while
    the execution still runs, `on_idle` may act (answer a callback), and when it does not the scheduler's
    clock moves 12 hours and fires what is due."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        runtime.drain(timeout_seconds=WAIT_SECONDS)
        description = client.describe_execution(execution_id)
        if description["Status"] != "RUNNING":
            return description
        assert time.monotonic() < deadline, f"still running: {json.dumps(description, default=str)}"
        if not on_idle():
            scheduler.advance(timedelta(hours=12))
            scheduler.fire_due()


def test_a_picked_order_ships_on_the_deployed_stack(
    client: StepwellClient,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    execution_id = client.start_execution(orders.WORKFLOW, ORDER, execution_name=f"D-{uuid.uuid4().hex[:8]}")

    def warehouse() -> bool:
        callback_id = open_callback(client, execution_id)
        if callback_id is None:
            return False
        client.send_callback_success(callback_id, PICKED)  # sent as its JSON text
        return True

    description = run_until_it_ends(client, execution_id, lambda_runtime, scheduler_firer, on_idle=warehouse)

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == {
        "order_id": "D-2002",
        "status": "shipped",
        "charge_id": "ch-D-2002",
        "picked_by": "bay-3",
        "tracking": "TRK-D-2002-P-9",
    }


def test_an_order_the_warehouse_never_picks_is_refunded_on_the_deployed_stack(
    client: StepwellClient,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
) -> None:
    execution_id = client.start_execution(orders.WORKFLOW, ORDER, execution_name=f"D-{uuid.uuid4().hex[:8]}")

    description = run_until_it_ends(client, execution_id, lambda_runtime, scheduler_firer)

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(description["Result"]) == {
        "order_id": "D-2002",
        "status": "refunded",
        "refund_id": "rf-ch-D-2002",
    }
    events = {event["EventType"]: event for event in client.get_execution_history(execution_id)}
    waited = events["CallbackTimedOut"]["EventTimestamp"] - events["CallbackStarted"]["EventTimestamp"]
    assert timedelta(days=3) <= waited <= timedelta(days=3, hours=12, minutes=1)  # the clock moves by 12 h
