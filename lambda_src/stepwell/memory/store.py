"""The in-memory backend of the store ports: the same semantics as the DynamoDB adapter (conditional
puts, leases with expiry, ordered logs, due-index shards), held in dicts behind one lock."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowRate,
    FlowSlots,
    HandOff,
    KeepWake,
    Lease,
    Page,
    PauseState,
    ResumeRequest,
    kept_on_callback,
)
from stepwell.ports import DUE_SHARDS, SCHEDULE_POINTER_HOLD_SECONDS, check_schedule_pointer

T = TypeVar("T")


def due_shard(execution_id: str) -> int:
    """Which due-index shard a record lives in (flow control keys)."""
    return hashlib.sha256(execution_id.encode("utf-8")).digest()[0] % DUE_SHARDS


class MemoryExecutionStore:
    def __init__(self, retention_days: int = 30) -> None:
        # Kept as a number (batches carry their expiry), nothing expires in memory by itself.
        self.retention_seconds = retention_days * 86400
        self._lock = threading.RLock()
        self._executions: dict[str, ExecutionRecord] = {}
        self._batches: dict[str, list[Batch]] = {}
        self._inputs: dict[str, dict[str, ExternalInput]] = {}
        self._leases: dict[str, Lease] = {}
        self._callbacks: dict[str, CallbackRef] = {}
        self._callback_results: dict[str, ExternalInput] = {}
        self._wakes: dict[str, float] = {}
        # The batch a suspending run left on the coordination record instead of the log (release_lease).
        self._carried: dict[str, Batch] = {}
        # Executions that have a coordination record: written by a lease taken or an upgrade's move, and
        # kept after the end (a lease taken without one is Lease.never_held).
        self._records: set[str] = set()
        # The log's next seq the last release recorded (HandOff.log_next).
        self._log_next: dict[str, int] = {}
        # The log's length the last release that knew it recorded (HandOff.log_length).
        self._log_length: dict[str, int] = {}
        # The version an upgrade moved each execution to (Lease.moved_to).
        self._moved_to: dict[str, str] = {}
        self._schedule_pointers: dict[tuple[str, str], str] = {}
        # When each pointer would expire on DynamoDB (its ttl; for tests).
        self.schedule_pointer_expiries: dict[tuple[str, str], float] = {}
        # Flow control: concurrency keys, their tickets (an execution id, or None once skipped), the
        # keys' sweep times, rate keys and the executions' reserved starts.
        self._flow_slots: dict[str, FlowSlots] = {}
        self._flow_tickets: dict[tuple[str, int], str | None] = {}
        self._flow_sweeps: dict[str, float] = {}
        self._flow_rates: dict[str, FlowRate] = {}
        self._flow_starts: dict[str, float] = {}
        # Request counters, for tests and benchmarks of the access pattern.
        self.counters: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    # --- executions ---
    def create_execution(self, record: ExecutionRecord) -> bool:
        with self._lock:
            self._count("create_execution")
            if record.execution_id in self._executions:
                return False
            self._executions[record.execution_id] = _copy(record)
            return True

    def get_execution(self, execution_id: str) -> ExecutionRecord | None:
        with self._lock:
            self._count("get_execution")
            record = self._executions.get(execution_id)
            return _copy(record) if record is not None else None

    def complete_execution(
        self,
        execution_id: str,
        status: ExecutionStatus,
        now: float,
        *,
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        with self._lock:
            if not status.is_outcome:
                raise InvalidArgument(
                    f"complete_execution needs a terminal status, got {status.value} (DELETING is none)"
                )
            self._count("complete_execution")
            record = self._executions.get(execution_id)
            if record is None or record.status.is_terminal:
                return False
            record.pause = None
            if record.code_version is None:
                record.code_version = code_version
            record.status = status
            record.result = result
            record.result_is_ref = result_is_ref
            record.error = dict(error) if error is not None else None
            record.ended_at = now
            record.updated_at = now
            return True

    def get_execution_status(self, execution_id: str) -> ExecutionStatus | None:
        with self._lock:
            self._count("get_execution_status")
            record = self._executions.get(execution_id)
            return record.status if record is not None else None

    def request_pause(self, execution_id: str, pause: PauseState) -> bool:
        with self._lock:
            self._count("request_pause")
            record = self._executions.get(execution_id)
            if record is None or record.status is not ExecutionStatus.RUNNING:
                return False
            record.status = ExecutionStatus.PAUSING
            record.pause = pause
            record.updated_at = pause.requested_at
            return True

    def settle_pause(self, execution_id: str, requested_at: float, paused_at: float) -> bool:
        with self._lock:
            self._count("settle_pause")
            record = self._executions.get(execution_id)
            if (
                record is None
                or record.status is not ExecutionStatus.PAUSING
                or record.pause is None
                or record.pause.requested_at != requested_at
            ):
                return False
            record.status = ExecutionStatus.PAUSED
            record.pause = replace(record.pause, paused_at=paused_at)
            record.updated_at = paused_at
            return True

    def end_pause(
        self, execution_id: str, requested_at: float, resumed: ResumeRequest, paused_seconds: float
    ) -> bool:
        with self._lock:
            self._count("end_pause")
            record = self._executions.get(execution_id)
            if (
                record is None
                or not record.status.is_paused
                or record.pause is None
                or record.pause.requested_at != requested_at
            ):
                return False
            record.status = ExecutionStatus.RUNNING
            record.pause = None
            record.resumed = resumed
            record.paused_seconds = paused_seconds
            record.updated_at = resumed.requested_at
            return True

    def begin_deletion(self, execution_id: str, now: float) -> bool:
        with self._lock:
            self._count("begin_deletion")
            record = self._executions.get(execution_id)
            if record is None or not record.status.is_outcome:
                return False
            record.status = ExecutionStatus.DELETING
            record.updated_at = now
            return True

    def delete_execution(self, execution_id: str) -> bool:
        with self._lock:
            self._count("delete_execution")
            record = self._executions.get(execution_id)
            if record is None or record.status is not ExecutionStatus.DELETING:
                return False
            del self._executions[execution_id]
            return True

    def list_executions(
        self,
        query: ExecutionQuery,
        limit: int = 100,
        next_token: str | None = None,
        *,
        oldest_first: bool = False,
    ) -> Page[ExecutionRecord]:
        if not 1 <= limit <= 1000:  # as the DynamoDB store's
            raise InvalidArgument(f"limit must be 1..1000, got {limit}")
        if oldest_first and query.tag is None and query.domain is not None:
            raise InvalidArgument(
                "oldest_first lists by workflow, status or tag: a domain's executions are listed by subject, "
                "not by time"
            )
        with self._lock:
            self._count("list_executions")
            records = list(self._executions.values())
        if query.tag is not None:
            key, value = query.tag
            chosen = sorted(
                (
                    r
                    for r in records
                    if r.domain == query.domain
                    and r.tags.get(key) == value
                    and (query.status is None or r.status is query.status)
                ),
                # As the DynamoDB store's tag entries sort: creation in milliseconds, then the id.
                key=lambda r: (int(r.created_at * 1000), r.execution_id),
                reverse=True,
            )
        elif query.status is not None:
            chosen = sorted(
                (r for r in records if r.status is query.status),
                key=lambda r: (-r.updated_at, r.execution_id),
            )
        elif query.workflow_id is not None:
            chosen = sorted(
                (r for r in records if r.workflow_id == query.workflow_id),
                key=lambda r: (-r.created_at, r.execution_id),
            )
        else:
            chosen = sorted(
                (
                    r
                    for r in records
                    if r.domain == query.domain
                    and (query.subject_id is None or r.subject_id == query.subject_id)
                ),
                key=lambda r: (r.subject_id, r.execution_id),
            )
        if oldest_first:
            chosen.reverse()
        # An offset does not tell the directions apart; the DynamoDB store refuses the other one's token.
        return _page([_copy(r) for r in chosen], limit, next_token)

    # --- code versions ---
    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        with self._lock:
            self._count("pin_version")
            record = self._executions.get(execution_id)
            if record is None or record.status.is_terminal:
                return False
            if record.code_version != expected:
                return False
            record.code_version = version
            return True

    def _pinned(self, version: str, request: str) -> list[ExecutionRecord]:
        with self._lock:
            self._count(request)
            return sorted(
                (
                    r
                    for r in self._executions.values()
                    if not r.status.is_terminal and r.code_version == version
                ),
                key=lambda r: (r.created_at, r.execution_id),
            )

    def list_pinned(self, version: str, limit: int = 100, next_token: str | None = None) -> Page[str]:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        pinned = self._pinned(version, "list_pinned")
        return _page([r.execution_id for r in pinned], limit, next_token)

    def count_pinned(self, version: str) -> int:
        return len(self._pinned(version, "count_pinned"))

    # --- schedule pointers ---
    def get_schedule_pointer(self, domain: str, schedule: str) -> str | None:
        check_schedule_pointer(domain, schedule)
        with self._lock:
            self._count("get_schedule_pointer")
            return self._schedule_pointers.get((domain, schedule))

    def claim_schedule_pointer(
        self,
        domain: str,
        schedule: str,
        *,
        expected: str | None,
        execution_id: str,
        now: float | None = None,
    ) -> bool:
        check_schedule_pointer(domain, schedule, execution_id)
        with self._lock:
            self._count("claim_schedule_pointer")
            if self._schedule_pointers.get((domain, schedule)) != expected:
                return False
            self._schedule_pointers[(domain, schedule)] = execution_id
            # Kept as a number, as batches' expiries are: nothing expires in memory by itself.
            self.schedule_pointer_expiries[(domain, schedule)] = float(
                int(time.time() if now is None else now) + SCHEDULE_POINTER_HOLD_SECONDS
            )
            return True

    def keep_schedule_pointer(self, domain: str, schedule: str, execution_id: str, now: float) -> None:
        check_schedule_pointer(domain, schedule, execution_id)
        with self._lock:
            self._count("keep_schedule_pointer")
            if self._schedule_pointers.get((domain, schedule)) == execution_id:
                self.schedule_pointer_expiries[(domain, schedule)] = float(
                    int(now) + SCHEDULE_POINTER_HOLD_SECONDS
                )

    # --- the operation log ---
    def append_batch(self, execution_id: str, batch: Batch) -> None:
        with self._lock:
            self._count("append_batch")
            log = self._batches.setdefault(execution_id, [])
            if batch.seq < len(log):
                taken = next((held for held in log if held.seq == batch.seq), None)
                raise SequenceConflict(
                    f"execution {execution_id!r}: batch seq {batch.seq} already exists",
                    written_at=taken.created_at if taken is not None else None,
                )
            if batch.seq != len(log):
                raise SequenceConflict(
                    f"execution {execution_id!r}: batch seq {batch.seq} skips past the log's end {len(log)}"
                )
            log.append(batch)

    def load_batches(
        self,
        execution_id: str,
        after_seq: int = -1,
        limit: int = 1000,
        inputs: list[ExternalInput] | None = None,
    ) -> tuple[list[Batch], int | None]:
        with self._lock:
            self._count("load_batches")
            log = self._batches.get(execution_id, [])
            start = after_seq + 1
            page = log[start : start + limit]
            more = start + limit < len(log)
            if inputs is not None and not (more and page):
                pending = self._inputs.get(execution_id, {})
                inputs.extend(pending[key] for key in sorted(pending))
        return page, (page[-1].seq if more and page else None)

    def put_external_input(self, execution_id: str, item: ExternalInput) -> None:
        with self._lock:
            self._count("put_external_input")
            self._inputs.setdefault(execution_id, {})[item.input_id] = item

    def list_external_inputs(self, execution_id: str) -> list[ExternalInput]:
        with self._lock:
            self._count("list_external_inputs")
            pending = self._inputs.get(execution_id, {})
            return [pending[key] for key in sorted(pending)]

    def expire_log(self, execution_id: str, count: int, ended_at: float) -> None:
        with self._lock:
            self._count("expire_log")
            self._set_batch_expiry(execution_id, count, float(int(ended_at) + self.retention_seconds))

    def keep_log(self, execution_id: str, count: int) -> None:
        with self._lock:
            self._count("keep_log")
            self._set_batch_expiry(execution_id, count, None)

    def _set_batch_expiry(self, execution_id: str, count: int, expires_at: float | None) -> None:
        # By seq, as DynamoDB's keys: batches removed as expired leave no place for the others to shift to.
        log = self._batches.get(execution_id, [])
        log[:] = [replace(batch, expires_at=expires_at) if batch.seq < count else batch for batch in log]

    def batch_expiries(self, execution_id: str) -> list[float | None]:
        """The expiry of each of the execution's log batches, in seq order (for tests)."""
        with self._lock:
            return [batch.expires_at for batch in self._batches.get(execution_id, [])]

    def remove_expired_batches(self, now: float) -> int:
        """Remove the batches whose expiry has passed, as the operations table's TTL does (lazily, in any
        order, on DynamoDB): how many. Nothing else expires in memory."""
        removed = 0
        with self._lock:
            for execution_id, log in self._batches.items():
                kept = [batch for batch in log if batch.expires_at is None or batch.expires_at > now]
                removed += len(log) - len(kept)
                self._batches[execution_id] = kept
        return removed

    def remove_items(self, execution_id: str, *, record: bool = False, lease: bool = False) -> None:
        """Remove the execution's record or its coordination record, as the tables' TTL does, in no set
        order (the record may go first, for all its later expiry): tests."""
        with self._lock:
            if record:
                self._executions.pop(execution_id, None)
            if lease:
                self._leases.pop(execution_id, None)
                self._records.discard(execution_id)
                for part in (self._wakes, self._carried, self._log_next, self._log_length, self._moved_to):
                    part.pop(execution_id, None)

    def delete_log(self, execution_id: str) -> int:
        with self._lock:
            self._count("delete_log")
            removed = len(self._batches.pop(execution_id, [])) + len(self._inputs.pop(execution_id, {}))
            return removed

    def delete_external_inputs(self, execution_id: str, input_ids: list[str]) -> None:
        with self._lock:
            self._count("delete_external_inputs")
            pending = self._inputs.get(execution_id, {})
            for input_id in input_ids:
                pending.pop(input_id, None)

    # --- coordination ---
    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        with self._lock:
            self._count("acquire_lease")
            held = self._leases.get(execution_id)
            if held is not None and held.owner != owner and held.expires_at > now:
                return None
            hand_off = HandOff(
                wake_at=self._wakes.get(execution_id),
                carried=self._carried.get(execution_id),
                log_next=self._log_next.get(execution_id),
                log_length=self._log_length.get(execution_id),
            )
            lease = Lease(
                execution_id=execution_id,
                owner=owner,
                expires_at=now + duration,
                hand_off=hand_off,
                taken_over=held is not None and held.owner != owner,
                moved_to=self._moved_to.get(execution_id),
                never_held=execution_id not in self._records,
            )
            self._leases[execution_id] = lease
            self._records.add(execution_id)
            return lease

    def resume_lease(
        self, execution_id: str, owner: str, *, successor: str, now: float, duration: float
    ) -> Lease | None:
        with self._lock:
            self._count("resume_lease")
            held = self._leases.get(execution_id)
            if held is None or held.owner != owner or held.expires_at <= now:
                return None
            lease = Lease(
                execution_id=execution_id,
                owner=successor,
                expires_at=now + duration,
                hand_off=HandOff(
                    wake_at=self._wakes.get(execution_id),
                    carried=self._carried.get(execution_id),
                    log_next=self._log_next.get(execution_id),
                    log_length=self._log_length.get(execution_id),
                ),
                moved_to=self._moved_to.get(execution_id),
            )
            self._leases[execution_id] = lease
            return lease

    def lease_holder(self, execution_id: str, now: float) -> str | None:
        with self._lock:
            self._count("lease_holder")
            held = self._leases.get(execution_id)
            return held.owner if held is not None and held.expires_at > now else None

    def release_lease(self, execution_id: str, owner: str, hand_off: HandOff) -> None:
        with self._lock:
            self._count("release_lease")
            held = self._leases.get(execution_id)
            if held is None or held.owner != owner:
                return
            del self._leases[execution_id]
            ended = hand_off.ended_at is not None
            if hand_off.log_next is None or ended:
                self._log_next.pop(execution_id, None)
            else:
                self._log_next[execution_id] = hand_off.log_next
            if ended:
                self._log_length.pop(execution_id, None)
            elif hand_off.log_length is not None:
                self._log_length[execution_id] = hand_off.log_length
            if hand_off.carried is not None:
                self._carried[execution_id] = hand_off.carried
            elif ended:
                self._carried.pop(execution_id, None)
            if ended:
                self._moved_to.pop(execution_id, None)
            if ended or hand_off.wake_at is None:
                self._wakes.pop(execution_id, None)
            elif not isinstance(hand_off.wake_at, KeepWake):
                self._wakes[execution_id] = hand_off.wake_at

    def note_moved_version(self, execution_id: str, version: str) -> None:
        with self._lock:
            self._count("note_moved_version")
            self._moved_to[execution_id] = version
            self._records.add(execution_id)

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        with self._lock:
            self._count("get_carried_batch")
            return self._carried.get(execution_id)

    def put_callback(self, ref: CallbackRef) -> bool:
        with self._lock:
            self._count("put_callback")
            return self._callbacks.setdefault(ref.callback_id, ref) is ref

    def get_callback(self, callback_id: str) -> CallbackRef | None:
        with self._lock:
            self._count("get_callback")
            return self._callbacks.get(callback_id)

    def complete_callback(
        self, callback_id: str, now: float, result: ExternalInput | None = None, execution_id: str = ""
    ) -> bool:
        with self._lock:
            self._count("complete_callback")
            ref = self._callbacks.get(callback_id)
            if ref is None or ref.completed:
                return False
            self._callbacks[callback_id] = replace(ref, completed=True)
            if result is not None:
                self._callback_results[callback_id] = kept_on_callback(
                    result, callback_id, ref.operation_id, now
                )
            return True

    def complete_callback_once(
        self, callback_id: str, now: float, result: ExternalInput
    ) -> CallbackRef | None:
        with self._lock:
            ref = self._callbacks.get(callback_id)
        if ref is not None and not self.complete_callback(callback_id, now, result, ref.execution_id):
            return replace(ref, completed=True)  # another completion won meanwhile
        return ref

    def reopen_callback(self, callback_id: str) -> None:
        with self._lock:
            self._count("reopen_callback")
            ref = self._callbacks.get(callback_id)
            if ref is not None:
                self._callbacks[callback_id] = replace(ref, completed=False)
            self._callback_results.pop(callback_id, None)

    def get_callback_results(self, callback_ids: Sequence[str]) -> list[ExternalInput]:
        with self._lock:
            self._count("get_callback_results")
            return [self._callback_results[i] for i in callback_ids if i in self._callback_results]

    def delete_coordination(self, execution_id: str, callback_ids: Sequence[str]) -> int:
        with self._lock:
            self._count("delete_coordination")
            removed = 0
            for callback_id in callback_ids:
                ref = self._callbacks.get(callback_id)
                if ref is not None and ref.execution_id == execution_id:
                    del self._callbacks[callback_id]
                    self._callback_results.pop(callback_id, None)
                    removed += 1
            if execution_id in self._records:
                removed += 1
            self._leases.pop(execution_id, None)
            self._records.discard(execution_id)
            for part in (self._wakes, self._carried, self._log_next, self._log_length, self._moved_to):
                part.pop(execution_id, None)
            return removed

    # --- flow control ---
    def get_flow_slots(self, scope: str) -> FlowSlots | None:
        with self._lock:
            self._count("get_flow_slots")
            state = self._flow_slots.get(scope)
            return _copy_slots(state) if state is not None else None

    def hold_flow_slot(
        self, scope: str, execution_id: str, *, limit: int, expires_at: float, labels: Mapping[str, str]
    ) -> bool:
        with self._lock:
            self._count("hold_flow_slot")
            state = self._flow_slots.get(scope, FlowSlots(holders={}))
            if execution_id in state.holders:
                return True
            if len(state.holders) >= limit or state.head != state.tail:
                return False
            holders = {**state.holders, execution_id: expires_at}
            self._flow_slots[scope] = replace(state, holders=holders, labels=dict(labels))
            return True

    def take_flow_ticket(self, scope: str, sweep_at: float, labels: Mapping[str, str]) -> int:
        with self._lock:
            self._count("take_flow_ticket")
            state = self._flow_slots.get(scope, FlowSlots(holders={}))
            self._flow_slots[scope] = replace(state, tail=state.tail + 1, labels=dict(labels))
            self._flow_sweeps[scope] = sweep_at
            return state.tail

    def put_flow_ticket(self, scope: str, ticket: int, execution_id: str) -> bool:
        with self._lock:
            self._count("put_flow_ticket")
            if (scope, ticket) in self._flow_tickets:
                return False
            self._flow_tickets[(scope, ticket)] = execution_id
            return True

    def claim_flow_ticket(self, scope: str, ticket: int) -> str | None:
        with self._lock:
            self._count("claim_flow_ticket")
            # A missing ticket is marked skipped, so a late put of it fails.
            return self._flow_tickets.setdefault((scope, ticket), None)

    def advance_flow(
        self, scope: str, ticket: int, *, execution_id: str | None, limit: int, expires_at: float
    ) -> bool:
        with self._lock:
            self._count("advance_flow")
            state = self._flow_slots.get(scope)
            if state is None or state.head != ticket:
                return False
            holders = dict(state.holders)
            if execution_id is not None:
                if len(holders) >= limit or execution_id in holders:
                    return False
                holders[execution_id] = expires_at
            self._flow_slots[scope] = replace(state, holders=holders, head=ticket + 1)
            # A skipped marker stays (as its DynamoDB item does until its expiry): a late put still fails.
            if self._flow_tickets.get((scope, ticket)) is not None:
                del self._flow_tickets[(scope, ticket)]
            return True

    def release_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float | None = None
    ) -> FlowSlots | None:
        with self._lock:
            self._count("release_flow_slot")
            state = self._flow_slots.get(scope)
            if state is None or execution_id not in state.holders:
                return None
            if expected_expiry is not None and state.holders[execution_id] != expected_expiry:
                return None
            holders = {eid: at for eid, at in state.holders.items() if eid != execution_id}
            self._flow_slots[scope] = replace(state, holders=holders)
            return _copy_slots(self._flow_slots[scope])

    def renew_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float, expires_at: float
    ) -> bool:
        with self._lock:
            self._count("renew_flow_slot")
            state = self._flow_slots.get(scope)
            if state is None or state.holders.get(execution_id) != expected_expiry:
                return False
            self._flow_slots[scope] = replace(state, holders={**state.holders, execution_id: expires_at})
            return True

    def set_flow_sweep(self, scope: str, sweep_at: float | None) -> None:
        with self._lock:
            self._count("set_flow_sweep")
            if sweep_at is None:
                self._flow_sweeps.pop(scope, None)
            elif scope in self._flow_slots:  # as on DynamoDB: only a key that has state is swept
                self._flow_sweeps[scope] = sweep_at

    def query_flow_sweeps(self, shard: int, now: float, limit: int = 100) -> list[str]:
        _check_shard(shard)
        with self._lock:
            self._count("query_flow_sweeps")
            due = sorted((at, scope) for scope, at in self._flow_sweeps.items() if at <= now)
        return [scope for _, scope in due if due_shard(scope) == shard][:limit]

    def get_flow_rate(self, scope: str) -> FlowRate:
        with self._lock:
            self._count("get_flow_rate")
            state = self._flow_rates.get(scope, FlowRate())
            return replace(state, labels=dict(state.labels))

    def put_flow_rate(
        self,
        scope: str,
        *,
        expected_version: int,
        starts: Sequence[float],
        labels: Mapping[str, str],
        window_ends: float | None = None,
    ) -> bool:
        with self._lock:
            self._count("put_flow_rate")
            if self._flow_rates.get(scope, FlowRate()).version != expected_version:
                return False
            self._flow_rates[scope] = FlowRate(tuple(starts), expected_version + 1, dict(labels))
            return True

    def reserve_flow_start(self, execution_id: str, start_at: float) -> float:
        with self._lock:
            self._count("reserve_flow_start")
            return self._flow_starts.setdefault(execution_id, start_at)

    def get_flow_start(self, execution_id: str) -> float | None:
        with self._lock:
            self._count("get_flow_start")
            return self._flow_starts.get(execution_id)

    def forget_flow_start(self, execution_id: str) -> None:
        with self._lock:
            self._count("forget_flow_start")
            self._flow_starts.pop(execution_id, None)

    def peek_flow_tickets(self, scope: str, first: int, count: int) -> list[str]:
        with self._lock:
            self._count("peek_flow_tickets")
            named = (self._flow_tickets.get((scope, ticket)) for ticket in range(first, first + count))
            return [execution_id for execution_id in named if execution_id is not None]

    # --- test helpers (not part of the port) ---
    def batch_count(self, execution_id: str) -> int:
        with self._lock:
            return len(self._batches.get(execution_id, []))

    def item_count(self, execution_id: str) -> int:
        """How many items the execution has, counted as the DynamoDB store's tables would hold them: its
        record, batches, pending inputs, coordination record, callbacks and reserved start (tests of a
        delete)."""
        with self._lock:
            return (
                (execution_id in self._executions)
                + len(self._batches.get(execution_id, []))
                + len(self._inputs.get(execution_id, {}))
                + (execution_id in self._records or execution_id in self._leases)
                + sum(ref.execution_id == execution_id for ref in self._callbacks.values())
                + (execution_id in self._flow_starts)
            )


def _copy(record: ExecutionRecord) -> ExecutionRecord:
    """A copy that shares no mutable part with the stored record."""
    return replace(record, tags=dict(record.tags))


def _copy_slots(state: FlowSlots) -> FlowSlots:
    return replace(state, holders=dict(state.holders), labels=dict(state.labels))


def _page(items: list[T], limit: int, next_token: str | None) -> Page[T]:
    """One page of a listing; the token is the offset of the next page."""
    if next_token and not (next_token.isascii() and next_token.isdigit()):
        raise InvalidArgument(f"page token {next_token!r} is not one this store returned")
    start = int(next_token) if next_token else 0
    more = start + limit < len(items)
    return Page(items=items[start : start + limit], next_token=str(start + limit) if more else None)


def _check_shard(shard: int) -> None:
    if not 0 <= shard < DUE_SHARDS:
        raise ValueError(f"shard must be 0..{DUE_SHARDS - 1}, got {shard}")
