"""Inputs from outside an execution's run: callback results, failures and heartbeats from their senders,
children's ends and other inputs (Engine.deliver), each written where the execution's next run reads it,
then the execution woken; and the checks of what senders give (error objects).

ExternalInputs is a base of stepwell.core.engine.Engine (whose fields it reads), so its methods are the
engine's: Engine.send_callback_success, ...
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from stepwell.core.log_io import LogIO
from stepwell.errors import (
    CallbackAlreadyClosed,
    CallbackNotFound,
    ExecutionAlreadyEnded,
    InvalidArgument,
    PayloadTooLarge,
)
from stepwell.limits import PayloadLimits
from stepwell.model import (
    CallbackRef,
    ExecutionRecord,
    ExternalInput,
    InputKind,
    InvokeMessage,
    kept_on_callback,
    lone_surrogate_at,
)
from stepwell.ports import WorkQueue

# A callback result up to this size (payload and error) is completed without reading the callback's record
# first (Engine._completed_callback); a larger one may need an object under the execution's prefix.
SMALL_CALLBACK_RESULT_BYTES = 16 * 1024

ERROR_TEXT_FIELDS = ("ErrorType", "ErrorMessage", "ErrorData")
# An error object is kept in an item (the execution record, an external input): bound it well below 400 KB.
MAX_ERROR_BYTES = 64 * 1024


def check_error_object(error: object, what: str) -> dict[str, Any] | None:
    """An ErrorObject as Lambda's callback-failure and stop APIs take it: ErrorType, ErrorMessage and
    ErrorData strings and StackTrace a list of strings, all optional, at most MAX_ERROR_BYTES as JSON."""
    if error is None:
        return None
    allowed = [*ERROR_TEXT_FIELDS, "StackTrace"]
    if not isinstance(error, Mapping):
        raise InvalidArgument(f"{what} error must be an object with fields {allowed}, got {error!r}")
    unknown = set(error) - set(allowed)
    if unknown:
        raise InvalidArgument(f"unknown {what} error fields {sorted(map(str, unknown))}; allowed: {allowed}")
    for key in ERROR_TEXT_FIELDS:
        if key in error and not isinstance(error[key], str):
            raise InvalidArgument(f"{what} error field {key} must be a string, got {error[key]!r}")
    trace = error.get("StackTrace")
    if trace is not None and not (isinstance(trace, list) and all(isinstance(line, str) for line in trace)):
        raise InvalidArgument(f"{what} error field StackTrace must be a list of strings, got {trace!r}")
    size = len(json.dumps(dict(error)).encode("utf-8"))
    if size > MAX_ERROR_BYTES:
        raise PayloadTooLarge(f"{what} error is {size} bytes as JSON; the limit is {MAX_ERROR_BYTES}")
    return dict(error)


@dataclass(frozen=True)
class CallbackSent:
    """A completed callback: its execution as read after the completion, and the result as the callback's
    record keeps it (None when it may hold an object's reference), for a run the sender makes itself."""

    record: ExecutionRecord
    result: ExternalInput | None


def _input_id(now: float) -> str:
    # Zero-padded milliseconds first: inputs sort (and are absorbed) in arrival order.
    return f"{int(now * 1000):015d}#{secrets.token_hex(6)}"


class ExternalInputs(LogIO):
    """Inputs from outside and callback senders, for the Engine that derives from it."""

    # The Engine's fields this class uses besides LogIO's (stepwell.core.engine.Engine).
    queue: WorkQueue
    limits: PayloadLimits

    def deliver(
        self,
        execution_id: str,
        kind: InputKind,
        operation_id: str | None,
        *,
        payload: str | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> None:
        """Write an external input for the execution and wake it."""
        self.store.put_external_input(
            execution_id, self._external_input(execution_id, kind, operation_id, payload=payload, error=error)
        )
        self.queue.enqueue(InvokeMessage(execution_id).to_body())

    def _external_input(
        self,
        execution_id: str,
        kind: InputKind,
        operation_id: str | None,
        *,
        payload: str | None,
        error: Mapping[str, Any] | None,
    ) -> ExternalInput:
        """An input for the execution as of now, its payload offloaded when too large for an item."""
        now = self.clock.now()
        # An object's key carries its content's digest: of two racing senders, neither replaces the
        # other's object. One that loses its race leaves its object to expire with the execution's
        # others, unless the execution ends with none (see docs/security.md).
        stored, is_ref = self.offload(execution_id, f"in-{operation_id}", payload)
        return ExternalInput(
            input_id=_input_id(now),
            kind=kind,
            created_at=now,
            operation_id=operation_id,
            payload=stored,
            payload_is_ref=is_ref,
            error=dict(error) if error is not None else None,
        )

    def _callback(self, callback_id: str) -> tuple[CallbackRef, ExecutionRecord]:
        """The callback's mapping and its (running) execution's record."""
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        ref = self.store.get_callback(callback_id)
        record = self.store.get_execution(ref.execution_id) if ref is not None else None
        return _open_callback(callback_id, ref, record)

    def send_callback_success(
        self, callback_id: str, result: str | bytes | None = None, wake: bool = True
    ) -> CallbackSent:
        """Complete a callback with `result` (JSON text, as Lambda's SendDurableExecutionCallbackSuccess).
        `wake` False: no message wakes the execution, whose run the caller makes itself (Worker.run, with
        what this returns) and, should that fail, sends."""
        if isinstance(result, bytes):
            try:
                text: str | None = result.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidArgument(f"callback result must be UTF-8 text: {error}") from None
        elif result is None or isinstance(result, str):
            text = result
        else:
            raise InvalidArgument(
                f"callback result must be JSON text (str or UTF-8 bytes) or None, got {type(result).__name__}"
                " (serialize it first, e.g. json.dumps)"
            )
        self.limits.callback_result.check("the callback result", text)
        return self._complete_callback(callback_id, InputKind.CALLBACK_SUCCEEDED, payload=text, wake=wake)

    def send_callback_failure(self, callback_id: str, error: Mapping[str, Any] | None = None) -> None:
        """Fail a callback; `error` has ErrorType, ErrorMessage, ErrorData, StackTrace (all optional)."""
        checked = check_error_object(error, "callback") or {}
        self._complete_callback(callback_id, InputKind.CALLBACK_FAILED, error=checked)

    def _complete_callback(
        self,
        callback_id: str,
        kind: InputKind,
        *,
        payload: str | None = None,
        error: Mapping[str, Any] | None = None,
        wake: bool = True,
    ) -> CallbackSent:
        """The first completion wins: one conditional write marks the callback completed and keeps its
        result on its record, where the execution's next run reads it; a later one is
        CallbackAlreadyClosed."""
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        text = json.dumps(dict(error), ensure_ascii=False) if error else payload or ""
        at = lone_surrogate_at(text)
        if at is not None:
            raise InvalidArgument(
                f"callback {'error' if error else 'result'} must be UTF-8 text, got a lone surrogate at "
                f"character {at}: {text[max(0, at - 20) : at + 21]!r}"
            )
        size = len((payload or "").encode()) + (len(json.dumps(dict(error)).encode()) if error else 0)
        if size <= min(SMALL_CALLBACK_RESULT_BYTES, self.inline_limit):
            # A small result needs no object, so it is written without reading the record first: the
            # write answers with the record, then the execution is read as before.
            result = self._external_input("", kind, None, payload=payload, error=error)
            ref, record = self._completed_callback(callback_id, result)
            result = replace(result, operation_id=ref.operation_id)
            kept = kept_on_callback(result, callback_id, ref.operation_id, result.created_at)
        else:
            ref, record = self._callback(callback_id)
            # Built (and offloaded) before the write that may lose the race.
            result = self._external_input(
                ref.execution_id, kind, ref.operation_id, payload=payload, error=error
            )
            if not self.store.complete_callback(callback_id, result.created_at, result, ref.execution_id):
                raise _already_completed(callback_id)
            kept = None  # its record may keep an object's reference: the run reads it
        try:
            if (
                record.code_version is not None
                and record.code_version != self.code_version
                and ref.version != record.code_version
            ):
                # Pinned to a worker version this sender is not, whose run did not create the callback (an
                # engine before results on callback records, or the execution moved version since): its
                # code may read results only from inputs. Both are written; whichever the worker reads
                # first ends the operation and the other is a no-op.
                self.store.put_external_input(ref.execution_id, result)
            if wake:
                self.queue.enqueue(InvokeMessage(ref.execution_id).to_body())
        except Exception:
            # The execution was not woken: the sender may try again.
            self.store.reopen_callback(callback_id)
            raise
        return CallbackSent(record, kept)

    def _completed_callback(
        self, callback_id: str, result: ExternalInput
    ) -> tuple[CallbackRef, ExecutionRecord]:
        """Complete the callback with `result` (small: kept inline) in one conditional write, then check
        its execution still runs (else the completion is undone): the errors of `_callback`, in its order."""
        before = self.store.complete_callback_once(callback_id, result.created_at, result)
        record = self.store.get_execution(before.execution_id) if before is not None else None
        ended = record is None or record.status.is_terminal
        if before is not None and not before.completed and ended:
            self.store.reopen_callback(callback_id)  # this call completed it, but the execution ended
        return _open_callback(callback_id, before, record)

    def send_callback_heartbeat(self, callback_id: str) -> None:
        ref, _ = self._callback(callback_id)
        self.deliver(ref.execution_id, InputKind.CALLBACK_HEARTBEAT, ref.operation_id)


def _open_callback(
    callback_id: str, ref: CallbackRef | None, record: ExecutionRecord | None
) -> tuple[CallbackRef, ExecutionRecord]:
    """`ref` and its execution's `record` as read for a sender, or the sender's error, in this order: no
    such callback, its execution has ended, it has already completed."""
    if ref is None:
        raise CallbackNotFound(f"no callback with id {callback_id!r}")
    if record is None or record.status.is_terminal:
        raise ExecutionAlreadyEnded(
            f"callback {callback_id!r} belongs to execution {ref.execution_id!r}, which has ended"
        )
    if ref.completed:
        raise _already_completed(callback_id)
    return ref, record


def _already_completed(callback_id: str) -> CallbackAlreadyClosed:
    return CallbackAlreadyClosed(f"callback {callback_id!r} has already completed (or timed out)")
