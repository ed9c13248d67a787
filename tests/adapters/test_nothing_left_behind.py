"""Nothing left behind (issue 37, item 6), on moto: once a mix of executions has ended (one with a callback
still open, stopped, failed, timed out, one flow-limited by concurrency and by rate, a wait over 15 minutes
on an EventBridge Scheduler wake-up, a SKIP schedule created, skipped once and deleted, large inputs,
results and callback results), every item of every table has a `ttl` at its expected horizon or is gone,
and every payload object carries the tag the bucket's expiry rule matches."""

from __future__ import annotations

import json
from typing import Any

import pytest
from stepwell.aws.payloads import RETENTION_TAG_ENDED, RETENTION_TAG_KEY
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.flow_limits import Concurrency, Rate
from stepwell.core.log_expiry import LOG_HORIZON_SECONDS, NAME_HOLD_SECONDS
from stepwell.core.registry import Registry
from stepwell.model import ExecutionId
from stepwell.ports import SCHEDULE_POINTER_HOLD_SECONDS
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver, callback_id_of
from .leftovers import all_items, asks, asks_small, fails_open, fire_occurrence, waits_long

RETENTION = 30 * 86400
# Over the engine's inline limit: offloaded to the payload bucket. Repetitive text deflates to little, so
# the batches recording it stay small (deflated, or carried on the lease): only the value has an object.
BIG = 210 * 1024


@pytest.fixture
def mix(deployment: Deployment) -> tuple[StepwellClient, QueueDriver, dict[str, float]]:
    """Runs the mix to its end; returns the client, the driver and when the schedule's occurrences ran."""
    registry = Registry()
    registry.register("waits-long", waits_long)
    registry.register("asks", asks)
    registry.register("asks-small", asks_small)
    registry.register("fails-open", fails_open)
    registry.register("times-out", asks, execution_timeout=3600)
    registry.register("held", asks, concurrency=Concurrency(1, key="$.customer"))
    registry.register("paced", waits_long, rate=Rate(1, 3600))
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)

    client.start_execution("waits-long", {"n": 1, "big": BIG}, execution_name="long")
    stopped = client.start_execution("asks", {"pad": "x" * BIG}, execution_name="stopped")
    answered = client.start_execution("asks", {}, execution_name="answered")
    small = client.start_execution("asks-small", {}, execution_name="small")
    client.start_execution("fails-open", {}, execution_name="failed")
    client.start_execution("times-out", {}, execution_name="timed")
    held = [client.start_execution("held", {"customer": "c-1"}, execution_name=f"held-{i}") for i in range(2)]
    for index in range(2):
        client.start_execution("paced", {"n": index}, execution_name=f"paced-{index}")
    # A SKIP schedule: its first occurrence starts an execution that waits, its second is skipped.
    occurrences: dict[str, float] = {}
    client.create_schedule("nightly", "asks", "cron(0 0 * * ? *)", overlap="SKIP")
    fire_occurrence(deployment, "nightly", "2030-01-01T00:00:00Z")
    occurrences["claimed"] = clock.now()
    driver.run_until_quiet(fire_schedules=False)
    clock.advance_to(clock.now() + 86400)
    fire_occurrence(deployment, "nightly", "2030-01-02T00:00:00Z")
    occurrences["kept"] = clock.now()
    driver.run_until_quiet(fire_schedules=False)
    client.delete_schedule("nightly")
    scheduled = client.list_executions(workflow="asks", subject_id=None).items
    nightly = [record.execution_id for record in scheduled if record.subject_id == "nightly"]
    assert len(nightly) == 1  # the second occurrence was skipped

    client.send_callback_success(callback_id_of(client, answered), json.dumps("z" * BIG))
    client.send_callback_success(callback_id_of(client, small), json.dumps("q" * BIG))
    client.send_callback_success(callback_id_of(client, held[0]), json.dumps("ok"))
    client.send_callback_success(callback_id_of(client, nightly[0]), json.dumps("ok"))
    driver.run_until_quiet(fire_schedules=False)
    assert client.stop_execution(stopped)
    driver.run_until_quiet()  # the wake-ups on Scheduler, the time-out, the rate-delayed start
    client.send_callback_success(callback_id_of(client, held[1]), json.dumps("ok"))
    driver.run_until_quiet()
    return client, driver, occurrences


def test_every_item_of_every_table_has_its_ttl_once_the_mix_has_ended(
    mix: tuple[StepwellClient, QueueDriver, dict[str, float]], deployment: Deployment
) -> None:
    client, _, occurrences = mix
    config = deployment.config
    ends: dict[str, float] = {}
    for item in all_items(deployment, config.executions_table):
        key = item["contextKey"]["S"]
        if "#~schedule#" in key:
            continue
        if "#~tag#" not in key:
            assert item["status"]["S"] != "RUNNING", item
            ends[f"{key}/{item['instanceId']['S']}"] = float(item["end"]["N"])
    statuses = {ExecutionId.parse(eid).instance_id.split("-")[0]: eid for eid in ends}
    assert set(statuses) >= {"long", "stopped", "answered", "small", "failed", "timed", "held", "paced"}

    kinds: dict[str, int] = {}

    def seen(kind: str, item: dict[str, Any]) -> int:
        assert "ttl" in item, (kind, item)
        kinds[kind] = kinds.get(kind, 0) + 1
        return int(item["ttl"]["N"])

    for item in all_items(deployment, config.executions_table):
        key, sort_key = item["contextKey"]["S"], item["instanceId"]["S"]
        ttl = seen("schedule pointer" if "#~schedule#" in key else "execution", item)
        if "#~schedule#" in key:
            # Kept again by the skipped occurrence: a hold past it, not past the claim.
            assert ttl == int(occurrences["kept"]) + SCHEDULE_POINTER_HOLD_SECONDS
        else:
            assert ttl == int(ends[f"{key}/{sort_key}"]) + RETENTION + NAME_HOLD_SECONDS
    for item in all_items(deployment, config.operations_table):
        ended_at = ends[item["executionId"]["S"]]
        ttl = seen(item["sk"]["S"][:2], item)
        assert ended_at + RETENTION - 1 <= ttl <= ended_at + RETENTION + LOG_HORIZON_SECONDS
    now = client.engine.clock.now()
    for item in all_items(deployment, config.coordination_table):
        key = item["key"]["S"]
        kind = key.split("#")[0] if not key.startswith("fc#") else key[:4]
        ttl = seen(kind, item)
        if "eid" in item and item["eid"]["S"] in ends:
            # The execution's other items expire by its end plus the retention, days before its own.
            assert ttl <= int(ends[item["eid"]["S"]]) + RETENTION, item
        assert ttl > now - 3600  # none expired already
        if kind == "lease":
            assert ttl == int(ends[item["eid"]["S"]]) + RETENTION
    assert kinds.keys() >= {"execution", "schedule pointer", "b#", "lease", "cb", "fc#c", "fc#r", "fc#x"}


def test_every_payload_object_is_tagged_for_the_buckets_expiry_rule_once_the_mix_has_ended(
    mix: tuple[StepwellClient, QueueDriver, dict[str, float]], deployment: Deployment
) -> None:
    s3, bucket = deployment.clients.s3, deployment.config.payload_bucket
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    # The long wait's result, the stopped one's input, both large callback results and a result.
    assert len(keys) >= 5
    untagged = [
        key
        for key in keys
        if {"Key": RETENTION_TAG_KEY, "Value": RETENTION_TAG_ENDED}
        not in s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    ]
    assert untagged == []
