"""Ending an execution: the run that ends it (its terminal batch and announcement, its payloads, flow slot,
waiting parent, children and end observer), and a message that finds it ended (its end logged once, and
whatever a worker that died in between left undone)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from stepwell.core.engine import Engine
from stepwell.core.journal import Journal
from stepwell.core.metrics import ENDED
from stepwell.core.run import Invocation, Run
from stepwell.errors import InvalidArgument
from stepwell.model import (
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    HandOff,
    OutcomeAction,
    WorkOutcome,
)

# The ErrorType a child of a chained invoke is stopped with when its parent ends this way.
_PARENT_ENDED_ERROR_TYPES = {
    ExecutionStatus.STOPPED: "ParentStopped",
    ExecutionStatus.TIMED_OUT: "ParentTimedOut",
}


class Endings:
    """How the worker ends an execution and settles one that ended (one per worker)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def end(
        self,
        run: Run,
        status: ExecutionStatus,
        *,
        at: float,
        result: str | None = None,
        error: dict[str, Any] | None = None,
        invocation: Invocation | None = None,
        by_handler: bool = False,
    ) -> WorkOutcome:
        """End the execution `at` that time; `invocation`: the one that ended it, whose end is logged first;
        `by_handler`: the status is the one its code returned (it saw its end)."""
        engine, record, journal = self.engine, run.record, run.journal
        if invocation is not None:
            journal.invocation_completed(invocation.started_at, at, invocation.request_id, None)
        stored_result, result_is_ref = engine.offload(record.execution_id, "result", result)
        won = engine.store.complete_execution(
            record.execution_id,
            status,
            at,
            result=stored_result,
            result_is_ref=result_is_ref,
            error=error,
            code_version=record.code_version,
        )
        ended = dataclasses.replace(record, status=status, ended_at=at, error=error)
        if not won:
            # Stopped meanwhile: the log records the stop, not this invocation's outcome.
            ended = engine.store.get_execution(record.execution_id) or record
            status, result, error = ended.status, None, ended.error
        journal.execution_ended(status.value, at, result, error)
        # Whoever writes the terminal batch announces the end, right before it (see settle).
        engine.announce_status(ended, status)
        # The log expires with the execution. Before its end is logged, so a logged end means the batches
        # before it expire too (a worker that dies in between leaves both to the next message).
        engine.expire_log(journal, at)
        # A small one stays on the coordination record, which the lease's release keeps for the retention
        # period instead of deleting it: one write for both. A worker that dies before the release leaves
        # the log without its end, as one dying before the batch did: the next message settles it.
        carried = engine.carry_or_append_journal(record, journal, terminal=True)
        # Once written: a terminal batch is written once per execution, whatever messages repeat.
        engine.metrics.add(ENDED[status.value], 1, record.workflow_id)
        # After the last write of the execution's payloads (the terminal batch may be one).
        if (
            result_is_ref
            or _has_payload_objects(record, journal, ())
            or self._unread_callback_objects(journal)
        ):
            engine.payloads.retire(record.execution_id)
        self._release_flow(record)
        if won:
            engine.notify_parent(record, status, result, error, execution_timeout=journal.execution_timeout)
        _stop_children(engine, ended, journal)
        # A failure may have escaped the code before it recorded anything (a RecursionError on deep data,
        # the SDK's own errors): the observer is told of every failed end too, not only of the unseen ones.
        if not (won and by_handler) or status is ExecutionStatus.FAILED:
            self._tell_ended(ended)
        return WorkOutcome(
            record.execution_id,
            OutcomeAction.FINISHED,
            status=status,
            hand_off=HandOff(carried=carried, ended_at=ended.ended_at),
        )

    def settle(self, run: Run) -> WorkOutcome:
        """A message for an ended execution: record its end in the log once (e.g. after a stop)."""
        engine, record, journal, inputs, now = self.engine, run.record, run.journal, run.inputs, run.now
        if not journal.ended:
            journal.absorbed_input_ids.update(item.input_id for item in inputs)
            announced = [record.status]
            # The history tells the times the execution's record does (describe's start and end), however
            # late this message: never before an event the log already holds.
            ended_at = record.ended_at if record.ended_at is not None else now
            if journal.is_empty:  # stopped before its first invocation: the log still tells the story
                announced.insert(0, ExecutionStatus.RUNNING)
                log_start(engine, record, journal, min(record.created_at, ended_at))
            if journal.last_event_ms is not None:
                ended_at = max(ended_at, journal.last_event_ms / 1000)
            result = engine.resolve(record.result, record.result_is_ref)
            journal.execution_ended(record.status.value, ended_at, result, record.error)
            # The end is not logged yet: a stop, or the worker that ended it died before its terminal batch
            # (e.g. the bus refused its announcement): announce it now, and resume a waiting parent.
            engine.announce_status(record, *announced)
            engine.expire_log(journal, record.ended_at or now)
            engine.append_journal(record, journal, terminal=True)
            engine.metrics.add(ENDED[record.status.value], 1, record.workflow_id)
            if record.status is not ExecutionStatus.STOPPED:  # a stop resumes the parent itself
                engine.notify_parent(
                    record, record.status, result, record.error, execution_timeout=journal.execution_timeout
                )
        elif record.status is not ExecutionStatus.STOPPED and self._parent_waits(record):
            # The worker that logged the end may have died before resuming the parent: resume it again (a
            # parent that already has the child's result records the repeat as absorbed, nothing more).
            result = engine.resolve(record.result, record.result_is_ref)
            engine.notify_parent(
                record, record.status, result, record.error, execution_timeout=journal.execution_timeout
            )
        # Also when the end is already logged: this message may be the retry of a worker that died
        # between its terminal batch and retiring the payloads.
        if _has_payload_objects(record, journal, inputs) or self._unread_callback_objects(journal):
            engine.payloads.retire(record.execution_id)
        # Also when the end is already logged: the worker that logged it may have died before this.
        _stop_children(engine, record, journal)
        self._tell_ended(record)
        self._release_flow(record)
        if inputs:
            engine.store.delete_external_inputs(record.execution_id, [item.input_id for item in inputs])
        return WorkOutcome(
            record.execution_id,
            OutcomeAction.IGNORED,
            status=record.status,
            details={"reason": "ended"},
            hand_off=HandOff(ended_at=record.ended_at),
        )

    def expired(self, record: ExecutionRecord) -> WorkOutcome:
        """A message for an ended execution whose payloads have expired (S3's lifecycle may remove them
        before the tables' TTL removes its items): nothing is left to settle, so the message is done
        instead of failing until it reaches the DLQ."""
        pending = self.engine.store.list_external_inputs(record.execution_id)
        if pending:
            self.engine.store.delete_external_inputs(record.execution_id, [item.input_id for item in pending])
        reason = {"reason": "ended; payloads expired"}
        return WorkOutcome(
            record.execution_id,
            OutcomeAction.IGNORED,
            status=record.status,
            details=reason,
            hand_off=HandOff(ended_at=record.ended_at),
        )

    def stored_callback_results(self, journal: Journal) -> list[ExternalInput]:
        """The results completions left on the records of the callbacks the execution waits for (one
        BatchGetItem; none when it waits for none), payloads as stored."""
        open_callbacks = journal.open_callbacks()
        return self.engine.store.get_callback_results(open_callbacks) if open_callbacks else []

    def _unread_callback_objects(self, journal: Journal) -> bool:
        """Whether a completion the ended execution never read left its payload in an object (kept on
        the callback's record, so no input names it): its objects are then worth retiring."""
        return any(item.payload_is_ref for item in self.stored_callback_results(journal))

    def _tell_ended(self, record: ExecutionRecord) -> None:
        """Tell the workflow's end observer (WorkflowOptions.on_ended) of an end its code did not see, or a
        failure (its code may not have seen that either).
        After the end is logged; an observer that raises fails the message, whose retry tells it again."""
        observer = self.engine.registry.options(record.workflow_id).on_ended
        if observer is None:
            return
        text = self.engine.resolve(record.input_payload, record.input_is_ref)
        try:
            start = json.loads(text) if text else None
        except ValueError:
            start = None
        observer(record, start)

    def _release_flow(self, record: ExecutionRecord) -> None:
        """The execution has ended: free its concurrency slot for the next waiting execution."""
        try:
            limits = self.engine.flow_limits(record)
        except InvalidArgument:
            return  # its input gives no key: it never held a slot
        self.engine.flow.release(record.execution_id, limits)

    def _parent_waits(self, record: ExecutionRecord) -> bool:
        """Whether the ended `record` is a chained invoke's child whose parent has not ended (a paused one
        takes the child's end in too, and runs on it once resumed)."""
        if record.parent_execution_id is None:
            return False
        parent = self.engine.store.get_execution(record.parent_execution_id)
        return parent is not None and not parent.status.is_terminal


def log_start(engine: Engine, record: ExecutionRecord, journal: Journal, now: float) -> None:
    """Log the execution's start (its input and timeout): by its first run, or by the message that settles
    an execution stopped before its first invocation."""
    journal.start_execution(
        engine.resolve(record.input_payload, record.input_is_ref),
        now,
        input_ref=record.input_payload if record.input_is_ref else None,
        execution_timeout=engine.registry.options(record.workflow_id).execution_timeout,
    )


def _has_payload_objects(record: ExecutionRecord, journal: Journal, inputs: Iterable[ExternalInput]) -> bool:
    """Whether the execution wrote payload objects (its input, its result, a batch, or a pending input),
    so that retiring them is worth listing its folder: most executions never offload anything."""
    return (
        record.input_is_ref
        or record.result_is_ref
        or journal.offloaded_batches
        or any(item.offloaded for item in inputs)
    )


def _stop_children(engine: Engine, ended: ExecutionRecord, journal: Journal) -> None:
    """A stopped or timed-out parent stops the children its chained invokes still wait for."""
    error_type = _PARENT_ENDED_ERROR_TYPES.get(ended.status)
    if error_type is not None:
        engine.stop_children(ended, journal, error_type)
