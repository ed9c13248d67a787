"""The store's side of pause, resume and delete (stepwell.core.lifecycle) on both stores: the conditional
status changes of ExecutionRecords (request_pause, settle_pause, end_pause, begin_deletion,
delete_execution, get_execution_status), a paused execution still ends, stays pinned and lists by its
status, and the deletes of the log, the coordination record and callbacks, and a reserved start."""

from __future__ import annotations

import dataclasses

import pytest
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionStatus,
    ExternalInput,
    HandOff,
    InputKind,
    PauseState,
    ResumeRequest,
)
from stepwell.ports import ExecutionStore

from .records import NOW, record, tagged


def test_a_pause_is_requested_settled_and_ended_once_each(execution_store: ExecutionStore) -> None:
    running = record("a")
    execution_store.create_execution(running)
    execution_id = running.execution_id
    pause = PauseState(requested_at=NOW + 1, timeout_paused=False, reason="maintenance")

    assert execution_store.request_pause(execution_id, pause)
    assert not execution_store.request_pause(execution_id, dataclasses.replace(pause, requested_at=NOW + 2))
    pausing = execution_store.get_execution(execution_id)
    assert pausing is not None and pausing.status is ExecutionStatus.PAUSING and pausing.pause == pause
    assert execution_store.get_execution_status(execution_id) is ExecutionStatus.PAUSING

    assert not execution_store.settle_pause(execution_id, NOW + 9, NOW + 3)  # another pause's time
    assert execution_store.settle_pause(execution_id, NOW + 1, NOW + 3)
    assert not execution_store.settle_pause(execution_id, NOW + 1, NOW + 4)  # PAUSED already
    paused = execution_store.get_execution(execution_id)
    assert paused is not None and paused.status is ExecutionStatus.PAUSED
    assert paused.pause == dataclasses.replace(pause, paused_at=NOW + 3) and paused.updated_at == NOW + 3

    resumed = ResumeRequest(requested_at=NOW + 10, reason=None)
    assert not execution_store.end_pause(execution_id, NOW + 9, resumed, 7.0)
    assert execution_store.end_pause(execution_id, NOW + 1, resumed, 7.5)
    assert not execution_store.end_pause(execution_id, NOW + 1, resumed, 7.5)
    back = execution_store.get_execution(execution_id)
    assert back is not None and back.status is ExecutionStatus.RUNNING and back.pause is None
    assert (back.resumed, back.paused_seconds, back.updated_at) == (resumed, 7.5, NOW + 10)


def test_a_pausing_execution_is_resumed_and_paused_ones_list_by_their_status(
    execution_store: ExecutionStore,
) -> None:
    for name in ("p", "q"):
        execution_store.create_execution(record(name))
    pause = PauseState(requested_at=NOW + 1)
    p_id, q_id = record("p").execution_id, record("q").execution_id
    assert execution_store.request_pause(p_id, pause) and execution_store.request_pause(q_id, pause)
    assert execution_store.settle_pause(q_id, NOW + 1, NOW + 2)

    assert execution_store.end_pause(p_id, NOW + 1, ResumeRequest(NOW + 3), 0.0)  # PAUSING -> RUNNING

    by_status = {
        status: [r.instance_id for r in execution_store.list_executions(ExecutionQuery(status=status)).items]
        for status in (ExecutionStatus.RUNNING, ExecutionStatus.PAUSED, ExecutionStatus.PAUSING)
    }
    assert by_status == {
        ExecutionStatus.RUNNING: ["p"],
        ExecutionStatus.PAUSED: ["q"],
        ExecutionStatus.PAUSING: [],
    }


@pytest.mark.parametrize("status", [ExecutionStatus.PAUSING, ExecutionStatus.PAUSED])
def test_a_paused_execution_ends_once_and_drops_its_pause(
    execution_store: ExecutionStore, status: ExecutionStatus
) -> None:
    execution_store.create_execution(record("a"))
    execution_id = record("a").execution_id
    execution_store.request_pause(execution_id, PauseState(requested_at=NOW + 1))
    if status is ExecutionStatus.PAUSED:
        execution_store.settle_pause(execution_id, NOW + 1, NOW + 2)

    assert execution_store.complete_execution(execution_id, ExecutionStatus.STOPPED, NOW + 5)
    assert not execution_store.complete_execution(execution_id, ExecutionStatus.TIMED_OUT, NOW + 6)

    stopped = execution_store.get_execution(execution_id)
    assert stopped is not None and stopped.status is ExecutionStatus.STOPPED and stopped.pause is None
    assert not execution_store.request_pause(execution_id, PauseState(requested_at=NOW + 7))


def test_a_paused_execution_stays_pinned_and_can_be_pinned(execution_store: ExecutionStore) -> None:
    pinned = dataclasses.replace(record("a"), code_version="3")
    execution_store.create_execution(pinned)
    execution_store.create_execution(record("b"))
    for execution_id in (pinned.execution_id, record("b").execution_id):
        execution_store.request_pause(execution_id, PauseState(requested_at=NOW + 1))
        execution_store.settle_pause(execution_id, NOW + 1, NOW + 2)

    assert execution_store.pin_version(record("b").execution_id, "3", expected=None)

    assert execution_store.count_pinned("3") == 2
    assert sorted(execution_store.list_pinned("3").items) == [pinned.execution_id, record("b").execution_id]


def test_only_an_ended_execution_is_deleted_and_its_record_and_tags_go(
    execution_store: ExecutionStore,
) -> None:
    gone, kept = tagged("gone", {"team": "a"}), tagged("kept", {"team": "a"}, created=NOW + 1)
    execution_store.create_execution(gone)
    execution_store.create_execution(kept)

    assert not execution_store.begin_deletion(gone.execution_id, NOW + 2)  # RUNNING
    assert not execution_store.delete_execution(gone.execution_id)  # not DELETING
    execution_store.complete_execution(gone.execution_id, ExecutionStatus.FAILED, NOW + 3, error={"x": "y"})
    assert execution_store.begin_deletion(gone.execution_id, NOW + 4)
    assert not execution_store.begin_deletion(gone.execution_id, NOW + 5)  # DELETING already
    deleting = execution_store.get_execution(gone.execution_id)
    assert deleting is not None and deleting.status is ExecutionStatus.DELETING
    assert deleting.updated_at == NOW + 4 and deleting.ended_at == NOW + 3
    assert not execution_store.complete_execution(gone.execution_id, ExecutionStatus.STOPPED, NOW + 6)

    assert execution_store.delete_execution(gone.execution_id)
    assert not execution_store.delete_execution(gone.execution_id)

    assert execution_store.get_execution(gone.execution_id) is None
    assert execution_store.get_execution_status(gone.execution_id) is None
    listed = execution_store.list_executions(ExecutionQuery(tag=("team", "a"), domain="default")).items
    assert [r.instance_id for r in listed] == ["kept"]
    assert execution_store.create_execution(gone)  # its id is free again


def test_the_log_coordination_callbacks_and_reserved_start_are_deleted(
    execution_store: ExecutionStore,
) -> None:
    execution_id, other = record("a").execution_id, record("b").execution_id
    for target in (execution_id, other):
        for seq in range(3):
            execution_store.append_batch(target, Batch(seq=seq, body=f'{{"n":{seq}}}', created_at=NOW))
        execution_store.put_external_input(
            target, ExternalInput(input_id=f"{int(NOW * 1000):015d}#x", kind=InputKind.STOP, created_at=NOW)
        )
        lease = execution_store.acquire_lease(target, "owner", NOW, 60)
        assert lease is not None
        execution_store.release_lease(target, "owner", HandOff(wake_at=NOW + 60))
        execution_store.put_callback(CallbackRef(f"cb-{target[-1]}", target, "op"))
        execution_store.reserve_flow_start(target, NOW + 5)
    execution_store.put_callback(CallbackRef("cb-a2", execution_id, "op2"))

    assert execution_store.delete_log(execution_id) == 4
    # Only its own callbacks go, named or not: another execution's id in the list is left alone.
    assert execution_store.delete_coordination(execution_id, ["cb-a", "cb-a2", "cb-b", "cb-missing"]) == 3
    execution_store.forget_flow_start(execution_id)

    assert execution_store.load_batches(execution_id) == ([], None)
    assert execution_store.list_external_inputs(execution_id) == []
    assert execution_store.get_callback("cb-a") is None and execution_store.get_callback("cb-a2") is None
    assert execution_store.get_flow_start(execution_id) is None
    fresh = execution_store.acquire_lease(execution_id, "next", NOW, 60)
    assert fresh is not None and fresh.never_held and fresh.armed is None
    # Idempotent, and the other execution keeps everything.
    assert execution_store.delete_log(execution_id) == 0
    assert len(execution_store.load_batches(other)[0]) == 3
    assert execution_store.get_callback("cb-b") is not None
    assert execution_store.get_flow_start(other) == NOW + 5
    assert execution_store.acquire_lease(other, "next", NOW, 60) is not None


def test_a_release_after_the_coordination_record_went_writes_nothing(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    assert execution_store.acquire_lease(execution_id, "owner", NOW, 60) is not None
    assert execution_store.delete_coordination(execution_id, []) == 1

    execution_store.release_lease(execution_id, "owner", HandOff(wake_at=NOW + 1, log_next=3))

    lease = execution_store.acquire_lease(execution_id, "next", NOW, 60)
    assert lease is not None and lease.never_held and lease.hand_off.log_next is None
