"""The ports the engine runs on. The memory backend (stepwell.memory.store, stepwell.testing.local) and
the AWS adapters (DynamoDB, SQS/Scheduler, S3) implement them; the engine sees nothing else.

Storage layout the methods imply (docs/architecture.md has the tables):
- executions: one ExecutionRecord per execution (GetItem by id); per SKIP schedule, a pointer to the
  last execution it started (one item, claimed with a conditional write).
- operations: per execution, an append-only log of Batch items keyed by `seq` (e.g. SK "b#000000000042"),
  plus ExternalInput items (e.g. SK "in#<input_id>") written by senders and absorbed by the next worker.
- coordination: per execution one record (its lease and the wake-up its last run armed), callback ids;
  flow control state
  (stepwell.core.flow_control): per concurrency key its holders and ticket counters, its tickets, per rate key
  its recent starts, per rate-limited execution its reserved start.

Fencing: `append_batch` is a conditional put on (execution, seq). A worker holds the log's next seq in
its checkpoint token; a stale worker whose seq was taken by a newer one gets `SequenceConflict`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from stepwell.errors import InvalidArgument
from stepwell.model import (
    KEY_PART_PATTERN,
    KEY_PART_RULE,
    Batch,
    CallbackRef,
    ExecutionId,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowRate,
    FlowSlots,
    FunctionVersion,
    KeepWake,
    Lease,
    Page,
)

# The due-index entries the reconciler sweeps (flow control keys) are spread over this many shards.
DUE_SHARDS = 4


# How long a schedule pointer is kept after the occurrence that last wrote or read it (its `ttl`): longer
# than the period of a yearly schedule (366 days), so a pointer naming a running execution is kept again by
# the next occurrence before it expires; a deleted schedule's pointer goes within this time.
SCHEDULE_POINTER_HOLD_SECONDS = 400 * 86_400


def check_schedule_pointer(domain: str, schedule: str, execution_id: str | None = None) -> None:
    """InvalidArgument unless `domain` and `schedule` are key parts and `execution_id` (when given) is an
    execution id: a schedule pointer's key and value (ExecutionStore.claim_schedule_pointer)."""
    for label, value in (("domain", domain), ("schedule", schedule)):
        if not isinstance(value, str) or not KEY_PART_PATTERN.match(value):
            raise InvalidArgument(f"invalid {label} {value!r} of a schedule pointer: {KEY_PART_RULE}")
    if execution_id is not None:
        try:
            ExecutionId.parse(execution_id)
        except ValueError as error:
            raise InvalidArgument(f"a schedule pointer names an execution: {error}") from None


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""
        ...


class ExecutionStore(Protocol):
    # How long an ended execution's items are kept (its records, log and callbacks expire after it).
    retention_seconds: int

    # --- executions ---
    def create_execution(self, record: ExecutionRecord) -> bool:
        """Put the record unless its id exists (conditional). True if created, False if it existed."""
        ...

    def get_execution(self, execution_id: str) -> ExecutionRecord | None: ...

    def complete_execution(
        self,
        execution_id: str,
        status: ExecutionStatus,
        now: float,
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        """Set a terminal status (and result or error) if the execution is still RUNNING (conditional).
        True if this call ended it, False if it had already ended. `code_version`: the worker version that
        ran it, recorded unless it was pinned already (a run that ends the execution pins it no other
        way)."""
        ...

    def list_executions(
        self, query: ExecutionQuery, limit: int = 100, next_token: str | None = None
    ) -> Page[ExecutionRecord]:
        """Newest first for workflow (createdAt), status (updatedAt) and a tag within its domain
        (createdAt; the tag's entries are written with the record); by subject for domain."""
        ...

    # --- code versions (create_execution pins a record whose code_version is set; complete_execution
    # records one on an unpinned record without indexing it) ---
    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        """Pin a RUNNING execution to `version` if it is pinned to `expected` now (None: not pinned yet);
        conditional. True if this call pinned it."""
        ...

    def note_moved_version(self, execution_id: str, version: str) -> None:
        """Record on the execution's coordination record that it was moved to `version` (an upgrade, after
        pin_version): a run that takes the lease afterwards learns it (Lease.moved_to), however old the
        record it read before. Unconditional and idempotent."""
        ...

    def list_pinned(self, version: str, limit: int = 100, next_token: str | None = None) -> Page[str]:
        """Ids of the RUNNING executions pinned to `version` (oldest first)."""
        ...

    def count_pinned(self, version: str) -> int:
        """How many RUNNING executions are pinned to `version`."""
        ...

    # --- schedule pointers (stepwell.features.schedules: the last execution a SKIP schedule started) ---
    def get_schedule_pointer(self, domain: str, schedule: str) -> str | None:
        """The execution id the schedule's pointer names (consistent read); None when it has none."""
        ...

    def claim_schedule_pointer(
        self, domain: str, schedule: str, expected: str | None, execution_id: str, now: float | None = None
    ) -> bool:
        """Point the schedule at `execution_id` if its pointer still names `expected` (None: it has no
        pointer yet); conditional, so of claims from the same value exactly one wins. True if this call
        set it. `now`: the occurrence's time; a store with expiry keeps the pointer until `now` plus
        SCHEDULE_POINTER_HOLD_SECONDS (None: the store's own clock). InvalidArgument for a domain or
        schedule that is no key part, or an id that is no execution id."""
        ...

    def keep_schedule_pointer(self, domain: str, schedule: str, execution_id: str, now: float) -> None:
        """An occurrence found the pointer naming `execution_id`, still running: a store with expiry keeps
        the pointer until `now` plus SCHEDULE_POINTER_HOLD_SECONDS (only while it still names that
        execution), so it never expires under a running execution a later occurrence must skip for."""
        ...

    # --- the operation log ---
    def append_batch(self, execution_id: str, batch: Batch) -> None:
        """Conditional put of the batch at `batch.seq`. Raises SequenceConflict if that seq exists."""
        ...

    def load_batches(
        self,
        execution_id: str,
        after_seq: int = -1,
        limit: int = 1000,
        inputs: list[ExternalInput] | None = None,
    ) -> tuple[list[Batch], int | None]:
        """Batches with seq > after_seq in order, at most `limit`; the second value is the last seq
        returned when more may follow (pass it as after_seq), else None. With `inputs`, the page that
        ends the log also appends the execution's pending inputs to it (input_id order), in the same read
        where the store can: a run needs both."""
        ...

    def put_external_input(self, execution_id: str, item: ExternalInput) -> None: ...

    def list_external_inputs(self, execution_id: str) -> list[ExternalInput]:
        """Pending inputs in input_id order."""
        ...

    def delete_external_inputs(self, execution_id: str, input_ids: list[str]) -> None:
        """Remove absorbed inputs (after the batch that absorbed them was appended)."""
        ...

    def expire_log(self, execution_id: str, count: int, ended_at: float) -> None:
        """The execution ended at `ended_at`: its log batches seq 0..count-1 expire a retention period
        later, with its item (the terminal batch, appended after, gets its expiry as it is written).
        Idempotent."""
        ...

    def keep_log(self, execution_id: str, count: int) -> None:
        """Take the expiry off the log batches seq 0..count-1 (Batch.expires_at): they are kept until
        expire_log, for an execution that waits past their expiry (stepwell.core.log_expiry). Idempotent."""
        ...

    # --- coordination ---
    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        """Take the execution's lease if it is free or expired (one conditional write on its coordination
        record). None if busy. The lease carries the wake-up the last run armed, whether it was taken
        from a holder whose lease had expired, and whether any run held it before (`never_held`)."""
        ...

    def release_lease(
        self,
        execution_id: str,
        owner: str,
        wake: float | KeepWake | None = KeepWake.KEEP,
        ended_at: float | None = None,
        carried: Batch | None = None,
        log_next: int | None = None,
        log_length: int | None = None,
    ) -> None:
        """Drop the lease if `owner` still holds it, in the same write recording `wake`: the wake-up this
        run armed (its time), None when none is armed, KEEP to leave the recorded one. `ended_at`: the
        execution ended then (its record's `ended_at`, however late the run that settles it): its
        coordination record keeps the end it carries, if any, and stays for the retention period from that
        end, as the rest of the execution's items do, so `Lease.never_held` is never true for it again and
        it never outlives the execution's own item. `carried`: the
        run's last batch, kept on the record instead of the log (a small one: a suspension's events of no
        operation, or the execution's end, which the record then keeps for the retention period),
        returned by the next `acquire_lease` and `get_carried_batch`; without it a batch carried before
        stays while the execution runs (its seq tells whether the log has taken it since). `log_next`: the
        log's next seq as this run leaves it, returned by the next `acquire_lease` as `Lease.log_next`;
        None clears it. `log_length`: the batches the run knows the log holds, returned as
        `Lease.log_length` until a release gives another (None leaves the recorded one; an end clears it)."""
        ...

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        """The batch the execution's coordination record carries (see release_lease), if any."""
        ...

    def put_callback(self, ref: CallbackRef) -> bool:
        """Resolve the callback id to its execution and operation, unless its record exists already: a
        replay makes a derived id again (stepwell.core.journal.derived_callback_id), and the record an earlier
        run wrote may hold a completion, which must stay (conditional). True if this call wrote it."""
        ...

    def get_callback(self, callback_id: str) -> CallbackRef | None: ...

    def complete_callback(
        self, callback_id: str, now: float, result: ExternalInput | None = None, execution_id: str = ""
    ) -> bool:
        """Mark the callback completed unless it already is (conditional): True if this call did, so
        of two completions exactly one wins. `result` (its kind, payload or error) is kept on the record
        in the same write, for get_callback_results; a timeout passes none. `execution_id` (the
        callback's) names where a value too large for the record is put."""
        ...

    def complete_callback_once(
        self, callback_id: str, now: float, result: ExternalInput
    ) -> CallbackRef | None:
        """complete_callback for a sender that has not read the record (a small result, kept on the record
        as it is): the same one conditional write, answering with the record as it was before it, whose
        `completed` says whether it had already completed (then nothing changed); None when there is no
        such callback."""
        ...

    def reopen_callback(self, callback_id: str) -> None:
        """Undo complete_callback (and drop its result) when the execution could not be woken (the sender
        may retry)."""
        ...

    def get_callback_results(self, callback_ids: Sequence[str]) -> list[ExternalInput]:
        """The results completions left on these callbacks' records (consistent reads; a callback with
        none, unknown or timed out, is left out), as inputs of their operations, `on_callback_record`."""
        ...

    # --- flow control (stepwell.core.flow_control; `scope` is FlowLimit.scope; labels are shown, never
    # read) ---
    def get_flow_slots(self, scope: str) -> FlowSlots | None:
        """A concurrency key's state (consistent read); None when it has none yet."""
        ...

    def hold_flow_slot(
        self, scope: str, execution_id: str, limit: int, expires_at: float, labels: Mapping[str, str]
    ) -> bool:
        """True if `execution_id` holds a slot of the key after this call: it held one already (left as
        it is), or it took one because fewer than `limit` are held and nobody waits (head == tail).
        Creates the key's item when it has none (conditional writes: never more than `limit` holders)."""
        ...

    def take_flow_ticket(self, scope: str, sweep_at: float, labels: Mapping[str, str]) -> int:
        """Issue the key's next ticket (an atomic increment of tail; the ticket is its old value), creating
        the item when missing, and set the key's sweep entry to `sweep_at` (query_flow_sweeps)."""
        ...

    def put_flow_ticket(self, scope: str, ticket: int, execution_id: str) -> bool:
        """Write ticket `ticket` naming `execution_id` unless the ticket has an item already (conditional):
        False when a server skipped it first (claim_flow_ticket found it missing)."""
        ...

    def claim_flow_ticket(self, scope: str, ticket: int) -> str | None:
        """The execution ticket `ticket` names, for the server of the queue; a ticket with no item yet is
        marked skipped (conditional, so a late put_flow_ticket fails) and gives None, as a skipped one
        does."""
        ...

    def advance_flow(
        self, scope: str, ticket: int, execution_id: str | None, limit: int, expires_at: float
    ) -> bool:
        """Serve ticket `ticket` if it is the head: head becomes ticket + 1 and, with `execution_id`, that
        execution becomes a holder (only while fewer than `limit` are held and it holds none). False,
        changing nothing, when the head moved on, the slots are full or it already holds one. Removes the
        ticket's item once served (a skipped ticket's marker stays, so a late put_flow_ticket still fails;
        on DynamoDB it expires after the retention)."""
        ...

    def release_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float | None = None
    ) -> FlowSlots | None:
        """Remove `execution_id` from the holders (only if its lease still expires at `expected_expiry`,
        when given: a sweep reclaiming a dead holder). The state after, or None if it held no slot (then
        nothing changed)."""
        ...

    def renew_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float, expires_at: float
    ) -> bool:
        """Extend a holder's lease if it still expires at `expected_expiry` (conditional)."""
        ...

    def set_flow_sweep(self, scope: str, sweep_at: float | None) -> None:
        """Set (or with None clear) when the reconciler sweeps the key (shard chosen from the scope)."""
        ...

    def query_flow_sweeps(self, shard: int, now: float, limit: int = 100) -> list[str]:
        """Scopes of shard `shard` (0..DUE_SHARDS-1) whose sweep is due by `now`, oldest first."""
        ...

    def get_flow_rate(self, scope: str) -> FlowRate:
        """A rate key's recent starts (consistent read); empty, version 0, when it has none."""
        ...

    def put_flow_rate(
        self,
        scope: str,
        expected_version: int,
        starts: Sequence[float],
        labels: Mapping[str, str],
        window_ends: float | None = None,
    ) -> bool:
        """Replace the key's recent starts if its version is still `expected_version` (0: no item yet);
        the version becomes expected_version + 1. False when another writer changed it first.
        `window_ends`: when the last of `starts` leaves the window; a store with expiry keeps the key
        for its retention period after that, then lets it go (a key no longer used, say a customer's,
        does not stay; losing it then loses no start the limit still counts)."""
        ...

    def reserve_flow_start(self, execution_id: str, start_at: float) -> float:
        """Record the start time a rate limit gave the execution unless it has one (conditional); returns
        the one recorded (this one, or the earlier reservation of a duplicate message)."""
        ...

    def get_flow_start(self, execution_id: str) -> float | None:
        """The execution's reserved start time (consistent read), None when it has none."""
        ...

    def peek_flow_tickets(self, scope: str, first: int, count: int) -> list[str]:
        """The executions tickets `first`..`first + count - 1` name, in ticket order, skipping skipped
        and missing tickets (read-only: the status shows a key's next waiting executions)."""
        ...


class WorkQueue(Protocol):
    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        """Send one engine message (see docs/architecture.md) after `delay_seconds` (0..900)."""
        ...


class Timers(Protocol):
    def schedule(self, execution_id: str, due_at: float) -> None:
        """Deliver {"kind": "invoke", "executionId": ..., "dueAt": due_at} at (never before) due_at."""
        ...

    def cancel_all(self, execution_id: str) -> None:
        """Delete the execution's pending one-time schedules (on stop)."""
        ...

    def withdraw(self, execution_id: str, due_at: float, keep: float | None = None) -> None:
        """The wake-up scheduled for `due_at` is no longer needed (the execution ended, or its next one is
        `keep`): drop it where that is possible (a one-time schedule), best effort. One left in place finds
        nothing due when it comes."""
        ...


class FunctionVersions(Protocol):
    """The published versions of the worker function (Lambda versions and the alias the queue invokes)."""

    def current_version(self) -> str | None:
        """The version the alias points to (None when it has none)."""
        ...

    def list_versions(self) -> list[FunctionVersion]:
        """Published versions in numeric order, each with the aliases pointing at it."""
        ...

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        """Run `event` synchronously on `version` and return its answer; ForwardFailed when the version is
        missing or the invocation failed."""
        ...

    def delete_version(self, version: str) -> None: ...


class StatusEvents(Protocol):
    """Where executions' status-change events go (stepwell.core.status_events: the bus, memory, or
    nowhere)."""

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        """Put one event per detail, in one request; raises when any of them was not put."""
        ...


class PayloadStore(Protocol):
    def put(self, execution_id: str, label: str, data: str) -> str:
        """Store `data` and return a reference string to keep in its place."""
        ...

    def get(self, reference: str) -> str:
        """The data a reference names; PayloadMissing when its object is gone."""
        ...

    def reference(self, execution_id: str, label: str, data: str) -> str:
        """The reference `put` returns for `data`, writing nothing (the name is the content's digest): a
        start names its input's object in the record it creates, and puts it only once that record is its
        own, so a refused start writes nothing."""
        ...

    def retire(self, execution_id: str) -> int:
        """The execution has ended: start its payloads' retention (until now they never expire).
        Idempotent; returns how many payloads were retired."""
        ...
