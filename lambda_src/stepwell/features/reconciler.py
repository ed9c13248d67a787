"""The reconciler: sweeps flow control keys and prunes old worker versions.

The module's recurring schedule sends `{"kind": "reconcile"}` to the work queue every few minutes. Each
run sweeps the flow control keys whose queue of waiting executions is due a look (one Query per shard of
the coordination table's due-index, never a Scan; stepwell.core.flow_control: slots of dead holders reclaimed,
the queue served), so a key never stays stuck after a worker died between ending a holder and releasing
its slot.

Executions themselves need no sweep. A worker that dies mid-invocation never answers its SQS message, so
SQS delivers it again; the next worker waits out the dead one's lease (the entry backs off while it is
busy), takes it over and counts `StalledExecutions`. A wake-up travels as an SQS message (delayed up to
900 s) or an EventBridge Scheduler schedule, both with the module's DLQ behind them, and a worker that
died between suspending an execution and arming its wake-up is caught by that same redelivery (the
message finds nothing armed and arms it). A wake-up later than it should be counts `OverdueWakeUps`.

With the worker function's versions configured, each run also pins the executions that started before
code versions existed to version 1 (stepwell.core.versions.adopt_unversioned), then deletes the old versions
no running execution needs (stepwell.core.versions.prune_versions); a failure there is logged and the run goes
on, without pruning when the adoption failed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from stepwell.config import DEFAULT_KEEP_VERSIONS
from stepwell.core.flow_control import FlowControl
from stepwell.core.versions import PRUNE_GRACE_SECONDS, adopt_unversioned, prune_versions
from stepwell.ports import Clock, ExecutionStore, FunctionVersions, WorkQueue

logger = logging.getLogger(__name__)

DEFAULT_LIMIT_PER_SHARD = 100


@dataclass
class ReconcileReport:
    deleted_versions: list[str] = field(default_factory=list)
    adopted_executions: list[str] = field(default_factory=list)
    swept_flow_keys: list[str] = field(default_factory=list)


class Reconciler:
    def __init__(
        self,
        store: ExecutionStore,
        queue: WorkQueue,
        clock: Clock,
        *,
        limit_per_shard: int = DEFAULT_LIMIT_PER_SHARD,
        versions: FunctionVersions | None = None,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
        prune_grace: float = PRUNE_GRACE_SECONDS,
    ) -> None:
        if limit_per_shard < 1:
            raise ValueError(f"limit_per_shard must be at least 1, got {limit_per_shard}")
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be at least 1, got {keep_versions}")
        self._store = store
        self._clock = clock
        self.limit_per_shard = limit_per_shard
        self._versions = versions
        self.keep_versions = keep_versions
        # How long after its successor's publication a version may go
        # (stepwell.core.versions.prune_grace_seconds).
        self.prune_grace = prune_grace
        self._flow = FlowControl(store, queue, timers=None, clock=clock)

    def run(self) -> ReconcileReport:
        report = ReconcileReport()
        try:
            report.swept_flow_keys = self._flow.sweep(self.limit_per_shard)
        except Exception as error:
            # The keys stay due: the next run sweeps them again.
            logger.error(
                "sweeping flow control keys failed (%s); retried on the next run", type(error).__name__
            )
        if self._versions is not None:
            try:
                report.adopted_executions = adopt_unversioned(self._store, self._versions)
            except Exception as error:
                # Version 1 must not go while an execution from before versions may still need it.
                logger.error(
                    "pinning executions from before code versions failed (%s); pruning skipped, retried on "
                    "the next run",
                    type(error).__name__,
                )
                return report
            try:
                report.deleted_versions = prune_versions(
                    self._store,
                    self._versions,
                    keep=self.keep_versions,
                    now=self._clock.now(),
                    grace=self.prune_grace,
                )
            except Exception as error:
                # Old versions stay until the next run: nothing is lost, so the rest of the run stands.
                logger.error(
                    "pruning worker versions failed (%s); retried on the next run", type(error).__name__
                )
        return report
