"""The SDK's DurableServiceClient over Stepwell's store: what Lambda's checkpoint and get-state APIs are
on the managed service.

One client serves one invocation. It holds the journal the worker loaded; each checkpoint applies the
updates to it (O(updates)), appends the changes as the next batch (a conditional put: the fence), and
answers with only the operations that changed. A checkpoint that only starts or ends child contexts,
starts waits or starts callbacks (ids a replay makes again) is not written on its own: the next batch
takes it in (see `_replayable`). The checkpoint token is `<lease owner>:<next seq>`; when another worker
took the seq, the token is revoked (no token in the answer) and the SDK ends the invocation with PENDING.
So does a pause (PAUSING, stepwell.core.lifecycle) found at a written checkpoint: the execution's status is
read at one every Engine.pause_check_seconds of the invocation at most (a read, not one per checkpoint).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from aws_durable_execution_sdk_python.exceptions import CheckpointError
from aws_durable_execution_sdk_python.lambda_service import (
    CheckpointOutput,
    CheckpointUpdatedExecutionState,
    Operation,
    OperationType,
    OperationUpdate,
    StateOutput,
)

from stepwell.core.arns import ArnContext, as_handed, ids_as_handed
from stepwell.core.journal import Journal
from stepwell.core.run_spans import CHECKPOINT_SPAN, NO_TRACE, RunTrace
from stepwell.errors import SequenceConflict, StaleCheckpointToken
from stepwell.limits import PayloadLimits, PayloadOverLimit
from stepwell.model import ExecutionStatus

if TYPE_CHECKING:
    from stepwell.core.engine import Engine
    from stepwell.model import ExecutionRecord


class StoreServiceClient:
    def __init__(
        self,
        engine: Engine,
        record: ExecutionRecord,
        journal: Journal,
        owner: str,
        *,
        arn: str | None = None,
        trace: RunTrace = NO_TRACE,
    ) -> None:
        """`arn`: the execution's ARN the handler is handed (stepwell.core.arns; by default in the harness's
        account and region): the operations it is answered name the EXECUTION operation by its last
        segment. `trace`: where each written checkpoint's span goes (stepwell.core.run_spans)."""
        self._trace = trace
        self._engine = engine
        self._record = record
        self.arn = arn or ArnContext.local().execution_arn(record.execution_id)
        self._journal = journal
        self._owner = owner
        self._lock = threading.Lock()
        # The conflict that fenced it, if any (SequenceConflict.written_at tells whose batch holds the seq).
        self.conflict: SequenceConflict | None = None
        # Checkpoints left to the next batch (_replayable).
        self.deferred = 0
        # Timers that came due during this invocation: the handler may have suspended without seeing
        # them, so the worker runs the execution again rather than waiting for a timer that has fired.
        self.timers_fired = 0
        # Callbacks this invocation started whose records an earlier run wrote (derived ids): a completion
        # may be waiting there that no message will announce again, so the worker runs it again too.
        self.callbacks_resolved_before = 0
        # A pause ended the invocation at a checkpoint (its token revoked): the worker holds it paused.
        self.paused = False
        self._status_read_at = time.monotonic()

    @property
    def fenced(self) -> bool:
        """A newer worker holds the execution: this invocation's checkpoints change nothing any more."""
        return self.conflict is not None

    @property
    def token(self) -> str:
        return f"{self._owner}:{self._journal.next_seq}"

    def initial_operations(self) -> list[Operation]:
        return self._handed(self._journal.operations.values())

    def updated_operation_ids(self) -> list[str]:
        """The operations changed since the last invocation (not yet written), as the handler knows them."""
        unflushed = self._journal.unflushed_operation_ids()
        return ids_as_handed(unflushed, execution_id=self._record.execution_id, arn=self.arn)

    def _handed(self, operations: Iterable[Operation]) -> list[Operation]:
        return as_handed(operations, execution_id=self._record.execution_id, arn=self.arn)

    def _answer_state(self, operations: Iterable[Operation]) -> CheckpointUpdatedExecutionState:
        return _state(self._handed(operations))

    def checkpoint(
        self,
        durable_execution_arn: str,
        checkpoint_token: str,
        updates: list[OperationUpdate],
        client_token: str | None,
    ) -> CheckpointOutput:
        with self._lock:
            self._check_arn(durable_execution_arn)
            if self.fenced:
                return self._revoked(updates)
            if checkpoint_token != self.token:
                raise StaleCheckpointToken(
                    f"checkpoint token {checkpoint_token!r} is not the current one {self.token!r}"
                )
            journal = self._journal
            # Timers due by now complete here too: a refresh inside parallel branches sees its wait end.
            fired, resolved_before = apply_updates(
                self._engine, self._record, journal, updates, fire_timers=True
            )
            self.timers_fired += fired
            if not journal.has_unflushed:
                return CheckpointOutput(checkpoint_token=self.token, new_execution_state=_state([]))
            self.callbacks_resolved_before += resolved_before
            if _replayable(updates, journal) and not journal.has_unflushed_side_effects:
                self.deferred += 1
                changed = [journal.operations[op_id] for op_id in journal.unflushed_operation_ids()]
                return CheckpointOutput(
                    checkpoint_token=self.token, new_execution_state=self._answer_state(changed)
                )
            try:
                with self._trace.phase(CHECKPOINT_SPAN, **{"stepwell.updates": len(updates)}):
                    flushed = self._engine.append_journal(self._record, journal)
            except SequenceConflict as conflict:
                self.conflict = conflict
                return self._revoked(updates)
            if self._pause_found(updates):
                # The checkpoint is stored; without a token the SDK ends the invocation with PENDING.
                self.paused = True
                return CheckpointOutput(
                    checkpoint_token=None, new_execution_state=self._answer_state(flushed.operations)
                )
            return CheckpointOutput(
                checkpoint_token=self.token, new_execution_state=self._answer_state(flushed.operations)
            )

    def _pause_found(self, updates: list[OperationUpdate]) -> bool:
        """Whether the execution was paused (PAUSING) since the invocation began, read at most every
        pause_check_seconds. Not at the execution's own end, which the pause lets finish."""
        if any(update.operation_type is OperationType.EXECUTION for update in updates):
            return False
        now = time.monotonic()
        if now - self._status_read_at < self._engine.pause_check_seconds:
            return False
        self._status_read_at = now
        status = self._engine.store.get_execution_status(self._record.execution_id)
        return status is ExecutionStatus.PAUSING

    def _revoked(self, updates: list[OperationUpdate]) -> CheckpointOutput:
        if any(update.operation_type is OperationType.EXECUTION for update in updates):
            # Without a token the SDK would take this for completion: refuse instead.
            raise CheckpointError(f"execution {self._record.execution_id!r} is held by a newer invocation")
        return CheckpointOutput(checkpoint_token=None, new_execution_state=_state([]))

    def get_execution_state(
        self,
        durable_execution_arn: str,
        checkpoint_token: str,
        next_marker: str,
        max_items: int = 1000,
    ) -> StateOutput:
        with self._lock:
            self._check_arn(durable_execution_arn)
            operations = self._handed(self._journal.operations.values())
        try:
            start = int(next_marker) if next_marker else 0
        except ValueError:
            raise ValueError(f"invalid state marker {next_marker!r}: expected an offset") from None
        page = operations[start : start + max_items]
        more = start + max_items < len(operations)
        return StateOutput(operations=page, next_marker=str(start + max_items) if more else None)

    def _check_arn(self, arn: str) -> None:
        """The handler names its own execution: by the ARN it was handed, or by its Stepwell id."""
        if arn not in (self.arn, self._record.execution_id):
            raise ValueError(f"this client serves execution {self.arn!r}, not {arn!r}")


def apply_updates(
    engine: Engine,
    record: ExecutionRecord,
    journal: Journal,
    updates: list[OperationUpdate],
    *,
    fire_timers: bool,
) -> tuple[int, int]:
    """Apply one checkpoint's updates to the journal (not written): the rules every checkpoint follows,
    in process or through the API (stepwell.core.remote_checkpoints). Payloads over a limit refuse the
    whole checkpoint before anything changes (PayloadOverLimit: the SDK fails the execution with it, as
    AWS's refusal of a payload over its limit). With `fire_timers`, the timers due by now complete first.
    Answers how many timers fired, and how many new callback ids an earlier run had resolved (their
    records may hold a completion: the run goes again to read it). New callback ids resolve here, before
    the SDK hands them to user code (right after the checkpoint answers)."""
    for update in updates:
        problem = _over_limit(update, engine.limits)
        if problem is not None:
            raise PayloadOverLimit(problem)
    now = engine.clock.now()
    fired = journal.fire_due_timers(now) if fire_timers else 0
    for update in updates:
        journal.apply_update(update, now)
    if not journal.has_unflushed:
        return fired, 0
    resolved_before = journal.resolve_new_callbacks(functools.partial(engine.resolve_callbacks, record))
    return fired, resolved_before


def changed_state(operations: list[Operation]) -> CheckpointUpdatedExecutionState:
    """A checkpoint's NewExecutionState: the operations it changed."""
    return _state(operations)


def _over_limit(update: OperationUpdate, limits: PayloadLimits) -> str | None:
    """Why `update` may not be stored, if its payload (with its error object) is over a limit: the
    execution's end is bounded by the execution result's limit, any other operation by the operation
    payload's. A chained invoke's input has AWS's own 1 MiB check and error (stepwell.core.journal)."""
    if update.operation_type is OperationType.CHAINED_INVOKE:
        return None
    text = update.payload or ""
    if update.error is not None:
        text += json.dumps(update.error.to_dict())
    if update.operation_type is OperationType.EXECUTION:
        return limits.execution_result.problem("the execution's result", text)
    label = repr(update.name) if update.name else f"operation {update.operation_id}"
    return limits.operation_payload.problem(
        f"the payload of {update.operation_type.value.lower()} {label} ({update.action.value})", text
    )


def _replayable(updates: list[OperationUpdate], journal: Journal) -> bool:
    """Whether a checkpoint's updates may wait for the next batch instead of a write of their own: each
    leaves its operation, as the journal now holds it, in a state a replay records again if it was lost
    (Journal.replays_alike, the rule the carried batch follows too): a child context's start or end (a
    parallel's branch, a map's item, a wait_for_callback), a wait's start and, when the execution's
    callback ids are derived, a callback's start or a wait_for_callback's submitter's start or result.
    Nothing outside the run acts on those, and a crash before the next write loses them harmlessly: the
    replay records them again, after the steps inside answer from the log, and makes a callback's id
    again, whose record (written at once, Engine.resolve_callbacks) keeps any completion sent meanwhile.
    The run's last batch, written or carried on the lease's release as it suspends or ends, takes in
    whatever is left. The execution's own end changes no operation (the batch carries it) and is always
    written. The caller also checks the journal has nothing waiting to be stored for something outside
    it (a child to start, a callback to close)."""
    return bool(updates) and all(
        update.operation_type is not OperationType.EXECUTION
        and (op := journal.operations.get(update.operation_id)) is not None
        and journal.replays_alike(op)
        for update in updates
    )


def _state(operations: list[Operation]) -> CheckpointUpdatedExecutionState:
    return CheckpointUpdatedExecutionState(operations=operations, next_marker=None)
