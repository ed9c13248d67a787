"""The data plane of remote durable functions (issue 41), phase B: CheckpointDurableExecution and
GetDurableExecutionState for a function the worker invoked (stepwell.core.remote_runs), each call
another process's (the API function's).

A call is the invocation's only while its checkpoint token is current: the token names this execution,
its lease owner still holds the lease unexpired (the run that invoked the function), and its seq is the
log's next seq (the fence: the batch is a conditional put at that seq). Anything else is refused with
StaleCheckpointToken ("Invalid checkpoint token", AWS's words, which the SDKs retry by ending the
invocation) and changes nothing. Updates follow the in-process rules (stepwell.core.service.apply_updates),
but every checkpoint is written: the next call is another process. A checkpoint retried with the same
ClientToken after it was written answers as the first time (the token is kept in the batch it wrote).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_durable_execution_sdk_python.lambda_service import Operation, OperationType, OperationUpdate

from stepwell.core.batch_body import decode_body, operation_from_json, operation_to_json
from stepwell.core.batch_keys import CLIENT_TOKEN, OPERATIONS
from stepwell.core.journal import Journal
from stepwell.core.remote_functions import CheckpointToken, decode_token
from stepwell.core.service import apply_updates
from stepwell.errors import ExecutionNotFound, InvalidArgument, SequenceConflict, StaleCheckpointToken
from stepwell.model import ExecutionRecord, ExecutionStatus

if TYPE_CHECKING:
    from stepwell.core.engine import Engine

# The SDKs' own batching bounds (the Python SDK's CheckpointBatcherConfig: 250 operations, 750 KB).
MAX_CHECKPOINT_UPDATES = 250
MAX_CHECKPOINT_BYTES = 1024 * 1024
DEFAULT_STATE_ITEMS = 100  # the model's MaxItems: 0 is the default, 100
MAX_STATE_ITEMS = 1000
# A page of GetDurableExecutionState stays well under what a function URL answer carries (6 MB).
MAX_STATE_PAGE_BYTES = 4 * 1024 * 1024
_MARKER = re.compile(r"[0-9]{1,9}")
# AWS's refusal of a token that is not the current one, which the SDKs take as retryable.
INVALID_TOKEN = "Invalid checkpoint token"


@dataclass(frozen=True)
class CheckpointAnswer:
    """A checkpoint's answer: the next token (None: the invocation must end, PENDING: a pause was found)
    and the operations the checkpoint changed."""

    token: str | None
    operations: list[Operation]


@dataclass(frozen=True)
class StatePage:
    operations: list[Operation]
    next_marker: str | None


def operation_size(operation: Operation) -> int:
    """An operation's size as wire JSON (bytes)."""
    return len(json.dumps(operation.to_json_dict(), separators=(",", ":")).encode("utf-8"))


def page_of(operations: list[Operation], start: int, max_items: int, max_bytes: int) -> StatePage:
    """The operations from `start` on, at most `max_items` and `max_bytes` (at least one when any is
    left), and the marker of the next page (an offset, None at the end)."""
    page: list[Operation] = []
    size = 0
    for operation in operations[start : start + max_items]:
        size += operation_size(operation)
        if page and size > max_bytes:
            break
        page.append(operation)
    end = start + len(page)
    return StatePage(page, str(end) if end < len(operations) else None)


def parse_marker(marker: str | None, count: int) -> int:
    """The offset a GetDurableExecutionState marker names (this engine's: the offset of the page's first
    operation); InvalidArgument for any other."""
    if not marker:
        return 0
    if not _MARKER.fullmatch(marker) or int(marker) > count:
        raise InvalidArgument(
            f"Marker {marker[:64]!r} is no marker of this execution's state; pass NextMarker"
        )
    return int(marker)


class RemoteCheckpoints:
    """Checkpoints and state reads of remote functions' invocations, on the engine's store."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def checkpoint(
        self,
        execution_id: str,
        checkpoint_token: object,
        updates: list[OperationUpdate],
        client_token: str | None,
    ) -> CheckpointAnswer:
        if len(updates) > MAX_CHECKPOINT_UPDATES:
            raise InvalidArgument(
                f"Updates has {len(updates)} updates; at most {MAX_CHECKPOINT_UPDATES} per checkpoint"
            )
        token, record = self._current(execution_id, checkpoint_token)
        engine = self.engine
        journal = engine.open_journal(execution_id)
        keep = False
        try:
            if journal.next_seq != token.seq:
                replayed = self._replayed(journal, token, client_token)
                if replayed is None:
                    raise _stale(f"its log has moved on since (seq {token.seq}, now {journal.next_seq})")
                keep = True
                return replayed
            journal.describe_invoke = functools.partial(engine.chained_invoke_details, record)
            journal.callback_key = record.callback_key
            # Timers are not fired here: the worker's next run completes the waits that came due.
            apply_updates(engine, record, journal, updates, fire_timers=False)
            if not journal.has_unflushed:
                keep = True
                return CheckpointAnswer(token.encode(), [])
            if client_token is not None:
                journal.note_client_token(client_token)
            try:
                flushed = engine.append_journal(record, journal)
            except SequenceConflict:
                raise _stale("another call of its invocation wrote that seq first") from None
            keep = True
            # As stored (times to the millisecond): a retry's answer, read back from the log, is the same.
            changed = [operation_from_json(operation_to_json(op)) for op in flushed.operations]
            if _paused(record, updates):
                # Stored; without a token the SDK ends the invocation with PENDING, and the worker holds it.
                return CheckpointAnswer(None, changed)
            return CheckpointAnswer(token.next(journal.next_seq).encode(), changed)
        finally:
            engine.close_journal(journal, keep)

    def get_state(
        self, execution_id: str, checkpoint_token: object, marker: str | None, max_items: int
    ) -> StatePage:
        if not 0 <= max_items <= MAX_STATE_ITEMS:
            raise InvalidArgument(f"MaxItems {max_items} is out of range: 0 (the default, 100) to 1000")
        token, _ = self._current(execution_id, checkpoint_token)
        journal = self.engine.open_journal(execution_id)
        try:
            if journal.next_seq != token.seq:
                raise _stale(f"its log has moved on since (seq {token.seq}, now {journal.next_seq})")
            operations = list(journal.operations.values())
        finally:
            self.engine.close_journal(journal, True)
        start = parse_marker(marker, len(operations))
        return page_of(operations, start, max_items or DEFAULT_STATE_ITEMS, MAX_STATE_PAGE_BYTES)

    # ------------------------------------------------------------------

    def _current(self, execution_id: str, text: object) -> tuple[CheckpointToken, ExecutionRecord]:
        """The token and the execution it binds the call to, or StaleCheckpointToken saying why not."""
        token = decode_token(text)
        if token is None:
            raise _stale(
                "it is no token of this deployment: tokens go to a remote durable function's invocation; "
                "read an execution's operations with GetDurableExecutionHistory"
            )
        if token.execution_id != execution_id:
            raise _stale("it belongs to another execution")
        record = self.engine.store.get_execution(execution_id)
        if record is None:
            raise ExecutionNotFound(f"no execution {execution_id!r}")
        if record.status.is_terminal:
            raise _stale(f"the execution has ended {record.status.value}")
        if self.engine.store.lease_holder(execution_id, self.engine.clock.now()) != token.owner:
            raise _stale("the run that invoked the function no longer holds the execution")
        return token, record

    def _replayed(
        self, journal: Journal, token: CheckpointToken, client_token: str | None
    ) -> CheckpointAnswer | None:
        """The first answer to a checkpoint retried with its ClientToken, when its batch is the log's last."""
        if client_token is None or journal.next_seq != token.seq + 1:
            return None
        batches, _ = self.engine.store.load_batches(token.execution_id, after_seq=token.seq - 1, limit=1)
        if not batches or batches[0].seq != token.seq:
            return None
        text = self.engine.resolve(batches[0].body, batches[0].body_is_ref) or "{}"
        body = decode_body(text)
        if body.get(CLIENT_TOKEN) != client_token:
            return None
        ids = dict.fromkeys(
            str(data.get("Id")) for data in body.get(OPERATIONS, ()) if isinstance(data, dict)
        )
        operations = [journal.operations[op_id] for op_id in ids if op_id in journal.operations]
        return CheckpointAnswer(token.next(journal.next_seq).encode(), operations)


def _paused(record: ExecutionRecord, updates: list[OperationUpdate]) -> bool:
    """Whether a pause was asked (PAUSING) when the call read the record: not at the execution's own end,
    which the pause lets finish (as in process)."""
    if any(update.operation_type is OperationType.EXECUTION for update in updates):
        return False
    return record.status is ExecutionStatus.PAUSING


def _stale(why: str) -> StaleCheckpointToken:
    return StaleCheckpointToken(f"{INVALID_TOKEN}: the CheckpointToken is not the current one ({why})")


__all__ = [
    "MAX_CHECKPOINT_BYTES",
    "MAX_CHECKPOINT_UPDATES",
    "CheckpointAnswer",
    "RemoteCheckpoints",
    "StatePage",
    "page_of",
]
