"""A reconcile run: Queries of the due-index's flow shards, nothing for executions."""

from __future__ import annotations

import json
from typing import Any

from stepwell.aws.work_queue import SqsWorkQueue
from stepwell.features.reconciler import Reconciler
from stepwell.model import HandOff, make_execution_id

from .deployment import Deployment

T0 = 1_800_000_000.0


class FixedClock:
    def __init__(self, now: float) -> None:
        self.value = now

    def now(self) -> float:
        return self.value


def _received(deployment: Deployment) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    while True:
        response = deployment.clients.sqs.receive_message(
            QueueUrl=deployment.config.work_queue_url, MaxNumberOfMessages=10
        )
        messages = response.get("Messages", [])
        if not messages:
            return bodies
        bodies.extend(json.loads(message["Body"]) for message in messages)


def test_a_run_queries_the_flow_shards_only_and_leaves_executions_to_sqs(deployment: Deployment) -> None:
    config = deployment.config
    store = deployment.execution_store()
    # A worker died holding this lease, and this one armed a wake-up long ago: SQS delivers the dead
    # worker's message again and the wake-up travels by SQS or Scheduler (with the DLQ behind both), so the
    # reconciler has nothing to re-enqueue for them.
    dead = make_execution_id("default", "wf", "dead", "i")
    store.acquire_lease(dead, "worker-1", now=T0 - 1000, duration=60)
    waiting = make_execution_id("default", "wf", "waiting", "i")
    store.acquire_lease(waiting, "worker-2", now=T0 - 1000, duration=60)
    store.release_lease(waiting, "worker-2", HandOff(wake_at=T0 - 600))
    deployment.clients.counter.reset()

    reconciler = Reconciler(
        store, SqsWorkQueue(deployment.clients.sqs, config.work_queue_url), FixedClock(T0)
    )
    report = reconciler.run()
    assert report.swept_flow_keys == [] and report.deleted_versions == []
    calls = deployment.clients.counter.snapshot()["calls"]
    assert _received(deployment) == []
    assert calls == {"dynamodb.Query": 4}  # one per shard of the flow keys' sweep, never a Scan
