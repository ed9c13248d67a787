"""The reconciler: re-enqueues wake-ups that were lost and executions whose worker died.

The module's recurring schedule sends `{"kind": "reconcile"}` to the work queue every few minutes. Each
run queries the coordination table's due-index (one Query per shard and record type, never a Scan) for
- due timers overdue by more than a grace period (their SQS message or schedule should have fired:
  EventBridge Scheduler may be a minute late, so the grace period covers that), and
- leases that expired (the worker holding them died mid-invocation),
and sends an invoke message for each execution. It also sweeps the flow control keys whose queue of
waiting executions is due a look (stepwell.flow_control: slots of dead holders reclaimed, the queue
served), so a key never stays stuck after a worker died between ending a holder and releasing its slot.
A duplicate invoke is harmless: the worker takes the lease, finds nothing to do or resumes, and the due
timer is re-recorded or cleared by that worker.

With the worker function's versions configured, each run also deletes the old versions no running
execution needs (stepwell.versions.prune_versions); a failure there is logged and the run goes on.

Each run adds the number of stalled executions and overdue wake-ups it found to the metrics (also when
zero, so an alarm on them sees a steady series).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from stepwell.config import DEFAULT_KEEP_VERSIONS
from stepwell.flow_control import FlowControl
from stepwell.metrics import Metric, Metrics, NoMetrics
from stepwell.model import InvokeMessage
from stepwell.ports import DUE_SHARDS, Clock, ExecutionStore, FunctionVersions, WorkQueue
from stepwell.versions import prune_versions

logger = logging.getLogger(__name__)

# Scheduler's one-minute granularity plus delivery latency: later than this, a wake-up was lost.
DEFAULT_GRACE_SECONDS = 120.0
DEFAULT_LIMIT_PER_SHARD = 100


@dataclass
class ReconcileReport:
    overdue_timers: list[str] = field(default_factory=list)
    stalled_executions: list[str] = field(default_factory=list)
    deleted_versions: list[str] = field(default_factory=list)
    swept_flow_keys: list[str] = field(default_factory=list)

    @property
    def enqueued(self) -> int:
        return len(set(self.overdue_timers) | set(self.stalled_executions))


class Reconciler:
    def __init__(
        self,
        store: ExecutionStore,
        queue: WorkQueue,
        clock: Clock,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        limit_per_shard: int = DEFAULT_LIMIT_PER_SHARD,
        versions: FunctionVersions | None = None,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
        metrics: Metrics | None = None,
    ) -> None:
        if grace_seconds < 0:
            raise ValueError(f"grace_seconds must be zero or more, got {grace_seconds}")
        if limit_per_shard < 1:
            raise ValueError(f"limit_per_shard must be at least 1, got {limit_per_shard}")
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be at least 1, got {keep_versions}")
        self._store = store
        self._queue = queue
        self._clock = clock
        self.grace_seconds = grace_seconds
        self.limit_per_shard = limit_per_shard
        self._versions = versions
        self.keep_versions = keep_versions
        self._metrics = metrics or NoMetrics()
        self._flow = FlowControl(store, queue, None, clock)

    def run(self) -> ReconcileReport:
        now = self._clock.now()
        report = ReconcileReport()
        for shard in range(DUE_SHARDS):
            for timer in self._store.query_due(shard, now - self.grace_seconds, self.limit_per_shard):
                report.overdue_timers.append(timer.execution_id)
            for lease in self._store.query_expired_leases(shard, now, self.limit_per_shard):
                report.stalled_executions.append(lease.execution_id)
        for execution_id in sorted(set(report.overdue_timers) | set(report.stalled_executions)):
            self._queue.enqueue(InvokeMessage(execution_id).to_body())
        self._metrics.add(Metric.STALLED_EXECUTIONS, len(set(report.stalled_executions)))
        self._metrics.add(Metric.OVERDUE_WAKE_UPS, len(set(report.overdue_timers)))
        try:
            report.swept_flow_keys = self._flow.sweep(self.limit_per_shard)
        except Exception as error:
            # The keys stay due: the next run sweeps them again.
            logger.error(
                "sweeping flow control keys failed (%s); retried on the next run", type(error).__name__
            )
        if self._versions is not None:
            try:
                report.deleted_versions = prune_versions(self._store, self._versions, self.keep_versions)
            except Exception as error:
                # Old versions stay until the next run: nothing is lost, so the rest of the run stands.
                logger.error(
                    "pruning worker versions failed (%s); retried on the next run", type(error).__name__
                )
        return report
