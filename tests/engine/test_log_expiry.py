"""An execution's log expires a retention period after its end, at most a horizon later, and never while
it runs (stepwell.core.log_expiry): the writes that cost, and the executions that wait long enough to pay
them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.log_expiry import LOG_HORIZON_SECONDS, MESSAGE_LIFETIME_SECONDS, LogExpiry
from stepwell.errors import LogIncomplete
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import ExecutionStatus, InvokeMessage
from stepwell.testing.local import LocalStepwell

DAY = 86_400


@durable_execution
def three_steps(event: Any, context: DurableContext) -> list[str]:
    return [context.step(lambda _, n=n: f"step-{n}", name=f"s{n}") for n in range(3)]


@durable_execution
def monthly(event: Any, context: DurableContext) -> list[str]:
    """A subscription: a step, then a 30-day wait, a few times."""
    paid = []
    for month in range(event["months"]):
        paid.append(context.step(lambda _, m=month: f"paid-{m}", name=f"charge-{month}"))
        context.wait(Duration.from_days(30), name=f"month-{month}")
    return paid


@durable_execution
def open_callback(event: Any, context: DurableContext) -> Any:
    """A callback with no timeout, after a step: its answer may come in a minute or in a year."""
    before = context.step(lambda _: "before", name="before")
    callback = context.create_callback(name="answer")
    return [before, callback.result()]


def _store(stepwell: LocalStepwell) -> MemoryExecutionStore:
    store = stepwell.engine.store
    assert isinstance(store, MemoryExecutionStore)
    return store


def _waiting_on_open_callback(stepwell: LocalStepwell) -> tuple[str, MemoryExecutionStore]:
    """An open_callback execution, suspended on its callback."""
    stepwell.register("open_callback", open_callback)
    execution_id = stepwell.start("open_callback", None)
    stepwell.run_until_idle()
    return execution_id, _store(stepwell)


def _ended_at(stepwell: LocalStepwell, execution_id: str) -> float:
    ended_at = stepwell.record(execution_id).ended_at
    assert ended_at is not None
    return ended_at


def test_an_execution_that_ends_within_the_horizon_pays_no_write_for_its_log_expiry(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("three_steps", three_steps)
    execution_id = stepwell_local.start("three_steps", None)
    store = _store(stepwell_local)
    stepwell_local.run_to_completion(execution_id)

    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert store.counters.get("expire_log", 0) == 0 and store.counters.get("keep_log", 0) == 0
    ended_at, retention = _ended_at(stepwell_local, execution_id), store.retention_seconds
    expiries = store.batch_expiries(execution_id)
    assert expiries, "the log has batches"
    # Every batch goes a retention period after the end, and at most the horizon later.
    for at in expiries:
        assert at is not None and ended_at + retention - 1 <= at <= ended_at + retention + LOG_HORIZON_SECONDS


def test_a_wait_past_the_horizon_keeps_the_log_until_the_end_and_the_log_never_expires_while_it_runs(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("monthly", monthly)
    execution_id = stepwell_local.start("monthly", {"months": 3})
    store = _store(stepwell_local)
    stepwell_local.run_until_idle()

    # Suspended for 30 days, more than the log's earliest expiry allows: kept, every batch.
    assert store.counters["keep_log"] == 1
    assert store.batch_expiries(execution_id) == [None] * len(store.batch_expiries(execution_id))
    # The table's TTL removes what has expired at each wake-up: nothing of a running execution's log.
    while stepwell_local.advance_to_next_wakeup():
        assert store.remove_expired_batches(stepwell_local.clock.now()) == 0
        stepwell_local.run_until_idle()

    record = stepwell_local.record(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(stepwell_local.describe(execution_id)["Result"]) == ["paid-0", "paid-1", "paid-2"]
    assert store.counters["keep_log"] == 1  # once: later batches are written without an expiry
    ended_at = _ended_at(stepwell_local, execution_id)
    assert all(
        at is not None and abs(at - (ended_at + store.retention_seconds)) <= 1
        for at in store.batch_expiries(execution_id)
    )
    assert store.remove_expired_batches(ended_at + store.retention_seconds + 1) == len(
        store.batch_expiries(execution_id)
    ) or not store.batch_expiries(execution_id)


def test_a_callback_without_a_timeout_answered_within_the_horizon_costs_no_write(
    stepwell_local: LocalStepwell,
) -> None:
    execution_id, store = _waiting_on_open_callback(stepwell_local)

    # Nothing to wake it, so one wake-up at the last moment its log is safe, a retention period ahead.
    # The earliest expiry rules: batches written a moment apart may expire a whole second apart (the
    # virtual clock is real time plus the skips, and an expiry is stored in whole seconds).
    expiries = [at for at in store.batch_expiries(execution_id) if at is not None]
    assert expiries and max(expiries) - min(expiries) <= 1
    first = min(expiries)
    safe_until = stepwell_local.queue.next_due_at()
    assert safe_until == pytest.approx(first - store.retention_seconds)

    stepwell_local.clock.advance_to(stepwell_local.clock.now() + 3600)
    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id, "answer"), '"yes"')
    stepwell_local.run_until_idle()

    assert json.loads(stepwell_local.describe(execution_id)["Result"]) == ["before", '"yes"']
    assert store.counters.get("keep_log", 0) == 0 and store.counters.get("expire_log", 0) == 0
    assert len(stepwell_local.queue) == 0  # the wake-up it no longer needs is withdrawn


def test_a_callback_without_a_timeout_still_waiting_at_the_last_safe_moment_keeps_its_log(
    stepwell_local: LocalStepwell,
) -> None:
    execution_id, store = _waiting_on_open_callback(stepwell_local)
    history = stepwell_local.history(execution_id)

    assert stepwell_local.advance_to_next_wakeup()
    stepwell_local.run_until_idle()

    assert store.counters["keep_log"] == 1
    assert all(at is None for at in store.batch_expiries(execution_id))
    assert len(stepwell_local.queue) == 0  # nothing more to wake it for
    assert stepwell_local.history(execution_id) == history  # the wake-up ran no invocation

    # A year on, the table's TTL has removed nothing of it, and the answer completes it.
    stepwell_local.clock.advance_to(stepwell_local.clock.now() + 365 * DAY)
    assert store.remove_expired_batches(stepwell_local.clock.now()) == 0
    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id, "answer"), '"late"')
    stepwell_local.run_until_idle()
    assert json.loads(stepwell_local.describe(execution_id)["Result"]) == ["before", '"late"']
    assert store.counters["expire_log"] == 1


def test_a_log_written_without_expiries_stays_so_and_expires_from_the_end(
    stepwell_local: LocalStepwell,
) -> None:
    """A log an earlier version wrote (no batch had an expiry) gets none until its end."""
    execution_id, store = _waiting_on_open_callback(stepwell_local)
    count = len(store.batch_expiries(execution_id))
    # As an earlier version left it (the fold this process keeps finds its last batch changed).
    store.keep_log(execution_id, count)

    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id, "answer"), '"yes"')
    stepwell_local.run_until_idle()

    ended_at = _ended_at(stepwell_local, execution_id)
    expiries = store.batch_expiries(execution_id)
    assert len(expiries) >= count and store.counters["expire_log"] == 1
    assert all(at is not None and abs(at - (ended_at + store.retention_seconds)) <= 1 for at in expiries)


def test_an_end_settled_late_expires_from_the_end_not_from_the_late_run(
    stepwell_local: LocalStepwell,
) -> None:
    """A stop's message that comes days late (a redrive from the DLQ, say) logs the end then: that batch
    expires a retention period after the stop, as the log before it does, so no item of the execution
    outlives its own record (which holds the name: stepwell.core.log_expiry.NAME_HOLD_SECONDS)."""
    execution_id, store = _waiting_on_open_callback(stepwell_local)
    written = len(store.batch_expiries(execution_id))
    assert stepwell_local.engine.stop_execution(execution_id)
    stopped_at = _ended_at(stepwell_local, execution_id)
    stepwell_local.clock.advance_to(stopped_at + 10 * DAY)
    stepwell_local.run_until_idle()

    assert stepwell_local.history(execution_id)[-1]["EventType"] == "ExecutionStopped"
    expiries = store.batch_expiries(execution_id)
    assert len(expiries) == written + 1  # the late run wrote the end
    assert expiries[-1] == float(int(stopped_at + store.retention_seconds))
    assert all(
        at is not None and at <= stopped_at + store.retention_seconds + LOG_HORIZON_SECONDS for at in expiries
    )


def test_log_expiry_tells_the_earliest_expiry_and_a_kept_batch() -> None:
    retention = 30 * DAY
    expiry = LogExpiry()
    assert expiry.lasts_past(1_000.0, retention) and expiry.safe_until(retention) is None
    assert expiry.expiry_for(0.0, retention) == retention + LOG_HORIZON_SECONDS
    for at in (50 * DAY, 40 * DAY, 45 * DAY):
        expiry.note(at)
    assert expiry.safe_until(retention) == 10 * DAY
    assert expiry.lasts_past(10 * DAY, retention) and not expiry.lasts_past(10 * DAY + 1, retention)
    # An end within a second: stored expiries are whole seconds, so the end rewrites none of them.
    assert expiry.lasts_past(10 * DAY + 0.5, retention)
    # A retention shorter than an SQS message's lifetime: the log must outlive any message of the run.
    assert expiry.safe_until(DAY) == 40 * DAY - MESSAGE_LIFETIME_SECONDS
    expiry.note(None)  # a batch with none: the log is kept, new batches get none, the end expires all
    assert expiry.kept and expiry.expiry_for(0.0, retention) is None and not expiry.lasts_past(0.0, retention)
    assert expiry.safe_until(retention) == 10 * DAY  # the batches that do expire still must be kept first


def test_under_a_retention_shorter_than_a_message_lives_no_batch_expires_before_the_end(
    stepwell_local: LocalStepwell,
) -> None:
    """A first run that dies before it suspends leaves its message to SQS and the DLQ, for up to 14 days:
    under a 7-day retention a batch written with an expiry (7 days + the horizon) would be gone by then,
    and the redriven run would start the execution over."""
    ran: list[str] = []
    die = {"armed": True}

    @durable_execution
    def order(event: Any, context: DurableContext) -> str:
        paid: str = context.step(lambda _: ran.append("charge") or "paid", name="charge")
        context.create_callback(name="ship")  # flushes the log
        if die["armed"]:
            die["armed"] = False
            raise KeyboardInterrupt("the worker's process is killed")  # no handler runs
        return paid

    store = _store(stepwell_local)
    store.retention_seconds = 7 * DAY
    stepwell_local.register("order", order)
    execution_id = stepwell_local.start("order", None)
    with pytest.raises(KeyboardInterrupt):
        stepwell_local.run_until_idle()
    assert store.batch_expiries(execution_id) and not any(store.batch_expiries(execution_id))

    stepwell_local.clock.advance_to(stepwell_local.clock.now() + MESSAGE_LIFETIME_SECONDS - 60)
    assert store.remove_expired_batches(stepwell_local.clock.now()) == 0
    stepwell_local.process_one(InvokeMessage(execution_id).to_body())  # the redriven message
    stepwell_local.run_until_idle()
    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED and ran == ["charge"]
    ended_at = _ended_at(stepwell_local, execution_id)
    assert all(
        at is not None and abs(at - (ended_at + 7 * DAY)) <= 1 for at in store.batch_expiries(execution_id)
    )


def test_a_run_that_fails_keeps_the_log_for_a_retry_that_may_come_at_any_time(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that raises leaves the execution to SQS's retries, the DLQ and a redrive or an operator:
    nothing bounds when its next run comes, so its log no longer expires until it ends."""
    store = _store(stepwell_local)
    stepwell_local.register("three_steps", three_steps)
    execution_id = stepwell_local.start("three_steps", None)
    append, calls = store.append_batch, []

    def failing_after_the_first(execution: str, batch: Any) -> None:
        calls.append(batch.seq)
        if len(calls) > 1:
            raise RuntimeError("throttled beyond the retries")
        append(execution, batch)

    monkeypatch.setattr(store, "append_batch", failing_after_the_first)
    with pytest.raises(RuntimeError):
        stepwell_local.run_until_idle()
    assert store.batch_expiries(execution_id) == [None] and store.counters["keep_log"] == 1

    monkeypatch.setattr(store, "append_batch", append)
    stepwell_local.clock.advance_to(stepwell_local.clock.now() + 400 * DAY)
    assert store.remove_expired_batches(stepwell_local.clock.now()) == 0
    stepwell_local.process_one(InvokeMessage(execution_id).to_body())  # a redrive, however late
    stepwell_local.run_until_idle()
    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    ended_at = _ended_at(stepwell_local, execution_id)
    assert all(
        at is not None and abs(at - (ended_at + store.retention_seconds)) <= 1
        for at in store.batch_expiries(execution_id)
    )


@pytest.mark.parametrize("lost", ["the last batches", "every batch"])
def test_a_log_that_lost_batches_at_its_end_fails_the_run_instead_of_replaying_less(
    stepwell_local: LocalStepwell, lost: str
) -> None:
    """Defence in depth, should an expiry ever go wrong: the table's TTL deletes in any order, and a log
    missing its last batches (or all of them) has no gap to show it. The lease's record tells how long the
    log was, so the run fails with LogIncomplete rather than running steps again or starting over."""
    ran: list[str] = []

    @durable_execution
    def order(event: Any, context: DurableContext) -> str:
        for name in ("reserve", "charge"):
            context.step(lambda _, name=name: ran.append(name) or name, name=name)
        context.wait(Duration.from_days(1), name="cool-off")
        return "shipped"

    store = _store(stepwell_local)
    stepwell_local.register("order", order)
    execution_id = stepwell_local.start("order", None)
    stepwell_local.run_until_idle()
    count = len(store.batch_expiries(execution_id))
    assert count >= 2 and ran == ["reserve", "charge"]
    store.keep_log(execution_id, 1 if lost == "the last batches" else 0)  # the head outlives the rest
    assert store.remove_expired_batches(stepwell_local.clock.now() + 400 * DAY) == count - (
        1 if lost == "the last batches" else 0
    )

    stepwell_local.advance_to_next_wakeup()
    with pytest.raises(LogIncomplete, match=f"its log has {1 if lost == 'the last batches' else 0} batches"):
        stepwell_local.run_until_idle()
    assert (
        ran == ["reserve", "charge"] and stepwell_local.record(execution_id).status is ExecutionStatus.RUNNING
    )
