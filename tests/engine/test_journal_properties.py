"""Property-based tests (Hypothesis, stateful) of the journal and its service client.

Random interleavings of what workers and the outside world do to executions' logs: checkpoints of SDK
updates (duplicates and updates of finished operations included), a second worker loading the same
execution and writing (which fences the first), stale tokens, callback results and raw external inputs,
clock advances that make waits, retries and callback timeouts due, and invocation and execution ends. After
every step the log is folded afresh from the store and must keep the invariants: one result per operation
and a terminal operation never changes, EventIds 1..N with timestamps that never decrease, an input absorbed
at most once, nothing after the execution's end, and a live worker's view equal to the log for all it
flushed (and to the log it would leave by flushing the rest, timers included). A fenced or stale writer's
attempts change nothing in the store.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from aws_durable_execution_sdk_python.lambda_service import (
    CallbackOptions,
    ContextOptions,
    ErrorObject,
    Operation,
    OperationAction,
    OperationStatus,
    OperationType,
    OperationUpdate,
    StepOptions,
    WaitOptions,
)
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from stepwell.clock import VirtualClock
from stepwell.core.engine import Engine
from stepwell.core.journal import TERMINAL_STATUSES, Journal, decode_body, encode_body
from stepwell.core.registry import Registry
from stepwell.core.service import StoreServiceClient
from stepwell.errors import CallbackNotFound, SequenceConflict, StaleCheckpointToken
from stepwell.memory.payloads import MemoryPayloadStore
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import Batch, ExecutionRecord, ExecutionStatus, ExternalInput, HandOff, InputKind
from stepwell.testing.local import LocalQueue
from test_journal_and_service import CALLBACK, FAIL, START, STEP, SUCCEED, WAIT, update

NOW = 1_800_000_000.0
EXECUTION = "default#wf#s/e0"
# Executions whose log has not ended (an ended one is replaced by a new one), invocations at once.
MAX_OPEN_EXECUTIONS, MAX_INVOCATIONS = 2, 4
INVOCATION_OUTCOMES = ("pending", "crashed", "succeeded", "failed")

CONTEXT, RETRY, CANCEL = OperationType.CONTEXT, OperationAction.RETRY, OperationAction.CANCEL
# Small pools, one per type (the SDK never reuses an id for another type), so duplicates and updates of
# finished operations happen often.
STEP_IDS, WAIT_IDS, CALLBACK_IDS, CONTEXT_IDS = ("s1", "s2", "s3"), ("w1", "w2"), ("c1", "c2"), ("x1", "x2")
ALL_IDS = (*STEP_IDS, *WAIT_IDS, *CALLBACK_IDS, *CONTEXT_IDS, "unknown")

# Events that give an operation its result; a retry's StepSucceeded/StepFailed (with a next attempt) does not.
RESULT_EVENTS = frozenset(
    {
        "StepSucceeded",
        "StepFailed",
        "WaitSucceeded",
        "WaitCancelled",
        "CallbackSucceeded",
        "CallbackFailed",
        "CallbackTimedOut",
        "ContextSucceeded",
        "ContextFailed",
    }
)
EXECUTION_END_EVENTS = frozenset(
    {"ExecutionSucceeded", "ExecutionFailed", "ExecutionStopped", "ExecutionTimedOut"}
)


class SteppedClock(VirtualClock):
    """A virtual clock that moves only when told, so a run (and its shrinking) replays exactly."""

    def now(self) -> float:
        return NOW + self.skipped_seconds


payloads = st.sampled_from(['"a"', '"b"', "1", None])
# As the SDK makes them from exceptions: a type always, a message possibly empty.
errors = st.builds(
    ErrorObject,
    message=st.sampled_from(["boom", ""]),
    type=st.sampled_from(["Err", "ValueError"]),
    data=st.none(),
    stack_trace=st.none(),
)
parents = st.sampled_from([None, *CONTEXT_IDS])


def updates_of(
    ids: tuple[str, ...], op_type: OperationType, action: OperationAction, **fields: st.SearchStrategy[Any]
) -> st.SearchStrategy[OperationUpdate]:
    return st.builds(update, st.sampled_from(ids), st.just(op_type), st.just(action), **fields)


step_updates = st.one_of(
    updates_of(STEP_IDS, STEP, START, parent_id=parents),
    updates_of(STEP_IDS, STEP, SUCCEED, parent_id=parents, payload=payloads),
    updates_of(STEP_IDS, STEP, FAIL, parent_id=parents, error=errors),
    updates_of(
        STEP_IDS,
        STEP,
        RETRY,
        parent_id=parents,
        payload=payloads,
        error=st.none() | errors,
        step_options=st.builds(StepOptions, st.sampled_from([0, 1, 30])),
    ),
)
wait_updates = st.one_of(
    updates_of(
        WAIT_IDS,
        WAIT,
        START,
        parent_id=parents,
        wait_options=st.builds(WaitOptions, st.sampled_from([1, 10, 60])),
    ),
    updates_of(WAIT_IDS, WAIT, CANCEL, parent_id=parents),
)
callback_updates = updates_of(
    CALLBACK_IDS,
    CALLBACK,
    START,
    parent_id=parents,
    callback_options=st.builds(
        CallbackOptions,
        timeout_seconds=st.sampled_from([0, 30]),
        heartbeat_timeout_seconds=st.sampled_from([0, 10, 20]),
    ),
)
context_updates = st.one_of(
    updates_of(CONTEXT_IDS, CONTEXT, START, parent_id=parents),
    updates_of(
        CONTEXT_IDS,
        CONTEXT,
        SUCCEED,
        payload=payloads,
        context_options=st.builds(ContextOptions, st.booleans()),
    ),
    updates_of(CONTEXT_IDS, CONTEXT, FAIL, error=errors),
)
# The SDK sends one to a few updates per checkpoint (a step's START and SUCCEED often together).
update_batches = st.lists(
    st.one_of(step_updates, wait_updates, callback_updates, context_updates), min_size=1, max_size=3
)


def _json(op: Operation) -> dict[str, Any]:
    """An operation as the log stores it (timestamps in whole milliseconds)."""
    return dict(op.to_json_dict())


@dataclass
class Invocation:
    """One worker's invocation: the journal it loaded and the service client its SDK talks to."""

    owner: str
    execution_id: str
    journal: Journal
    client: StoreServiceClient
    started_at: float
    # The batch the lease's record carried that it took in at its start (Journal.carry), if any.
    carried: Batch | None = None


@dataclass(frozen=True)
class StoreSnapshot:
    """What a write can change in the store for one execution: its batches and its pending inputs."""

    batches: tuple[tuple[int, str], ...]
    inputs: tuple[str, ...]


class JournalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = SteppedClock()
        self.store = MemoryExecutionStore()
        queue = LocalQueue(self.clock)
        self.engine = Engine(
            store=self.store,
            queue=queue,
            timers=queue,
            payloads=MemoryPayloadStore(),
            clock=self.clock,
            registry=Registry(),
        )
        self.invocations: list[Invocation] = []
        self.started = 0
        # Per execution: the batch bodies seen so far (the log is append-only) and each operation's stored
        # form when it was first seen finished (it must never change again).
        self.seen_batches: dict[str, list[str]] = {}
        self.finished: dict[str, dict[str, dict[str, Any]]] = {}
        self.accepted_completions: Counter[str] = Counter()
        self.executions: list[str] = []
        self.open_executions: list[str] = []
        # Per execution: the invocation that began last, which holds the lease (an earlier one's lease was
        # taken over: its release, which would carry its last batch, changes nothing).
        self.lease_owner: dict[str, str] = {}

    @initialize()
    def create_executions(self) -> None:
        for _ in range(MAX_OPEN_EXECUTIONS):
            self.start_execution()

    @precondition(lambda self: len(self.open_executions) < MAX_OPEN_EXECUTIONS)
    @rule()
    def start_execution(self) -> None:
        instance = f"e{len(self.executions)}"
        execution_id = f"default#wf#s/{instance}"
        self.store.create_execution(
            ExecutionRecord(
                execution_id=execution_id,
                domain="default",
                workflow_id="wf",
                subject_id="s",
                instance_id=instance,
                execution_name=instance,
                status=ExecutionStatus.RUNNING,
                created_at=NOW,
                updated_at=NOW,
                input_payload="{}",
            )
        )
        self.executions.append(execution_id)
        self.open_executions.append(execution_id)
        self.seen_batches[execution_id] = []
        self.finished[execution_id] = {}

    # ------------------------------------------------------------------ helpers

    def _snapshot(self, execution_id: str) -> StoreSnapshot:
        batches, _ = self.store.load_batches(execution_id)
        return StoreSnapshot(
            tuple((batch.seq, batch.body) for batch in batches),
            tuple(item.input_id for item in self.store.list_external_inputs(execution_id)),
        )

    def _pick(self, pick: int) -> Invocation:
        return self.invocations[pick % len(self.invocations)]

    def _invocations(self, current: bool) -> list[Invocation]:
        return [invocation for invocation in self.invocations if self._is_current(invocation) == current]

    def _is_current(self, invocation: Invocation) -> bool:
        """Whether its next write can succeed: not fenced, and no one wrote since it last did."""
        log_length = len(self._snapshot(invocation.execution_id).batches)
        return not invocation.client.fenced and invocation.journal.next_seq == log_length

    def _callback_ids(self) -> list[str]:
        """Callback ids the store maps: of the logs, and of invocations' journals (a fenced one's too)."""
        journals = [self.engine.load_journal(execution) for execution in self.executions]
        journals += [invocation.journal for invocation in self.invocations]
        # In the order they were found (ids are random): a replay of the same steps picks the same one.
        found = (
            op.callback_details.callback_id
            for journal in journals
            for op in journal.operations.values()
            if op.callback_details is not None and op.callback_details.callback_id
        )
        return list(dict.fromkeys(found))

    # ------------------------------------------------------------------ workers

    @precondition(lambda self: len(self.invocations) < MAX_INVOCATIONS and self.open_executions)
    @rule(which=st.integers(0, MAX_OPEN_EXECUTIONS - 1))
    def begin_invocation(self, which: int) -> None:
        """A worker takes a message: folds the log, logs the start, absorbs inputs and due timers."""
        execution_id = self.open_executions[which % len(self.open_executions)]
        now = self.clock.now()
        record = self.store.get_execution(execution_id)
        assert record is not None
        journal = self.engine.load_journal(execution_id)
        self.started += 1
        owner = f"worker-{self.started}"
        previous = self.lease_owner.get(execution_id)
        if previous is not None:  # its lease ran out and this worker takes it over
            self.store.release_lease(execution_id, previous, HandOff())
        lease = self.store.acquire_lease(execution_id, owner, now, 60)
        assert lease is not None
        self.lease_owner[execution_id] = owner
        taken = lease.hand_off.carried
        if taken is not None and journal.carry(taken.seq, decode_body(taken.body)):
            event("invocation start: took in a carried batch")
        else:
            taken = None
        if journal.is_empty:
            journal.start_execution(record.input_payload, now)
        journal.absorb(self.store.list_external_inputs(execution_id), now)
        if journal.fire_due_timers(now):
            event("invocation start: timers fired")
        # Handed the Stepwell id as its ARN: its answers name every operation as the journal stores it.
        client = StoreServiceClient(self.engine, record, journal, owner=owner, arn=execution_id)
        self.invocations.append(Invocation(owner, execution_id, journal, client, now, taken))

    @precondition(lambda self: self._invocations(current=True))
    @rule(pick=st.integers(0, MAX_INVOCATIONS - 1), updates=update_batches)
    def checkpoint(self, pick: int, updates: list[OperationUpdate]) -> None:
        """The SDK of the invocation that holds the log checkpoints: at most one batch, and the answer holds
        the operations it changed. Only child contexts' starts and ends and waits' starts, with nothing
        outside the run waiting on the journal, may be left to the next batch; the log the invocation
        would leave by flushing is checked by the invariants either way."""
        invocations = self._invocations(current=True)
        invocation = invocations[pick % len(invocations)]
        client, execution_id = invocation.client, invocation.execution_id
        before, fired, deferred = self._snapshot(execution_id), client.timers_fired, client.deferred
        held = set(invocation.journal.operations)
        effective = []
        for change in updates:
            if change.action is not CANCEL or change.operation_id in held:
                effective.append(change)
                held.add(change.operation_id)

        output = client.checkpoint(execution_id, client.token, updates, None)

        after = self._snapshot(execution_id)
        assert not client.fenced and output.checkpoint_token == client.token
        assert after.batches[: len(before.batches)] == before.batches
        assert len(after.batches) - len(before.batches) in (0, 1)
        wrote = len(after.batches) == len(before.batches) + 1
        left = client.deferred > deferred
        state = output.new_execution_state
        changed = state.operations if state is not None and state.operations is not None else []
        for op in changed:
            assert _json(op) == _json(invocation.journal.operations[op.operation_id])
        if left:
            assert not wrote and invocation.journal.has_unflushed
            # Judged by what the updates left, as the service judges: a cancel of an operation the
            # journal does not hold yet (sent before the wait's start) cancels nothing, and neither does
            # one of a wait that already ended (its timer fired first); what is left to the next batch
            # is a context's change or a wait started or ended, which a replay records again.
            assert effective
            for change in effective:
                op = invocation.journal.operations[change.operation_id]
                assert op.operation_type is CONTEXT or (
                    op.operation_type is WAIT
                    and op.status in (OperationStatus.STARTED, OperationStatus.SUCCEEDED)
                ), (change, op.status)
            assert not invocation.journal.has_unflushed_side_effects
        assert changed == [] or wrote or left
        event(f"checkpoint: {'wrote' if wrote else 'left to the next batch' if left else 'no-op'}")
        if client.timers_fired > fired:
            event("checkpoint: timers fired")

    @precondition(lambda self: self._invocations(current=False))
    @rule(pick=st.integers(0, MAX_INVOCATIONS - 1), updates=update_batches)
    def checkpoint_by_a_stale_invocation(self, pick: int, updates: list[OperationUpdate]) -> None:
        """An invocation whose log another one wrote to since it loaded (or that is fenced) checkpoints:
        nothing changes in the store, and once it had something to write it is fenced (no token)."""
        invocations = self._invocations(current=False)
        invocation = invocations[pick % len(invocations)]
        client, execution_id = invocation.client, invocation.execution_id
        was_fenced, before = client.fenced, self._snapshot(execution_id)

        output = client.checkpoint(execution_id, client.token, updates, None)

        assert self._snapshot(execution_id) == before, "a fenced or stale writer changed the store"
        assert (output.checkpoint_token is None) == client.fenced
        assert client.fenced or not was_fenced
        event(f"stale checkpoint: {'fenced' if client.fenced else 'nothing to write'}")

    @precondition(lambda self: self.invocations)
    @rule(
        pick=st.integers(0, MAX_INVOCATIONS - 1),
        updates=update_batches,
        bad=st.sampled_from(["other-owner", "previous-seq", "next-seq"]),
    )
    def checkpoint_with_a_stale_token(self, pick: int, updates: list[OperationUpdate], bad: str) -> None:
        invocation = self._pick(pick)
        client, journal = invocation.client, invocation.journal
        token = {
            "other-owner": f"someone-else:{journal.next_seq}",
            "previous-seq": f"{invocation.owner}:{journal.next_seq - 1}",
            "next-seq": f"{invocation.owner}:{journal.next_seq + 1}",
        }[bad]
        before = self._snapshot(invocation.execution_id)
        operations_before = {op_id: _json(op) for op_id, op in journal.operations.items()}
        if client.fenced:
            output = client.checkpoint(invocation.execution_id, token, updates, None)
            assert output.checkpoint_token is None
        else:
            with pytest.raises(StaleCheckpointToken, match="is not the current one"):
                client.checkpoint(invocation.execution_id, token, updates, None)
        assert self._snapshot(invocation.execution_id) == before
        assert {op_id: _json(op) for op_id, op in journal.operations.items()} == operations_before

    @precondition(lambda self: self.invocations)
    @rule(pick=st.integers(0, MAX_INVOCATIONS - 1), outcome=st.sampled_from(INVOCATION_OUTCOMES))
    def end_invocation(self, pick: int, outcome: str) -> None:
        """The handler returned (PENDING, or a result that ends the execution) or crashed: the worker writes
        the invocation's last batch. A fenced client writes nothing; a stale journal gets SequenceConflict
        and changes nothing."""
        invocation = self._pick(pick)
        self.invocations.remove(invocation)
        if invocation.client.fenced:
            return
        journal, now = invocation.journal, self.clock.now()
        crash = {"ErrorType": "Runtime.ExitError", "ErrorMessage": "exit"} if outcome == "crashed" else None
        may_carry = outcome == "pending" and journal.consecutive_crashes == 0
        journal.invocation_completed(invocation.started_at, now, invocation.owner, crash)
        if outcome == "succeeded":
            journal.execution_ended("SUCCEEDED", now, '"done"', None)
        elif outcome == "failed":
            journal.execution_ended("FAILED", now, None, {"ErrorType": "Err", "ErrorMessage": "no"})
        record = self.store.get_execution(invocation.execution_id)
        assert record is not None
        current = self._is_current(invocation)
        event(f"invocation end ({outcome}): {'current' if current else 'stale'}")
        before = self._snapshot(invocation.execution_id)
        if may_carry:
            # As the worker ends a PENDING invocation: its last batch may ride on the lease's release, which
            # changes something only while this worker still holds the lease.
            try:
                carried = self.engine.carry_or_append_journal(record, journal)
            except SequenceConflict:
                assert not current and self._snapshot(invocation.execution_id) == before
                return
            if carried is None:
                after = self._snapshot(invocation.execution_id)
                assert current and after.batches[:-1] == before.batches
                assert len(after.batches) == len(before.batches) + 1
                return
            event(f"invocation end (pending): carried ({'current' if current else 'stale'})")
            assert self._snapshot(invocation.execution_id) == before
            self.store.release_lease(invocation.execution_id, invocation.owner, HandOff(carried=carried))
            if self.lease_owner.get(invocation.execution_id) == invocation.owner:
                assert self.store.get_carried_batch(invocation.execution_id) == carried
            return
        if current:
            self.engine.append_journal(record, journal, terminal=journal.ended)
            after = self._snapshot(invocation.execution_id)
            assert after.batches[:-1] == before.batches and len(after.batches) == len(before.batches) + 1
        else:
            with pytest.raises(SequenceConflict):
                self.engine.append_journal(record, journal, terminal=journal.ended)
            assert self._snapshot(invocation.execution_id) == before

    @rule(seconds=st.sampled_from([0.001, 1, 5, 10, 20, 30, 61]))
    def advance_clock(self, seconds: float) -> None:
        self.clock.advance(seconds)

    # ------------------------------------------------------------------ the outside world

    @rule(which=st.integers(0, 15), outcome=st.sampled_from(["success", "failure", "heartbeat"]))
    def send_callback(self, which: int, outcome: str) -> None:
        """A third party completes a callback (started, finished, or one no log knows)."""
        candidates = [*self._callback_ids(), "cbunknown"]
        callback_id = candidates[which % len(candidates)]
        ref = self.store.get_callback(callback_id)
        send = {
            "success": lambda: self.engine.send_callback_success(callback_id, '"paid"'),
            "failure": lambda: self.engine.send_callback_failure(callback_id, {"ErrorType": "Declined"}),
            "heartbeat": lambda: self.engine.send_callback_heartbeat(callback_id),
        }[outcome]
        event(f"callback {outcome}: {'refused' if ref is None or ref.completed else 'accepted'}")
        if ref is None or ref.completed:
            with pytest.raises(CallbackNotFound, match=repr(callback_id)):
                send()
            return
        send()
        self._arrived()
        if outcome != "heartbeat":
            self.accepted_completions[callback_id] += 1
            assert self.accepted_completions[callback_id] == 1, "a callback was completed twice"

    @rule(
        which=st.integers(0, 15),
        kind=st.sampled_from([kind for kind in InputKind if kind is not InputKind.STOP]),
        operation_id=st.sampled_from(ALL_IDS),
        payload=payloads,
    )
    def deliver_input(self, which: int, kind: InputKind, operation_id: str, payload: str | None) -> None:
        """A raw external input (a child's result, or a repeated callback result): for started, finished,
        mismatched and unknown operations."""
        error = (
            {"ErrorType": "Err"}
            if kind not in (InputKind.CALLBACK_SUCCEEDED, InputKind.CHILD_SUCCEEDED)
            else None
        )
        execution_id = self.executions[which % len(self.executions)]
        self.engine.deliver(execution_id, kind, operation_id, payload=payload, error=error)
        self._arrived()

    def _arrived(self) -> None:
        # Input ids sort by their millisecond, then at random: inputs a millisecond apart keep their
        # order, so a replay of the same steps absorbs them in the same order.
        self.clock.advance(0.001)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def logs_keep_their_invariants(self) -> None:
        for execution_id in self.executions:
            self._check_log(execution_id)

    def _check_log(self, execution_id: str) -> None:
        batches, _ = self.store.load_batches(execution_id)
        bodies = [batch.body for batch in batches]
        seen = self.seen_batches[execution_id]
        assert [batch.seq for batch in batches] == list(range(len(batches)))
        assert bodies[: len(seen)] == seen, "a stored batch changed"
        self.seen_batches[execution_id] = bodies

        # The log, and the batch the lease's record carries while the log has not taken it in, folded as the
        # next run takes it in; the history ends with that batch too.
        logged = self.engine.load_journal(execution_id)
        folded = copy.deepcopy(logged)
        carried = self.store.get_carried_batch(execution_id)
        if carried is not None and folded.carry(carried.seq, decode_body(carried.body)):
            event("check: a carried batch folded")
        if folded.ended and execution_id in self.open_executions:
            self.open_executions.remove(execution_id)
        history = self.engine.get_execution_history(execution_id)
        assert [item["EventId"] for item in history] == list(range(1, len(history) + 1))
        assert folded.next_event_id == len(history) + 1
        stamps = [item["EventTimestamp"] for item in history]
        assert stamps == sorted(stamps), "event timestamps went back"

        # One result per operation, nothing for an operation after its result, nothing after the end.
        results: Counter[str] = Counter()
        for position, item in enumerate(history):
            if item["EventType"] in EXECUTION_END_EVENTS:
                assert position == len(history) - 1, f"{history[position + 1]} follows the execution's end"
            op_id = item.get("Id")
            if op_id is None or op_id == folded.execution_operation_id:
                continue
            assert results[op_id] == 0, f"{item['EventType']} of {op_id!r} after its result"
            details = item.get(f"{item['EventType']}Details", {})
            if item["EventType"] in RESULT_EVENTS and "NextAttemptDelaySeconds" not in details.get(
                "RetryDetails", {}
            ):
                results[op_id] += 1
        finished = self.finished[execution_id]
        for op_id, op in folded.operations.items():
            if op.operation_type is OperationType.EXECUTION:
                continue
            is_finished = op.status in TERMINAL_STATUSES
            assert is_finished == (results[op_id] == 1), (
                f"{op_id!r} is {op.status} with {results[op_id]} results"
            )
        # An operation the log holds ended never changes again. One ended only in the carried batch may: a
        # run that began before that batch was carried writes the log's next seq itself (the carried batch,
        # only what a replay records again, is then ignored) and records the end again, at its own time.
        for op_id, op in logged.operations.items():
            if op.operation_type is not OperationType.EXECUTION and op.status in TERMINAL_STATUSES:
                stored = finished.setdefault(op_id, _json(op))
                assert _json(op) == stored, f"finished operation {op_id!r} changed"
        assert set(finished) <= set(logged.operations)

        # Each input absorbed at most once, and an absorbed one is no longer pending.
        absorbed = [input_id for body in bodies for input_id in json.loads(body).get("i", ())]
        assert len(absorbed) == len(set(absorbed)), "an input was absorbed twice"
        pending = {item.input_id for item in self.store.list_external_inputs(execution_id)}
        assert not pending & set(absorbed)

        for invocation in self.invocations:
            if invocation.execution_id == execution_id and self._is_current(invocation):
                self._check_live_view(invocation, logged)

    def _check_live_view(self, invocation: Invocation, logged: Journal) -> None:
        """The live worker's view equals the log (and the carried batch it took in at its start, until
        it writes it) folded afresh for all it flushed, and equals the log it would leave by flushing the
        rest now (a copy of it flushes: the worker itself is untouched; its next batch starts with the
        carried one it took in). Not the batch the record carries now: another run may have carried its
        own since, which this one, the log's next writer, overrides (a replay records it again)."""
        live, folded = invocation.journal, logged
        if live.holds_carried:
            assert invocation.carried is not None
            folded = copy.deepcopy(logged)
            assert folded.carry(invocation.carried.seq, decode_body(invocation.carried.body))
        unflushed = set(live.unflushed_operation_ids())
        assert set(folded.operations) - unflushed == set(live.operations) - unflushed
        # The index of open operations a run keeps is the one a journal of its operations builds.
        assert list(live._open) == list(Journal(live.execution_id, operations=dict(live.operations))._open)
        for op_id, op in folded.operations.items():
            if op_id not in unflushed:
                assert _json(op) == _json(live.operations[op_id]), f"{op_id!r} differs from the log"

        flushing, reloaded = copy.deepcopy(live), copy.deepcopy(logged)
        reloaded.fold(reloaded.next_seq, decode_body(encode_body(flushing.flush().body)))
        reloaded.finish_loading()
        assert {op_id: _json(op) for op_id, op in flushing.operations.items()} == {
            op_id: _json(op) for op_id, op in reloaded.operations.items()
        }
        assert flushing.next_event_id == reloaded.next_event_id
        assert flushing.meta == reloaded.meta
        assert flushing.absorbed_input_ids == reloaded.absorbed_input_ids
        assert flushing.needs_invocation == reloaded.needs_invocation
        live_wake, reloaded_wake = flushing.next_wake_at(), reloaded.next_wake_at()
        assert (live_wake is None) == (reloaded_wake is None), (
            f"next wake-up {live_wake} vs {reloaded_wake} after a reload"
        )
        if live_wake is not None and reloaded_wake is not None:
            assert live_wake == pytest.approx(reloaded_wake, abs=0.001)  # stored in whole milliseconds


JournalMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestJournalMachine = JournalMachine.TestCase


# ---------------------------------------------------------------------- regressions the machine found


def _apply_and_flush(journal: Journal, now: float, *updates: OperationUpdate) -> None:
    for change in updates:
        journal.apply_update(change, now)
    journal.flush()


def test_a_heartbeat_keeps_the_callback_timeout_when_that_comes_first() -> None:
    journal = Journal(EXECUTION)
    options = CallbackOptions(timeout_seconds=30, heartbeat_timeout_seconds=20)
    _apply_and_flush(journal, NOW, update("c1", CALLBACK, START, callback_options=options))
    heartbeat = ExternalInput("0001#a", InputKind.CALLBACK_HEARTBEAT, NOW + 15, operation_id="c1")

    journal.absorb([heartbeat], NOW + 15)

    # The next heartbeat is due at +35, after the callback's own timeout at +30.
    assert journal.next_wake_at() == pytest.approx(NOW + 30)
    assert journal.fire_due_timers(NOW + 30) == 1
    details = journal.operations["c1"].callback_details
    assert details is not None and details.error is not None and details.error.type == "Callback.Timeout"


def test_a_later_retry_of_a_step_replaces_its_next_attempt_time() -> None:
    journal = Journal(EXECUTION)
    first = update("s1", STEP, RETRY, step_options=StepOptions(1))
    second = update("s1", STEP, RETRY, step_options=StepOptions(30))
    _apply_and_flush(journal, NOW, first, second)

    assert journal.next_wake_at() == pytest.approx(NOW + 30)
    assert journal.fire_due_timers(NOW + 1) == 0
    assert journal.fire_due_timers(NOW + 30) == 1
