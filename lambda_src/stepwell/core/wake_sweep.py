"""The due-time sweep (`long_wait_wakeups = "sweep"`): turns long waits kept as due items
(stepwell.ports.due_wakeups) into work-queue invoke messages, instead of one Scheduler schedule per wait.

A recurring schedule sends {"kind": "wake-sweep"} every minute (the reconcile message also runs one, so items
left by a deployment that switched back to per-wait schedules still fire). That root sweep reads the sweep
state (one read), and per shard Queries the buckets from its watermark to the one holding now + LOOKAHEAD,
sends what is due by then as invoke messages with DelaySeconds for the rest of the wait (to the second), and
deletes the items it sent: send first, delete after, so a crash between the two sends a wake-up twice
(harmless: the second run finds nothing due) and never loses one. A bucket wholly at or before that bound
and drained moves the shard's watermark past it, so a sweep that did not run for hours catches up.

A shard with more than the root's share (a storm: 1,000,000 waits ending in one minute) is handed off: the
root takes the shard's sweep lease and sends {"kind": "wake-sweep", "shard": k, "owner": ...}; that sweep
drains the shard until its invocation's time runs short, then sends itself again. So a storm goes through
the work queue, which absorbs it, at up to DUE_SHARDS sweeps in parallel, and the workers drain it at
Lambda's concurrency.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stepwell.model import InvokeMessage
from stepwell.ports import Clock, WorkQueue
from stepwell.ports.due_wakeups import (
    DUE_BUCKET_SECONDS,
    DUE_SHARDS,
    DueWake,
    DueWakeUps,
    SweepState,
    WakeBatches,
    check_shard,
    due_bucket,
)

logger = logging.getLogger(__name__)

WAKE_SWEEP_KIND = "wake-sweep"
# How far ahead a sweep sends wake-ups (with DelaySeconds for the rest): more than the schedule's minute
# plus its jitter, so a wait never waits for the next sweep; under SQS's 900 s delay.
LOOKAHEAD_SECONDS = 180
# Items per Query page; the root sweep takes one full page per shard and hands off a shard with more.
PAGE_SIZE = 500
# Queries the root spends on one shard: a day of buckets (a catch-up over more is handed off). An empty
# bucket's Query costs half a read unit and a few milliseconds.
ROOT_QUERIES_PER_SHARD = 24
# A hand-off's lease: longer than a worker invocation's budget below, so it outlives the sweep that holds it
# unless that one died.
LEASE_SECONDS = 960
# A handed-off sweep stops and sends itself again when less than this is left of its invocation.
TIME_MARGIN_SECONDS = 30.0
# A first sweep starts one bucket back: every item is written at least 900 s before it is due, and the
# sweep schedule is created with the setting, so no item can be due before that.
FIRST_SWEEP_LOOKBACK_BUCKETS = 1
_MAX_DELAY_SECONDS = 900


@dataclass(frozen=True)
class SweepReport:
    """What one sweep did: wake-ups sent, shards it swept, shards it handed off to sweeps of their own, and
    whether its shard (a handed-off sweep) still has items due (it sent itself again)."""

    sent: int = 0
    swept_shards: int = 0
    handed_off: tuple[int, ...] = ()
    continued: bool = False
    started: bool = True

    def to_details(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "sweptShards": self.swept_shards,
            "handedOff": list(self.handed_off),
            "continued": self.continued,
        }


@dataclass(frozen=True)
class SweepRequest:
    """A wake-sweep message: the root (no shard) or a handed-off shard with the lease's owner."""

    shard: int | None = None
    owner: str = ""

    @classmethod
    def parse(cls, body: Mapping[str, Any]) -> SweepRequest:
        shard = body.get("shard")
        if shard is None:
            return cls()
        owner = body.get("owner")
        if not isinstance(owner, str) or not 1 <= len(owner) <= 64:
            raise ValueError(
                f"a shard's wake-sweep message needs its lease owner (1-64 characters), got {owner!r}"
            )
        return cls(shard=check_shard(shard), owner=owner)

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": WAKE_SWEEP_KIND}
        if self.shard is not None:
            body["shard"] = self.shard
            body["owner"] = self.owner
        return body


@dataclass
class _ShardPass:
    sent: int = 0
    queries: int = 0
    drained: bool = False


class WakeSweep:
    """Sweeps due items into the work queue (see the module's docstring)."""

    def __init__(
        self,
        due: DueWakeUps,
        batches: WakeBatches,
        queue: WorkQueue,
        clock: Clock,
        *,
        page_size: int = PAGE_SIZE,
    ) -> None:
        if not 1 <= page_size <= 1000:
            raise ValueError(f"page_size must be 1..1000 items, got {page_size}")
        self.due = due
        self._batches = batches
        self._queue = queue
        self._clock = clock
        self._page_size = page_size

    def run(
        self,
        request: SweepRequest,
        *,
        time_left: Callable[[], float] | None = None,
        only_if_started: bool = False,
    ) -> SweepReport:
        """One sweep message. `only_if_started`: do nothing when no sweep ever ran (the reconciler's
        catch-up in a deployment that never used the sweep costs one read). `time_left`: seconds left of
        the invocation (None: no limit)."""
        state = self.due.sweep_state()
        if state is None and only_if_started:
            return SweepReport(started=False)
        state = state or SweepState(watermarks={}, leases={})
        if request.shard is not None:
            return self._run_shard(request, state, time_left)
        return self._run_root(state)

    def _run_root(self, state: SweepState) -> SweepReport:
        now = self._clock.now()
        sent, swept, handed_off = 0, 0, []
        for shard in range(DUE_SHARDS):
            lease = state.leases.get(shard)
            if lease is not None and lease.expires_at > now:
                continue  # a handed-off sweep drains it
            result = self._sweep_shard(shard, state, now, max_queries=ROOT_QUERIES_PER_SHARD)
            sent += result.sent
            swept += 1
            if not result.drained and self._hand_off(shard, now):
                handed_off.append(shard)
        return SweepReport(sent=sent, swept_shards=swept, handed_off=tuple(handed_off))

    def _hand_off(self, shard: int, now: float) -> bool:
        owner = uuid.uuid4().hex
        if not self.due.take_sweep_lease(shard, owner=owner, now=now, until=now + LEASE_SECONDS):
            return False  # another sweep holds it
        self._queue.enqueue(SweepRequest(shard=shard, owner=owner).to_body())
        return True

    def _run_shard(
        self, request: SweepRequest, state: SweepState, time_left: Callable[[], float] | None
    ) -> SweepReport:
        shard, owner = request.shard, request.owner
        if shard is None:
            raise ValueError("a shard's sweep needs its shard")
        now = self._clock.now()
        # Renews the lease, and makes sure a stale message (its owner replaced) sweeps nothing.
        if not self.due.take_sweep_lease(shard, owner=owner, now=now, until=now + LEASE_SECONDS):
            return SweepReport()
        result = self._sweep_shard(shard, state, now, max_queries=None, time_left=time_left)
        if result.drained:
            self.due.release_sweep_lease(shard, owner)
            return SweepReport(sent=result.sent, swept_shards=1)
        # Its invocation's time ran short: the same sweep goes on in the next message, lease renewed.
        now = self._clock.now()
        if self.due.take_sweep_lease(shard, owner=owner, now=now, until=now + LEASE_SECONDS):
            self._queue.enqueue(request.to_body())
        return SweepReport(sent=result.sent, swept_shards=1, continued=True)

    def _sweep_shard(
        self,
        shard: int,
        state: SweepState,
        now: float,
        *,
        max_queries: int | None,
        time_left: Callable[[], float] | None = None,
    ) -> _ShardPass:
        """Send and delete what of the shard is due by now + LOOKAHEAD, oldest bucket first, within
        `max_queries` Queries (None: until drained or `time_left` runs short)."""
        until = now + LOOKAHEAD_SECONDS
        known = state.watermarks.get(shard)
        if known is None:
            # A shard's first sweep pins where it starts, so a later one (this one handed off and lost, say)
            # starts there too, however much later it runs.
            known = due_bucket(now) - FIRST_SWEEP_LOOKBACK_BUCKETS
            self.due.advance_watermark(shard, known)
        start = known
        last = due_bucket(until)
        result = _ShardPass()
        watermark = start
        for bucket in range(start, last + 1):
            while True:
                if max_queries is not None and result.queries >= max_queries:
                    self._advance(shard, known, watermark)
                    return result
                if time_left is not None and time_left() < TIME_MARGIN_SECONDS:
                    self._advance(shard, known, watermark)
                    return result
                page = self.due.due_page(shard, bucket, until=until, limit=self._page_size)
                result.queries += 1
                if page:
                    # The rest of each wait from when it is sent: a long drain never makes one late.
                    self._send(page, self._clock.now())
                    result.sent += len(page)
                if len(page) < self._page_size:
                    break
                if max_queries is not None:
                    return result  # the root's share was one full page: this shard gets a sweep of its own
            if (bucket + 1) * DUE_BUCKET_SECONDS <= until:
                watermark = bucket + 1  # wholly at or before the bound, and drained
        self._advance(shard, known, watermark)
        result.drained = True
        return result

    def _advance(self, shard: int, known: int, watermark: int) -> None:
        if watermark > known:
            self.due.advance_watermark(shard, watermark)

    def _send(self, page: Sequence[DueWake], now: float) -> None:
        entries = [
            (
                InvokeMessage(wake.execution_id, due_at=wake.due_at).to_body(),
                min(_MAX_DELAY_SECONDS, max(0, math.ceil(wake.due_at - now))),
            )
            for wake in page
        ]
        # Sent first, deleted after: a crash in between sends these again, never loses one.
        self._batches.send_wakes(entries)
        self.due.delete_due(page)
