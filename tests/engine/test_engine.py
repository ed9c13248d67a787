"""Running workflows on the local backend: steps, waits skipped on the virtual clock, map, parallel,
polling, large payloads, and what a run reads and writes."""

from __future__ import annotations

import json

import pytest
import workflows
from local_history import event_types
from stepwell.model import ExecutionStatus
from stepwell.testing.local import ExecutionStuck, LocalStepwell


def test_a_step_workflow_succeeds_with_its_result_and_history(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == "Hello, Ada!"
    history = stepwell_local.history(execution_id)
    assert [event["EventType"] for event in history] == [
        "ExecutionStarted",
        "StepStarted",
        "StepSucceeded",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    assert [event["EventId"] for event in history] == [1, 2, 3, 4, 5]
    assert history[2]["Name"] == "greet"
    assert history[2]["StepSucceededDetails"]["Result"]["Payload"] == '"Hello, Ada!"'


def test_a_three_day_wait_is_skipped_on_the_virtual_clock(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == "before-after"
    assert stepwell_local.clock.skipped_seconds >= 3 * 24 * 3600 - 1
    history = stepwell_local.history(execution_id)
    waits = [event for event in history if event["EventType"].startswith("Wait")]
    assert [event["EventType"] for event in waits] == ["WaitStarted", "WaitSucceeded"]
    assert waits[0]["WaitStartedDetails"]["Duration"] == 3 * 24 * 3600
    # The "before" step ran once: the second invocation replayed it from the log.
    assert event_types(stepwell_local, execution_id).count("StepStarted") == 2


def test_each_step_costs_one_batch_and_a_first_run_reads_no_log(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("counted_steps", workflows.counted_steps)
    execution_id = stepwell_local.start("counted_steps", {"steps": 50})

    record = stepwell_local.run_to_completion(execution_id)

    assert json.loads(record.result or "null") == sum(range(50))
    # 50 steps (START and SUCCEED in one batch each) + the final batch; no log load: the one run is the
    # execution's first, whose lease no run held before (Lease.never_held), so its log is empty.
    assert stepwell_local.store.batch_count(execution_id) <= 51
    assert stepwell_local.store.counters.get("load_batches", 0) == 0


def test_large_payloads_go_to_the_payload_store() -> None:
    local = LocalStepwell(inline_limit=1024)
    local.register("big_result", workflows.big_result)
    execution_id = local.start("big_result", {"size": 5000})

    record = local.run_to_completion(execution_id)

    assert record.result_is_ref
    assert json.loads(local.describe(execution_id)["Result"]) == "x" * 5000
    step = [e for e in local.history(execution_id) if e["EventType"] == "StepSucceeded"]
    assert step[0]["StepSucceededDetails"]["Result"]["Payload"] == json.dumps("x" * 5000)


def test_run_to_completion_reports_an_execution_nobody_will_wake(stepwell_local: LocalStepwell) -> None:
    @workflows.durable_execution
    def forever(event: object, context: workflows.DurableContext) -> object:
        return context.create_callback(name="never").result()

    stepwell_local.register("forever", forever)
    execution_id = stepwell_local.start("forever", None)
    with pytest.raises(ExecutionStuck, match="nothing is scheduled"):
        stepwell_local.run_to_completion(execution_id)


def test_wait_for_condition_polls_on_the_virtual_clock(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("poll_until_ready", workflows.poll_until_ready)
    execution_id = stepwell_local.start("poll_until_ready", {"ready_after": 3})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == 3
    assert stepwell_local.clock.skipped_seconds >= 2 * 600 - 1  # two 10-minute delays, skipped


def test_map_runs_every_item(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("map_squares", workflows.map_squares)
    execution_id = stepwell_local.start("map_squares", {"items": [1, 2, 3, 4]})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == [1, 4, 9, 16]


def test_a_timer_that_comes_due_during_an_invocation_runs_the_execution_again(
    stepwell_local: LocalStepwell,
) -> None:
    from aws_durable_execution_sdk_python.config import Duration, ParallelConfig

    clock = stepwell_local.clock

    def waits(context: workflows.DurableContext) -> str:
        context.wait(Duration.from_seconds(1))
        return "waited"

    def slow(context: workflows.DurableContext) -> str:
        context.step(lambda _: "started", name="start")  # synchronous: the wait's START is durable now
        # Time passes while this branch works: the other branch's wait ends during the invocation.
        return context.step(lambda _: clock.advance(5) or "worked", name="work")

    @workflows.durable_execution
    def branches(event: object, context: workflows.DurableContext) -> list[str]:
        return context.parallel([waits, slow], config=ParallelConfig(max_concurrency=2)).get_results()

    stepwell_local.register("branches", branches)
    execution_id = stepwell_local.start("branches", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == ["waited", "worked"]
