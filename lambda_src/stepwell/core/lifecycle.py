"""Pausing, resuming and deleting executions, as AWS's PauseDurableExecution, ResumeDurableExecution and
DeleteDurableExecution do: the operator's side (the worker's is stepwell.core.pausing and
stepwell.core.deletion), and the execution timeout a pause extends.

- pause_execution: RUNNING -> PAUSING, the pause kept on the record, and a message. The worker that next
  holds the lease logs ExecutionPaused and makes it PAUSED; a run in flight goes on to its next written
  checkpoint, whose answer then carries no token (the SDK ends the invocation PENDING), or to its end.
  While PAUSING or PAUSED nothing is invoked, but waits and callbacks still complete: a wake-up or a
  callback's result that comes is recorded in the log, and the invocation it makes due waits there.
- resume_execution: PAUSING or PAUSED -> RUNNING (a PAUSING one's run in flight just goes on), the resume
  kept on the record, and a message: its run logs ExecutionResumed and invokes the handler when work is
  due (an interrupted invocation, a wait that ended, a callback that came), else arms the next wake-up.
- delete_execution: an ended execution -> DELETING and a message: the worker announces DELETING and
  removes its items and payloads, its record last, and then it is gone.

The execution timeout: with ExecutionTimeoutPaused (the default) it is extended by the time the execution
spends PAUSED, never past 366 days after its start (MAX_PAUSED_TIMEOUT_SECONDS), which is its deadline
while it is paused; without it the timeout keeps running and a paused execution times out at its deadline.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from stepwell.core.batch_body import decode_body
from stepwell.core.batch_keys import EXECUTION_TIMEOUT
from stepwell.core.log_io import LogIO
from stepwell.core.registry import Registry
from stepwell.errors import ExecutionStateConflict, InvalidArgument, PayloadMissing, StepwellError
from stepwell.model import (
    MAX_PAUSED_TIMEOUT_SECONDS,
    ExecutionRecord,
    ExecutionStatus,
    InvokeMessage,
    PauseState,
    ResumeRequest,
)
from stepwell.ports import WorkQueue

logger = logging.getLogger(__name__)

# AWS's PauseReason and ResumeReason: at most this many characters.
MAX_REASON_LENGTH = 1024
# A resume reads the record again when a concurrent change beat its conditional write, at most this often.
_RESUME_ATTEMPTS = 3
# Engine.started_timeouts keeps at most this many executions' timeouts (then starts again).
_STARTED_TIMEOUTS_KEPT = 10_000


def execution_deadline(record: ExecutionRecord, timeout: int | None) -> float | None:
    """When the execution times out: its start plus `timeout` (seconds, as it started; None: never),
    extended by the time it spent paused with its timeout paused, never past MAX_PAUSED_TIMEOUT_SECONDS
    after its start (nor before its own timeout); while it is paused with its timeout paused, that cap."""
    if timeout is None:
        return None
    base = record.created_at + timeout
    cap = max(base, record.created_at + MAX_PAUSED_TIMEOUT_SECONDS)
    pause = record.pause
    if record.status.is_paused and pause is not None and pause.timeout_paused:
        return cap
    return min(base + record.paused_seconds, cap)


def check_reason(reason: object, what: str) -> str | None:
    """A pause's or resume's reason as AWS takes it: None, or text of at most MAX_REASON_LENGTH characters."""
    if reason is None:
        return None
    if not isinstance(reason, str) or len(reason) > MAX_REASON_LENGTH:
        raise InvalidArgument(
            f"the {what} reason must be text of at most {MAX_REASON_LENGTH} characters, got {reason!r:.80}"
        )
    return reason


class ExecutionLifecycle(LogIO):
    """Pause, resume and delete, for the Engine that derives from it (stepwell.core.engine)."""

    # The Engine's fields and methods this class uses besides LogIO's.
    queue: WorkQueue
    registry: Registry
    started_timeouts: dict[tuple[str, float], int | None]
    _record: Callable[[str], ExecutionRecord]

    def pause_execution(
        self, execution_id: str, reason: str | None = None, timeout_paused: bool = True
    ) -> bool:
        """Pause a running execution (PauseDurableExecution): it is PAUSING until a run in flight reaches
        its next checkpoint (or its end), then PAUSED; nothing is invoked until it is resumed, while its
        waits and callbacks still complete. `timeout_paused` (ExecutionTimeoutPaused): its execution timeout
        is extended by the time it spends paused (it still times out 366 days after its start); False: the
        timeout keeps running. False when it is paused already (the first pause stands);
        ExecutionStateConflict when it has ended."""
        reason = check_reason(reason, "pause")
        if not isinstance(timeout_paused, bool):
            raise InvalidArgument(f"timeout_paused must be True or False, got {timeout_paused!r}")
        record = self._record(execution_id)
        if record.status is ExecutionStatus.RUNNING:
            pause = PauseState(requested_at=self.clock.now(), timeout_paused=timeout_paused, reason=reason)
            if self.store.request_pause(execution_id, pause):
                # Its next run holds it paused: at once when none is in flight (else this message finds
                # it busy and comes again), logging ExecutionPaused.
                self.queue.enqueue(InvokeMessage(execution_id).to_body())
                return True
            record = self._record(execution_id)  # paused or ended meanwhile
        if record.status.is_terminal:
            raise _ended(record, "paused")
        return False

    def resume_execution(self, execution_id: str, reason: str | None = None) -> bool:
        """Resume a paused execution (ResumeDurableExecution): RUNNING again, and its handler invoked when
        work is due (a pause that interrupted an invocation, a wait that ended or a callback that came
        meanwhile), else it goes on waiting. A PAUSING one's pause is cancelled: its run in flight goes on.
        False when it is not paused; ExecutionStateConflict when it has ended."""
        reason = check_reason(reason, "resume")
        for _ in range(_RESUME_ATTEMPTS):
            record = self._record(execution_id)
            if record.status.is_terminal:
                raise _ended(record, "resumed")
            pause = record.pause
            if not record.status.is_paused or pause is None:
                return False
            now = self.clock.now()
            spent = 0.0
            if pause.timeout_paused and pause.paused_at is not None:
                spent = max(0.0, now - pause.paused_at)
            resumed = ResumeRequest(requested_at=now, reason=reason)
            if self.store.end_pause(execution_id, pause.requested_at, resumed, record.paused_seconds + spent):
                self.queue.enqueue(InvokeMessage(execution_id).to_body())
                return True
        raise StepwellError(f"execution {execution_id!r} kept changing while it was resumed; try again")

    def delete_execution(self, execution_id: str) -> float:
        """Delete an ended execution and its data (DeleteDurableExecution): it is DELETING until the worker
        has removed every item and payload of it (stepwell.core.deletion, which announces DELETING: only
        the worker puts status events), then gone (ExecutionNotFound). Returns when the deletion was
        requested (a repeated request: the first one's time, and its message again). ExecutionStateConflict
        when it has not ended. Child executions its chained invokes started stay, as on AWS."""
        record = self._record(execution_id)
        if not record.status.is_terminal:
            raise ExecutionStateConflict(
                f"execution {execution_id!r} has not ended ({record.status.value}): only an ended execution "
                "(SUCCEEDED, FAILED, STOPPED or TIMED_OUT) is deleted; stop it first"
            )
        if record.status is not ExecutionStatus.DELETING:
            now = self.clock.now()
            if self.store.begin_deletion(execution_id, now):
                record = dataclasses.replace(record, status=ExecutionStatus.DELETING, updated_at=now)
            else:
                record = self._record(execution_id)  # another request began it meanwhile
        self.queue.enqueue(InvokeMessage(execution_id).to_body())
        return record.updated_at

    def pause_description(self, record: ExecutionRecord) -> dict[str, Any]:
        """What describe_execution adds for a pause and a timeout: PauseDetails while PAUSING or PAUSED
        (PauseRequestTimestamp, ExecutionTimeoutPaused, Reason), and ExpectedExecutionTimeoutTimestamp while
        the execution has not ended and has a timeout (epoch seconds)."""
        described: dict[str, Any] = {}
        pause = record.pause
        if record.status.is_paused and pause is not None:
            details: dict[str, Any] = {
                "PauseRequestTimestamp": pause.requested_at,
                "ExecutionTimeoutPaused": pause.timeout_paused,
            }
            if pause.reason is not None:
                details["Reason"] = pause.reason
            described["PauseDetails"] = details
        if not record.status.is_terminal:
            try:
                timeout = self.started_timeout(record)
            except Exception as error:  # an optional field: the rest of the description stands
                logger.warning(
                    "the execution timeout of %s could not be read (%s): ExpectedExecutionTimeoutTimestamp "
                    "left out",
                    record.execution_id,
                    type(error).__name__,
                )
                timeout = None
            deadline = execution_deadline(record, timeout)
            if deadline is not None:
                described["ExpectedExecutionTimeoutTimestamp"] = deadline
        return described

    def started_timeout(self, record: ExecutionRecord) -> int | None:
        """The execution timeout the execution started with (its log's first batch, or the one its
        coordination record carries: read once per process); before its first run, its workflow's as
        registered here."""
        # A new execution under the same id (after a delete, or its retention) is another key.
        key = (record.execution_id, record.created_at)
        if key in self.started_timeouts:
            return self.started_timeouts[key]
        batches, _ = self.store.load_batches(record.execution_id, limit=1)
        if batches:
            first = batches[0]
        else:
            carried = self.store.get_carried_batch(record.execution_id)
            if carried is None or carried.seq != 0:
                return self.registry.options(record.workflow_id).execution_timeout
            first = carried
        try:
            body = decode_body(self.payloads.get(first.body) if first.body_is_ref else first.body)
        except PayloadMissing:
            return None
        timeout = body.get(EXECUTION_TIMEOUT)
        started = int(timeout) if timeout is not None else None
        if len(self.started_timeouts) >= _STARTED_TIMEOUTS_KEPT:
            self.started_timeouts.clear()
        self.started_timeouts[key] = started
        return started


def _ended(record: ExecutionRecord, what: str) -> ExecutionStateConflict:
    return ExecutionStateConflict(
        f"execution {record.execution_id!r} has ended ({record.status.value}): only one that has not ended "
        f"is {what}"
    )
