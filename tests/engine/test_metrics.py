"""The worker's metrics (stepwell.core.metrics): one EMF record per message handled, with the contract's
names,
units and dimension sets, and each fact counted once where it is decided, however messages repeat."""

from __future__ import annotations

from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from stepwell.core.journal import encode_body
from stepwell.core.metrics import TIMINGS, UNITS, EmfMetrics, Metric
from stepwell.core.registry import Registry
from stepwell.model import Batch, InvokeMessage
from stepwell.testing.local import LocalStepwell, MemoryMetrics, check_emf_record, metric_totals
from versioned_stack import VersionedStack

PER_WORKFLOW = [["Deployment", "Workflow"], ["Deployment"]]


def deliver(local: LocalStepwell, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Process one message; the records it wrote."""
    before = len(local.metrics.records)
    local.process_one(body)
    return local.metrics.records[before:]


def run_all(local: LocalStepwell) -> list[dict[str, Any]]:
    """Deliver every message (skipping the clock ahead) one by one, checking that each wrote at most one
    record per workflow, all valid EMF."""
    records: list[dict[str, Any]] = []
    while True:
        body = local.queue.pop_due(local.clock.now())
        if body is None:
            if not local.advance_to_next_wakeup():
                return records
            continue
        written = deliver(local, body)
        assert len(written) == len({record.get("Workflow") for record in written}) <= 1
        for record in written:
            check_emf_record(record)
        records.extend(written)


def test_a_run_of_two_steps_and_a_wait_has_known_metrics(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three-day-wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three-day-wait", {})

    records = run_all(stepwell_local)

    totals = metric_totals(records, "three-day-wait")
    assert totals["ExecutionsStarted"] == 1
    assert totals["Invocations"] == 2  # the first ran to the wait, the second after it
    assert totals["ExecutionsSucceeded"] == 1
    (lag,) = totals["WakeUpLag"]  # the virtual clock delivers the wake-up on time (its clock runs on)
    assert 0 <= lag < 1000
    assert len(totals["InvocationDuration"]) == 2 and all(
        value >= 0 for value in totals["InvocationDuration"]
    )
    # EXECUTION started; "before" started and succeeded; the wait started; then, woken, the wait succeeded,
    # "after" started and succeeded, the EXECUTION succeeded: each batch counts the operations it changed.
    assert totals["OperationsRecorded"] == 6
    for absent in (
        "ExecutionsFailed",
        "InvocationCrashes",
        "LeaseBusy",
        "LeaseFenced",
        "PayloadBytesOffloaded",
    ):
        assert absent not in totals
    assert all(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == PER_WORKFLOW for record in records)
    assert {record["Deployment"] for record in records} == {"local"}
    # Not a dimension: a property that leads from a record to its execution's log lines.
    assert {record["executionId"] for record in records} == {execution_id}


def test_duplicated_messages_count_nothing_twice(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three-day-wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three-day-wait", {})
    start = stepwell_local.queue.pop_due(stepwell_local.clock.now())
    assert start == InvokeMessage(execution_id).to_body()
    records = deliver(stepwell_local, dict(start))
    records += deliver(stepwell_local, dict(start))  # SQS delivered the start twice: the wait is pending
    stepwell_local.advance_to_next_wakeup()
    wake_up = stepwell_local.queue.pop_due(stepwell_local.clock.now())
    assert wake_up is not None and wake_up.get("dueAt") is not None
    records += deliver(stepwell_local, dict(wake_up))
    records += deliver(stepwell_local, dict(wake_up))  # the wake-up twice, after the end
    records += run_all(stepwell_local)

    totals = metric_totals(records, "three-day-wait")
    assert stepwell_local.record(execution_id).status.value == "SUCCEEDED"
    assert (totals["ExecutionsStarted"], totals["Invocations"], totals["ExecutionsSucceeded"]) == (1, 2, 1)
    assert len(totals["WakeUpLag"]) == 1  # the duplicate found the execution ended: it ran nothing


def test_a_crash_counts_as_an_invocation_and_a_crash(stepwell_local: LocalStepwell) -> None:
    crashed: list[bool] = []

    @durable_execution
    def crashes_once(event: object, context: DurableContext) -> str:
        def dies(_: StepContext) -> str:
            if not crashed:
                crashed.append(True)
                raise SystemExit("worker process died")
            return "charged"

        return context.step(dies, name="charge")

    stepwell_local.register("crashes-once", crashes_once)
    stepwell_local.start("crashes-once", {})

    totals = metric_totals(run_all(stepwell_local), "crashes-once")

    assert totals["InvocationCrashes"] == 1
    assert totals["Invocations"] == 2 and totals["ExecutionsSucceeded"] == 1
    assert len(totals["WakeUpLag"]) == 1  # the retry after the crash is a wake-up too


def test_failed_and_stopped_executions_are_counted_once(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("failing", workflows.failing_child)
    stepwell_local.register("approval", workflows.approval)
    stepwell_local.start("failing", {"value": 1})
    waiting = stepwell_local.start("approval", {})
    stopped_early = stepwell_local.start("approval", {}, execution_name="never-ran")
    stepwell_local.engine.stop_execution(stopped_early)
    stepwell_local.run_until_idle()  # "waiting" waits for its callback (its timeout is an hour away)
    stepwell_local.engine.stop_execution(waiting)
    stepwell_local.run_until_idle()
    deliver(stepwell_local, InvokeMessage(waiting).to_body())  # a late duplicate
    records = stepwell_local.metrics.records

    assert metric_totals(records, "failing")["ExecutionsFailed"] == 1
    approval = metric_totals(records, "approval")
    # The one stopped before its first run still has its start logged (and counted) with its stop.
    assert (approval["ExecutionsStarted"], approval["ExecutionsStopped"]) == (2, 2)
    assert "ExecutionsSucceeded" not in approval


def test_a_busy_execution_counts_a_lease_conflict(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})
    stepwell_local.store.acquire_lease(execution_id, "another worker", stepwell_local.clock.now(), 60)

    records = deliver(stepwell_local, InvokeMessage(execution_id).to_body())

    assert metric_totals(records, "greet") == {"LeaseBusy": 1}


def test_a_fenced_worker_counts_it_and_not_the_batch_it_lost(stepwell_local: LocalStepwell) -> None:
    store = stepwell_local.store

    @durable_execution
    def overtaken(event: Any, context: DurableContext) -> str:
        def taken(_: StepContext) -> str:
            # A newer worker (this one's lease expired) writes the log's next batch first.
            batches, _ = store.load_batches(execution_id)
            next_seq = batches[-1].seq + 1 if batches else 0
            store.append_batch(execution_id, Batch(next_seq, encode_body({}), 0.0))
            return "late"

        return context.step(taken, name="taken")

    stepwell_local.register("overtaken", overtaken)
    execution_id = stepwell_local.start("overtaken", {})

    totals = metric_totals(deliver(stepwell_local, InvokeMessage(execution_id).to_body()), "overtaken")

    assert totals["LeaseFenced"] == 1 and totals["Invocations"] == 1
    assert "ExecutionsSucceeded" not in totals


def test_offloaded_payload_bytes_are_counted() -> None:
    local = LocalStepwell(inline_limit=1000)
    local.register("big", workflows.big_result)
    local.start("big", {"size": 5000})

    totals = metric_totals(run_all(local), "big")

    # The step's result (in a batch) and the execution's result: each over the limit, each offloaded.
    assert totals["PayloadBytesOffloaded"] >= 2 * 5000
    assert totals["ExecutionsSucceeded"] == 1


def test_forwarded_messages_are_counted_by_workflow(stepwell_local: LocalStepwell) -> None:
    stepwell_local.deploy({"three-day-wait": workflows.three_day_wait})
    execution_id = stepwell_local.start("three-day-wait", {})
    stepwell_local.run_until_idle()
    stepwell_local.deploy()  # version 2 is live: the wake-up reaches it and is forwarded to 1

    stepwell_local.run_to_completion(execution_id)

    totals = metric_totals(stepwell_local.metrics.records, "three-day-wait")
    assert totals["ForwardedMessages"] == stepwell_local.forwarded >= 1
    assert totals["ExecutionsSucceeded"] == 1


def test_the_entry_counts_the_records_it_forwards_to_another_version() -> None:
    stack, metrics = VersionedStack(), MemoryMetrics()
    registry = Registry()
    registry.register("three-day-wait", workflows.three_day_wait)
    stack.publish(registry).engine.metrics = metrics
    waiting = [
        stack.live.engine.start_execution("three-day-wait", {}, execution_name=f"w-{n}") for n in (1, 2)
    ]
    stack.drive()
    stack.publish(registry).engine.metrics = metrics  # version 2 is live: both wake-ups reach it first

    stack.run_until_ended(waiting)

    forwarded = [len(event["Records"]) for version, event in stack.functions.invocations if version == "1"]
    totals = metric_totals(metrics.records, "three-day-wait")
    assert totals["ForwardedMessages"] == sum(forwarded) == 2
    assert totals["ExecutionsSucceeded"] == 2  # counted once, by version 1, which ran them
    for record in metrics.records:
        check_emf_record(record)


def test_a_worker_taking_over_a_dead_worker_s_lease_counts_a_stalled_execution(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})
    # A worker died holding the lease; SQS delivers its message again after the lease ran out.
    stepwell_local.store.acquire_lease(execution_id, "dead worker", stepwell_local.clock.now(), 60)
    stepwell_local.queue.pop_due(stepwell_local.clock.now())
    stepwell_local.clock.advance(61)

    records = deliver(stepwell_local, InvokeMessage(execution_id).to_body())

    totals = metric_totals(records, "greet")
    assert totals["StalledExecutions"] == 1 and totals["ExecutionsSucceeded"] == 1
    assert "StalledExecutions" not in metric_totals(run_all(stepwell_local), "greet")


def test_a_wake_up_later_than_two_minutes_counts_as_overdue(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three-day-wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three-day-wait", {})
    stepwell_local.process_one(stepwell_local.queue.pop_due(stepwell_local.clock.now()))
    due_at = stepwell_local.queue.next_due_at()
    assert due_at is not None
    stepwell_local.clock.advance_to(due_at + 121)  # Scheduler (or a DLQ redrive) delivered it late

    records = deliver(stepwell_local, InvokeMessage(execution_id, due_at=due_at).to_body())

    totals = metric_totals(records, "three-day-wait")
    assert totals["OverdueWakeUps"] == 1
    (lag,) = totals["WakeUpLag"]
    assert lag == pytest.approx(121_000, abs=1000)


def test_a_record_carries_both_dimension_sets_and_sums_counts() -> None:
    written: list[dict[str, Any]] = []
    metrics = EmfMetrics("shop", write=written.append, now=lambda: 1_700_000_000.5)
    metrics.add(Metric.OPERATIONS_RECORDED, 2, "orders")
    metrics.add(Metric.OPERATIONS_RECORDED, 3, "orders")
    metrics.add(Metric.INVOCATION_DURATION, 12.3456, "orders")
    metrics.add(Metric.INVOCATION_DURATION, 7, "orders")
    metrics.add(Metric.LEASE_BUSY, 1, "refunds")
    metrics.flush()
    metrics.flush()  # nothing added since: nothing written

    orders, refunds = written
    assert orders == {
        "_aws": {
            "Timestamp": 1_700_000_000_500,
            "CloudWatchMetrics": [
                {
                    "Namespace": "Stepwell",
                    "Dimensions": PER_WORKFLOW,
                    "Metrics": [
                        {"Name": "OperationsRecorded", "Unit": "Count"},
                        {"Name": "InvocationDuration", "Unit": "Milliseconds"},
                    ],
                }
            ],
        },
        "Deployment": "shop",
        "Workflow": "orders",
        "OperationsRecorded": 5,
        "InvocationDuration": [12.346, 7],
    }
    assert refunds["Workflow"] == "refunds" and refunds["LeaseBusy"] == 1


def test_timings_beyond_emf_s_100_values_start_a_new_record() -> None:
    written: list[dict[str, Any]] = []
    metrics = EmfMetrics("shop", write=written.append)
    for value in range(150):
        metrics.add(Metric.WAKE_UP_LAG, value, "orders")
    metrics.flush()

    assert [len(record["WakeUpLag"]) for record in written] == [100, 50]
    for record in written:
        check_emf_record(record)


def test_units_follow_the_contract() -> None:
    assert {metric.value for metric in TIMINGS} == {"WakeUpLag", "InvocationDuration"}
    assert UNITS[Metric.PAYLOAD_BYTES_OFFLOADED] == "Bytes"
    assert {UNITS[metric] for metric in Metric if metric not in TIMINGS} == {"Count", "Bytes"}
    with pytest.raises(ValueError, match="Deployment dimension"):
        EmfMetrics("")
