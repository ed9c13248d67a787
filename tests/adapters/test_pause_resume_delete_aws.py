"""Pause, resume and delete on the AWS adapters (moto): the worker Lambda's entry holds a paused execution
while its callback arrives, the resume completes it, and deleting it removes every item of it from the
three tables (its record and tag entries, log batches and inputs, coordination record, callbacks, reserved
start) and every payload object, while another execution keeps its own."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from stepwell.aws.payloads import execution_folder
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.flow_limits import Rate
from stepwell.core.registry import Registry
from stepwell.errors import ExecutionNotFound, ExecutionStateConflict
from stepwell.model import ExecutionId, ExecutionStatus
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver, callback_id_of
from .leftovers import all_items, asks

# Over the engine's inline limit: the input and the callback's result go to the payload bucket.
BIG = 210 * 1024


def items_of(deployment: Deployment, execution_id: str) -> dict[str, int]:
    """How many items of each table belong to the execution (a Scan per table: tests only)."""
    config = deployment.config
    ids = ExecutionId.parse(execution_id)
    reservation = "fc#x#" + hashlib.sha256(execution_id.encode()).hexdigest()[:40]
    counts = {"executions": 0, "operations": 0, "coordination": 0}
    for item in all_items(deployment, config.executions_table):
        key, sort_key = item["contextKey"]["S"], item["instanceId"]["S"]
        own = (key == ids.context_key and sort_key == ids.instance_id) or sort_key.endswith(
            "#" + execution_id
        )
        counts["executions"] += own
    for item in all_items(deployment, config.operations_table):
        counts["operations"] += item["executionId"]["S"] == execution_id
    for item in all_items(deployment, config.coordination_table):
        key = item["key"]["S"]
        counts["coordination"] += key in ("lease#" + execution_id, reservation) or (
            item.get("eid", {}).get("S") == execution_id
        )
    return counts


def objects_of(deployment: Deployment, execution_id: str) -> list[str]:
    listing = deployment.clients.s3.list_objects_v2(
        Bucket=deployment.config.payload_bucket, Prefix=execution_folder(execution_id)
    )
    return [item["Key"] for item in listing.get("Contents", [])]


@pytest.fixture
def stack(deployment: Deployment) -> tuple[StepwellClient, QueueDriver]:
    registry = Registry()
    registry.register("paced", asks, rate=Rate(1, 3600))  # a second start is delayed: a reserved start
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return client, QueueDriver(deployment, runtime, clock)


def test_a_paused_execution_takes_its_callback_in_and_its_delete_leaves_nothing(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    kept = client.start_execution("paced", {}, execution_name="kept", tags={"team": "a"})
    gone = client.start_execution("paced", {"pad": "x" * BIG}, execution_name="gone", tags={"team": "a"})
    driver.run_until_quiet()  # `gone` starts an hour later, on its reserved start
    callback_id = callback_id_of(client, gone)

    assert client.pause_execution(gone, reason="downstream degraded")
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(gone)["Status"] == "PAUSED"
    client.send_callback_success(callback_id, json.dumps("z" * BIG))
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(gone)["Status"] == "PAUSED"  # taken in, not run
    assert "CallbackSucceeded" in [event["EventType"] for event in client.get_execution_history(gone)]
    assert client.resume_execution(gone)
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(gone)["Status"] == "SUCCEEDED"
    with pytest.raises(ExecutionStateConflict):
        client.delete_execution(kept)  # still waiting for its callback
    before = items_of(deployment, gone)
    assert before["executions"] == 2 and before["operations"] >= 1  # its record and its tag entry
    assert before["coordination"] >= 3  # its coordination record, callback and reserved start
    assert len(objects_of(deployment, gone)) >= 2  # its input and its callback's result
    kept_before = items_of(deployment, kept)

    client.delete_execution(gone)
    assert client.describe_execution(gone)["Status"] == "DELETING"
    driver.run_until_quiet(fire_schedules=False)

    with pytest.raises(ExecutionNotFound):
        client.describe_execution(gone)
    assert items_of(deployment, gone) == {"executions": 0, "operations": 0, "coordination": 0}
    assert objects_of(deployment, gone) == []
    assert items_of(deployment, kept) == kept_before
    listed = client.list_executions(tag=("team", "a")).items
    assert [record.execution_id for record in listed] == [kept]
    assert client.list_executions(status=ExecutionStatus.DELETING).items == []


def test_a_paused_execution_keeps_its_version_pin_and_record_attributes(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    execution_id = client.start_execution("paced", {}, execution_name="one")
    driver.run_until_quiet(fire_schedules=False)
    client.pause_execution(execution_id, reason="why", timeout_paused=False)
    driver.run_until_quiet(fire_schedules=False)

    (item,) = [
        item
        for item in all_items(deployment, deployment.config.executions_table)
        if item["instanceId"]["S"] == "one"
    ]
    pause: dict[str, Any] = item["pa"]["M"]
    assert item["status"]["S"] == "PAUSED"
    assert set(pause) == {"rt", "tp", "rs", "pt"} and pause["tp"] == {"BOOL": False}
    details = client.describe_execution(execution_id)["PauseDetails"]
    assert details["Reason"] == "why" and details["ExecutionTimeoutPaused"] is False
