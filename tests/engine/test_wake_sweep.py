"""The due-time sweep of long waits (stepwell.core.wake_sweep) on the memory due wake-ups: what it sends and
when, its catch-up, the hand-off of a storm's shards, and that a crash between sending and deleting loses
nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from stepwell.config import LONG_WAIT_SCHEDULES, LONG_WAIT_SWEEP, ConfigError, StepwellConfig
from stepwell.core.wake_sweep import (
    LOOKAHEAD_SECONDS,
    WAKE_SWEEP_KIND,
    SweepRequest,
    WakeSweep,
)
from stepwell.memory.due_wakeups import MemoryDueWakeUps, MemoryWakeBatches
from stepwell.ports.due_wakeups import DUE_BUCKET_SECONDS, DUE_SHARDS, DueWake, due_bucket, due_shard

# A whole hour, so bucket edges are easy to place.
T0 = 1_800_000_000.0 - 1_800_000_000.0 % DUE_BUCKET_SECONDS


class FixedClock:
    def __init__(self, now: float) -> None:
        self.t = now

    def now(self) -> float:
        return self.t


class ListQueue:
    def __init__(self) -> None:
        self.messages: list[tuple[dict[str, Any], int]] = []

    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        self.messages.append((dict(body), delay_seconds))


def _eid(n: int) -> str:
    return f"default#orders#o-{n}/abc{n}"


def _sweep(
    page_size: int = 500,
) -> tuple[WakeSweep, MemoryDueWakeUps, MemoryWakeBatches, ListQueue, FixedClock]:
    due, batches, queue, clock = MemoryDueWakeUps(), MemoryWakeBatches(), ListQueue(), FixedClock(T0 + 600)
    return WakeSweep(due, batches, queue, clock, page_size=page_size), due, batches, queue, clock


def _woken(batches: MemoryWakeBatches) -> list[str]:
    return [message["executionId"] for message, _ in batches.sent]


def test_a_sweep_sends_what_is_due_within_its_lookahead_with_the_rest_of_the_wait_as_delay() -> None:
    sweep, due, batches, _, clock = _sweep()
    due.put_due(_eid(1), clock.t + 42.3)
    due.put_due(_eid(2), clock.t + LOOKAHEAD_SECONDS + 30)  # the next sweep's
    due.put_due(_eid(3), clock.t - 5)  # late: sent at once

    report = sweep.run(SweepRequest())

    assert report.sent == 2 and report.swept_shards == DUE_SHARDS and report.handed_off == ()
    sent = {message["executionId"]: (message, delay) for message, delay in batches.sent}
    assert sent[_eid(1)] == ({"kind": "invoke", "executionId": _eid(1), "dueAt": clock.t + 42.3}, 43)
    assert sent[_eid(3)][1] == 0
    assert [wake.execution_id for wake in due.pending()] == [_eid(2)]

    clock.t += 60
    sweep.run(SweepRequest())
    assert _woken(batches)[-1] == _eid(2) and batches.sent[-1][1] == 150 and due.pending() == []


def test_a_sweep_that_did_not_run_for_hours_catches_up_and_moves_its_watermarks() -> None:
    sweep, due, batches, _, clock = _sweep()
    sweep.run(SweepRequest())  # the first sweep writes every shard's watermark
    due.put_due(_eid(1), clock.t + 3600)
    due.put_due(_eid(2), clock.t + 2 * 3600 + 7)
    clock.t += 5 * 3600  # no sweep meanwhile

    report = sweep.run(SweepRequest())

    assert sorted(_woken(batches)) == [_eid(1), _eid(2)] and {delay for _, delay in batches.sent} == {0}
    state = due.sweep_state()
    assert state is not None and set(state.watermarks.values()) == {due_bucket(clock.t + LOOKAHEAD_SECONDS)}
    assert report.handed_off == ()


def test_a_storm_is_handed_off_per_shard_and_drained_once() -> None:
    sweep, due, batches, queue, clock = _sweep(page_size=5)
    storm = [_eid(n) for n in range(400)]
    for n, eid in enumerate(storm):
        due.put_due(eid, clock.t + 60 + n % 60)

    root = sweep.run(SweepRequest())

    # Every shard holding more than one page went to a sweep of its own, holding the shard's lease.
    crowded = {shard for shard in range(DUE_SHARDS) if sum(due_shard(e) == shard for e in storm) > 5}
    assert set(root.handed_off) == crowded
    assert [body["kind"] for body, _ in queue.messages] == [WAKE_SWEEP_KIND] * len(crowded)
    # A second root sweep meanwhile leaves the leased shards to their sweeps.
    before = len(batches.sent)
    again = sweep.run(SweepRequest())
    assert again.swept_shards == DUE_SHARDS - len(crowded) and len(batches.sent) == before
    for body, _ in list(queue.messages):
        report = sweep.run(SweepRequest.parse(body))
        assert report.swept_shards == 1 and not report.continued

    assert sorted(_woken(batches)) == sorted(storm)  # each exactly once
    assert due.pending() == []
    state = due.sweep_state()
    assert state is not None and state.leases == {}


def test_a_handed_off_sweep_short_of_time_sends_itself_again_and_a_stale_one_sweeps_nothing() -> None:
    sweep, due, batches, queue, clock = _sweep(page_size=2)
    shard = due_shard(_eid(0))
    same_shard = [eid for eid in (_eid(n) for n in range(300)) if due_shard(eid) == shard][:9]
    for eid in same_shard:
        due.put_due(eid, clock.t + 30)
    sweep.run(SweepRequest())
    ((handoff, _),) = queue.messages
    request = SweepRequest.parse(handoff)

    left = iter([100.0, 100.0, 0.0])
    report = sweep.run(request, time_left=lambda: next(left, 0.0))
    assert report.continued and queue.messages[-1][0] == handoff  # the same owner goes on
    assert sweep.run(SweepRequest(shard=shard, owner="someone-else")).sent == 0
    finished = sweep.run(request)
    assert not finished.continued
    assert sorted(_woken(batches)) == sorted(same_shard)


def test_a_shard_whose_handed_off_sweep_was_lost_is_swept_from_where_it_started_hours_later() -> None:
    sweep, due, batches, queue, clock = _sweep(page_size=2)
    shard = due_shard(_eid(0))
    same_shard = [eid for eid in (_eid(n) for n in range(300)) if due_shard(eid) == shard][:5]
    for eid in same_shard:
        due.put_due(eid, clock.t + 30)
    sweep.run(SweepRequest())
    queue.messages.clear()  # the hand-off never arrives (it went to the DLQ)
    clock.t += 3 * 3600  # its lease long expired

    sweep.run(SweepRequest())
    ((handoff, _),) = queue.messages
    sweep.run(SweepRequest.parse(handoff))
    assert sorted(_woken(batches)) == sorted(same_shard) and due.pending() == []


class CrashingDelete(MemoryDueWakeUps):
    """Dies once between the sweep's send and its delete."""

    def __init__(self) -> None:
        super().__init__()
        self.crashes = 1

    def delete_due(self, wakes: Sequence[DueWake]) -> None:
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("the sweep's process died")
        super().delete_due(wakes)


def test_a_crash_between_send_and_delete_sends_again_and_loses_nothing() -> None:
    due, batches, queue, clock = CrashingDelete(), MemoryWakeBatches(), ListQueue(), FixedClock(T0 + 600)
    sweep = WakeSweep(due, batches, queue, clock)
    due.put_due(_eid(1), clock.t + 10)
    with pytest.raises(RuntimeError):
        sweep.run(SweepRequest())
    assert _woken(batches) == [_eid(1)] and len(due.pending()) == 1

    sweep.run(SweepRequest())
    assert _woken(batches) == [_eid(1), _eid(1)] and due.pending() == []  # a duplicate, harmless


def test_the_reconcilers_catch_up_costs_nothing_where_no_sweep_ever_ran() -> None:
    sweep, due, _batches, _, clock = _sweep()
    assert not sweep.run(SweepRequest(), only_if_started=True).started
    assert due.sweep_state() is None
    sweep.run(SweepRequest())
    due.put_due(_eid(1), clock.t + 20)
    assert sweep.run(SweepRequest(), only_if_started=True).sent == 1


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"kind": WAKE_SWEEP_KIND, "shard": DUE_SHARDS, "owner": "x"}, "shard"),
        ({"kind": WAKE_SWEEP_KIND, "shard": True, "owner": "x"}, "shard"),
        ({"kind": WAKE_SWEEP_KIND, "shard": 1}, "owner"),
        ({"kind": WAKE_SWEEP_KIND, "shard": 1, "owner": "o" * 65}, "owner"),
    ],
)
def test_a_bad_sweep_message_is_refused_naming_what_is_wrong(body: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        SweepRequest.parse(body)


_ENV = {
    "STEPWELL_NAME": "unit",
    "STEPWELL_EXECUTIONS_TABLE": "unit-executions",
    "STEPWELL_OPERATIONS_TABLE": "unit-operations",
    "STEPWELL_COORDINATION_TABLE": "unit-coordination",
    "STEPWELL_WORK_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work",
}


def test_the_worker_reads_long_wait_wakeups_from_its_environment_and_refuses_other_values() -> None:
    assert StepwellConfig.from_env(_ENV).long_wait_wakeups == LONG_WAIT_SCHEDULES
    swept = StepwellConfig.from_env({**_ENV, "STEPWELL_LONG_WAIT_WAKEUPS": "sweep"})
    assert swept.long_wait_wakeups == LONG_WAIT_SWEEP
    with pytest.raises(ConfigError, match="long_wait_wakeups must be 'schedules' or 'sweep', got 'auto'"):
        StepwellConfig.from_env({**_ENV, "STEPWELL_LONG_WAIT_WAKEUPS": "auto"})
