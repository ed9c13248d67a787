"""The journal: one execution's operation state, folded from its append-only batch log, and how it changes.

Journal adds to the state (stepwell.core.journal_state, which holds, folds and flushes it) the transitions:
the engine's (an execution's start, its runs on a worker version, invocations' ends, its end), external
inputs and due timers absorbed between invocations, and the SDK's checkpoints (OperationUpdates), each in
O(updates) and recording the history events it makes.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import heapq
import hmac
import secrets
from collections.abc import Iterable
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import (
    CallbackDetails,
    ChainedInvokeDetails,
    ContextDetails,
    ErrorObject,
    ExecutionDetails,
    Operation,
    OperationAction,
    OperationStatus,
    OperationType,
    OperationUpdate,
    StepDetails,
    WaitDetails,
)

# decode_body, encode_body and TERMINAL_STATUSES are re-exported (`as`): callers import them from here.
from stepwell.core.batch_body import decode_body as decode_body
from stepwell.core.batch_body import encode_body as encode_body
from stepwell.core.batch_keys import (
    CLIENT_TOKEN,
    CODE_VERSION,
    CONSECUTIVE_CRASHES,
    ENDED,
    ERROR,
    EXECUTION_TIMEOUT,
    PAYLOAD_OBJECTS,
    RESULT,
)
from stepwell.core.invoke_targets import CHAINED_INVOKE_INPUT_TOO_LARGE, MAX_CHAINED_INVOKE_PAYLOAD_BYTES
from stepwell.core.journal_state import (
    CALLBACK_TIMEOUT_TYPE,
    TIMER_RETRY,
    TIMER_WAIT,
    ChildStart,
    JournalState,
    epoch_ms,
    next_attempt_at,
    to_datetime,
)
from stepwell.core.journal_state import TERMINAL_STATUSES as TERMINAL_STATUSES
from stepwell.core.tracing import caller_trace_header, trace_id_of
from stepwell.model import ExternalInput, InputKind

# A chained invoke's child ended without a result: the operation's status and the parent's event.
_CHILD_ENDINGS = {
    InputKind.CHILD_FAILED: (OperationStatus.FAILED, "ChainedInvokeFailed"),
    InputKind.CHILD_STOPPED: (OperationStatus.STOPPED, "ChainedInvokeStopped"),
    InputKind.CHILD_TIMED_OUT: (OperationStatus.TIMED_OUT, "ChainedInvokeTimedOut"),
}


def _error_dict(error: ErrorObject | None) -> dict[str, Any]:
    return dict(error.to_dict()) if error is not None else {}


class InvokeRefused(Exception):
    """A chained invoke's target cannot be started: the invoke fails in the checkpoint that starts it, as
    AWS resolves the target then, with `error` (an ErrorObject as a dict)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("ErrorMessage", ""))
        self.error = error


class Journal(JournalState):
    """An execution's journal: its state (JournalState) and the transitions that change it."""

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
            self._flags[EXECUTION_TIMEOUT] = execution_timeout
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
        self._flags[CODE_VERSION] = version

    def note_client_token(self, client_token: str) -> None:
        """Keep a remote function's checkpoint ClientToken in the next batch, so a retry of that checkpoint
        finds it there and is answered as the first time (stepwell.core.remote_checkpoints)."""
        self._flags[CLIENT_TOKEN] = client_token

    @property
    def logged_pause(self) -> float | None:
        """The request time of the pause the log's last ExecutionPaused recorded, while no ExecutionResumed
        followed it (the EXECUTION operation's private state): each pause and resume is logged once."""
        paused_by = self.meta.get(self.execution_operation_id, {}).get("pausedBy")
        return float(paused_by) if paused_by is not None else None

    def execution_paused(
        self, requested_at: float, now: float, reason: str | None, timeout_paused: bool
    ) -> None:
        """Record that the execution paused (PauseDurableExecution, requested at `requested_at`)."""
        details: dict[str, Any] = {
            "PauseRequestTimestamp": epoch_ms(requested_at),
            "ExecutionTimeoutPaused": timeout_paused,
        }
        if reason is not None:
            details["Reason"] = {"Payload": reason}
        self._event("ExecutionPaused", now, None, details)
        self._set_meta(self.execution_operation_id, pausedBy=requested_at)

    def execution_resumed(self, requested_at: float, now: float, reason: str | None) -> None:
        """Record that the paused execution resumed (ResumeDurableExecution, requested at `requested_at`)."""
        details: dict[str, Any] = {"ResumeRequestTimestamp": epoch_ms(requested_at)}
        if reason is not None:
            details["Reason"] = {"Payload": reason}
        self._event("ExecutionResumed", now, None, details)
        self._set_meta(self.execution_operation_id, pausedBy=None)

    def invocation_completed(
        self,
        started_at: float,
        now: float,
        request_id: str,
        error: dict[str, Any] | None,
        *,
        run_again: bool = False,
    ) -> None:
        """Record the end of an invocation. `run_again`: something became ready while it ran."""
        details: dict[str, Any] = {
            "StartTimestamp": epoch_ms(started_at),
            "EndTimestamp": epoch_ms(now),
            "RequestId": request_id,
        }
        if error is not None:
            details["Error"] = {"Payload": error}
            self.consecutive_crashes += 1
            self.needs_invocation = True
        else:
            self.consecutive_crashes = 0
            self.needs_invocation = run_again
        self._flags[CONSECUTIVE_CRASHES] = self.consecutive_crashes
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
        self._flags[ENDED] = 1
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
            if kind == TIMER_WAIT:
                done = dataclasses.replace(
                    op, status=OperationStatus.SUCCEEDED, end_timestamp=to_datetime(now)
                )
                self._set(done)
                duration = self.meta.get(op_id, {}).get("duration")
                self._event(
                    "WaitSucceeded", now, done, {"Duration": duration} if duration is not None else {}
                )
            elif kind == TIMER_RETRY:
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
                # small (deflated, or carried on the lease): the log remembers (PAYLOAD_OBJECTS) that
                # there are objects to retire at the end.
                self.offloaded_batches = True
                self._flags[PAYLOAD_OBJECTS] = 1
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
                self._flags[RESULT] = update.payload
            elif update.action is OperationAction.FAIL:
                self.execution_error = update.error
                self._flags[ERROR] = _error_dict(update.error)
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
            self._push_timer(next_attempt_at(op), op.operation_id, TIMER_RETRY)
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
            self._push_timer(end_at, op.operation_id, TIMER_WAIT)
            self._event(
                "WaitStarted", now, op, {"Duration": seconds, "ScheduledEndTimestamp": epoch_ms(end_at)}
            )
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
        # The SDK's OpenTelemetry plugin propagates the invoke's span as its XAmznTraceId: a valid one is the
        # child's trace header; a malformed one is ignored (the child inherits the parent's), as Lambda
        # never refuses an invocation for its tracing header.
        trace = caller_trace_header(options.x_amzn_trace_id)
        if trace is not None and not (trace_id_of(trace) or "").strip("0"):
            trace = None  # OpenTelemetry's invalid span context (all zeros), as a plugin without a provider
        if trace is not None:
            meta["trace"] = trace
        self._set_meta(op.operation_id, **meta)
        self._child_starts.append(
            ChildStart(op.operation_id, options.function_name, update.payload, tenant_id, trace)
        )
        self._event("ChainedInvokeStarted", now, op, details)


_APPLIERS = {
    OperationType.STEP: Journal._apply_step,
    OperationType.WAIT: Journal._apply_wait,
    OperationType.CALLBACK: Journal._apply_callback,
    OperationType.CONTEXT: Journal._apply_context,
    OperationType.CHAINED_INVOKE: Journal._apply_chained_invoke,
}


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
