"""Payload retention on the deployed stack, on each backend: an execution with an offloaded input, step
result and callback result waits longer than the retention twice and completes; its payloads expire only
`retention_days` after its end.

Neither emulator runs lifecycle rules, so `BucketLifecycle` applies the deployed bucket's own
configuration (read from the bucket) as the virtual clock skips ahead: under the module's old rule (every
object expires `retention_days` after it was written) this test fails.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from deployed_backend import FINISHED, DeployedTarget
from stepwell.aws.payloads import RETENTION_TAG_ENDED, RETENTION_TAG_KEY, execution_folder
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lifecycle import BucketLifecycle
from stepwell.testing.scheduler import VirtualClock

pytestmark = pytest.mark.deployed

BIG = 240 * 1024  # over the engine's inline limit (offloaded), within the 256 KiB payload limits
WAIT_SECONDS = 240.0


def _open_callback(client: StepwellClient, execution_id: str) -> str | None:
    for event in client.get_execution_history(execution_id):
        if event.get("EventType") == "CallbackStarted":
            return str(event["CallbackStartedDetails"]["CallbackId"])
    return None


def _log_batches(stack: DeployedStack, execution_id: str) -> list[dict[str, Any]]:
    """The execution's log batches as the operations table holds them."""
    response = stack.backend.client("dynamodb").query(
        TableName=stack.client_config["operations_table"],
        KeyConditionExpression="executionId = :e AND begins_with(sk, :b)",
        ExpressionAttributeValues={":e": {"S": execution_id}, ":b": {"S": "b#"}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def _run_until(target: DeployedTarget, execution_id: str, done: Callable[[], bool]) -> None:
    """Process the queue until `done`; when the execution only waits, skip the clock to its wake-up."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        if done():
            return
        assert time.monotonic() < deadline, json.dumps(
            target.client.describe_execution(execution_id), default=str
        )[:2000]
        if not target.wake_when_due(execution_id):
            time.sleep(0.2)


def test_payloads_outlive_waits_longer_than_the_retention_and_expire_after_the_end(
    deployed_stack: DeployedStack,
    deployed_target: DeployedTarget,
    deployed_client: StepwellClient,
    deployed_clock: VirtualClock,
) -> None:
    s3 = deployed_stack.backend.client("s3")
    bucket = deployed_stack.client_config["payload_bucket"]
    lifecycle = BucketLifecycle(s3, bucket, deployed_clock)
    assert lifecycle.rules, f"bucket {bucket} has no expiration rule"
    retention_days = max(rule.days or 0 for rule in lifecycle.rules)
    run = uuid.uuid4().hex[:12]

    def folder_keys() -> list[str]:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=execution_folder(execution_id))
        return [item["Key"] for item in listed.get("Contents", [])]

    with lifecycle.running():
        execution_id = deployed_client.start_execution(
            "payloads.long_wait", {"blob": "i" * BIG, "days": retention_days + 1}, f"long-{run}"
        )
        _run_until(
            deployed_target, execution_id, lambda: _open_callback(deployed_client, execution_id) is not None
        )
        callback_id = _open_callback(deployed_client, execution_id)
        assert callback_id is not None
        # It waited longer than its log's batches were written to last: the log was kept (no ttl).
        batches = _log_batches(deployed_stack, execution_id)
        assert batches and all("ttl" not in item for item in batches)
        deployed_client.send_callback_success(callback_id, "c" * BIG)
        _run_until(
            deployed_target,
            execution_id,
            lambda: deployed_client.describe_execution(execution_id)["Status"] in FINISHED,
        )
        description = deployed_client.describe_execution(execution_id)
        assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)[:2000]
        assert json.loads(description["Result"]) == {"input": BIG, "result": BIG, "callback": BIG}
        assert json.loads(description["InputPayload"])["blob"] == "i" * BIG

        # Every batch of its log expires with it, `retention_days` after the end.
        ended_at = deployed_client.engine.store.get_execution(execution_id)
        assert ended_at is not None and ended_at.ended_at is not None
        expiries = [int(item["ttl"]["N"]) for item in _log_batches(deployed_stack, execution_id)]
        assert expiries and all(
            abs(at - (ended_at.ended_at + retention_days * 86400)) <= 1 for at in expiries
        ), expiries
        kept = folder_keys()
        assert kept, "nothing was offloaded"
        for key in kept:
            tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
            assert tags == [{"Key": RETENTION_TAG_KEY, "Value": RETENTION_TAG_ENDED}], key
        deployed_clock.advance(timedelta(days=retention_days - 1))
        assert folder_keys() == kept, "payloads expired before the retention after the end"
        deployed_clock.advance(timedelta(days=2))  # past the end + retention, rounded to midnight
        assert folder_keys() == []
    assert set(kept) <= set(lifecycle.expired)
