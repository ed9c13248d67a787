"""Workers and the lease: a duplicate message, a second worker backing off, a race, crashes, a lost
wake-up, and the coordination record a run writes."""

from __future__ import annotations

import json

import workflows
from local_history import event_types
from stepwell.model import ExecutionStatus, HandOff, OutcomeAction
from stepwell.testing.local import LocalStepwell


def test_a_duplicate_message_changes_nothing(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()  # first invocation: suspended on the wait
    before = stepwell_local.history(execution_id)

    outcome = stepwell_local.worker.run(execution_id)  # the same message delivered again

    assert outcome.action is OutcomeAction.IDLE
    assert stepwell_local.history(execution_id) == before


def test_a_worker_backs_off_while_another_holds_the_lease(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})
    now = stepwell_local.clock.now()
    assert stepwell_local.store.acquire_lease(execution_id, "other-worker", now, 60) is not None

    outcome = stepwell_local.worker.run(execution_id)

    assert outcome.action is OutcomeAction.BUSY
    assert stepwell_local.store.batch_count(execution_id) == 0


def test_a_waiting_execution_records_its_armed_wake_up_when_it_releases_the_lease(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()
    now = stepwell_local.clock.now()

    lease = stepwell_local.store.acquire_lease(execution_id, "probe", now, 1)

    assert lease is not None and not lease.taken_over
    assert lease.hand_off.wake_at == stepwell_local.queue.next_due_at()
    assert lease.hand_off.wake_at is not None and lease.hand_off.wake_at >= now + 3 * 24 * 3600 - 1


def test_an_invocation_that_keeps_crashing_fails_the_execution(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("always_crashes", workflows.always_crashes)
    execution_id = stepwell_local.start("always_crashes", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    assert record.error is not None and record.error["ErrorType"] == "Runtime.ExitError"
    crashes = [
        event
        for event in stepwell_local.history(execution_id)
        if event["EventType"] == "InvocationCompleted" and "Error" in event["InvocationCompletedDetails"]
    ]
    assert len(crashes) == 5
    # Its coordination record went with its end: no armed wake-up is left behind.
    lease = stepwell_local.store.acquire_lease(execution_id, "probe", stepwell_local.clock.now(), 1)
    assert lease is not None and lease.hand_off.wake_at is None


def test_two_workers_racing_one_runs_the_other_backs_off(stepwell_local: LocalStepwell) -> None:
    import threading

    inside_step = threading.Event()
    release = threading.Event()
    runs: list[int] = []

    def guarded(_: object) -> str:
        runs.append(1)
        inside_step.set()
        assert release.wait(timeout=30), "the test never released the step"
        return "done"

    @workflows.durable_execution
    def single_step(event: object, context: workflows.DurableContext) -> str:
        return context.step(guarded, name="guarded")

    stepwell_local.register("single_step", single_step)
    execution_id = stepwell_local.start("single_step", None)
    outcomes = []
    first = threading.Thread(target=lambda: outcomes.append(stepwell_local.worker.run(execution_id)))
    first.start()
    assert inside_step.wait(timeout=30)

    second = stepwell_local.worker.run(execution_id)  # the same message, delivered to a second worker
    release.set()
    first.join(timeout=30)

    assert second.action is OutcomeAction.BUSY
    assert [outcome.action for outcome in outcomes] == [OutcomeAction.FINISHED]
    assert runs == [1]
    assert event_types(stepwell_local, execution_id).count("StepSucceeded") == 1


def test_a_worker_killed_mid_invocation_resumes_with_each_step_recorded_once(
    stepwell_local: LocalStepwell,
) -> None:
    crashed: list[bool] = []

    def third(_: object) -> int:
        if not crashed:
            crashed.append(True)
            raise SystemExit(1)  # the process dies after two steps were checkpointed
        return 3

    @workflows.durable_execution
    def four_steps(event: object, context: workflows.DurableContext) -> int:
        one = context.step(lambda _: 1, name="one")
        two = context.step(lambda _: 2, name="two")
        three = context.step(third, name="three")
        return one + two + three + context.step(lambda _: 4, name="four")

    stepwell_local.register("four_steps", four_steps)
    execution_id = stepwell_local.start("four_steps", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED and json.loads(record.result or "null") == 10
    succeeded = [e["Name"] for e in stepwell_local.history(execution_id) if e["EventType"] == "StepSucceeded"]
    assert succeeded == ["one", "two", "three", "four"]
    crashes = [
        e
        for e in stepwell_local.history(execution_id)
        if e["EventType"] == "InvocationCompleted" and "Error" in e["InvocationCompletedDetails"]
    ]
    assert len(crashes) == 1


def test_a_wake_up_lost_after_the_suspending_batch_is_scheduled_by_the_next_message(
    stepwell_local: LocalStepwell,
) -> None:
    # The worker died after writing the batch that suspends the execution and before scheduling its
    # wake-up: no message remains and its lease records no armed wake-up. The next message for it (SQS
    # delivers the dead worker's again) finds nothing to run and must schedule the wake-up.
    stepwell_local.register("three-day-wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three-day-wait", None)
    stepwell_local.run_until_idle()
    stepwell_local.queue.cancel_all(execution_id)
    store, now = stepwell_local.store, stepwell_local.clock.now()
    assert store.acquire_lease(execution_id, "dead worker", now, 60) is not None
    store.release_lease(execution_id, "dead worker", HandOff(wake_at=None))

    outcome = stepwell_local.worker.run(execution_id)

    assert outcome.action is OutcomeAction.IDLE and outcome.next_wake_at is not None
    assert stepwell_local.queue.next_due_at() == outcome.next_wake_at
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED


def test_a_run_writes_its_coordination_record_twice_and_an_end_removes_it(
    stepwell_local: LocalStepwell,
) -> None:
    # Taking the lease and dropping it (with the wake-up armed) are the only coordination writes of a run.
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    store = stepwell_local.store
    counters = store.counters

    stepwell_local.run_to_completion(stepwell_local.start("greet", {"name": "Ada"}))
    assert (counters["acquire_lease"], counters["release_lease"]) == (1, 1)

    waiting = stepwell_local.start("three_day_wait", {})
    record = stepwell_local.run_to_completion(waiting)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert (counters["acquire_lease"], counters["release_lease"]) == (3, 3)
    lease = store.acquire_lease(waiting, "probe", stepwell_local.clock.now(), 1)
    assert lease is not None and lease.hand_off.wake_at is None
