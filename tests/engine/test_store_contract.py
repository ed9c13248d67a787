"""The ExecutionStore port's contract, checked on the memory store.

Every test takes the `execution_store` fixture; another store (e.g. the DynamoDB adapter) can run the same
checks by overriding that fixture in its own conftest and importing these tests.
"""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from stepwell.errors import SequenceConflict
from stepwell.memory_store import MemoryExecutionStore, due_shard
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    InputKind,
)
from stepwell.ports import DUE_SHARDS, ExecutionStore

NOW = 1_800_000_000.0


@pytest.fixture
def execution_store() -> ExecutionStore:
    return MemoryExecutionStore()


def record(instance: str, workflow: str = "wf", subject: str = "s", created: float = NOW) -> ExecutionRecord:
    execution_id = f"default#{workflow}#{subject}/{instance}"
    return ExecutionRecord(
        execution_id,
        "default",
        workflow,
        subject,
        instance,
        instance,
        ExecutionStatus.RUNNING,
        created,
        created,
    )


def test_create_is_conditional_and_complete_happens_once(execution_store: ExecutionStore) -> None:
    first = record("a")
    assert execution_store.create_execution(first) is True
    assert execution_store.create_execution(record("a")) is False

    assert execution_store.complete_execution(
        first.execution_id, ExecutionStatus.SUCCEEDED, NOW + 1, result="1"
    )
    assert not execution_store.complete_execution(first.execution_id, ExecutionStatus.STOPPED, NOW + 2)
    stored = execution_store.get_execution(first.execution_id)
    assert stored is not None and stored.status is ExecutionStatus.SUCCEEDED and stored.result == "1"
    assert execution_store.get_execution("default#wf#s/missing") is None


def test_append_is_fenced_by_seq_and_loads_in_pages(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    for seq in range(5):
        execution_store.append_batch(execution_id, Batch(seq=seq, body=f'{{"n":{seq}}}', created_at=NOW))
    with pytest.raises(SequenceConflict):
        execution_store.append_batch(execution_id, Batch(seq=3, body="{}", created_at=NOW))

    seen: list[int] = []
    after = -1
    while True:
        page, last = execution_store.load_batches(execution_id, after_seq=after, limit=2)
        seen.extend(batch.seq for batch in page)
        if last is None:
            break
        after = last
    assert seen == [0, 1, 2, 3, 4]


def test_external_inputs_list_in_arrival_order_until_deleted(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    for input_id in ("0003#c", "0001#a", "0002#b"):
        execution_store.put_external_input(
            execution_id, ExternalInput(input_id, InputKind.CALLBACK_HEARTBEAT, NOW, operation_id="op")
        )
    assert [item.input_id for item in execution_store.list_external_inputs(execution_id)] == [
        "0001#a",
        "0002#b",
        "0003#c",
    ]
    execution_store.delete_external_inputs(execution_id, ["0001#a", "0003#c"])
    assert [item.input_id for item in execution_store.list_external_inputs(execution_id)] == ["0002#b"]


def test_a_lease_is_exclusive_until_it_expires_or_is_released(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    assert execution_store.acquire_lease(execution_id, "w1", NOW, 60) is not None
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None
    execution_store.release_lease(execution_id, "w2")  # not the holder: nothing happens
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None

    expired = [
        lease
        for shard in range(DUE_SHARDS)
        for lease in execution_store.query_expired_leases(shard, NOW + 61)
    ]
    assert [lease.owner for lease in expired] == ["w1"]
    taken = execution_store.acquire_lease(execution_id, "w2", NOW + 61, 60)
    assert taken is not None and taken.owner == "w2"
    execution_store.release_lease(execution_id, "w2")
    assert execution_store.acquire_lease(execution_id, "w3", NOW + 62, 60) is not None


def test_callbacks_and_due_timers(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.put_callback(CallbackRef("cb-1", execution_id, "op-1"))
    assert execution_store.get_callback("cb-1") == CallbackRef("cb-1", execution_id, "op-1")
    assert execution_store.get_callback("cb-2") is None

    execution_store.record_due_timer(execution_id, NOW + 10)
    execution_store.record_due_timer(execution_id, NOW + 20)  # one entry per execution: the latest
    shard = due_shard(execution_id)
    assert execution_store.query_due(shard, NOW + 15) == []
    due = execution_store.query_due(shard, NOW + 25)
    assert [(timer.execution_id, timer.due_at) for timer in due] == [(execution_id, NOW + 20)]
    execution_store.clear_due_timer(execution_id)
    assert execution_store.query_due(shard, NOW + 25) == []
    with pytest.raises(ValueError, match=r"shard must be 0\.\.3"):
        execution_store.query_due(DUE_SHARDS, NOW)


def test_a_callback_completes_once_and_can_be_reopened(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.put_callback(CallbackRef("cb-1", execution_id, "op-1"))
    assert execution_store.complete_callback("cb-1", NOW) is True
    assert execution_store.get_callback("cb-1") == CallbackRef("cb-1", execution_id, "op-1", completed=True)
    assert execution_store.complete_callback("cb-1", NOW + 1) is False
    assert execution_store.complete_callback("cb-unknown", NOW) is False

    execution_store.reopen_callback("cb-1")  # its completion could not be delivered
    assert execution_store.get_callback("cb-1") == CallbackRef("cb-1", execution_id, "op-1")
    assert execution_store.complete_callback("cb-1", NOW + 2) is True


def test_of_completions_racing_for_a_callback_exactly_one_wins(execution_store: ExecutionStore) -> None:
    execution_store.put_callback(CallbackRef("cb-race", record("a").execution_id, "op-1"))
    racers = 8
    start = threading.Barrier(racers)

    def complete(_: int) -> bool:
        start.wait()
        return execution_store.complete_callback("cb-race", NOW)

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(complete, range(racers)))
    assert outcomes.count(True) == 1


def test_list_by_workflow_is_newest_first_and_paged(execution_store: ExecutionStore) -> None:
    for index in range(3):
        execution_store.create_execution(record(f"i{index}", created=NOW + index))
    execution_store.create_execution(record("other", workflow="other"))

    first = execution_store.list_executions(ExecutionQuery(workflow_id="wf"), limit=2)
    rest = execution_store.list_executions(
        ExecutionQuery(workflow_id="wf"), limit=2, next_token=first.next_token
    )

    assert [r.instance_id for r in first.items] == ["i2", "i1"]
    assert [r.instance_id for r in rest.items] == ["i0"] and rest.next_token is None


def test_a_query_needs_exactly_one_key() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        ExecutionQuery(status=ExecutionStatus.RUNNING, workflow_id="wf")
    with pytest.raises(ValueError, match="pass domain= too"):
        ExecutionQuery(workflow_id="wf", subject_id="s")


def _all_pinned(store: ExecutionStore, version: str) -> list[str]:
    ids: list[str] = []
    token: str | None = None
    while True:
        page = store.list_pinned(version, limit=2, next_token=token)
        ids.extend(page.items)
        token = page.next_token
        if token is None:
            return ids


def test_pinning_is_conditional_on_the_current_version_and_on_running(
    execution_store: ExecutionStore,
) -> None:
    first = record("a")
    execution_store.create_execution(first)

    assert execution_store.pin_version(first.execution_id, "1", expected="7") is False  # not pinned yet
    assert execution_store.pin_version(first.execution_id, "1", expected=None) is True
    assert execution_store.pin_version(first.execution_id, "2", expected=None) is False  # pinned already
    assert execution_store.pin_version(first.execution_id, "2", expected="3") is False
    assert execution_store.pin_version(first.execution_id, "2", expected="1") is True
    stored = execution_store.get_execution(first.execution_id)
    assert stored is not None and stored.code_version == "2"

    assert execution_store.pin_version("default#wf#s/missing", "1", expected=None) is False
    execution_store.complete_execution(first.execution_id, ExecutionStatus.SUCCEEDED, NOW + 1)
    assert execution_store.pin_version(first.execution_id, "3", expected="2") is False  # ended


def test_pinned_listings_count_only_running_executions_and_an_end_keeps_the_version(
    execution_store: ExecutionStore,
) -> None:
    for index in range(3):
        created = record(f"p{index}", created=NOW + index)
        execution_store.create_execution(created)
        execution_store.pin_version(created.execution_id, "1", expected=None)
    other = record("other")
    execution_store.create_execution(other)
    execution_store.pin_version(other.execution_id, "2", expected=None)
    execution_store.create_execution(record("unpinned"))
    ended = record("p0").execution_id

    assert _all_pinned(execution_store, "1") == [record(f"p{i}").execution_id for i in range(3)]
    assert execution_store.count_pinned("1") == 3
    assert execution_store.complete_execution(ended, ExecutionStatus.FAILED, NOW + 5)

    assert _all_pinned(execution_store, "1") == [record("p1").execution_id, record("p2").execution_id]
    assert execution_store.count_pinned("1") == 2
    assert execution_store.count_pinned("2") == 1 and execution_store.count_pinned("9") == 0
    stored = execution_store.get_execution(ended)
    assert stored is not None and stored.code_version == "1"  # which version ran it


def test_an_execution_created_pinned_is_listed_under_its_version(execution_store: ExecutionStore) -> None:
    child = dataclasses.replace(record("child"), code_version="4")
    assert execution_store.create_execution(child) is True

    stored = execution_store.get_execution(child.execution_id)
    assert stored is not None and stored.code_version == "4"
    assert execution_store.list_pinned("4").items == [child.execution_id]
    assert execution_store.pin_version(child.execution_id, "5", expected="4") is True
    assert execution_store.count_pinned("4") == 0 and execution_store.count_pinned("5") == 1
