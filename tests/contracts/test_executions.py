"""The executions port's contract (stepwell.ports.executions: ExecutionRecords) on both stores."""

from __future__ import annotations

import dataclasses

import pytest
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionQuery, ExecutionStatus, FlowLimit
from stepwell.ports import ExecutionStore

from .records import NOW, record, tagged


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


def test_oldest_first_reads_the_workflow_status_and_tag_listings_the_other_way_and_pages(
    execution_store: ExecutionStore,
) -> None:
    for index in range(3):
        execution_store.create_execution(
            dataclasses.replace(
                tagged(f"i{index}", {"team": "a"}, created=NOW + index), updated_at=NOW + index
            )
        )
    execution_store.create_execution(record("other", workflow="other", created=NOW - 5))

    def listed(query: ExecutionQuery) -> list[list[str]]:
        pages: list[list[str]] = []
        token: str | None = None
        while True:
            page = execution_store.list_executions(query, limit=2, next_token=token, oldest_first=True)
            pages.append([r.instance_id for r in page.items])
            token = page.next_token
            if token is None:
                return pages

    assert listed(ExecutionQuery(workflow_id="wf")) == [["i0", "i1"], ["i2"]]
    assert listed(ExecutionQuery(tag=("team", "a"), domain="default")) == [["i0", "i1"], ["i2"]]
    by_status = [name for page in listed(ExecutionQuery(status=ExecutionStatus.RUNNING)) for name in page]
    assert by_status == ["other", "i0", "i1", "i2"]
    newest = execution_store.list_executions(ExecutionQuery(workflow_id="wf"), limit=3)
    assert [r.instance_id for r in newest.items] == ["i2", "i1", "i0"]
    # A domain's executions are listed by subject: no time to read the other way.
    with pytest.raises(InvalidArgument, match="oldest_first lists by workflow, status or tag"):
        execution_store.list_executions(ExecutionQuery(domain="default"), oldest_first=True)


def test_a_query_needs_exactly_one_key() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        ExecutionQuery(status=ExecutionStatus.RUNNING, workflow_id="wf")
    with pytest.raises(ValueError, match="pass domain= too"):
        ExecutionQuery(workflow_id="wf", subject_id="s")


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


def test_an_executions_flow_limits_round_trip(execution_store: ExecutionStore) -> None:
    limits = (
        FlowLimit(kind="concurrency", domain="default", workflow="wf", key="tenant-7", limit=5),
        FlowLimit(kind="rate", domain="default", workflow="wf", key="", limit=100, period=3600),
    )
    limited = dataclasses.replace(record("limited"), flow=limits)
    assert execution_store.create_execution(limited)
    execution_store.create_execution(record("plain"))
    stored = execution_store.get_execution(limited.execution_id)
    assert stored is not None and stored.flow == limits
    assert execution_store.complete_execution(limited.execution_id, ExecutionStatus.SUCCEEDED, NOW + 1)
    ended = execution_store.get_execution(limited.execution_id)
    assert ended is not None and ended.flow == limits
    listed = execution_store.list_executions(ExecutionQuery(workflow_id="wf"), 10).items
    assert {r.instance_id: r.flow for r in listed} == {"limited": limits, "plain": ()}
