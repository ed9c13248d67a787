"""The coordination port's contract (stepwell.ports.coordination: Coordination) on both stores: the lease,
the wake-up it records, the batch a release carries, and callbacks."""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor

from stepwell.model import Batch, CallbackRef, ExternalInput, HandOff, InputKind
from stepwell.ports import ExecutionStore

from .records import NOW, record


def test_a_lease_is_exclusive_until_it_expires_or_is_released(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and not first.taken_over and first.hand_off.wake_at is None
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None
    execution_store.release_lease(execution_id, "w2", HandOff())  # not the holder: nothing happens
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None
    again = execution_store.acquire_lease(execution_id, "w1", NOW + 30, 60)  # re-entrant
    assert again is not None and not again.taken_over

    taken = execution_store.acquire_lease(execution_id, "w2", NOW + 91, 60)
    assert taken is not None and taken.owner == "w2" and taken.taken_over  # w1 died holding it
    # The dead holder's late release changes nothing
    execution_store.release_lease(execution_id, "w1", HandOff())
    assert execution_store.acquire_lease(execution_id, "w3", NOW + 100, 60) is None
    execution_store.release_lease(execution_id, "w2", HandOff())
    freed = execution_store.acquire_lease(execution_id, "w3", NOW + 100, 60)
    assert freed is not None and not freed.taken_over  # released, not expired


def test_a_lease_release_records_the_armed_wake_up(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=NOW + 20.123))
    lease = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert lease is not None and lease.hand_off.wake_at == NOW + 20.123  # exactly: compared with a wake-up
    execution_store.release_lease(execution_id, "w2", HandOff())  # KEEP: the run armed nothing new
    lease = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert lease is not None and lease.hand_off.wake_at == NOW + 20.123
    execution_store.release_lease(execution_id, "w3", HandOff(wake_at=None))  # nothing armed any more
    lease = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert lease is not None and lease.hand_off.wake_at is None
    execution_store.release_lease(execution_id, "w4", HandOff(wake_at=NOW + 50))
    # Released already: nothing happens
    execution_store.release_lease(execution_id, "w4", HandOff(wake_at=NOW + 60))
    lease = execution_store.acquire_lease(execution_id, "w5", NOW + 4, 60)
    assert lease is not None and lease.hand_off.wake_at == NOW + 50
    # The record goes with the execution
    execution_store.release_lease(execution_id, "w5", HandOff(ended_at=NOW))
    lease = execution_store.acquire_lease(execution_id, "w6", NOW + 5, 60)
    assert lease is not None and lease.hand_off.wake_at is None and not lease.taken_over


def test_a_release_carries_a_batch_to_the_next_lease_until_the_end(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.hand_off.carried is None
    assert execution_store.get_carried_batch(execution_id) is None
    carried = Batch(seq=3, body='{"e":[{"t":"InvocationCompleted","s":1}],"w":0}', created_at=NOW + 0.25)
    # Not the holder: nothing happens
    execution_store.release_lease(execution_id, "w2", HandOff(carried=carried))
    assert execution_store.get_carried_batch(execution_id) is None

    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=NOW + 3600, carried=carried))
    assert execution_store.get_carried_batch(execution_id) == carried
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.hand_off.carried == carried and second.hand_off.wake_at == NOW + 3600
    # A release without one leaves it: its seq tells
    execution_store.release_lease(execution_id, "w2", HandOff())
    assert execution_store.get_carried_batch(execution_id) == carried
    newer = Batch(seq=5, body='{"e":[{"t":"InvocationCompleted","s":2}],"w":0}', created_at=NOW + 2)
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.hand_off.carried == carried
    execution_store.release_lease(execution_id, "w3", HandOff(wake_at=None, carried=newer))
    assert execution_store.get_carried_batch(execution_id) == newer

    assert execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60) is not None
    # The carried batch goes with the execution.
    execution_store.release_lease(execution_id, "w4", HandOff(ended_at=NOW))
    assert execution_store.get_carried_batch(execution_id) is None
    assert execution_store.get_carried_batch(record("b").execution_id) is None


def test_a_carried_batch_of_operations_reads_back_as_written_whatever_its_length(
    execution_store: ExecutionStore,
) -> None:
    execution_id = record("a").execution_id
    wait = {"Id": "f" * 64, "Type": "WAIT", "Status": "STARTED", "Name": "nap", "StartTimestamp": 1}
    events = [{"t": "WaitStarted", "s": 1, "o": 0}, {"t": "InvocationCompleted", "s": 2}]
    long_body = json.dumps({"o": [wait], "e": events, "d": {"f" * 64: {"duration": 60}}, "w": 0})
    short_body = '{"e":[{"t":"InvocationCompleted","s":3}],"w":0}'
    for seq, body in enumerate([long_body, short_body, long_body]):
        lease = execution_store.acquire_lease(execution_id, f"w{seq}", NOW + seq, 60)
        assert lease is not None
        batch = Batch(seq=seq, body=body, created_at=NOW + seq)
        execution_store.release_lease(execution_id, f"w{seq}", HandOff(carried=batch))
        assert execution_store.get_carried_batch(execution_id) == batch
    lease = execution_store.acquire_lease(execution_id, "w9", NOW + 9, 60)
    assert (
        lease is not None and lease.hand_off.carried is not None and lease.hand_off.carried.body == long_body
    )


def test_an_ended_release_keeps_the_end_it_carries_and_frees_the_lease(
    execution_store: ExecutionStore,
) -> None:
    execution_id = record("a").execution_id
    assert execution_store.acquire_lease(execution_id, "w1", NOW, 60) is not None
    end = Batch(
        seq=4, body='{"e":[{"t":"ExecutionSucceeded"}],"z":1,"w":0}', created_at=NOW + 1, terminal=True
    )
    execution_store.release_lease(execution_id, "w2", HandOff(ended_at=NOW, carried=end))  # not the holder
    assert execution_store.get_carried_batch(execution_id) is None
    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=None, ended_at=NOW, carried=end))
    kept = execution_store.get_carried_batch(execution_id)
    assert kept is not None and (kept.seq, kept.body, kept.created_at) == (end.seq, end.body, end.created_at)
    # A late message's worker takes the lease at once (it was released), finds the end, and keeps it.
    late = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert late is not None and late.hand_off.carried is not None and late.hand_off.carried.body == end.body
    assert late.hand_off.wake_at is None
    execution_store.release_lease(
        execution_id, "w3", HandOff(wake_at=None, ended_at=NOW, carried=late.hand_off.carried)
    )
    assert execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60) is not None
    # Given none, the carried end goes
    execution_store.release_lease(execution_id, "w4", HandOff(ended_at=NOW))
    assert execution_store.get_carried_batch(execution_id) is None


def test_only_the_first_lease_of_an_execution_was_never_held(execution_store: ExecutionStore) -> None:
    """Lease.never_held: true for the first lease only, not after a run that failed or ended (an ended
    execution's record stays, so a late message reads the log), nor after an upgrade moved it."""
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.never_held
    assert execution_store.acquire_lease(execution_id, "w1", NOW + 1, 60) is not None  # its holder again
    execution_store.release_lease(execution_id, "w1", HandOff())  # a run that failed: nothing recorded
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 2, 60)
    assert second is not None and not second.never_held
    execution_store.release_lease(execution_id, "w2", HandOff(wake_at=None, ended_at=NOW))
    late = execution_store.acquire_lease(execution_id, "w3", NOW + 3, 60)
    assert (
        late is not None
        and not late.never_held
        and late.hand_off.wake_at is None
        and late.hand_off.log_next is None
    )

    taken_over = record("b").execution_id
    assert execution_store.acquire_lease(taken_over, "dead", NOW, 60) is not None
    other = execution_store.acquire_lease(taken_over, "w2", NOW + 61, 60)
    assert other is not None and other.taken_over and not other.never_held

    moved = record("c").execution_id
    execution_store.note_moved_version(moved, "7")
    lease = execution_store.acquire_lease(moved, "w1", NOW, 60)
    assert lease is not None and lease.moved_to == "7" and not lease.never_held


def test_a_release_records_the_log_s_length_for_the_next_lease(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.hand_off.log_next is None
    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=NOW + 60, log_next=7))
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.hand_off.log_next == 7 and second.hand_off.wake_at == NOW + 60
    execution_store.release_lease(execution_id, "w2", HandOff())  # a run that cannot tell clears it
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.hand_off.log_next is None
    execution_store.release_lease(execution_id, "w3", HandOff(log_next=9))
    fourth = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert fourth is not None and fourth.hand_off.log_next == 9


def test_a_release_that_knows_the_log_s_length_records_it_until_the_end(
    execution_store: ExecutionStore,
) -> None:
    """Lease.log_length: a lower bound of the log's length, which a release that cannot tell leaves as it
    is (unlike log_next) and the end clears."""
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.hand_off.log_length is None
    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=NOW + 60, log_length=3))
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.hand_off.log_length == 3
    execution_store.release_lease(execution_id, "w2", HandOff())  # a failed run: what is recorded stands
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.hand_off.log_length == 3
    execution_store.release_lease(execution_id, "w3", HandOff(log_length=5, carried=None))
    fourth = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert fourth is not None and fourth.hand_off.log_length == 5
    end = Batch(seq=5, body="{}", created_at=NOW + 4, terminal=True)
    execution_store.release_lease(
        execution_id, "w4", HandOff(wake_at=None, ended_at=NOW, carried=end, log_length=5)
    )
    fifth = execution_store.acquire_lease(execution_id, "w5", NOW + 5, 60)
    assert fifth is not None and fifth.hand_off.log_length is None


def test_callbacks(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.put_callback(CallbackRef("cb-1", execution_id, "op-1"))
    assert execution_store.get_callback("cb-1") == CallbackRef("cb-1", execution_id, "op-1")
    assert execution_store.get_callback("cb-2") is None
    # The worker version whose run created it is kept (None: unversioned, or an older engine's record).
    execution_store.put_callback(CallbackRef("cb-3", execution_id, "op-3", version="7"))
    assert execution_store.get_callback("cb-3") == CallbackRef("cb-3", execution_id, "op-3", version="7")


def _open_callback(execution_store: ExecutionStore) -> tuple[str, ExternalInput]:
    """Callback cb-1 of execution "a" (op-1, made by version 3), and a success result for it."""
    execution_id = record("a").execution_id
    assert execution_store.put_callback(CallbackRef("cb-1", execution_id, "op-1", version="3"))
    return execution_id, ExternalInput("i-1", InputKind.CALLBACK_SUCCEEDED, NOW, payload='"yes"')


def test_a_callback_resolved_again_keeps_its_record_and_its_completion(
    execution_store: ExecutionStore,
) -> None:
    execution_id, result = _open_callback(execution_store)
    assert execution_store.complete_callback_once("cb-1", NOW, result) is not None
    # A replay of the operation makes the same (derived) id and resolves it again: nothing changes.
    assert not execution_store.put_callback(CallbackRef("cb-1", execution_id, "op-1", version="4"))
    assert execution_store.get_callback("cb-1") == CallbackRef(
        "cb-1", execution_id, "op-1", completed=True, version="3"
    )
    assert [found.payload for found in execution_store.get_callback_results(["cb-1"])] == ['"yes"']


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


def test_a_completion_without_a_read_answers_with_the_record_before_it(
    execution_store: ExecutionStore,
) -> None:
    execution_id, result = _open_callback(execution_store)
    assert execution_store.complete_callback_once("cb-missing", NOW, result) is None

    before = execution_store.complete_callback_once("cb-1", NOW + 1, result)
    assert before == CallbackRef("cb-1", execution_id, "op-1", version="3")  # it was open: this call won
    (stored,) = execution_store.get_callback_results(["cb-1"])
    assert (stored.kind, stored.payload, stored.operation_id) == (
        InputKind.CALLBACK_SUCCEEDED,
        '"yes"',
        "op-1",
    )
    other = dataclasses.replace(result, payload='"no"')
    again = execution_store.complete_callback_once("cb-1", NOW + 2, other)
    assert again is not None and again.completed  # already completed: nothing changed
    assert [item.payload for item in execution_store.get_callback_results(["cb-1"])] == ['"yes"']


def test_a_completion_keeps_its_result_on_the_callback_record(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    for callback_id, operation_id in [("cb-s", "op-s"), ("cb-f", "op-f"), ("cb-t", "op-t"), ("cb-o", "op-o")]:
        execution_store.put_callback(CallbackRef(callback_id, execution_id, operation_id))
    succeeded = ExternalInput("in-1", InputKind.CALLBACK_SUCCEEDED, NOW, "op-s", payload='{"ok": true}')
    failed = ExternalInput("in-2", InputKind.CALLBACK_FAILED, NOW, "op-f", error={"ErrorType": "Refused"})
    assert execution_store.complete_callback("cb-s", NOW + 1, succeeded, execution_id)
    assert execution_store.complete_callback("cb-f", NOW + 2, failed, execution_id)
    assert execution_store.complete_callback("cb-t", NOW + 3)  # timed out: no result

    results = execution_store.get_callback_results(["cb-s", "cb-f", "cb-t", "cb-o", "cb-unknown"])
    assert results == [
        ExternalInput(
            "cb#cb-s",
            InputKind.CALLBACK_SUCCEEDED,
            NOW + 1,
            "op-s",
            payload='{"ok": true}',
            on_callback_record=True,
        ),
        ExternalInput(
            "cb#cb-f",
            InputKind.CALLBACK_FAILED,
            NOW + 2,
            "op-f",
            error={"ErrorType": "Refused"},
            on_callback_record=True,
        ),
    ]
    assert execution_store.get_callback_results([]) == []
    execution_store.reopen_callback("cb-s")  # the execution could not be woken: open, no result
    assert [item.operation_id for item in execution_store.get_callback_results(["cb-s", "cb-f"])] == ["op-f"]


def test_of_completions_racing_for_a_callback_exactly_one_wins(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.put_callback(CallbackRef("cb-race", execution_id, "op-1"))
    racers = 8
    start = threading.Barrier(racers)

    def complete(racer: int) -> bool:
        result = ExternalInput(f"in-{racer}", InputKind.CALLBACK_SUCCEEDED, NOW, "op-1", payload=str(racer))
        start.wait()
        return execution_store.complete_callback("cb-race", NOW, result, execution_id)

    with ThreadPoolExecutor(racers) as pool:
        outcomes = list(pool.map(complete, range(racers)))
    assert outcomes.count(True) == 1
    # The winner's result is the one kept.
    (kept,) = execution_store.get_callback_results(["cb-race"])
    assert kept.payload == str(outcomes.index(True))


def test_a_lease_is_handed_over_only_by_its_unexpired_holder_and_once(
    execution_store: ExecutionStore,
) -> None:
    """resume_lease: a run that ended without releasing (a remote function's invocation) is taken over by
    the run acting on its end, once; never after the lease expired, was released or was taken by another.
    lease_holder reads who holds it."""
    execution_id = record("a").execution_id
    assert (
        execution_store.resume_lease(execution_id, "w1", successor="r1", now=NOW, duration=60) is None
    )  # no record: never taken
    assert execution_store.lease_holder(execution_id, NOW) is None
    execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    execution_store.release_lease(execution_id, "w1", HandOff(wake_at=NOW + 500, log_next=4))
    assert (
        execution_store.resume_lease(execution_id, "w1", successor="r1", now=NOW + 1, duration=60) is None
    )  # released
    execution_store.acquire_lease(execution_id, "w2", NOW + 2, 60)
    assert execution_store.lease_holder(execution_id, NOW + 3) == "w2"
    assert (
        execution_store.resume_lease(execution_id, "w1", successor="r1", now=NOW + 3, duration=60) is None
    )  # another's
    resumed = execution_store.resume_lease(execution_id, "w2", successor="r2", now=NOW + 50, duration=600)
    assert resumed is not None and resumed.owner == "r2" and not resumed.taken_over
    assert resumed.hand_off.wake_at == NOW + 500 and resumed.hand_off.log_next == 4
    # Once: the same hand-over again (a duplicate) finds w2 gone
    assert (
        execution_store.resume_lease(execution_id, "w2", successor="r3", now=NOW + 51, duration=600) is None
    )
    # Extended: past the first expiry it is r2's, and nobody else takes it
    assert execution_store.lease_holder(execution_id, NOW + 100) == "r2"
    assert execution_store.acquire_lease(execution_id, "w3", NOW + 100, 60) is None
    # Expired: neither handed over nor held
    assert execution_store.lease_holder(execution_id, NOW + 651) is None
    assert (
        execution_store.resume_lease(execution_id, "r2", successor="r4", now=NOW + 651, duration=60) is None
    )
    taken = execution_store.acquire_lease(execution_id, "w3", NOW + 652, 60)
    assert taken is not None and taken.taken_over
    assert execution_store.lease_holder(execution_id, NOW + 653) == "w3"
    execution_store.release_lease(execution_id, "r2", HandOff())  # not the holder: nothing happens
    assert execution_store.lease_holder(execution_id, NOW + 654) == "w3"
