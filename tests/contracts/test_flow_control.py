"""The flow control port's contract (stepwell.ports.flow_control: FlowControlStore) on both stores."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from stepwell.aws.dynamodb_store import due_shard as dynamodb_due_shard
from stepwell.memory.store import due_shard
from stepwell.model import FlowLimit
from stepwell.ports import DUE_SHARDS, ExecutionStore

from .records import NOW, record

LEASE = NOW + 900


def flow_scope(key: str = "k", kind: str = "concurrency") -> str:
    return FlowLimit(kind=kind, domain="default", workflow="wf", key=key, limit=0).scope


def flow_labels(limit: int) -> dict[str, str]:
    return {"domain": "default", "workflow": "wf", "key": "k", "limit": str(limit), "period": "0"}


def flow_ids(count: int) -> list[str]:
    return [record(f"f{n}").execution_id for n in range(count)]


def test_holders_never_exceed_the_limit_under_racing_threads(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    assert execution_store.get_flow_slots(scope) is None  # the key's item is created by the race
    racers = 8
    start = threading.Barrier(racers)
    ids = flow_ids(racers)

    def hold(index: int) -> bool:
        start.wait()
        return execution_store.hold_flow_slot(
            scope, ids[index], limit=3, expires_at=LEASE + index, labels=flow_labels(3)
        )

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(hold, range(racers)))
    assert outcomes.count(True) == 3
    state = execution_store.get_flow_slots(scope)
    assert state is not None
    assert state.holders == {ids[i]: LEASE + i for i, won in enumerate(outcomes) if won}
    assert (state.head, state.tail, state.waiting) == (0, 0, 0)
    assert state.labels == flow_labels(3)


def test_a_holder_holds_idempotently_and_keeps_its_lease(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    first, second = flow_ids(2)
    assert execution_store.hold_flow_slot(scope, first, limit=1, expires_at=LEASE, labels=flow_labels(1))
    # A duplicate hold keeps the first lease.
    assert execution_store.hold_flow_slot(scope, first, limit=1, expires_at=LEASE + 60, labels=flow_labels(1))
    # Full.
    assert not execution_store.hold_flow_slot(scope, second, limit=1, expires_at=LEASE, labels=flow_labels(1))
    state = execution_store.get_flow_slots(scope)
    assert state is not None and state.holders == {first: LEASE}
    # Keys are independent: another key's slot is free.
    assert execution_store.hold_flow_slot(
        flow_scope("other"), second, limit=1, expires_at=LEASE, labels=flow_labels(1)
    )


def test_hold_refuses_while_the_queue_is_not_empty(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    holder, waiter, newcomer = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, holder, limit=3, expires_at=LEASE, labels=flow_labels(3))
    ticket = execution_store.take_flow_ticket(scope, LEASE, flow_labels(3))
    assert execution_store.put_flow_ticket(scope, ticket, waiter)
    # A slot is free, but one waits: a newcomer does not overtake it.
    assert not execution_store.hold_flow_slot(
        scope, newcomer, limit=3, expires_at=LEASE, labels=flow_labels(3)
    )
    assert execution_store.claim_flow_ticket(scope, ticket) == waiter
    assert execution_store.advance_flow(scope, ticket, execution_id=waiter, limit=3, expires_at=LEASE)
    assert execution_store.hold_flow_slot(scope, newcomer, limit=3, expires_at=LEASE, labels=flow_labels(3))
    state = execution_store.get_flow_slots(scope)
    assert state is not None and set(state.holders) == {holder, waiter, newcomer}


def test_tickets_are_issued_in_order_and_a_skipped_tickets_late_put_fails(
    execution_store: ExecutionStore,
) -> None:
    scope = flow_scope()
    racers = 8
    start = threading.Barrier(racers)

    def take(_: int) -> int:
        start.wait()
        return execution_store.take_flow_ticket(scope, LEASE, flow_labels(2))

    with ThreadPoolExecutor(racers) as pool:
        tickets = list(pool.map(take, range(racers)))
    assert sorted(tickets) == list(range(racers))
    state = execution_store.get_flow_slots(scope)
    assert state is not None and (state.head, state.tail, state.waiting) == (0, racers, racers)
    assert state.holders == {} and state.labels == flow_labels(2)

    first, second, third = flow_ids(3)
    assert execution_store.put_flow_ticket(scope, 0, first)
    assert not execution_store.put_flow_ticket(scope, 0, second)  # the ticket is taken
    assert execution_store.claim_flow_ticket(scope, 0) == first
    assert execution_store.claim_flow_ticket(scope, 1) is None  # not put yet: skipped
    assert not execution_store.put_flow_ticket(scope, 1, second)  # too late
    assert execution_store.claim_flow_ticket(scope, 1) is None
    # Once the skipped ticket is served, its late put still fails.
    assert execution_store.advance_flow(scope, 0, execution_id=first, limit=2, expires_at=LEASE)
    assert execution_store.advance_flow(scope, 1, execution_id=None, limit=2, expires_at=LEASE)
    assert not execution_store.put_flow_ticket(scope, 1, third)
    assert execution_store.peek_flow_tickets(scope, 0, 3) == []


def test_the_queue_is_served_in_order_and_only_into_free_slots(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    holder, first, second = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, holder, limit=2, expires_at=LEASE, labels=flow_labels(2))
    for waiter in (first, second, first):  # the last: a duplicate ticket of an execution served before
        ticket = execution_store.take_flow_ticket(scope, LEASE, flow_labels(2))
        assert execution_store.put_flow_ticket(scope, ticket, waiter)

    # Not the head.
    assert not execution_store.advance_flow(scope, 1, execution_id=second, limit=2, expires_at=LEASE)
    assert execution_store.claim_flow_ticket(scope, 0) == first
    assert execution_store.advance_flow(scope, 0, execution_id=first, limit=2, expires_at=LEASE + 1)
    # Served already.
    assert not execution_store.advance_flow(scope, 0, execution_id=first, limit=2, expires_at=LEASE + 1)
    assert execution_store.claim_flow_ticket(scope, 1) == second
    # Both slots are held.
    assert not execution_store.advance_flow(scope, 1, execution_id=second, limit=2, expires_at=LEASE)
    assert execution_store.release_flow_slot(scope, holder) is not None
    assert execution_store.advance_flow(scope, 1, execution_id=second, limit=2, expires_at=LEASE + 2)
    state = execution_store.get_flow_slots(scope)
    assert state is not None
    assert (state.holders, state.head, state.tail) == ({first: LEASE + 1, second: LEASE + 2}, 2, 3)

    assert execution_store.claim_flow_ticket(scope, 2) == first
    # It holds a slot already.
    assert not execution_store.advance_flow(scope, 2, execution_id=first, limit=3, expires_at=LEASE)
    assert execution_store.advance_flow(scope, 2, execution_id=None, limit=3, expires_at=LEASE)  # passed over
    state = execution_store.get_flow_slots(scope)
    assert state is not None and (state.head, state.tail, state.waiting) == (3, 3, 0)
    assert set(state.holders) == {first, second}


def test_a_slot_is_released_and_renewed_only_from_the_expiry_read(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    first, second, stranger = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, first, limit=2, expires_at=LEASE, labels=flow_labels(2))
    assert execution_store.hold_flow_slot(scope, second, limit=2, expires_at=LEASE + 5, labels=flow_labels(2))
    assert execution_store.release_flow_slot(scope, stranger) is None
    assert execution_store.release_flow_slot(flow_scope("nobody"), first) is None

    assert not execution_store.renew_flow_slot(scope, first, LEASE + 1, LEASE + 900)  # not its expiry
    assert not execution_store.renew_flow_slot(scope, stranger, LEASE, LEASE + 900)
    assert execution_store.renew_flow_slot(scope, first, LEASE, LEASE + 900)
    # A sweep that read the old expiry does not reclaim the renewed holder.
    assert execution_store.release_flow_slot(scope, first, expected_expiry=LEASE) is None
    after = execution_store.release_flow_slot(scope, first, expected_expiry=LEASE + 900)
    assert after is not None and after.holders == {second: LEASE + 5}
    after = execution_store.release_flow_slot(scope, second)
    assert after is not None and after.holders == {}
    assert execution_store.release_flow_slot(scope, second) is None


def test_sweeps_are_set_cleared_and_queried_by_due_time_per_shard(execution_store: ExecutionStore) -> None:
    scopes = [flow_scope(f"k{n}") for n in range(12)]
    for offset, scope in enumerate(scopes):
        execution_store.take_flow_ticket(scope, NOW + offset, flow_labels(1))
    for shard in range(DUE_SHARDS):
        mine = [scope for scope in scopes if due_shard(scope) == shard]
        assert execution_store.query_flow_sweeps(shard, NOW + 100) == mine  # oldest first
        assert execution_store.query_flow_sweeps(shard, NOW - 1) == []
    assert sorted(
        s for shard in range(DUE_SHARDS) for s in execution_store.query_flow_sweeps(shard, NOW + 5)
    ) == (sorted(scopes[:6]))

    first, second = scopes[0], scopes[1]
    execution_store.set_flow_sweep(first, NOW + 1000)
    execution_store.set_flow_sweep(second, None)
    due = {s for shard in range(DUE_SHARDS) for s in execution_store.query_flow_sweeps(shard, NOW + 100)}
    assert due == set(scopes[2:])
    assert first in execution_store.query_flow_sweeps(due_shard(first), NOW + 1000)
    # A key that has no state is never swept; limit caps the answer.
    execution_store.set_flow_sweep(flow_scope("none"), NOW)
    assert flow_scope("none") not in execution_store.query_flow_sweeps(due_shard(flow_scope("none")), NOW + 1)
    shard = due_shard(scopes[2])
    assert len(execution_store.query_flow_sweeps(shard, NOW + 2000, limit=1)) == 1
    state = execution_store.get_flow_slots(second)
    assert state is not None and state.tail == 1  # clearing the sweep leaves the key's state


def test_a_rate_key_is_replaced_only_from_the_version_read(execution_store: ExecutionStore) -> None:
    scope = flow_scope(kind="rate")
    empty = execution_store.get_flow_rate(scope)
    assert (empty.starts, empty.version) == ((), 0)
    labels = {**flow_labels(2), "period": "60"}
    assert execution_store.put_flow_rate(scope, expected_version=0, starts=[NOW], labels=labels)
    # A stale writer loses.
    assert not execution_store.put_flow_rate(scope, expected_version=0, starts=[NOW + 1], labels=labels)
    assert execution_store.put_flow_rate(scope, expected_version=1, starts=[NOW, NOW + 0.5], labels=labels)
    assert not execution_store.put_flow_rate(scope, expected_version=1, starts=[NOW + 2], labels=labels)
    state = execution_store.get_flow_rate(scope)
    assert (state.starts, state.version, state.labels) == ((NOW, NOW + 0.5), 2, labels)
    assert execution_store.get_flow_rate(flow_scope("other", kind="rate")).version == 0


def test_of_rate_writers_racing_from_one_version_exactly_one_wins(execution_store: ExecutionStore) -> None:
    scope = flow_scope(kind="rate")
    racers = 6
    start = threading.Barrier(racers)

    def put(index: int) -> bool:
        start.wait()
        return execution_store.put_flow_rate(
            scope, expected_version=0, starts=[NOW + index], labels=flow_labels(3)
        )

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(put, range(racers)))
    assert outcomes.count(True) == 1
    state = execution_store.get_flow_rate(scope)
    assert (state.starts, state.version) == ((NOW + outcomes.index(True),), 1)


def test_a_reserved_start_keeps_the_first_time(execution_store: ExecutionStore) -> None:
    first, second = flow_ids(2)
    assert execution_store.get_flow_start(first) is None
    assert execution_store.reserve_flow_start(first, NOW + 30.5) == NOW + 30.5
    assert execution_store.reserve_flow_start(first, NOW + 90) == NOW + 30.5  # a duplicate message
    assert execution_store.get_flow_start(first) == NOW + 30.5
    assert execution_store.get_flow_start(second) is None


def test_peeking_at_tickets_skips_skipped_and_missing_ones(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    ids = flow_ids(5)
    for _ in ids:
        execution_store.take_flow_ticket(scope, LEASE, flow_labels(1))
    for ticket in (0, 2, 4):
        assert execution_store.put_flow_ticket(scope, ticket, ids[ticket])
    assert execution_store.claim_flow_ticket(scope, 1) is None  # skipped; ticket 3 is never put
    assert execution_store.peek_flow_tickets(scope, 0, 5) == [ids[0], ids[2], ids[4]]
    assert execution_store.peek_flow_tickets(scope, 2, 2) == [ids[2]]
    assert execution_store.peek_flow_tickets(scope, 5, 10) == []
    assert execution_store.peek_flow_tickets(flow_scope("other"), 0, 5) == []
    state = execution_store.get_flow_slots(scope)
    assert state is not None and (state.head, state.tail) == (0, 5)  # peeking changes nothing
    assert not execution_store.put_flow_ticket(scope, 1, ids[1])


@pytest.mark.parametrize("execution_id", ["default#wf#s/a", "d#orders#o-1/x", "x#y#z/" + "q" * 100])
def test_due_shards_agree_with_the_memory_store(execution_id: str) -> None:
    assert dynamodb_due_shard(execution_id) == due_shard(execution_id)
