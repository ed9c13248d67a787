"""The journal: one execution's operation state, folded from its append-only batch log.

A worker loads the batches once per invocation (one paginated Query) and folds them; after that every
checkpoint applies its updates to the journal in O(updates), records the history events they produce, and
flushes the changes as the next batch. Nothing re-reads or re-folds the log per checkpoint.

Operation states are the SDK's `Operation` objects. Besides them the journal keeps what the SDK does not
see: callback deadlines, wait durations and a heap of timers (wait ends, retry times, callback timeouts)
so the next wake-up and the due timers are found in O(log n).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import hashlib
import heapq
import hmac
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from aws_durable_execution_sdk_python.lambda_service import (
    CallbackDetails,
    ChainedInvokeDetails,
    ContextDetails,
    ErrorObject,
    ExecutionDetails,
    Operation,
    OperationAction,
    OperationStatus,
    OperationSubType,
    OperationType,
    OperationUpdate,
    StepDetails,
    WaitDetails,
)

from stepwell.core.invoke_targets import CHAINED_INVOKE_INPUT_TOO_LARGE, MAX_CHAINED_INVOKE_PAYLOAD_BYTES
from stepwell.core.log_expiry import LogExpiry
from stepwell.model import ExternalInput, InputKind

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

# A chained invoke's child ended without a result: the operation's status and the parent's event.
_CHILD_ENDINGS = {
    InputKind.CHILD_FAILED: (OperationStatus.FAILED, "ChainedInvokeFailed"),
    InputKind.CHILD_STOPPED: (OperationStatus.STOPPED, "ChainedInvokeStopped"),
    InputKind.CHILD_TIMED_OUT: (OperationStatus.TIMED_OUT, "ChainedInvokeTimedOut"),
}

_TIMER_WAIT = "wait"
_TIMER_RETRY = "retry"
_TIMER_CALLBACK = "callback"


def to_datetime(epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, tz=UTC)


def _ms(epoch_seconds: float) -> int:
    return round(epoch_seconds * 1000)


def _next_attempt_at(step: Operation) -> float:
    # The timestamp as stored, so a live timer and one rebuilt from the log compare equal.
    next_at = step.step_details.next_attempt_timestamp if step.step_details else None
    return next_at.timestamp() if next_at else 0.0


def _open_ids(operations: dict[str, Operation]) -> dict[str, None]:
    return {op_id: None for op_id, op in operations.items() if op.status not in TERMINAL_STATUSES}


def _error_dict(error: ErrorObject | None) -> dict[str, Any]:
    return dict(error.to_dict()) if error is not None else {}


def _operation_to_json(op: Operation) -> dict[str, Any]:
    return dict(op.to_json_dict())


def _operation_from_json(data: dict[str, Any]) -> Operation:
    # The dict was just parsed from JSON and is ours: convert timestamps in place (no deep copy).
    for key in ("StartTimestamp", "EndTimestamp"):
        if (value := data.get(key)) is not None:
            data[key] = datetime.fromtimestamp(value / 1000, tz=UTC)
    if (step := data.get("StepDetails")) and (value := step.get("NextAttemptTimestamp")) is not None:
        step["NextAttemptTimestamp"] = datetime.fromtimestamp(value / 1000, tz=UTC)
    if (wait := data.get("WaitDetails")) and (value := wait.get("ScheduledEndTimestamp")) is not None:
        wait["ScheduledEndTimestamp"] = datetime.fromtimestamp(value / 1000, tz=UTC)
    return Operation.from_dict(data)


class InvokeDescriber(Protocol):
    """What ChainedInvokeStarted says about a target that only the engine knows (its ExecutedVersion and,
    for a durable workflow, the child's DurableExecutionArn): (operation id, target, tenant id) -> details.
    InvokeRefused when the target cannot be started (unknown, a refused qualifier, a bad tenant id)."""

    def __call__(self, operation_id: str, target: str, tenant_id: str | None) -> dict[str, Any]: ...


class InvokeRefused(Exception):
    """A chained invoke's target cannot be started: the invoke fails in the checkpoint that starts it, as
    AWS resolves the target then, with `error` (an ErrorObject as a dict)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("ErrorMessage", ""))
        self.error = error


@dataclass
class ChildStart:
    """A chained invoke the journal saw start: the engine starts the child execution after the flush."""

    operation_id: str
    workflow_name: str  # the target as the code named it (FunctionName)
    payload: str | None
    tenant_id: str | None = None


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
        # An input kept elsewhere ("ir") is restored by a load of the log, not by Journal.carry.
        return self._no_side_effects and "ir" not in self.body and self.replayable

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
class Journal:
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
    # (key "ir"), so the input is stored once, in its own object (see strip_execution_input).
    input_ref: str | None = None
    # Whether any batch of this execution was written to the PayloadStore (set by the engine as it loads
    # and writes batches), or an input absorbed had its payload in an object (a batch's "po"). With the
    # input's and result's own flags this tells whether the execution has payload objects to retire at
    # its end, without listing its folder (a batch recording a large callback result may itself be small:
    # deflated, or carried on the lease).
    offloaded_batches: bool = False
    # When the log's batches expire (set by the engine as it loads and writes them).
    log_expiry: LogExpiry = field(default_factory=LogExpiry)
    # When the oldest batch of the log as loaded was written (set by the engine; None: none read): one
    # written before the execution was created is an earlier execution's (stepwell.core.engine.predates).
    oldest_batch_at: float | None = None
    # The time of the latest history event the journal holds, folded or its own (epoch ms; None: none): an
    # end recorded later is never stamped before it (Worker._settle_ended).
    last_event_ms: int | None = None
    # The worker version the log last ran on (key "v", written when it changes; None: never versioned).
    code_version: str | None = None
    # The workflow's execution timeout in seconds when it started (key "to"; None: none).
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
    _events: list[tuple[str, int, str | None, dict[str, Any]]] = field(default_factory=list)
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
        for data in body.get("o", ()):
            op = _operation_from_json(data)
            previous = self.operations.get(op.operation_id)
            if (
                previous is not None
                and op.operation_type is OperationType.EXECUTION
                and op.execution_details is None
            ):
                # Its input is stored once, by the batch that starts it (see flush).
                op = dataclasses.replace(op, execution_details=previous.execution_details)
            self._keep(op)
        for op_id, meta in body.get("d", {}).items():
            self.meta[op_id] = meta
        events = body.get("e", ())
        self.next_event_id += len(events)
        for event in events:
            self._note_event_time(int(event.get("s", 0)))
        self.absorbed_input_ids.update(body.get("i", ()))
        self.needs_invocation = bool(body.get("w", 1))
        if "c" in body:  # the batch holds an InvocationCompleted
            self.consecutive_crashes = int(body["c"])
        if body.get("z"):
            self.ended = True
        if "r" in body:
            self.execution_result = body["r"]
        if "x" in body:
            self.execution_error = ErrorObject.from_dict(body["x"])
        if "ir" in body:
            self.input_ref = body["ir"]
        if body.get("po"):
            self.offloaded_batches = True
        if "v" in body:
            self.code_version = body["v"]
        if "to" in body:
            self.execution_timeout = int(body["to"])
        self.next_seq = seq + 1

    def carry(self, seq: int, body: dict[str, Any]) -> bool:
        """Take in a batch the execution's last run left on its coordination record instead of the log
        (FlushedBatch.carriable): folded now, and written as the start of the next batch at its seq.
        False, changing nothing, when its seq is not the log's next (a later run wrote it already)."""
        if seq != self.next_seq or self._carried is not None:
            return False
        # Folding converts the operations' timestamps in place: the body is kept as stored for the flush.
        self.fold(seq, {**body, "o": copy.deepcopy(body["o"])} if "o" in body else body)
        for op_id in dict.fromkeys(str(data["Id"]) for data in body.get("o", ())):
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
                self._push_timer(end.timestamp(), op.operation_id, _TIMER_WAIT)
        elif op.operation_type is OperationType.STEP and op.status is OperationStatus.PENDING:
            self._push_timer(_next_attempt_at(op), op.operation_id, _TIMER_RETRY)
        elif op.operation_type is OperationType.CALLBACK and op.status is OperationStatus.STARTED:
            self._push_callback_timer(op.operation_id)

    def _push_timer(self, due_at: float, op_id: str, kind: str) -> None:
        self._timer_counter += 1
        heapq.heappush(self._timers, (due_at, self._timer_counter, op_id, kind))

    def _push_callback_timer(self, op_id: str) -> None:
        # At the earlier of the timeout and the heartbeat deadline: a heartbeat moves only the latter.
        deadline = self._callback_deadline(op_id)
        if deadline is not None:
            self._push_timer(deadline[0], op_id, _TIMER_CALLBACK)

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
        if kind == _TIMER_WAIT:
            return op.status is OperationStatus.STARTED
        if kind == _TIMER_RETRY:
            # A later RETRY of the step sets a new next attempt time: the earlier one's timer is dead.
            return op.status is OperationStatus.PENDING and due_at == _next_attempt_at(op)
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
            )
            for op in map(self.operations.__getitem__, self._open)
            if op.operation_type is OperationType.CHAINED_INVOKE
            and op.status is OperationStatus.STARTED
            and "target" in self.meta.get(op.operation_id, {})
        ]

    # ------------------------------------------------------------------ events

    def _event(self, event_type: str, now: float, op: Operation | None, details: dict[str, Any]) -> None:
        # Kept compact until the flush (see _stored_event); the EventId is the position in the log.
        stamp = _ms(now)
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

    # ------------------------------------------------------------------ engine-side transitions

    @property
    def execution_operation_id(self) -> str:
        # The SDK finds the EXECUTION operation under the last segment of the execution id ("arn").
        return self.execution_id.rsplit("/", 1)[-1]

    def start_execution(
        self,
        input_payload: str | None,
        now: float,
        input_ref: str | None = None,
        execution_timeout: int | None = None,
    ) -> None:
        """`input_ref`: the reference `input_payload` was read from when it is offloaded;
        `execution_timeout`: the workflow's timeout in seconds, if it has one."""
        self.input_ref = input_ref
        op = Operation(
            operation_id=self.execution_operation_id,
            operation_type=OperationType.EXECUTION,
            status=OperationStatus.STARTED,
            start_timestamp=to_datetime(now),
            execution_details=ExecutionDetails(input_payload=input_payload),
        )
        self._set(op)
        details: dict[str, Any] = {"Input": {"Payload": input_payload}}
        if execution_timeout is not None:
            details["ExecutionTimeout"] = execution_timeout
            self.execution_timeout = execution_timeout
            self._flags["to"] = execution_timeout
        self._event("ExecutionStarted", now, None, details)
        self.needs_invocation = True

    def run_on(self, version: str | None, now: float) -> None:
        """Record that `version` of the worker runs this execution now. Moving from another version (an
        upgrade) is an ExecutionUpgraded event and replays the log on the new code at once, so a mismatch
        between the log and the new code shows now rather than at the next wake-up."""
        if version is None or version == self.code_version:
            return
        if self.code_version is not None:
            self._event(
                "ExecutionUpgraded",
                now,
                None,
                {"FromVersion": self.code_version, "ToVersion": version},
            )
            self.needs_invocation = True
        self.code_version = version
        self._flags["v"] = version

    def invocation_completed(
        self,
        started_at: float,
        now: float,
        request_id: str,
        error: dict[str, Any] | None,
        run_again: bool = False,
    ) -> None:
        """Record the end of an invocation. `run_again`: something became ready while it ran."""
        details: dict[str, Any] = {
            "StartTimestamp": _ms(started_at),
            "EndTimestamp": _ms(now),
            "RequestId": request_id,
        }
        if error is not None:
            details["Error"] = {"Payload": error}
            self.consecutive_crashes += 1
            self.needs_invocation = True
        else:
            self.consecutive_crashes = 0
            self.needs_invocation = run_again
        self._flags["c"] = self.consecutive_crashes
        self._event("InvocationCompleted", now, None, details)

    def execution_ended(
        self, status: str, now: float, result: str | None, error: dict[str, Any] | None
    ) -> None:
        execution_op = self.operations.get(self.execution_operation_id)
        if execution_op is not None:
            op_status = {
                "SUCCEEDED": OperationStatus.SUCCEEDED,
                "FAILED": OperationStatus.FAILED,
                "STOPPED": OperationStatus.STOPPED,
                "TIMED_OUT": OperationStatus.TIMED_OUT,
            }.get(status, OperationStatus.FAILED)
            self._set(dataclasses.replace(execution_op, status=op_status, end_timestamp=to_datetime(now)))
        if status == "SUCCEEDED":
            self._event("ExecutionSucceeded", now, None, {"Result": {"Payload": result}})
        elif status == "STOPPED":
            self._event("ExecutionStopped", now, None, {"Error": {"Payload": error or {}}})
        elif status == "TIMED_OUT":
            self._event("ExecutionTimedOut", now, None, {"Error": {"Payload": error or {}}})
        else:
            self._event("ExecutionFailed", now, None, {"Error": {"Payload": error or {}}})
        self.needs_invocation = False
        self.ended = True
        self._flags["z"] = 1
        # Callbacks still open close with it (their records get their retention): the terminal batch's
        # writer marks them as it marks timed-out ones, and a late sender is told the execution ended.
        self._timed_out_callbacks.extend(self.open_callbacks())

    def fire_due_timers(self, now: float) -> int:
        """Complete the waits, ready the retries and time out the callbacks due at `now`."""
        fired = 0
        while self._timers and self._timers[0][0] <= now:
            entry = heapq.heappop(self._timers)
            if not self._timer_is_live(entry):
                continue
            _, _, op_id, kind = entry
            op = self.operations[op_id]
            if kind == _TIMER_WAIT:
                done = dataclasses.replace(
                    op, status=OperationStatus.SUCCEEDED, end_timestamp=to_datetime(now)
                )
                self._set(done)
                duration = self.meta.get(op_id, {}).get("duration")
                self._event(
                    "WaitSucceeded", now, done, {"Duration": duration} if duration is not None else {}
                )
            elif kind == _TIMER_RETRY:
                self._set(dataclasses.replace(op, status=OperationStatus.READY))
            else:
                deadline = self._callback_deadline(op_id)
                error_type = deadline[1] if deadline else CALLBACK_TIMEOUT_TYPE
                message = (
                    "Callback timed out"
                    if error_type == CALLBACK_TIMEOUT_TYPE
                    else "Callback heartbeat timed out"
                )
                error = ErrorObject(message=message, type=error_type, data=None, stack_trace=None)
                details = op.callback_details or CallbackDetails(callback_id="")
                done = dataclasses.replace(
                    op,
                    status=OperationStatus.TIMED_OUT,
                    end_timestamp=to_datetime(now),
                    callback_details=dataclasses.replace(details, error=error),
                )
                self._set(done)
                self._event("CallbackTimedOut", now, done, {"Error": {"Payload": _error_dict(error)}})
                if details.callback_id:
                    self._timed_out_callbacks.append(details.callback_id)
            fired += 1
        if fired:
            self.needs_invocation = True
        return fired

    def absorb(self, inputs: Iterable[ExternalInput], now: float) -> int:
        """Apply external inputs (callback results, child results). Returns how many changed state."""
        changed = 0
        for item in inputs:
            if item.input_id in self.absorbed_input_ids:
                continue
            if item.offloaded and not self.offloaded_batches:
                # Its payload's object stays in the execution's folder, and the batch recording it may be
                # small (deflated, or carried on the lease): the log remembers ("po") that there are
                # objects to retire at the end.
                self.offloaded_batches = True
                self._flags["po"] = 1
            if not item.on_callback_record:  # an `in#` item: remembered in the log, then deleted
                self.absorbed_input_ids.add(item.input_id)
                self._absorbed_now.append(item.input_id)
            op = self.operations.get(item.operation_id or "")
            if op is None or op.status in TERMINAL_STATUSES:
                continue  # a late or repeated completion is a no-op
            if self._absorb_one(item, op, now):
                changed += 1
        if changed:
            self.needs_invocation = True
        return changed

    def _absorb_one(self, item: ExternalInput, op: Operation, now: float) -> bool:
        error = ErrorObject.from_dict(item.error) if item.error else None
        end = to_datetime(now)
        if item.kind is InputKind.CALLBACK_HEARTBEAT:
            seconds = self.meta.get(op.operation_id, {}).get("heartbeatSeconds")
            if seconds:
                self._set_meta(op.operation_id, heartbeatAt=now + float(seconds))
                self._push_callback_timer(op.operation_id)
            return False
        if item.kind in (InputKind.CALLBACK_SUCCEEDED, InputKind.CALLBACK_FAILED):
            if op.operation_type is not OperationType.CALLBACK:
                return False
            details = op.callback_details or CallbackDetails(callback_id="")
            if item.kind is InputKind.CALLBACK_SUCCEEDED:
                done = dataclasses.replace(
                    op,
                    status=OperationStatus.SUCCEEDED,
                    end_timestamp=end,
                    callback_details=dataclasses.replace(details, result=item.payload),
                )
                self._set(done)
                self._event("CallbackSucceeded", now, done, {"Result": {"Payload": item.payload}})
            else:
                done = dataclasses.replace(
                    op,
                    status=OperationStatus.FAILED,
                    end_timestamp=end,
                    callback_details=dataclasses.replace(details, error=error),
                )
                self._set(done)
                self._event("CallbackFailed", now, done, {"Error": {"Payload": _error_dict(error)}})
            return True
        if op.operation_type is not OperationType.CHAINED_INVOKE:
            return False
        if item.kind is InputKind.CHILD_SUCCEEDED:
            done = dataclasses.replace(
                op,
                status=OperationStatus.SUCCEEDED,
                end_timestamp=end,
                chained_invoke_details=ChainedInvokeDetails(result=item.payload),
            )
            self._set(done)
            self._event("ChainedInvokeSucceeded", now, done, {"Result": {"Payload": item.payload}})
        elif item.kind in _CHILD_ENDINGS:
            status, event_type = _CHILD_ENDINGS[item.kind]
            done = dataclasses.replace(
                op,
                status=status,
                end_timestamp=end,
                chained_invoke_details=ChainedInvokeDetails(error=error),
            )
            self._set(done)
            self._event(event_type, now, done, {"Error": {"Payload": _error_dict(error)}})
        else:
            return False
        return True

    # ------------------------------------------------------------------ SDK checkpoints

    def apply_update(self, update: OperationUpdate, now: float) -> None:
        """Apply one OperationUpdate from the SDK; completing a finished operation again is a no-op."""
        current = self.operations.get(update.operation_id)
        if update.operation_type is OperationType.EXECUTION:
            if update.action is OperationAction.SUCCEED:
                self.execution_result = update.payload
                self._flags["r"] = update.payload
            elif update.action is OperationAction.FAIL:
                self.execution_error = update.error
                self._flags["x"] = _error_dict(update.error)
            return
        if current is not None and current.status in TERMINAL_STATUSES:
            return
        handler = _APPLIERS.get(update.operation_type)
        if handler is None:
            raise ValueError(f"unsupported operation type {update.operation_type.value!r}")
        handler(self, update, current, now)

    def _base(
        self, update: OperationUpdate, current: Operation | None, status: OperationStatus, now: float
    ) -> Operation:
        return Operation(
            operation_id=update.operation_id,
            operation_type=update.operation_type,
            status=status,
            parent_id=update.parent_id
            if update.parent_id is not None
            else (current.parent_id if current else None),
            name=update.name if update.name is not None else (current.name if current else None),
            sub_type=update.sub_type
            if update.sub_type is not None
            else (current.sub_type if current else None),
            start_timestamp=current.start_timestamp
            if current and current.start_timestamp
            else to_datetime(now),
            end_timestamp=to_datetime(now) if status in TERMINAL_STATUSES else None,
        )

    def _apply_step(self, update: OperationUpdate, current: Operation | None, now: float) -> None:
        attempt = current.step_details.attempt if current and current.step_details else 0
        action = update.action
        if action is OperationAction.START:
            if current is not None and current.status is OperationStatus.STARTED:
                return
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.STARTED, now),
                step_details=StepDetails(attempt=attempt),
            )
            self._set(op)
            self._event("StepStarted", now, op, {})
        elif action is OperationAction.RETRY:
            delay = update.step_options.next_attempt_delay_seconds if update.step_options else 0
            next_at = now + delay
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.PENDING, now),
                step_details=StepDetails(
                    attempt=attempt + 1,
                    next_attempt_timestamp=to_datetime(next_at),
                    result=update.payload,
                    error=update.error,
                ),
            )
            self._set(op)
            self._push_timer(_next_attempt_at(op), op.operation_id, _TIMER_RETRY)
            retry = {"CurrentAttempt": attempt + 1, "NextAttemptDelaySeconds": delay}
            if update.error is None:
                # A poll of wait_for_condition that asks to check again: AWS records the state it
                # returned as a succeeded attempt; only a retry with an error is a failed one.
                result: dict[str, Any] = {"Truncated": False}
                if update.payload is not None:
                    result["Payload"] = update.payload
                self._event("StepSucceeded", now, op, {"Result": result, "RetryDetails": retry})
            else:
                error = {"Payload": _error_dict(update.error)}
                self._event("StepFailed", now, op, {"Error": error, "RetryDetails": retry})
        elif action is OperationAction.SUCCEED:
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.SUCCEEDED, now),
                step_details=StepDetails(attempt=attempt + 1, result=update.payload),
            )
            self._set(op)
            self._event(
                "StepSucceeded",
                now,
                op,
                {
                    "Result": {"Payload": update.payload, "Truncated": False},
                    "RetryDetails": {"CurrentAttempt": attempt + 1},
                },
            )
        elif action is OperationAction.FAIL:
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.FAILED, now),
                step_details=StepDetails(attempt=attempt + 1, error=update.error),
            )
            self._set(op)
            self._event(
                "StepFailed",
                now,
                op,
                {
                    "Error": {"Payload": _error_dict(update.error)},
                    "RetryDetails": {"CurrentAttempt": attempt + 1},
                },
            )
        else:
            raise ValueError(
                f"invalid action {action.value!r} for a STEP; allowed: START, RETRY, SUCCEED, FAIL"
            )

    def _apply_wait(self, update: OperationUpdate, current: Operation | None, now: float) -> None:
        if update.action is OperationAction.START:
            if current is not None:
                return
            seconds = update.wait_options.wait_seconds if update.wait_options else 0
            end_at = now + seconds
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.STARTED, now),
                wait_details=WaitDetails(scheduled_end_timestamp=to_datetime(end_at)),
            )
            self._set(op)
            self._set_meta(op.operation_id, duration=seconds)
            self._push_timer(end_at, op.operation_id, _TIMER_WAIT)
            self._event("WaitStarted", now, op, {"Duration": seconds, "ScheduledEndTimestamp": _ms(end_at)})
        elif update.action is OperationAction.CANCEL:
            if current is None:
                return
            op = dataclasses.replace(
                current, status=OperationStatus.CANCELLED, end_timestamp=to_datetime(now)
            )
            self._set(op)
            self._event("WaitCancelled", now, op, {})
        else:
            raise ValueError(f"invalid action {update.action.value!r} for a WAIT; allowed: START, CANCEL")

    def _apply_callback(self, update: OperationUpdate, current: Operation | None, now: float) -> None:
        if update.action is not OperationAction.START:
            raise ValueError(f"invalid action {update.action.value!r} for a CALLBACK; allowed: START")
        if current is not None:
            return
        callback_id = (
            derived_callback_id(self.callback_key, self.execution_id, update.operation_id)
            if self.callback_key
            else new_callback_id()
        )
        op = dataclasses.replace(
            self._base(update, current, OperationStatus.STARTED, now),
            callback_details=CallbackDetails(callback_id=callback_id),
        )
        self._set(op)
        options = update.callback_options
        timeout = options.timeout_seconds if options else 0
        heartbeat = options.heartbeat_timeout_seconds if options else 0
        meta: dict[str, Any] = {}
        if timeout:
            meta["timeoutAt"] = now + timeout
        if heartbeat:
            meta["heartbeatSeconds"] = heartbeat
            meta["heartbeatAt"] = now + heartbeat
        if meta:
            self._set_meta(op.operation_id, **meta)
            self._push_callback_timer(op.operation_id)
        self._new_callbacks.append((callback_id, op.operation_id))
        details: dict[str, Any] = {"CallbackId": callback_id}
        if timeout:
            details["Timeout"] = timeout
        if heartbeat:
            details["HeartbeatTimeout"] = heartbeat
        self._event("CallbackStarted", now, op, details)

    def _apply_context(self, update: OperationUpdate, current: Operation | None, now: float) -> None:
        action = update.action
        if action is OperationAction.START:
            if current is not None:
                return
            op = self._base(update, current, OperationStatus.STARTED, now)
            self._set(op)
            self._event("ContextStarted", now, op, {})
            return
        replay_children = bool(update.context_options and update.context_options.replay_children)
        if action is OperationAction.SUCCEED:
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.SUCCEEDED, now),
                context_details=ContextDetails(replay_children=replay_children, result=update.payload),
            )
            self._set(op)
            self._event("ContextSucceeded", now, op, {"Result": {"Payload": update.payload}})
        elif action is OperationAction.FAIL:
            op = dataclasses.replace(
                self._base(update, current, OperationStatus.FAILED, now),
                context_details=ContextDetails(replay_children=replay_children, error=update.error),
            )
            self._set(op)
            self._event("ContextFailed", now, op, {"Error": {"Payload": _error_dict(update.error)}})
        else:
            raise ValueError(f"invalid action {action.value!r} for a CONTEXT; allowed: START, SUCCEED, FAIL")

    def _apply_chained_invoke(self, update: OperationUpdate, current: Operation | None, now: float) -> None:
        if update.action is not OperationAction.START:
            raise ValueError(f"invalid action {update.action.value!r} for a CHAINED_INVOKE; allowed: START")
        if current is not None:
            return
        options = update.chained_invoke_options
        if options is None:
            raise ValueError(
                f"CHAINED_INVOKE {update.operation_id!r} has no ChainedInvokeOptions (FunctionName)"
            )
        tenant_id = options.tenant_id
        details: dict[str, Any] = {
            "FunctionName": options.function_name,
            "Input": {"Payload": update.payload},
        }
        if tenant_id is not None:
            details["TenantId"] = tenant_id
        try:
            if update.payload is not None and len(update.payload.encode()) > MAX_CHAINED_INVOKE_PAYLOAD_BYTES:
                # AWS refuses such a START (InvalidParameterValueException): the invoke fails with it.
                raise InvokeRefused(
                    {
                        "ErrorType": "InvalidParameterValueException",
                        "ErrorMessage": CHAINED_INVOKE_INPUT_TOO_LARGE,
                    }
                )
            if self.describe_invoke is not None:
                details.update(self.describe_invoke(update.operation_id, options.function_name, tenant_id))
        except InvokeRefused as refused:
            # As AWS: the operation is FAILED in the response to its START, which starts nothing, and its
            # history shows the function name and the error without the input; one batch holds both.
            error = ErrorObject.from_dict(refused.error)
            failed = dataclasses.replace(
                self._base(update, current, OperationStatus.FAILED, now),
                chained_invoke_details=ChainedInvokeDetails(error=error),
            )
            self._set(failed)
            del details["Input"]
            self._event("ChainedInvokeStarted", now, failed, details)
            self._event("ChainedInvokeFailed", now, failed, {"Error": {"Payload": _error_dict(error)}})
            return
        op = dataclasses.replace(
            self._base(update, current, OperationStatus.STARTED, now),
            chained_invoke_details=ChainedInvokeDetails(),
        )
        self._set(op)
        meta: dict[str, Any] = {"target": options.function_name, "input": update.payload}
        if tenant_id is not None:
            meta["tenant"] = tenant_id
        self._set_meta(op.operation_id, **meta)
        self._child_starts.append(
            ChildStart(op.operation_id, options.function_name, update.payload, tenant_id)
        )
        self._event("ChainedInvokeStarted", now, op, details)

    # ------------------------------------------------------------------ flushing

    def _stored_event(
        self,
        event: tuple[str, int, str | None, dict[str, Any]],
        positions: dict[str, int],
        stored_operations: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """An event as stored: {"t": type, "s": epoch ms, "o": index of its operation in this batch,
        "d": details, "r": 1 when Result.Payload is the operation's stored result}. The operation's Id,
        Name, SubType and ParentId and a repeated result are not stored twice (stepwell.core.history
        restores them), which keeps a step's batch under one DynamoDB write unit."""
        event_type, stamp, op_id, details = event
        stored: dict[str, Any] = {"t": event_type, "s": stamp}
        if op_id is not None:
            index = positions.get(op_id)
            if index is None:  # not changed in this batch: keep its identity in the event itself
                op = self.operations[op_id]
                stored["id"] = {
                    "Id": op_id,
                    "Name": op.name,
                    "SubType": op.sub_type,
                    "ParentId": op.parent_id,
                }
            else:
                stored["o"] = index
                result = details.get("Result")
                payload = result.get("Payload") if isinstance(result, dict) else None
                if (
                    isinstance(result, dict)
                    and payload is not None
                    and payload == operation_result(stored_operations[index])
                ):
                    details = {**details, "Result": {k: v for k, v in result.items() if k != "Payload"}}
                    stored["r"] = 1
        if details:
            stored["d"] = details
        return stored

    def flush(self) -> FlushedBatch:
        """Take the unflushed changes as the next batch's body (the caller appends it at next_seq)."""
        body: dict[str, Any] = {}
        operations = list(self._dirty.values())
        stored_operations = [_operation_to_json(op) for op in operations]
        if stored_operations:
            body["o"] = stored_operations
        if self._events:
            positions = {op.operation_id: index for index, op in enumerate(operations)}
            body["e"] = [self._stored_event(event, positions, stored_operations) for event in self._events]
        if self._absorbed_now:
            body["i"] = self._absorbed_now
        if self._dirty_meta:
            body["d"] = {op_id: self.meta[op_id] for op_id in self._dirty_meta}
        body.update(self._flags)
        if self.input_ref is not None:
            strip_execution_input(body, self.input_ref)
        if stored_operations and not any(event.get("t") == "ExecutionStarted" for event in body.get("e", ())):
            # A later change of the EXECUTION operation (its end) leaves out its input, which the batch
            # that started it holds: the fold keeps it from there (an end would otherwise copy the input).
            for stored in stored_operations:
                if stored.get("Type") == OperationType.EXECUTION.value:
                    stored.pop("ExecutionDetails", None)
        # Whether the execution still needs an invocation after this batch (a duplicate message finds
        # "no" and does nothing).
        body["w"] = 1 if self.needs_invocation else 0
        took_carried = self._carried is not None
        if self._carried is not None:
            body = _after_carried(self._carried, body)
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


_APPLIERS = {
    OperationType.STEP: Journal._apply_step,
    OperationType.WAIT: Journal._apply_wait,
    OperationType.CALLBACK: Journal._apply_callback,
    OperationType.CONTEXT: Journal._apply_context,
    OperationType.CHAINED_INVOKE: Journal._apply_chained_invoke,
}


def _after_carried(carried: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """One batch body of a carried batch followed by `body`: the carried operations, events and private
    state first (an operation in both ends as `body` has it, as folding them in turn would), `body`'s
    events renumbered to name their operations by position in the joined "o", and `body`'s flags over
    the carried ones."""
    carried_operations = carried.get("o", [])
    joined = {**carried, **body}
    operations = [*carried_operations, *body.get("o", [])]
    if operations:
        joined["o"] = operations
    shift = len(carried_operations)
    events = [
        *carried.get("e", []),
        *({**event, "o": event["o"] + shift} if "o" in event else event for event in body.get("e", [])),
    ]
    if events:
        joined["e"] = events
    meta = {**carried.get("d", {}), **body.get("d", {})}
    if meta:
        joined["d"] = meta
    absorbed = [*carried.get("i", []), *body.get("i", [])]
    if absorbed:
        joined["i"] = absorbed
    return joined


def operation_result(stored_operation: dict[str, Any]) -> str | None:
    """The result payload inside a stored operation (its type's details), if any."""
    for key in ("StepDetails", "ContextDetails", "CallbackDetails", "ChainedInvokeDetails"):
        details = stored_operation.get(key)
        if isinstance(details, dict):
            result = details.get("Result")
            return result if isinstance(result, str) else None
    return None


def strip_execution_input(body: dict[str, Any], input_ref: str) -> None:
    """Store the reference of an offloaded execution input in place of the input (the EXECUTION
    operation and ExecutionStarted carry it; each would otherwise be a copy of the whole input)."""
    stripped = False
    for op in body.get("o", ()):
        details = op.get("ExecutionDetails")
        if op.get("Type") == OperationType.EXECUTION.value and isinstance(details, dict):
            details.pop("InputPayload", None)
            stripped = True
    for event in body.get("e", ()):
        if event.get("t") == "ExecutionStarted" and isinstance(event.get("d", {}).get("Input"), dict):
            event["d"]["Input"].pop("Payload", None)
            stripped = True
    if stripped:
        body["ir"] = input_ref


def restore_execution_input(body: dict[str, Any], input_payload: str) -> None:
    """Undo strip_execution_input on a loaded body, given the input its "ir" reference names."""
    for op in body.get("o", ()):
        if op.get("Type") == OperationType.EXECUTION.value and isinstance(op.get("ExecutionDetails"), dict):
            op["ExecutionDetails"]["InputPayload"] = input_payload
    for event in body.get("e", ()):
        if event.get("t") == "ExecutionStarted" and isinstance(event.get("d", {}).get("Input"), dict):
            event["d"]["Input"]["Payload"] = input_payload


def new_callback_id() -> str:
    """192 random bits (an unguessable capability), URL-safe; the fixed prefix keeps ids from starting
    with "-", which command lines would take for an option."""
    return "cb" + secrets.token_urlsafe(24)


def new_callback_key() -> str:
    """An execution's callback key (ExecutionRecord.callback_key): 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def derived_callback_id(key: str, execution_id: str, operation_id: str) -> str:
    """The callback id of an execution's callback operation: 192 bits of an HMAC-SHA256 of the execution
    and operation ids under the execution's secret key, so as unguessable as new_callback_id's without the
    key, and the same every time a run starts that operation. A replay that did not find the callback's
    start in the log makes the same id again, so the start need not be stored before the id is handed
    out: only the callback's record, which resolves it (Engine.resolve_callbacks)."""
    message = f"{execution_id}\x00{operation_id}".encode()
    digest = hmac.new(key.encode(), message, hashlib.sha256).digest()[:24]
    return "cb" + base64.urlsafe_b64encode(digest).decode()


def encode_body(body: dict[str, Any]) -> str:
    return json.dumps(body, separators=(",", ":"))


def decode_body(text: str) -> dict[str, Any]:
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"a batch body must be a JSON object, got {type(data).__name__}")
    return data
