"""Flow control: per-key concurrency and rate limits enforced before an execution's first run.

An execution's limits (stepwell.core.flow_limits, `FlowLimit`s) are checked by the worker before its first
batch, rate first, then concurrency:
- Rate: an exact sliding window. The key's item keeps its last `limit` start times; an arrival starts at
  now when fewer are kept, else at the earliest time the window allows (the `limit`-th last start plus the
  period), and its time is appended under an optimistic version check. The time is also reserved for the
  execution (so a repeated message reuses it); a later time delays the execution to it (a wake-up).
- Concurrency: the key's item holds a map of holders (execution -> lease expiry). An execution takes a
  slot while fewer than `limit` are held and nobody waits; otherwise it takes the next ticket of the key's
  queue and waits, without a wake-up, until a release serves its ticket (the queue is served in ticket
  order, so waiting executions start in the order they arrived).
- Release: an ending execution leaves the holders and serves the queue. A holder whose worker died after
  ending it (so it never released) is found by its expired lease: the next arrival or the reconciler's
  sweep reads its record and releases it (ended) or renews its lease (still running).

Everything goes through the store's flow control port and the executions' records (FlowStore); state lives
in the coordination table. Log lines name the scope (a digest), never a key's value: keys may be customer
ids.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from stepwell.core.metrics import Metric, Metrics, NoMetrics
from stepwell.errors import StepwellError
from stepwell.model import (
    ExecutionRecord,
    ExecutionStatus,
    FlowLimit,
    FlowSlots,
    InvokeMessage,
    OutcomeAction,
    WorkOutcome,
)
from stepwell.ports import DUE_SHARDS, Clock, ExecutionRecords, FlowControlStore, Timers, WorkQueue

logger = logging.getLogger(__name__)

# A holder's lease: how long a slot is trusted without a look at its execution; also how often the
# reconciler sweeps a key whose queue is not empty.
FLOW_LEASE_SECONDS = 900.0
# Optimistic writes lost to concurrent arrivals before the message gives up (SQS delivers it again).
MAX_FLOW_ATTEMPTS = 10
# How many waiting executions the status lists.
STATUS_NEXT_COUNT = 10


class FlowStore(FlowControlStore, ExecutionRecords, Protocol):
    """What flow control uses of the store: the keys' state, and the records of executions (whether a
    holder whose lease expired still runs)."""


@dataclass(frozen=True)
class RateDecision:
    """When a rate limit lets the execution start, and whether it was reserved by an earlier message."""

    start_at: float
    reserved_before: bool


def flow_labels(limit: FlowLimit) -> dict[str, str]:
    """What a key's item shows about it (the status reads them back; the engine never decides on them
    but the sweep's limit)."""
    return {
        "domain": limit.domain,
        "workflow": limit.workflow,
        "key": limit.key,
        "limit": str(limit.limit),
        "period": str(limit.period),
    }


def next_rate_start(starts: Iterable[float], limit: int, period: float, now: float) -> float:
    """The earliest time at or after `now` that a start keeps at most `limit` starts in any `period`
    seconds, given the key's recent starts (oldest first)."""
    kept = sorted(starts)
    if len(kept) < limit:
        return now
    return max(now, kept[-limit] + period)


def _label_int(labels: dict[str, str], name: str) -> int | None:
    try:
        return int(labels[name])
    except (KeyError, ValueError):
        return None


class FlowControl:
    """The gate, release, serving of queues, the reconciler's sweep and the status of flow limits."""

    def __init__(
        self,
        store: FlowStore,
        queue: WorkQueue,
        *,
        timers: Timers | None,
        clock: Clock,
        metrics: Metrics | None = None,
    ) -> None:
        self.store = store
        self.queue = queue
        # Only the gate delays executions; the reconciler's sweep, release and status need no timers.
        self._timers = timers
        self.clock = clock
        self.metrics = metrics or NoMetrics()

    @property
    def timers(self) -> Timers:
        if self._timers is None:
            raise StepwellError("this FlowControl has no timers: the gate runs on the worker's engine")
        return self._timers

    # ------------------------------------------------------------------ the gate

    def gate(
        self, record: ExecutionRecord, limits: tuple[FlowLimit, ...], deadline: float | None, now: float
    ) -> WorkOutcome | None:
        """Before the execution's first batch: None when its limits let it start now, else the outcome
        "delayed" (a rate limit: woken at its start time) or "waiting" (a concurrency limit: queued,
        started when a slot frees). An execution past its deadline is let through: the worker ends it
        TIMED_OUT. `now` is the run's time, the one its ExecutionStarted records: a start the rate admits
        at once takes its slot at that time, so no start in the history precedes its reservation."""
        if not limits:
            return None
        execution_id = record.execution_id
        rate = next((limit for limit in limits if limit.kind == "rate"), None)
        if deadline is not None and deadline <= now:
            return None
        if rate is not None:
            decision = self._reserve_start(execution_id, rate, now)
            if decision.start_at > now:
                wake_at = decision.start_at if deadline is None else min(decision.start_at, deadline)
                self.timers.schedule(execution_id, wake_at)
                if not decision.reserved_before:
                    self.metrics.add(Metric.EXECUTIONS_DELAYED, 1, record.workflow_id)
                logger.info("execution delayed by rate limit %s until %.3f", rate.scope, decision.start_at)
                return WorkOutcome(
                    execution_id,
                    OutcomeAction.DELAYED,
                    status=ExecutionStatus.RUNNING,
                    next_wake_at=wake_at,
                    details={"startAt": decision.start_at, "scope": rate.scope},
                )
        concurrency = next((limit for limit in limits if limit.kind == "concurrency"), None)
        if concurrency is None or self._admit(execution_id, concurrency, now):
            return None
        if deadline is not None:
            # Waiting has no wake-up of its own, but the deadline still ends it (a lost deadline message
            # only means it times out when it is served).
            self.timers.schedule(execution_id, deadline)
        self.metrics.add(Metric.EXECUTIONS_WAITING, 1, record.workflow_id)
        logger.info("execution waits for a slot of concurrency limit %s", concurrency.scope)
        return WorkOutcome(
            execution_id,
            OutcomeAction.WAITING,
            status=ExecutionStatus.RUNNING,
            next_wake_at=deadline,
            details={"scope": concurrency.scope},
        )

    def _reserve_start(self, execution_id: str, rate: FlowLimit, now: float) -> RateDecision:
        reserved = self.store.get_flow_start(execution_id)
        if reserved is not None:
            return RateDecision(reserved, True)
        labels = flow_labels(rate)
        for _ in range(MAX_FLOW_ATTEMPTS):
            state = self.store.get_flow_rate(rate.scope)
            start_at = next_rate_start(state.starts, rate.limit, rate.period, now)
            starts = sorted([*state.starts, start_at])[-rate.limit :]
            if self.store.put_flow_rate(
                rate.scope,
                expected_version=state.version,
                starts=starts,
                labels=labels,
                window_ends=starts[-1] + rate.period,
            ):
                # A duplicate message that reserved first wins; its time is the execution's.
                return RateDecision(self.store.reserve_flow_start(execution_id, start_at), False)
        raise StepwellError(
            f"rate limit {rate.scope} kept changing under {MAX_FLOW_ATTEMPTS} attempts to reserve a start; "
            "the message is retried"
        )

    def _admit(self, execution_id: str, limit: FlowLimit, now: float) -> bool:
        """True if the execution holds a slot; False once it waits in the key's queue."""
        labels = flow_labels(limit)
        for _ in range(MAX_FLOW_ATTEMPTS):
            if self.store.hold_flow_slot(
                limit.scope,
                execution_id,
                limit=limit.limit,
                expires_at=now + FLOW_LEASE_SECONDS,
                labels=labels,
            ):
                return True
            state = self.store.get_flow_slots(limit.scope)
            if state is not None and self._reclaim(limit.scope, state, now):
                if state.waiting:
                    self.serve(limit.scope, limit.limit)
                if self.store.hold_flow_slot(
                    limit.scope,
                    execution_id,
                    limit=limit.limit,
                    expires_at=now + FLOW_LEASE_SECONDS,
                    labels=labels,
                ):
                    return True
            ticket = self.store.take_flow_ticket(limit.scope, now + FLOW_LEASE_SECONDS, labels)
            if self.store.put_flow_ticket(limit.scope, ticket, execution_id):
                # A slot may have freed between the refusal and the ticket: serve the queue once.
                self.serve(limit.scope, limit.limit)
                return False
            # A server skipped the ticket before it was written: try again from the start.
        raise StepwellError(
            f"concurrency limit {limit.scope}: {MAX_FLOW_ATTEMPTS} tickets were skipped before they were "
            "written; the message is retried"
        )

    def _reclaim(self, scope: str, state: FlowSlots, now: float) -> int:
        """Release the holders whose lease expired and whose execution ended (or is gone); renew the lease
        of those still running. Returns how many slots were released."""
        released = 0
        for holder, expiry in state.holders.items():
            if expiry >= now:
                continue
            record = self.store.get_execution(holder)
            if record is None or record.status.is_terminal:
                if self.store.release_flow_slot(scope, holder, expiry) is not None:
                    released += 1
                    logger.warning("reclaimed the slot of an ended execution from %s", scope)
            else:
                self.store.renew_flow_slot(scope, holder, expiry, now + FLOW_LEASE_SECONDS)
        return released

    # ------------------------------------------------------------------ release and serving

    def release(self, execution_id: str, limits: tuple[FlowLimit, ...]) -> None:
        """The execution has ended: give back its slot (if it holds one) and start the next waiting ones.
        Idempotent: any later message for the ended execution repeats it."""
        for limit in limits:
            if limit.kind != "concurrency":
                continue
            after = self.store.release_flow_slot(limit.scope, execution_id)
            if after is not None and after.waiting:
                self.serve(limit.scope, limit.limit)

    def serve(self, scope: str, limit: int) -> int:
        """Admit waiting executions of the key in ticket order while fewer than `limit` hold a slot; each
        admitted one is enqueued to run. Returns how many were admitted."""
        admitted = 0
        for _ in range(2 * limit + 10):
            state = self.store.get_flow_slots(scope)
            if state is None:
                return admitted
            if state.head >= state.tail:
                self._clear_sweep(scope)
                return admitted
            if len(state.holders) >= limit:
                return admitted
            ticket = state.head
            execution_id = self.store.claim_flow_ticket(scope, ticket)
            admit = (
                execution_id is not None
                and execution_id not in state.holders
                and self._is_running(execution_id)
            )
            expires_at = self.clock.now() + FLOW_LEASE_SECONDS
            served = self.store.advance_flow(
                scope,
                ticket,
                execution_id=execution_id if admit else None,
                limit=limit,
                expires_at=expires_at,
            )
            if served and admit and execution_id is not None:
                self.queue.enqueue(InvokeMessage(execution_id).to_body())
                admitted += 1
            # Not served: another server moved the head first; read again.
        return admitted

    def _clear_sweep(self, scope: str) -> None:
        self.store.set_flow_sweep(scope, None)
        # A ticket taken between the read and the clear set the sweep that was just cleared: set it again.
        state = self.store.get_flow_slots(scope)
        if state is not None and state.waiting:
            self.store.set_flow_sweep(scope, self.clock.now() + FLOW_LEASE_SECONDS)

    def _is_running(self, execution_id: str) -> bool:
        record = self.store.get_execution(execution_id)
        return record is not None and record.status is ExecutionStatus.RUNNING

    # ------------------------------------------------------------------ the reconciler's sweep

    def sweep(self, limit_per_shard: int = 100) -> list[str]:
        """The keys whose queue waits past a sweep time: reclaim dead holders and serve each. Returns the
        scopes swept."""
        now = self.clock.now()
        swept: list[str] = []
        for shard in range(DUE_SHARDS):
            for scope in self.store.query_flow_sweeps(shard, now, limit_per_shard):
                swept.append(scope)
                state = self.store.get_flow_slots(scope)
                limit = _label_int(state.labels, "limit") if state is not None else None
                if state is None or limit is None:
                    self.store.set_flow_sweep(scope, None)  # nothing to serve, or not ours to read
                    continue
                self._reclaim(scope, state, now)
                self.serve(scope, limit)
                after = self.store.get_flow_slots(scope)
                if after is not None and after.waiting:
                    self.store.set_flow_sweep(scope, now + FLOW_LEASE_SECONDS)
        return swept

    # ------------------------------------------------------------------ status

    def status(self, workflow: str, key: str, domain: str) -> dict[str, Any]:
        """A key's limits as the coordination table has them (see Engine.flow_status)."""
        now = self.clock.now()
        answer: dict[str, Any] = {
            "workflow": workflow,
            "domain": domain,
            "key": key,
            "concurrency": None,
            "rate": None,
        }
        slots_scope = FlowLimit(kind="concurrency", domain=domain, workflow=workflow, key=key, limit=0).scope
        slots = self.store.get_flow_slots(slots_scope)
        if slots is not None:
            holders = sorted(slots.holders, key=lambda holder: slots.holders[holder])
            answer["concurrency"] = {
                "limit": _label_int(slots.labels, "limit"),
                "running": len(holders),
                "waiting": slots.waiting,
                "holders": holders,
                "next": self.store.peek_flow_tickets(slots_scope, slots.head, STATUS_NEXT_COUNT)
                if slots.waiting
                else [],
            }
        rate = self.store.get_flow_rate(
            FlowLimit(kind="rate", domain=domain, workflow=workflow, key=key, limit=0).scope
        )
        limit = _label_int(rate.labels, "limit")
        period = _label_int(rate.labels, "period")
        if rate.version and limit is not None and period is not None:
            # Starts given to delayed executions, still ahead.
            delayed = sum(1 for start in rate.starts if start > now)
            # The item keeps only the last `limit` starts, but a start is delayed only when the window
            # before it is full: while any is, the last period holds `limit` starts.
            recent = limit if delayed else sum(1 for start in rate.starts if now - period < start <= now)
            answer["rate"] = {
                "limit": limit,
                "period": period,
                "recentStarts": recent,
                "delayed": delayed,
                "nextStartAt": next_rate_start(rate.starts, limit, period, now),
            }
        return answer
