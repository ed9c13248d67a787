"""The journal's state: one execution's operation states folded from its append-only batch log, the
queries a run asks of them, and the batch its changes are flushed as. How the state changes (the engine's
transitions, external inputs, timers, the SDK's checkpoints) is stepwell.core.journal's Journal, built on
this class; how a body is written and read is stepwell.core.batch_body.

A worker loads the batches once per invocation (one paginated Query) and folds them; after that every
checkpoint applies its updates to the journal in O(updates), records the history events they produce, and
flushes the changes as the next batch. Nothing re-reads or re-folds the log per checkpoint.

Operation states are the SDK's `Operation` objects. Besides them the journal keeps what the SDK does not
see: callback deadlines, wait durations and a heap of timers (wait ends, retry times, callback timeouts)
so the next wake-up and the due timers are found in O(log n), and an index of the operations not yet
ended, so a run's work does not grow with the ended ones a long log holds.
"""

from __future__ import annotations

import copy
import dataclasses
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_durable_execution_sdk_python.lambda_service import (
    ErrorObject,
    Operation,
    OperationStatus,
    OperationSubType,
    OperationType,
)

from stepwell.core.batch_body import (
    PendingEvent,
    after_carried,
    operation_from_json,
    operation_to_json,
    stored_event,
    strip_execution_input,
)
from stepwell.core.batch_keys import (
    ABSORBED_INPUTS,
    CODE_VERSION,
    CONSECUTIVE_CRASHES,
    ENDED,
    ERROR,
    EVENT_STAMP,
    EVENT_TYPE,
    EVENTS,
    EXECUTION_TIMEOUT,
    INPUT_REF,
    NEEDS_INVOCATION,
    OPERATIONS,
    PAYLOAD_OBJECTS,
    PRIVATE_STATE,
    RESULT,
)
from stepwell.core.log_expiry import LogExpiry

TERMINAL_STATUSES = frozenset(
    {
        OperationStatus.SUCCEEDED,
        OperationStatus.FAILED,
        OperationStatus.CANCELLED,
        OperationStatus.TIMED_OUT,
        OperationStatus.STOPPED,
    }
)
CALLBACK_TIMEOUT_TYPE = "Callback.Timeout"
CALLBACK_HEARTBEAT_TYPE = "Callback.Heartbeat"

# What a timer of the heap does when due (Journal.fire_due_timers).
TIMER_WAIT = "wait"  # a wait ends
TIMER_RETRY = "retry"  # a step's retry is ready
TIMER_CALLBACK = "callback"  # a callback times out (its timeout or its heartbeat deadline)


def to_datetime(epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, tz=UTC)


def epoch_ms(epoch_seconds: float) -> int:
    return round(epoch_seconds * 1000)


def next_attempt_at(step: Operation) -> float:
    # The timestamp as stored, so a live timer and one rebuilt from the log compare equal.
    next_at = step.step_details.next_attempt_timestamp if step.step_details else None
    return next_at.timestamp() if next_at else 0.0


def _open_ids(operations: dict[str, Operation]) -> dict[str, None]:
    return {op_id: None for op_id, op in operations.items() if op.status not in TERMINAL_STATUSES}


class InvokeDescriber(Protocol):
    """What ChainedInvokeStarted says about a target that only the engine knows (its ExecutedVersion and,
    for a durable workflow, the child's DurableExecutionArn): (operation id, target, tenant id) -> details.
    InvokeRefused when the target cannot be started (unknown, a refused qualifier, a bad tenant id)."""

    def __call__(self, operation_id: str, target: str, tenant_id: str | None) -> dict[str, Any]: ...


@dataclass
class ChildStart:
    """A chained invoke the journal saw start: the engine starts the child execution after the flush."""

    operation_id: str
    workflow_name: str  # the target as the code named it (FunctionName)
    payload: str | None
    tenant_id: str | None = None
    # The invoke's own trace header (ChainedInvokeOptions.XAmznTraceId, as the SDK's OpenTelemetry plugin
    # propagates it), checked; None: the child inherits its parent's trace.
    trace_header: str | None = None


@dataclass
class FlushedBatch:
    body: dict[str, Any]
    operations: list[Operation]
    absorbed_input_ids: list[str]
    new_callbacks: list[tuple[str, str]]  # (callback id, operation id)
    child_starts: list[ChildStart]
    # Callbacks this batch timed out: a completion sent later is refused, not silently dropped.
    timed_out_callbacks: list[str] = field(default_factory=list)
    # Whether it starts with a batch the last run carried (Journal.carry), which that run counted.
    took_carried: bool = False
    # Whether a replay records every one of its operation changes again (Journal.replays_alike).
    replayable: bool = False

    @property
    def carriable(self) -> bool:
        """Whether the batch only records what a replay makes again and nobody outside the run acts on: a
        suspending invocation's InvocationCompleted, the waits it started (or that ended on their timer),
        the child contexts it started or ended, in a first run the execution's start and, with derived
        callback ids, the callbacks it started and their submitters' results. Nothing waits
        for it to be stored, so it may ride on the lease's release and be written with the execution's
        next batch (Journal.carry); lost with a release that never comes, the replay records it again."""
        # An input kept elsewhere (INPUT_REF) is restored by a load of the log, not by Journal.carry.
        return self._no_side_effects and INPUT_REF not in self.body and self.replayable

    @property
    def carriable_at_end(self) -> bool:
        """Whether a terminal batch may stay on the coordination record instead of the log: nothing waits
        for it to be stored (no callback to close, no input to delete, no child to start). Nothing writes
        after it, so the log never takes it in, and whatever it holds (the end, the operations its last
        invocation changed) is read from the record."""
        return self._no_side_effects

    @property
    def _no_side_effects(self) -> bool:
        return (
            not self.absorbed_input_ids
            and not self.new_callbacks
            and not self.child_starts
            and not self.timed_out_callbacks
        )


@dataclass
class JournalState:
    """What a fold of an execution's log holds, and a run's changes not yet flushed (stepwell.core.journal's
    Journal adds the changes themselves)."""

    execution_id: str
    operations: dict[str, Operation] = field(default_factory=dict)
    next_seq: int = 0
    next_event_id: int = 1
    # Private state per operation: wait durations and callback deadlines.
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    absorbed_input_ids: set[str] = field(default_factory=set)
    # False after an invocation ended PENDING and nothing happened since: a duplicate message is a no-op.
    needs_invocation: bool = True
    ended: bool = False
    consecutive_crashes: int = 0
    execution_result: str | None = None
    execution_error: ErrorObject | None = None
    # The PayloadStore reference of an offloaded execution input: batches store it in place of the input
    # (key INPUT_REF), so the input is stored once, in its own object (see strip_execution_input).
    input_ref: str | None = None
    # Whether any batch of this execution was written to the PayloadStore (set by the engine as it loads
    # and writes batches), or an input absorbed had its payload in an object (a batch's PAYLOAD_OBJECTS).
    # With the input's and result's own flags this tells whether the execution has payload objects to
    # retire at its end, without listing its folder (a batch recording a large callback result may itself
    # be small: deflated, or carried on the lease).
    offloaded_batches: bool = False
    # When the log's batches expire (set by the engine as it loads and writes them).
    log_expiry: LogExpiry = field(default_factory=LogExpiry)
    # When the oldest batch of the log as loaded was written (set by the engine; None: none read): one
    # written before the execution was created is an earlier execution's (stepwell.core.engine.predates).
    oldest_batch_at: float | None = None
    # The time of the latest history event the journal holds, folded or its own (epoch ms; None: none): an
    # end recorded later is never stamped before it (Endings.settle).
    last_event_ms: int | None = None
    # The worker version the log last ran on (key CODE_VERSION, written when it changes; None: never
    # versioned).
    code_version: str | None = None
    # The workflow's execution timeout in seconds when it started (key EXECUTION_TIMEOUT; None: none).
    execution_timeout: int | None = None
    # Set by the worker for the invocation: the engine's view of chained invoke targets.
    describe_invoke: InvokeDescriber | None = None
    # Set by the worker for the invocation: the execution's callback key (ExecutionRecord.callback_key),
    # from which its callback ids are derived; None: they are random (an execution created before keys).
    callback_key: str | None = None
    _timers: list[tuple[float, int, str, str]] = field(default_factory=list)
    _timer_counter: int = 0
    _dirty: dict[str, Operation] = field(default_factory=dict)
    _dirty_meta: set[str] = field(default_factory=set)
    _events: list[PendingEvent] = field(default_factory=list)
    _absorbed_now: list[str] = field(default_factory=list)
    _new_callbacks: list[tuple[str, str]] = field(default_factory=list)
    _timed_out_callbacks: list[str] = field(default_factory=list)
    _child_starts: list[ChildStart] = field(default_factory=list)
    _flags: dict[str, Any] = field(default_factory=dict)
    # A batch the last run left on the coordination record (see carry): the next flush writes it first.
    _carried: dict[str, Any] | None = None
    # The operations not yet ended, in the operations' order: what timers, open callbacks and waiting
    # children are found among, so a run's cost does not grow with the ended ones a long log holds.
    _open: dict[str, None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._open = _open_ids(self.operations)

    # ------------------------------------------------------------------ loading

    def fold(self, seq: int, body: dict[str, Any]) -> None:
        """Apply one stored batch (in seq order)."""
        for data in body.get(OPERATIONS, ()):
            op = operation_from_json(data)
            previous = self.operations.get(op.operation_id)
            if (
                previous is not None
                and op.operation_type is OperationType.EXECUTION
                and op.execution_details is None
            ):
                # Its input is stored once, by the batch that starts it (see flush).
                op = dataclasses.replace(op, execution_details=previous.execution_details)
            self._keep(op)
        for op_id, meta in body.get(PRIVATE_STATE, {}).items():
            self.meta[op_id] = meta
        events = body.get(EVENTS, ())
        self.next_event_id += len(events)
        for event in events:
            self._note_event_time(int(event.get(EVENT_STAMP, 0)))
        self.absorbed_input_ids.update(body.get(ABSORBED_INPUTS, ()))
        self.needs_invocation = bool(body.get(NEEDS_INVOCATION, 1))
        if CONSECUTIVE_CRASHES in body:  # the batch holds an InvocationCompleted
            self.consecutive_crashes = int(body[CONSECUTIVE_CRASHES])
        if body.get(ENDED):
            self.ended = True
        if RESULT in body:
            self.execution_result = body[RESULT]
        if ERROR in body:
            self.execution_error = ErrorObject.from_dict(body[ERROR])
        if INPUT_REF in body:
            self.input_ref = body[INPUT_REF]
        if body.get(PAYLOAD_OBJECTS):
            self.offloaded_batches = True
        if CODE_VERSION in body:
            self.code_version = body[CODE_VERSION]
        if EXECUTION_TIMEOUT in body:
            self.execution_timeout = int(body[EXECUTION_TIMEOUT])
        self.next_seq = seq + 1

    def carry(self, seq: int, body: dict[str, Any]) -> bool:
        """Take in a batch the execution's last run left on its coordination record instead of the log
        (FlushedBatch.carriable): folded now, and written as the start of the next batch at its seq.
        False, changing nothing, when its seq is not the log's next (a later run wrote it already)."""
        if seq != self.next_seq or self._carried is not None:
            return False
        # Folding converts the operations' timestamps in place: the body is kept as stored for the flush.
        self.fold(seq, {**body, OPERATIONS: copy.deepcopy(body[OPERATIONS])} if OPERATIONS in body else body)
        for op_id in dict.fromkeys(str(data["Id"]) for data in body.get(OPERATIONS, ())):
            self._push_timers_for(self.operations[op_id])  # a wait it started (the log's are pushed)
        self.next_seq = seq
        self._carried = body
        return True

    @property
    def holds_carried(self) -> bool:
        """Whether a carried batch was taken in (carry) and no batch has written it since."""
        return self._carried is not None

    def finish_loading(self) -> None:
        """Rebuild the timer heap from the folded state (once per invocation): of the open operations only."""
        self._timers = []
        for op_id in self._open:
            self._push_timers_for(self.operations[op_id])
        heapq.heapify(self._timers)

    def _push_timers_for(self, op: Operation) -> None:
        if op.status in TERMINAL_STATUSES:
            return
        if (
            op.operation_type is OperationType.WAIT
            and op.wait_details
            and op.status is OperationStatus.STARTED
        ):
            end = op.wait_details.scheduled_end_timestamp
            if end is not None:
                self._push_timer(end.timestamp(), op.operation_id, TIMER_WAIT)
        elif op.operation_type is OperationType.STEP and op.status is OperationStatus.PENDING:
            self._push_timer(next_attempt_at(op), op.operation_id, TIMER_RETRY)
        elif op.operation_type is OperationType.CALLBACK and op.status is OperationStatus.STARTED:
            self._push_callback_timer(op.operation_id)

    def _push_timer(self, due_at: float, op_id: str, kind: str) -> None:
        self._timer_counter += 1
        heapq.heappush(self._timers, (due_at, self._timer_counter, op_id, kind))

    def _push_callback_timer(self, op_id: str) -> None:
        # At the earlier of the timeout and the heartbeat deadline: a heartbeat moves only the latter.
        deadline = self._callback_deadline(op_id)
        if deadline is not None:
            self._push_timer(deadline[0], op_id, TIMER_CALLBACK)

    def _callback_deadline(self, op_id: str) -> tuple[float, str] | None:
        meta = self.meta.get(op_id, {})
        candidates: list[tuple[float, str]] = []
        if meta.get("timeoutAt"):
            candidates.append((float(meta["timeoutAt"]), CALLBACK_TIMEOUT_TYPE))
        if meta.get("heartbeatAt"):
            candidates.append((float(meta["heartbeatAt"]), CALLBACK_HEARTBEAT_TYPE))
        return min(candidates) if candidates else None

    # ------------------------------------------------------------------ queries

    @property
    def is_empty(self) -> bool:
        return not self.operations

    @property
    def has_unflushed(self) -> bool:
        return bool(self._dirty or self._events or self._absorbed_now or self._dirty_meta or self._flags)

    @property
    def derives_callback_ids(self) -> bool:
        """Whether a replay makes this run's callback ids again (see derived_callback_id)."""
        return bool(self.callback_key)

    def is_callback_submitter(self, op: Operation | None) -> bool:
        """Whether `op` is a wait_for_callback's submitter: the step the SDK runs in that context (named
        after it) to hand the callback's id out. The SDK drops its result, so a replay that runs it again
        hands the same id out (derived) and changes nothing else."""
        if op is None or op.operation_type is not OperationType.STEP or op.parent_id is None:
            return False
        parent = self.operations.get(op.parent_id)
        if parent is None or parent.operation_type is not OperationType.CONTEXT:
            return False
        if parent.sub_type != OperationSubType.WAIT_FOR_CALLBACK:
            return False
        return op.name == (f"{parent.name} submitter" if parent.name else "submitter")

    def replays_alike(self, op: Operation) -> bool:
        """Whether a replay records this operation change again if it was lost (FlushedBatch.carriable):
        a context's, a wait's start or end, the execution's start (a run that finds the log empty logs it
        again) and, with derived callback ids, a callback's start (the same id again) and its submitter's
        start or result (run again: it hands the same id out)."""
        if op.operation_type is OperationType.CONTEXT:
            return True
        if op.operation_type is OperationType.EXECUTION:
            return op.status is OperationStatus.STARTED
        if op.operation_type is OperationType.WAIT:
            return op.status in (OperationStatus.STARTED, OperationStatus.SUCCEEDED)
        if not self.derives_callback_ids:
            return False
        if op.operation_type is OperationType.CALLBACK:
            return op.status is OperationStatus.STARTED
        return op.status in (
            OperationStatus.STARTED,
            OperationStatus.SUCCEEDED,
        ) and self.is_callback_submitter(op)

    def resolve_new_callbacks(self, resolve: Callable[[list[tuple[str, str]]], int]) -> int:
        """Hand the callbacks started since the last call (callback id, operation id) to `resolve`, which
        writes their records, and forget them once it returned (its answer is returned): the batch that
        records their starts may follow later. If it raises they stay, so that batch resolves them first
        (Engine.append_journal), as it did before."""
        found = resolve(list(self._new_callbacks)) if self._new_callbacks else 0
        self._new_callbacks = []
        return found

    @property
    def has_unflushed_side_effects(self) -> bool:
        """Whether the unflushed changes hold something that must be stored before the run goes on: a
        new callback (its id must resolve before user code has it), a child execution to start, a
        callback timed out (a later completion must be refused)."""
        return bool(self._new_callbacks or self._child_starts or self._timed_out_callbacks)

    def unflushed_operation_ids(self) -> list[str]:
        """Operations changed since the last batch (at invocation start: what changed while it slept)."""
        return list(self._dirty)

    def next_wake_at(self) -> float | None:
        while self._timers and not self._timer_is_live(self._timers[0]):
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def _timer_is_live(self, entry: tuple[float, int, str, str]) -> bool:
        due_at, _, op_id, kind = entry
        op = self.operations.get(op_id)
        if op is None or op.status in TERMINAL_STATUSES:
            return False
        if kind == TIMER_WAIT:
            return op.status is OperationStatus.STARTED
        if kind == TIMER_RETRY:
            # A later RETRY of the step sets a new next attempt time: the earlier one's timer is dead.
            return op.status is OperationStatus.PENDING and due_at == next_attempt_at(op)
        deadline = self._callback_deadline(op_id)
        return op.status is OperationStatus.STARTED and deadline is not None and deadline[0] == due_at

    def open_callbacks(self) -> list[str]:
        """The ids of the callbacks still waiting for a completion (their results are read from their
        records: ExecutionStore.get_callback_results)."""
        return [
            op.callback_details.callback_id
            for op in map(self.operations.__getitem__, self._open)
            if op.operation_type is OperationType.CALLBACK
            and op.status is OperationStatus.STARTED
            and op.callback_details is not None
            and op.callback_details.callback_id
        ]

    def waiting_children(self) -> list[ChildStart]:
        """Chained invokes still waiting for their child execution (with the child's target and input)."""
        return [
            ChildStart(
                op.operation_id,
                self.meta[op.operation_id]["target"],
                self.meta[op.operation_id].get("input"),
                self.meta[op.operation_id].get("tenant"),
                self.meta[op.operation_id].get("trace"),
            )
            for op in map(self.operations.__getitem__, self._open)
            if op.operation_type is OperationType.CHAINED_INVOKE
            and op.status is OperationStatus.STARTED
            and "target" in self.meta.get(op.operation_id, {})
        ]

    # ------------------------------------------------------------------ events

    def _event(self, event_type: str, now: float, op: Operation | None, details: dict[str, Any]) -> None:
        # Kept compact until the flush (batch_body.stored_event); the EventId is the position in the log.
        stamp = epoch_ms(now)
        self._events.append((event_type, stamp, op.operation_id if op is not None else None, details))
        self.next_event_id += 1
        self._note_event_time(stamp)

    def _note_event_time(self, stamp: int) -> None:
        if self.last_event_ms is None or stamp > self.last_event_ms:
            self.last_event_ms = stamp

    def _set(self, op: Operation) -> None:
        self._keep(op)
        self._dirty[op.operation_id] = op

    def _keep(self, op: Operation) -> None:
        """Hold `op` as its operation's state, and keep the index of open operations."""
        op_id = op.operation_id
        known = op_id in self.operations
        self.operations[op_id] = op
        if op.status in TERMINAL_STATUSES:
            self._open.pop(op_id, None)
        elif op_id not in self._open:
            if known:  # open again after it ended (no log does this): the index keeps the operations' order
                self._open = _open_ids(self.operations)
            else:
                self._open[op_id] = None

    def _set_meta(self, op_id: str, **values: Any) -> None:
        # A new dict, never a change in place: copies of the journal share these (copy_journal).
        self.meta[op_id] = {**self.meta.get(op_id, {}), **values}
        self._dirty_meta.add(op_id)

    # ------------------------------------------------------------------ flushing

    def flush(self) -> FlushedBatch:
        """Take the unflushed changes as the next batch's body (the caller appends it at next_seq)."""
        body: dict[str, Any] = {}
        operations = list(self._dirty.values())
        stored_operations = [operation_to_json(op) for op in operations]
        if stored_operations:
            body[OPERATIONS] = stored_operations
        if self._events:
            positions = {op.operation_id: index for index, op in enumerate(operations)}
            body[EVENTS] = [
                stored_event(event, positions, stored_operations, self.operations) for event in self._events
            ]
        if self._absorbed_now:
            body[ABSORBED_INPUTS] = self._absorbed_now
        if self._dirty_meta:
            body[PRIVATE_STATE] = {op_id: self.meta[op_id] for op_id in self._dirty_meta}
        body.update(self._flags)
        if self.input_ref is not None:
            strip_execution_input(body, self.input_ref)
        started = any(event.get(EVENT_TYPE) == "ExecutionStarted" for event in body.get(EVENTS, ()))
        if stored_operations and not started:
            # A later change of the EXECUTION operation (its end) leaves out its input, which the batch
            # that started it holds: the fold keeps it from there (an end would otherwise copy the input).
            for stored in stored_operations:
                if stored.get("Type") == OperationType.EXECUTION.value:
                    stored.pop("ExecutionDetails", None)
        # Whether the execution still needs an invocation after this batch (a duplicate message finds
        # "no" and does nothing).
        body[NEEDS_INVOCATION] = 1 if self.needs_invocation else 0
        took_carried = self._carried is not None
        if self._carried is not None:
            body = after_carried(self._carried, body)
            self._carried = None
        flushed = FlushedBatch(
            body=body,
            operations=operations,
            absorbed_input_ids=self._absorbed_now,
            new_callbacks=self._new_callbacks,
            child_starts=self._child_starts,
            timed_out_callbacks=self._timed_out_callbacks,
            took_carried=took_carried,
            replayable=all(map(self.replays_alike, operations)),
        )
        self._dirty = {}
        self._dirty_meta = set()
        self._events = []
        self._absorbed_now = []
        self._new_callbacks = []
        self._timed_out_callbacks = []
        self._child_starts = []
        self._flags = {}
        return flushed
