"""The code versions port's contract (stepwell.ports.versions: VersionPins) on both stores."""

from __future__ import annotations

import dataclasses

from stepwell.model import ExecutionStatus, HandOff
from stepwell.ports import ExecutionStore

from .records import NOW, record, tagged


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


def test_an_end_records_the_version_that_ran_an_unpinned_execution_and_keeps_a_pin(
    execution_store: ExecutionStore,
) -> None:
    unpinned, pinned, tagged_one = record("u"), record("p"), tagged("t", {"team": "a"})
    for created in (unpinned, pinned, tagged_one):
        execution_store.create_execution(created)
    execution_store.pin_version(pinned.execution_id, "2", expected=None)

    for ended in (unpinned, pinned, tagged_one):
        assert execution_store.complete_execution(
            ended.execution_id, ExecutionStatus.SUCCEEDED, NOW + 1, result="1", code_version="3"
        )

    versions = [execution_store.get_execution(r.execution_id) for r in (unpinned, pinned, tagged_one)]
    # An execution that ended in its first run is pinned by its end; a pin an upgrade or an earlier run
    # stored stays (it names the version the execution ran on last).
    assert [stored.code_version if stored else None for stored in versions] == ["3", "2", "3"]
    assert execution_store.count_pinned("3") == 0 and execution_store.count_pinned("2") == 0
    # The end's other conditions hold as before: an ended execution is not ended again nor re-pinned.
    assert not execution_store.complete_execution(
        unpinned.execution_id, ExecutionStatus.FAILED, NOW + 2, code_version="4"
    )
    again = execution_store.get_execution(unpinned.execution_id)
    assert again is not None and again.code_version == "3" and again.status is ExecutionStatus.SUCCEEDED


def test_an_execution_created_pinned_is_listed_under_its_version(execution_store: ExecutionStore) -> None:
    child = dataclasses.replace(record("child"), code_version="4")
    assert execution_store.create_execution(child) is True

    stored = execution_store.get_execution(child.execution_id)
    assert stored is not None and stored.code_version == "4"
    assert execution_store.list_pinned("4").items == [child.execution_id]
    assert execution_store.pin_version(child.execution_id, "5", expected="4") is True
    assert execution_store.count_pinned("4") == 0 and execution_store.count_pinned("5") == 1


def test_the_lease_tells_the_version_an_upgrade_moved_it_to(
    execution_store: ExecutionStore,
) -> None:
    execution_store.create_execution(record("moved"))
    execution_id = record("moved").execution_id
    lease = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert lease is not None and lease.moved_to is None
    execution_store.release_lease(execution_id, "w1", HandOff())

    execution_store.note_moved_version(execution_id, "7")
    lease = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert lease is not None and lease.moved_to == "7"
    execution_store.release_lease(execution_id, "w2", HandOff(ended_at=NOW))  # the record goes with the end
    lease = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert lease is not None and lease.moved_to is None
