"""The due wake-ups port's contract (stepwell.ports.due_wakeups: DueWakeUps) on the memory store and on
DynamoDB (moto's in-process tables): pages in due order up to a bound, deletes by key, a watermark that
never moves back, a sweep lease with one holder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.aws.dynamodb_store.due_wakeups import DynamoDbDueWakeUps
from stepwell.memory.due_wakeups import MemoryDueWakeUps
from stepwell.ports.due_wakeups import DueWake, DueWakeUps, due_bucket, due_shard
from stepwell.testing.mock_deployment import REGION, create_deployment

T0 = 1_800_000_000.0 - 1_800_000_000.0 % 3600


@pytest.fixture(params=["memory", "dynamodb"])
def due_wakeups(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[DueWakeUps]:
    if request.param == "memory":
        yield MemoryDueWakeUps()
        return
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        config = create_deployment()
        yield DynamoDbDueWakeUps(
            AwsClients(region=REGION).dynamodb,
            executions_table=config.executions_table,
            operations_table=config.operations_table,
            coordination_table=config.coordination_table,
            subject_index=config.subject_index_name,
        )


def _same_shard(count: int) -> list[str]:
    ids = (f"default#orders#o-{n}/x{n}" for n in range(10_000))
    first = next(ids)
    return [first, *[eid for eid in ids if due_shard(eid) == due_shard(first)][: count - 1]]


def test_a_page_holds_the_shards_items_due_by_the_bound_soonest_first(due_wakeups: DueWakeUps) -> None:
    a, b, c = _same_shard(3)
    shard, bucket = due_shard(a), due_bucket(T0)
    due_wakeups.put_due(c, T0 + 30.5)
    due_wakeups.put_due(a, T0 + 10.25)
    due_wakeups.put_due(b, T0 + 10.25)
    due_wakeups.put_due(b, T0 + 10.25)  # the same wake-up again: one item
    due_wakeups.put_due(a, T0 + 3600)  # the next bucket's

    page = due_wakeups.due_page(shard, bucket, until=T0 + 30.5, limit=10)
    assert page == sorted([DueWake(T0 + 10.25, a), DueWake(T0 + 10.25, b), DueWake(T0 + 30.5, c)])
    assert due_wakeups.due_page(shard, bucket, until=T0 + 30.499, limit=10) == page[:2]
    assert due_wakeups.due_page(shard, bucket, until=T0 + 30.5, limit=1) == page[:1]
    assert due_wakeups.due_page((shard + 1) % 32, bucket, until=T0 + 3600, limit=10) == []

    due_wakeups.delete_due([page[0], page[0], DueWake(T0 + 99, c)])  # repeats and unknown ones: skipped
    assert due_wakeups.due_page(shard, bucket, until=T0 + 3599, limit=10) == page[1:]
    assert due_wakeups.due_page(shard, bucket + 1, until=T0 + 3600, limit=10) == [DueWake(T0 + 3600, a)]


def test_the_sweep_state_starts_empty_moves_forward_and_leases_one_holder(due_wakeups: DueWakeUps) -> None:
    assert due_wakeups.sweep_state() is None
    due_wakeups.advance_watermark(5, 100)
    due_wakeups.advance_watermark(5, 99)
    due_wakeups.advance_watermark(6, 101)
    assert due_wakeups.take_sweep_lease(5, owner="a", now=T0, until=T0 + 60)
    assert not due_wakeups.take_sweep_lease(5, owner="b", now=T0 + 59, until=T0 + 120)
    state = due_wakeups.sweep_state()
    assert state is not None and state.watermarks == {5: 100, 6: 101} and set(state.leases) == {5}
    assert state.leases[5].owner == "a" and state.leases[5].expires_at == T0 + 60
    assert due_wakeups.take_sweep_lease(5, owner="b", now=T0 + 61, until=T0 + 120)  # expired
    due_wakeups.release_sweep_lease(5, "a")  # no longer its own
    state = due_wakeups.sweep_state()
    assert state is not None and state.leases[5].owner == "b"
    due_wakeups.release_sweep_lease(5, "b")
    state = due_wakeups.sweep_state()
    assert state is not None and state.leases == {}
    with pytest.raises(ValueError, match="shard"):
        due_wakeups.advance_watermark(32, 1)
