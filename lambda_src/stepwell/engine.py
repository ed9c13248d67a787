"""The engine's API on its ports: start, stop, callbacks, describe, list and history, plus the log
writing shared by the worker and the service client.

The same Engine runs on the memory backend (stepwell.testing.local) and on AWS (the adapters' store,
queue, timers and payload store).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepwell.errors import (
    CallbackNotFound,
    ExecutionAlreadyEnded,
    ExecutionNotFound,
    InvalidArgument,
    WorkflowNotFound,
)
from stepwell.history import events_from_bodies
from stepwell.journal import FlushedBatch, Journal, decode_body, encode_body
from stepwell.model import (
    KEY_PART_PATTERN,
    KEY_PART_RULE,
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    InputKind,
    InvokeMessage,
    Page,
    make_execution_id,
)
from stepwell.ports import Clock, ExecutionStore, PayloadStore, Timers, WorkQueue
from stepwell.registry import Registry, default_registry, validate_workflow_name

# Text longer than this (bytes) goes to the PayloadStore and its reference is kept in its place:
# DynamoDB items stay under 350 KB with room for the other attributes.
DEFAULT_INLINE_LIMIT = 200 * 1024
DEFAULT_LEASE_SECONDS = 900.0


def _check_key_part(label: str, value: object) -> str:
    if not isinstance(value, str) or not KEY_PART_PATTERN.match(value):
        raise InvalidArgument(f"invalid {label} {value!r}: {KEY_PART_RULE}")
    return value


def _input_id(now: float) -> str:
    # Zero-padded milliseconds first: inputs sort (and are absorbed) in arrival order.
    return f"{int(now * 1000):015d}#{secrets.token_hex(6)}"


@dataclass
class Engine:
    store: ExecutionStore
    queue: WorkQueue
    timers: Timers
    payloads: PayloadStore
    clock: Clock
    registry: Registry = field(default_factory=lambda: default_registry)
    inline_limit: int = DEFAULT_INLINE_LIMIT
    lease_seconds: float = DEFAULT_LEASE_SECONDS

    # ------------------------------------------------------------------ payloads

    def offload(self, execution_id: str, label: str, text: str | None) -> tuple[str | None, bool]:
        if text is None or len(text.encode("utf-8")) <= self.inline_limit:
            return text, False
        return self.payloads.put(execution_id, label, text), True

    def resolve(self, text: str | None, is_ref: bool) -> str | None:
        if text is None or not is_ref:
            return text
        return self.payloads.get(text)

    # ------------------------------------------------------------------ the log

    def load_journal(self, execution_id: str) -> Journal:
        """Fold the execution's whole log (one paginated Query)."""
        journal = Journal(execution_id)
        after = -1
        while True:
            batches, last = self.store.load_batches(execution_id, after_seq=after)
            for batch in batches:
                journal.fold(batch.seq, self._batch_body(batch))
            if last is None:
                break
            after = last
        journal.finish_loading()
        return journal

    def _batch_body(self, batch: Batch) -> dict[str, Any]:
        text = self.payloads.get(batch.body) if batch.body_is_ref else batch.body
        return decode_body(text)

    def append_journal(
        self, record: ExecutionRecord, journal: Journal, terminal: bool = False
    ) -> FlushedBatch:
        """Write the journal's unflushed changes as its next batch. Raises SequenceConflict when fenced."""
        seq = journal.next_seq
        flushed = journal.flush()
        # Callback ids must resolve before the SDK hands them to user code (right after this returns).
        for callback_id, operation_id in flushed.new_callbacks:
            self.store.put_callback(CallbackRef(callback_id, record.execution_id, operation_id))
        text = encode_body(flushed.body)
        body, is_ref = self.offload(record.execution_id, f"batch-{seq}", text)
        self.store.append_batch(
            record.execution_id,
            Batch(
                seq=seq, body=body or "", created_at=self.clock.now(), body_is_ref=is_ref, terminal=terminal
            ),
        )
        journal.next_seq = seq + 1
        if flushed.absorbed_input_ids:
            self.store.delete_external_inputs(record.execution_id, flushed.absorbed_input_ids)
        for child in flushed.child_starts:
            self.start_child(record, child.operation_id, child.workflow_name, child.payload)
        return flushed

    # ------------------------------------------------------------------ starting

    def start_execution(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
    ) -> str:
        """Start workflow `name` with a JSON-serializable input; idempotent on `execution_name`."""
        try:
            input_payload = json.dumps(input)
        except (TypeError, ValueError) as error:
            raise InvalidArgument(f"input of workflow {name!r} is not JSON-serializable: {error}") from error
        return self.start_execution_json(name, input_payload, execution_name, domain, subject_id)

    def start_execution_json(
        self,
        name: str,
        input_payload: str | None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
        parent_execution_id: str | None = None,
        parent_operation_id: str | None = None,
    ) -> str:
        validate_workflow_name(name)
        if name not in self.registry:
            raise WorkflowNotFound(
                f"no workflow registered as {name!r} "
                f"(registered: {', '.join(self.registry.names()) or 'none'})"
            )
        _check_key_part("domain", domain)
        if execution_name is not None:
            _check_key_part("execution name", execution_name)
        if subject_id is not None:
            _check_key_part("subject id", subject_id)
        instance_id = execution_name or uuid.uuid4().hex
        subject = subject_id or instance_id
        execution_id = make_execution_id(domain, name, subject, instance_id)
        now = self.clock.now()
        stored_input, input_is_ref = self.offload(execution_id, "input", input_payload)
        record = ExecutionRecord(
            execution_id=execution_id,
            domain=domain,
            workflow_id=name,
            subject_id=subject,
            instance_id=instance_id,
            execution_name=instance_id,
            status=ExecutionStatus.RUNNING,
            created_at=now,
            updated_at=now,
            input_payload=stored_input,
            input_is_ref=input_is_ref,
            parent_execution_id=parent_execution_id,
            parent_operation_id=parent_operation_id,
        )
        if self.store.create_execution(record):
            self.queue.enqueue(InvokeMessage(execution_id).to_body())
        return execution_id

    def start_child(
        self, parent: ExecutionRecord, operation_id: str, workflow_name: str, payload: str | None
    ) -> None:
        """Start the child of a chained invoke (idempotent: its name derives from the parent's operation)."""
        digest = hashlib.sha256(f"{parent.execution_id}|{operation_id}".encode()).hexdigest()[:20]
        child_name = f"{parent.instance_id[:100]}-{digest}"
        try:
            self.start_execution_json(
                workflow_name,
                payload,
                execution_name=child_name,
                domain=parent.domain,
                parent_execution_id=parent.execution_id,
                parent_operation_id=operation_id,
            )
        except (WorkflowNotFound, InvalidArgument, ValueError) as error:
            self.deliver(
                parent.execution_id,
                InputKind.CHILD_FAILED,
                operation_id,
                error={"ErrorType": type(error).__name__, "ErrorMessage": str(error)},
            )

    # ------------------------------------------------------------------ inputs from outside

    def deliver(
        self,
        execution_id: str,
        kind: InputKind,
        operation_id: str | None,
        payload: str | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> None:
        """Write an external input for the execution and wake it."""
        now = self.clock.now()
        stored, is_ref = self.offload(execution_id, f"in-{operation_id}", payload)
        self.store.put_external_input(
            execution_id,
            ExternalInput(
                input_id=_input_id(now),
                kind=kind,
                created_at=now,
                operation_id=operation_id,
                payload=stored,
                payload_is_ref=is_ref,
                error=dict(error) if error is not None else None,
            ),
        )
        self.queue.enqueue(InvokeMessage(execution_id).to_body())

    def _callback(self, callback_id: str) -> CallbackRef:
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        ref = self.store.get_callback(callback_id)
        if ref is None:
            raise CallbackNotFound(f"no callback with id {callback_id!r}")
        record = self.store.get_execution(ref.execution_id)
        if record is None or record.status.is_terminal:
            raise ExecutionAlreadyEnded(
                f"callback {callback_id!r} belongs to execution {ref.execution_id!r}, which has ended"
            )
        return ref

    def send_callback_success(self, callback_id: str, result: str | bytes | None = None) -> None:
        """Complete a callback with `result` (JSON text, as Lambda's SendDurableExecutionCallbackSuccess)."""
        ref = self._callback(callback_id)
        text = result.decode("utf-8") if isinstance(result, bytes) else result
        self.deliver(ref.execution_id, InputKind.CALLBACK_SUCCEEDED, ref.operation_id, payload=text)

    def send_callback_failure(self, callback_id: str, error: Mapping[str, Any] | None = None) -> None:
        """Fail a callback; `error` has ErrorType, ErrorMessage, ErrorData, StackTrace (all optional)."""
        ref = self._callback(callback_id)
        allowed = {"ErrorType", "ErrorMessage", "ErrorData", "StackTrace"}
        unknown = set(error or {}) - allowed
        if unknown:
            raise InvalidArgument(
                f"unknown callback error fields {sorted(unknown)}; allowed: {sorted(allowed)}"
            )
        self.deliver(ref.execution_id, InputKind.CALLBACK_FAILED, ref.operation_id, error=dict(error or {}))

    def send_callback_heartbeat(self, callback_id: str) -> None:
        ref = self._callback(callback_id)
        self.deliver(ref.execution_id, InputKind.CALLBACK_HEARTBEAT, ref.operation_id)

    # ------------------------------------------------------------------ stopping and ending

    def stop_execution(self, execution_id: str, error: Mapping[str, Any] | None = None) -> bool:
        """End a running execution as STOPPED. False if it had already ended."""
        record = self._record(execution_id)
        now = self.clock.now()
        stop_error = dict(error) if error else {"ErrorType": "Stopped", "ErrorMessage": "execution stopped"}
        if not self.store.complete_execution(execution_id, ExecutionStatus.STOPPED, now, error=stop_error):
            return False
        self.timers.cancel_all(execution_id)
        self.store.clear_due_timer(execution_id)
        # A worker records ExecutionStopped in the log (it owns the log's sequence).
        self.queue.enqueue(InvokeMessage(execution_id).to_body())
        self.notify_parent(record, ExecutionStatus.STOPPED, None, stop_error)
        return True

    def notify_parent(
        self,
        record: ExecutionRecord,
        status: ExecutionStatus,
        result: str | None,
        error: Mapping[str, Any] | None,
    ) -> None:
        if record.parent_execution_id is None or record.parent_operation_id is None:
            return
        kind = {
            ExecutionStatus.SUCCEEDED: InputKind.CHILD_SUCCEEDED,
            ExecutionStatus.STOPPED: InputKind.CHILD_STOPPED,
        }.get(status, InputKind.CHILD_FAILED)
        self.deliver(
            record.parent_execution_id,
            kind,
            record.parent_operation_id,
            payload=result if kind is InputKind.CHILD_SUCCEEDED else None,
            error=error if kind is not InputKind.CHILD_SUCCEEDED else None,
        )

    # ------------------------------------------------------------------ reading

    def _record(self, execution_id: str) -> ExecutionRecord:
        record = self.store.get_execution(execution_id)
        if record is None:
            raise ExecutionNotFound(f"no execution with id {execution_id!r}")
        return record

    def describe_execution(self, execution_id: str) -> dict[str, Any]:
        record = self._record(execution_id)
        description: dict[str, Any] = {
            "ExecutionId": record.execution_id,
            "ExecutionName": record.execution_name,
            "WorkflowName": record.workflow_id,
            "Domain": record.domain,
            "SubjectId": record.subject_id,
            "Status": record.status.value,
            "StartTimestamp": record.created_at,
            "InputPayload": self.resolve(record.input_payload, record.input_is_ref),
        }
        if record.ended_at is not None:
            description["EndTimestamp"] = record.ended_at
        if record.status is ExecutionStatus.SUCCEEDED:
            description["Result"] = self.resolve(record.result, record.result_is_ref)
        if record.error is not None:
            description["Error"] = record.error
        if record.parent_execution_id is not None:
            description["ParentExecutionId"] = record.parent_execution_id
        return description

    def list_executions(
        self,
        status: ExecutionStatus | str | None = None,
        workflow: str | None = None,
        domain: str | None = None,
        subject_id: str | None = None,
        limit: int = 100,
        next_token: str | None = None,
    ) -> Page[ExecutionRecord]:
        if isinstance(status, str) and not isinstance(status, ExecutionStatus):
            try:
                status = ExecutionStatus(status)
            except ValueError:
                allowed = ", ".join(s.value for s in ExecutionStatus)
                raise InvalidArgument(f"invalid status {status!r}; allowed: {allowed}") from None
        query = ExecutionQuery(status=status, workflow_id=workflow, domain=domain, subject_id=subject_id)
        return self.store.list_executions(query, limit=limit, next_token=next_token)

    def get_execution_history(self, execution_id: str) -> list[dict[str, Any]]:
        """Events in EventId order, in the vocabulary of GetDurableExecutionHistory."""
        self._record(execution_id)
        bodies: list[dict[str, Any]] = []
        after = -1
        while True:
            batches, last = self.store.load_batches(execution_id, after_seq=after)
            bodies.extend(self._batch_body(batch) for batch in batches)
            if last is None:
                break
            after = last
        return events_from_bodies(bodies)
