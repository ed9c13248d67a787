"""The schedule pointers port's contract (stepwell.ports.schedule_pointers: SchedulePointers) on both
stores."""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionQuery, ExecutionStatus
from stepwell.ports import ExecutionStore

from .records import record


def test_a_schedule_pointer_moves_only_from_the_value_read(execution_store: ExecutionStore) -> None:
    first, second, third = (record(f"nightly-{n}", subject="nightly").execution_id for n in (1, 2, 3))
    assert execution_store.get_schedule_pointer("default", "nightly") is None

    other = record("other", subject="nightly").execution_id
    claim = functools.partial(execution_store.claim_schedule_pointer, "default", "nightly")
    assert claim(expected=other, execution_id=first) is False  # none yet
    assert claim(expected=None, execution_id=first) is True
    assert claim(expected=None, execution_id=second) is False  # set already
    assert execution_store.get_schedule_pointer("default", "nightly") == first

    assert claim(expected=second, execution_id=third) is False
    assert claim(expected=first, execution_id=second) is True
    assert claim(expected=first, execution_id=third) is False  # moved on
    assert execution_store.get_schedule_pointer("default", "nightly") == second
    # One pointer per domain and schedule.
    assert execution_store.get_schedule_pointer("acme", "nightly") is None
    assert execution_store.get_schedule_pointer("default", "hourly") is None
    assert (
        execution_store.claim_schedule_pointer("acme", "nightly", expected=None, execution_id=third) is True
    )
    assert execution_store.get_schedule_pointer("default", "nightly") == second


def test_a_schedule_pointer_is_no_execution(execution_store: ExecutionStore) -> None:
    execution_store.create_execution(record("run-1", subject="nightly"))
    assert execution_store.claim_schedule_pointer(
        "default", "nightly", expected=None, execution_id=record("run-1", subject="nightly").execution_id
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
    execution_store.claim_schedule_pointer("default", "nightly", expected=None, execution_id=last)
    racers = 8
    start = threading.Barrier(racers)
    ids = [record(f"nightly-{n + 1}", subject="nightly").execution_id for n in range(racers)]

    def claim(index: int) -> bool:
        start.wait()
        return execution_store.claim_schedule_pointer(
            "default", "nightly", expected=last, execution_id=ids[index]
        )

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
        execution_store.claim_schedule_pointer(domain, schedule, expected=None, execution_id=execution_id)
    if execution_id != "not-an-id":
        with pytest.raises(InvalidArgument, match=message):
            execution_store.get_schedule_pointer(domain, schedule)
