"""The listings over sharded index keys (issue 42): the DynamoDB store with its key values spread over
conftest.SHARDED's shards (one of them always empty) merges one Query per shard, and must give the memory
store's orders and pages: pages that end in the middle of a shard, equal sort keys in different shards,
a status change that moves an execution to another status's shards, and tokens that continue each."""

from __future__ import annotations

import dataclasses

from stepwell.aws.dynamodb_store.shards import shard_of
from stepwell.model import ExecutionQuery, ExecutionRecord, ExecutionStatus, PauseState, ResumeRequest
from stepwell.ports import ExecutionStore

from .conftest import SHARDED
from .records import NOW, record, tagged


def _listed(
    store: ExecutionStore, query: ExecutionQuery, limit: int, *, oldest_first: bool = False
) -> list[str]:
    """Every page of `query`, `limit` at a time, as the instance ids each page listed ("|" between pages)."""
    pages: list[str] = []
    token: str | None = None
    while True:
        page = store.list_executions(query, limit, token, oldest_first=oldest_first)
        assert len(page.items) <= limit
        pages.append(",".join(r.instance_id for r in page.items))
        token = page.next_token
        if token is None:
            return pages


def _tied(prefix: str) -> list[str]:
    """Three instance ids of workflow "wf" whose executions lie in three different shards."""
    found: dict[int, str] = {}
    for n in range(100):
        instance = f"{prefix}{n}"
        found.setdefault(shard_of(f"default#wf#s/{instance}", SHARDED.write), instance)
    assert len(found) == SHARDED.write
    return sorted(found.values())


def _records() -> list[ExecutionRecord]:
    """Eleven executions over the shards: eight at distinct times, three created at one time."""
    spread = [record(f"i{n:02d}", created=NOW + n) for n in range(8)]
    return spread + [record(instance, created=NOW + 100) for instance in _tied("t")]


def test_a_workflow_listing_merges_its_shards_newest_first_in_pages_of_any_size(
    sharded_store: ExecutionStore,
) -> None:
    records = _records()
    for each in records:
        assert sharded_store.create_execution(each)
    newest = [r.instance_id for r in sorted(records, key=lambda r: (-r.created_at, r.execution_id))]
    assert len({shard_of(r.execution_id, SHARDED.write) for r in records}) == SHARDED.write

    for limit in (1, 2, 3, 4, 11, 50):
        pages = _listed(sharded_store, ExecutionQuery(workflow_id="wf"), limit)
        assert ",".join(page for page in pages if page).split(",") == newest, limit
        assert all(len(page.split(",")) == limit for page in pages[:-1] if page), limit
    # Equal createdAt: the execution id breaks the tie (ascending newest first, descending oldest first).
    assert newest[:3] == _tied("t")
    oldest = _listed(sharded_store, ExecutionQuery(workflow_id="wf"), 4, oldest_first=True)
    assert ",".join(oldest).split(",") == newest[::-1]
    assert _listed(sharded_store, ExecutionQuery(workflow_id="other"), 5) == [""]


def test_a_status_listing_follows_each_change_of_status_across_shards(sharded_store: ExecutionStore) -> None:
    records = _records()
    for each in records:
        sharded_store.create_execution(each)
    ended = [r.execution_id for r in records[:4]]
    for n, execution_id in enumerate(ended):
        assert sharded_store.complete_execution(execution_id, ExecutionStatus.SUCCEEDED, NOW + 200 + n)
    paused = records[5].execution_id
    assert sharded_store.request_pause(paused, PauseState(requested_at=NOW + 300))
    assert sharded_store.settle_pause(paused, NOW + 300, NOW + 301)

    running = sorted(
        (r for r in records if r.execution_id not in {*ended, paused}),
        key=lambda r: (-r.updated_at, r.execution_id),
    )
    listed = _listed(sharded_store, ExecutionQuery(status=ExecutionStatus.RUNNING), 2)
    assert ",".join(listed).split(",") == [r.instance_id for r in running]
    succeeded = _listed(sharded_store, ExecutionQuery(status=ExecutionStatus.SUCCEEDED), 3)
    assert succeeded == ["i03,i02,i01", "i00"]
    assert _listed(sharded_store, ExecutionQuery(status=ExecutionStatus.PAUSED), 3) == ["i05"]

    # A resumed execution is RUNNING again (newest: its resume's time), the record reads its bare status.
    assert sharded_store.end_pause(paused, NOW + 300, ResumeRequest(requested_at=NOW + 400), 100.0)
    assert _listed(sharded_store, ExecutionQuery(status=ExecutionStatus.RUNNING), 1)[0] == "i05"
    stored = sharded_store.get_execution(paused)
    assert stored is not None and stored.status is ExecutionStatus.RUNNING and stored.workflow_id == "wf"
    assert sharded_store.get_execution_status(ended[0]) is ExecutionStatus.SUCCEEDED
    assert sharded_store.begin_deletion(ended[0], NOW + 500)
    assert sharded_store.delete_execution(ended[0])
    assert _listed(sharded_store, ExecutionQuery(status=ExecutionStatus.SUCCEEDED), 10) == ["i03,i02,i01"]


def test_a_tag_listing_merges_its_shards_and_filters_by_status(sharded_store: ExecutionStore) -> None:
    tagged_records = [tagged(f"g{n}", {"team": "a"}, created=NOW + n) for n in range(9)]
    for each in tagged_records:
        assert sharded_store.create_execution(each)
    for each in tagged_records[::3]:
        sharded_store.complete_execution(each.execution_id, ExecutionStatus.FAILED, NOW + 50)
    query = ExecutionQuery(tag=("team", "a"), domain="default")

    assert ",".join(_listed(sharded_store, query, 2)) == ",".join(f"g{n}" for n in range(8, -1, -1))
    assert ",".join(_listed(sharded_store, query, 4, oldest_first=True)) == ",".join(
        f"g{n}" for n in range(9)
    )
    failed = dataclasses.replace(query, status=ExecutionStatus.FAILED)
    assert ",".join(page for page in _listed(sharded_store, failed, 2) if page) == "g6,g3,g0"
    # A deleted execution takes its tag entries (in the shard it was created in) with it.
    assert sharded_store.begin_deletion(tagged_records[3].execution_id, NOW + 60)
    assert sharded_store.delete_execution(tagged_records[3].execution_id)
    assert ",".join(page for page in _listed(sharded_store, failed, 5) if page) == "g6,g0"


def test_pinned_listings_and_counts_read_every_shard(sharded_store: ExecutionStore) -> None:
    records = _records()
    for each in records:
        sharded_store.create_execution(each)
        assert sharded_store.pin_version(each.execution_id, "7", expected=None)
    sharded_store.complete_execution(records[0].execution_id, ExecutionStatus.SUCCEEDED, NOW + 200)
    oldest = [r.execution_id for r in sorted(records[1:], key=lambda r: (r.created_at, r.execution_id))]

    ids: list[str] = []
    token: str | None = None
    while True:
        page = sharded_store.list_pinned("7", limit=3, next_token=token)
        assert len(page.items) <= 3
        ids += page.items
        token = page.next_token
        if token is None:
            break
    assert ids == oldest
    assert sharded_store.count_pinned("7") == len(oldest) and sharded_store.count_pinned("8") == 0


def test_a_domain_listing_merges_its_shards_by_subject(sharded_store: ExecutionStore) -> None:
    records = [record(f"d{n}", subject=f"s{n % 4}", created=NOW + n) for n in range(10)]
    records.append(dataclasses.replace(record("x"), execution_id="other#wf#s0/x", domain="other"))
    for each in records:
        assert sharded_store.create_execution(each)
    by_subject = [r.instance_id for r in sorted(records[:10], key=lambda r: (r.subject_id, r.execution_id))]

    for limit in (1, 3, 10):
        pages = _listed(sharded_store, ExecutionQuery(domain="default"), limit)
        assert ",".join(page for page in pages if page).split(",") == by_subject, limit
    one_subject = _listed(sharded_store, ExecutionQuery(domain="default", subject_id="s1"), 2)
    assert ",".join(page for page in one_subject if page) == "d1,d5,d9"
    stored = sharded_store.list_executions(ExecutionQuery(domain="other")).items
    assert [(r.domain, r.instance_id) for r in stored] == [("other", "x")]
