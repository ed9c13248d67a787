"""The ExecutionStore port's contract, checked on the memory store.

Every test takes the `execution_store` fixture; another store (e.g. the DynamoDB adapter) can run the same
checks by overriding that fixture in its own conftest and importing these tests.
"""

from __future__ import annotations

import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from stepwell.errors import InvalidArgument, SequenceConflict
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


def tagged(
    instance: str, tags: dict[str, str], domain: str = "default", created: float = NOW
) -> ExecutionRecord:
    return dataclasses.replace(
        record(instance, created=created),
        execution_id=f"{domain}#wf#s/{instance}",
        domain=domain,
        tags=tags,
    )


def _all_by_tag(
    store: ExecutionStore,
    tag: tuple[str, str],
    domain: str = "default",
    status: ExecutionStatus | None = None,
) -> list[str]:
    names: list[str] = []
    token: str | None = None
    while True:
        page = store.list_executions(ExecutionQuery(tag=tag, domain=domain, status=status), 2, token)
        names.extend(r.instance_id for r in page.items)
        token = page.next_token
        if token is None:
            return names


def test_executions_are_listed_by_tag_newest_first_within_their_domain_and_paged(
    execution_store: ExecutionStore,
) -> None:
    for index in range(5):
        execution_store.create_execution(
            tagged(f"c{index}", {"customer": "c-42", "tier": str(index % 2)}, created=NOW + index)
        )
    execution_store.create_execution(tagged("other-value", {"customer": "c-7"}))
    execution_store.create_execution(tagged("other-domain", {"customer": "c-42"}, domain="acme"))
    # '=' may be in a key and a value: key "a=b" with value "c" is not key "a" with value "b=c".
    execution_store.create_execution(tagged("key-with-equals", {"a=b": "c"}))
    execution_store.create_execution(tagged("value-with-equals", {"a": "b=c"}))
    execution_store.create_execution(record("untagged"))

    first = execution_store.list_executions(ExecutionQuery(tag=("customer", "c-42"), domain="default"), 2)
    assert [r.instance_id for r in first.items] == ["c4", "c3"] and first.next_token is not None
    assert _all_by_tag(execution_store, ("customer", "c-42")) == ["c4", "c3", "c2", "c1", "c0"]
    assert _all_by_tag(execution_store, ("tier", "1")) == ["c3", "c1"]
    assert _all_by_tag(execution_store, ("customer", "c-42"), domain="acme") == ["other-domain"]
    assert _all_by_tag(execution_store, ("a=b", "c")) == ["key-with-equals"]
    assert _all_by_tag(execution_store, ("a", "b=c")) == ["value-with-equals"]
    assert _all_by_tag(execution_store, ("customer", "c-1")) == []
    stored = execution_store.get_execution(tagged("c4", {}).execution_id)
    assert stored is not None and stored.tags == {"customer": "c-42", "tier": "0"}
    # Tag entries are no executions: the other listings do not show them.
    by_domain = execution_store.list_executions(ExecutionQuery(domain="default"), 100).items
    assert sorted(r.instance_id for r in by_domain) == sorted(
        [f"c{i}" for i in range(5)] + ["other-value", "key-with-equals", "value-with-equals", "untagged"]
    )
    assert len(execution_store.list_executions(ExecutionQuery(workflow_id="wf")).items) == 10


def test_a_tag_listing_filters_by_status_and_the_first_create_keeps_its_tags(
    execution_store: ExecutionStore,
) -> None:
    for index in range(4):
        execution_store.create_execution(tagged(f"t{index}", {"team": "ops"}, created=NOW + index))
    assert execution_store.create_execution(tagged("t1", {"team": "dev"})) is False
    stored = execution_store.get_execution(tagged("t1", {}).execution_id)
    assert stored is not None and stored.tags == {"team": "ops"}
    assert _all_by_tag(execution_store, ("team", "dev")) == []

    for ended in ("t0", "t2"):
        assert execution_store.complete_execution(
            tagged(ended, {}).execution_id, ExecutionStatus.SUCCEEDED, NOW + 10, result="1"
        )
    assert not execution_store.complete_execution(tagged("t2", {}).execution_id, ExecutionStatus.STOPPED, NOW)

    assert _all_by_tag(execution_store, ("team", "ops"), status=ExecutionStatus.RUNNING) == ["t3", "t1"]
    assert _all_by_tag(execution_store, ("team", "ops"), status=ExecutionStatus.SUCCEEDED) == ["t2", "t0"]
    assert _all_by_tag(execution_store, ("team", "ops"), status=ExecutionStatus.FAILED) == []
    assert _all_by_tag(execution_store, ("team", "ops")) == ["t3", "t2", "t1", "t0"]
    ended = execution_store.get_execution(tagged("t2", {}).execution_id)
    assert ended is not None and ended.status is ExecutionStatus.SUCCEEDED and ended.tags == {"team": "ops"}


def test_a_tag_query_lists_within_a_domain_only() -> None:
    with pytest.raises(ValueError, match="tag= lists within one domain"):
        ExecutionQuery(tag=("k", "v"))
    with pytest.raises(ValueError, match="tag= lists within one domain"):
        ExecutionQuery(tag=("k", "v"), domain="d", workflow_id="wf")
    assert ExecutionQuery(tag=("k", "v"), domain="d", status=ExecutionStatus.RUNNING).tag == ("k", "v")


def test_a_schedule_pointer_moves_only_from_the_value_read(execution_store: ExecutionStore) -> None:
    first, second, third = (record(f"nightly-{n}", subject="nightly").execution_id for n in (1, 2, 3))
    assert execution_store.get_schedule_pointer("default", "nightly") is None

    other = record("other", subject="nightly").execution_id
    assert execution_store.claim_schedule_pointer("default", "nightly", other, first) is False  # none yet
    assert execution_store.claim_schedule_pointer("default", "nightly", None, first) is True
    assert execution_store.claim_schedule_pointer("default", "nightly", None, second) is False  # set already
    assert execution_store.get_schedule_pointer("default", "nightly") == first

    assert execution_store.claim_schedule_pointer("default", "nightly", second, third) is False
    assert execution_store.claim_schedule_pointer("default", "nightly", first, second) is True
    assert execution_store.claim_schedule_pointer("default", "nightly", first, third) is False  # moved on
    assert execution_store.get_schedule_pointer("default", "nightly") == second
    # One pointer per domain and schedule.
    assert execution_store.get_schedule_pointer("acme", "nightly") is None
    assert execution_store.get_schedule_pointer("default", "hourly") is None
    assert execution_store.claim_schedule_pointer("acme", "nightly", None, third) is True
    assert execution_store.get_schedule_pointer("default", "nightly") == second


def test_a_schedule_pointer_is_no_execution(execution_store: ExecutionStore) -> None:
    execution_store.create_execution(record("run-1", subject="nightly"))
    assert execution_store.claim_schedule_pointer(
        "default", "nightly", None, record("run-1", subject="nightly").execution_id
    )

    listed = [
        execution_store.list_executions(ExecutionQuery(domain="default"), 100).items,
        execution_store.list_executions(ExecutionQuery(domain="default", subject_id="nightly"), 100).items,
        execution_store.list_executions(ExecutionQuery(workflow_id="wf"), 100).items,
        execution_store.list_executions(ExecutionQuery(status=ExecutionStatus.RUNNING), 100).items,
    ]
    assert [[r.instance_id for r in items] for items in listed] == [["run-1"]] * 4


def test_of_claims_racing_from_the_same_pointer_exactly_one_wins(execution_store: ExecutionStore) -> None:
    last = record("nightly-0", subject="nightly").execution_id
    execution_store.claim_schedule_pointer("default", "nightly", None, last)
    racers = 8
    start = threading.Barrier(racers)
    ids = [record(f"nightly-{n + 1}", subject="nightly").execution_id for n in range(racers)]

    def claim(index: int) -> bool:
        start.wait()
        return execution_store.claim_schedule_pointer("default", "nightly", last, ids[index])

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(claim, range(racers)))
    assert outcomes.count(True) == 1
    assert execution_store.get_schedule_pointer("default", "nightly") == ids[outcomes.index(True)]


@pytest.mark.parametrize(
    ("domain", "schedule", "execution_id", "message"),
    [
        ("a#b", "nightly", "default#wf#s/x", "invalid domain 'a#b'"),
        ("default", "", "default#wf#s/x", "invalid schedule ''"),
        ("default", "night/ly", "default#wf#s/x", "invalid schedule 'night/ly'"),
        ("default", "nightly", "not-an-id", "a schedule pointer names an execution"),
    ],
)
def test_a_schedule_pointer_refuses_keys_that_are_not_key_parts(
    execution_store: ExecutionStore, domain: str, schedule: str, execution_id: str, message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        execution_store.claim_schedule_pointer(domain, schedule, None, execution_id)
    if execution_id != "not-an-id":
        with pytest.raises(InvalidArgument, match=message):
            execution_store.get_schedule_pointer(domain, schedule)
