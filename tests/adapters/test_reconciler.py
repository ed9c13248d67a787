"""The reconciler finds lost wake-ups and stalled executions through the due-index."""

from __future__ import annotations

import json
from typing import Any

from stepwell.dynamodb_store import DynamoDbExecutionStore
from stepwell.model import make_execution_id
from stepwell.reconciler import Reconciler
from stepwell.work_queue import SqsWorkQueue

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


def test_overdue_timers_and_expired_leases_are_reenqueued_once(deployment: Deployment) -> None:
    config = deployment.config
    store = DynamoDbExecutionStore(
        deployment.clients.dynamodb,
        config.executions_table,
        config.operations_table,
        config.coordination_table,
        config.subject_index_name,
    )
    ids = {
        name: make_execution_id("default", "wf", name, "i")
        for name in ("lost", "fresh", "future", "dead", "live")
    }
    store.record_due_timer(ids["lost"], T0 - 600)  # long overdue: its message was lost
    store.record_due_timer(ids["fresh"], T0 - 30)  # just due: its message is probably in flight
    store.record_due_timer(ids["future"], T0 + 600)
    store.acquire_lease(ids["dead"], "worker-1", now=T0 - 1000, duration=60)
    store.record_due_timer(ids["dead"], T0 - 900)  # both overdue and stalled: one message
    store.acquire_lease(ids["live"], "worker-2", now=T0 - 10, duration=60)

    reconciler = Reconciler(
        store, SqsWorkQueue(deployment.clients.sqs, config.work_queue_url), FixedClock(T0)
    )
    report = reconciler.run()
    assert sorted(report.overdue_timers) == sorted([ids["lost"], ids["dead"]])
    assert report.stalled_executions == [ids["dead"]]
    assert report.enqueued == 2
    bodies = _received(deployment)
    assert sorted(body["executionId"] for body in bodies) == sorted([ids["lost"], ids["dead"]])
    assert all(body["kind"] == "invoke" for body in bodies)
    calls = deployment.clients.counter.snapshot()["calls"]
    assert calls["dynamodb.Query"] == 12  # one per shard and record type (timers, leases, flow keys)
    assert "dynamodb.Scan" not in calls
