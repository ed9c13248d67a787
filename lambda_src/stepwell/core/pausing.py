"""The worker's side of a pause (stepwell.core.lifecycle): a message for a PAUSING or PAUSED execution
invokes nothing, and a run that finds its execution resumed logs it.

A paused execution's run logs ExecutionPaused once per pause (the pause's request time, kept in the log:
Journal.logged_pause), announcing PAUSED right before that write as the other status changes are; records
what came meanwhile (callback results and other inputs, the waits and callback timeouts due), so waits
and callbacks complete while it is paused; makes PAUSING PAUSED; and arms the next wake-up of its timers
(and deadline) only: an invocation due (what came, or the one a pause interrupted) waits in the log for
the resume, whose run makes it. A wake-up that comes while it is paused is so never lost.
"""

from __future__ import annotations

from collections.abc import Callable

from stepwell.core.engine import Engine
from stepwell.core.metrics import Metric
from stepwell.core.run import Run
from stepwell.model import ExecutionStatus, OutcomeAction, WorkOutcome


class Pausing:
    """How the worker holds a paused execution and logs its resume (one per worker)."""

    def __init__(
        self,
        engine: Engine,
        absorb: Callable[[Run], WorkOutcome | None],
        next_wake_at: Callable[[Run], float | None],
    ) -> None:
        """`absorb`: the worker's recording of what came for a run (None, or the outcome when a payload
        has expired); `next_wake_at`: the run's next timer or deadline."""
        self.engine = engine
        self._absorb = absorb
        self._next_wake_at = next_wake_at

    def hold(self, run: Run) -> WorkOutcome:
        """A run of a PAUSING or PAUSED execution (past its deadline, if any): no invocation."""
        engine, record, journal = self.engine, run.record, run.journal
        pause = record.pause
        wake_at: float | None = None
        if not journal.is_empty and pause is not None:
            logged = journal.logged_pause
            if logged is not None and logged != pause.requested_at:
                self.log_resumed(run, before=pause.requested_at)  # resumed, then paused again since
            paused_now = journal.logged_pause != pause.requested_at
            if paused_now:
                engine.announce_status(record, ExecutionStatus.PAUSED, occurrence=pause.requested_at)
                journal.execution_paused(pause.requested_at, run.now, pause.reason, pause.timeout_paused)
            missing = self._absorb(run)
            if missing is not None:
                return missing
            if journal.has_unflushed:
                engine.append_journal(record, journal)
            if paused_now:
                engine.metrics.add(Metric.EXECUTIONS_PAUSED, 1, record.workflow_id)
            wake_at = engine.keep_log_until(journal, run.now, self._next_wake_at(run))
        # An execution paused before its first run logs nothing: its history begins when it first runs.
        if record.status is ExecutionStatus.PAUSING and pause is not None:
            # False: resumed meanwhile, whose message runs it.
            engine.store.settle_pause(record.execution_id, pause.requested_at, run.now)
        if wake_at is not None and run.lease.armed != wake_at:
            engine.timers.schedule(record.execution_id, wake_at)
        return WorkOutcome(
            record.execution_id, OutcomeAction.IDLE, status=ExecutionStatus.PAUSED, next_wake_at=wake_at
        )

    def log_resumed(self, run: Run, before: float | None = None) -> None:
        """Log ExecutionResumed for the pause the log holds (a run of the resumed execution, or of one
        paused again since: `before`, the new pause's request time), announcing RUNNING right before its
        write. Its resume request is the record's, or, when the record keeps none that late, `before`."""
        engine, record, journal = self.engine, run.record, run.journal
        logged = journal.logged_pause
        if logged is None:
            return
        resumed = record.resumed
        if resumed is not None and resumed.requested_at >= logged:
            requested_at, reason = resumed.requested_at, resumed.reason
        else:
            requested_at, reason = (before if before is not None else run.now), None
        engine.announce_status(record, ExecutionStatus.RUNNING, occurrence=requested_at)
        journal.execution_resumed(requested_at, run.now, reason)
        engine.metrics.add(Metric.EXECUTIONS_RESUMED, 1, record.workflow_id)
