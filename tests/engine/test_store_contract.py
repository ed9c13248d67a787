"""The ExecutionStore port's contract, checked on the memory store.

Every test takes the `execution_store` fixture; another store (e.g. the DynamoDB adapter) can run the same
checks by overriding that fixture in its own conftest and importing these tests.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.memory.store import MemoryExecutionStore, due_shard
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowLimit,
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
    with pytest.raises(SequenceConflict) as conflict:
        execution_store.append_batch(execution_id, Batch(seq=3, body="{}", created_at=NOW + 9))
    # It tells when the batch in the way was written (a batch older than its execution is an earlier one's).
    assert conflict.value.written_at == NOW

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


@pytest.mark.parametrize(("batches", "limit"), [(0, 1000), (5, 2), (4, 2), (5, 1000)])
def test_a_run_reads_the_log_and_then_the_pending_inputs(
    execution_store: ExecutionStore, batches: int, limit: int
) -> None:
    execution_id = record("a").execution_id
    other = record("b").execution_id
    for seq in range(batches):
        execution_store.append_batch(execution_id, Batch(seq=seq, body=f'{{"n":{seq}}}', created_at=NOW))
    for input_id in ("0003#c", "0001#a", "0002#b"):
        execution_store.put_external_input(
            execution_id, ExternalInput(input_id, InputKind.CALLBACK_HEARTBEAT, NOW, operation_id="op")
        )
    execution_store.put_external_input(other, ExternalInput("0000#z", InputKind.CALLBACK_HEARTBEAT, NOW))

    seen: list[int] = []
    pending: list[ExternalInput] = []
    after = 0  # from seq 1 on, as a warm worker reads after its cached fold
    while True:
        page, last = execution_store.load_batches(execution_id, after_seq=after, limit=limit, inputs=pending)
        seen.extend(batch.seq for batch in page)
        # The inputs come with the page that ends the log, never before it.
        assert not pending or last is None
        if last is None:
            break
        after = last
    assert seen == list(range(1, batches))
    assert [item.input_id for item in pending] == ["0001#a", "0002#b", "0003#c"]
    assert all(item.operation_id == "op" for item in pending)
    # Without `inputs` the read stops at the log's end.
    page, last = execution_store.load_batches(execution_id, after_seq=-1)
    assert [batch.seq for batch in page] == list(range(batches)) and last is None


def test_a_release_carries_a_batch_to_the_next_lease_until_the_end(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.carried is None
    assert execution_store.get_carried_batch(execution_id) is None
    carried = Batch(seq=3, body='{"e":[{"t":"InvocationCompleted","s":1}],"w":0}', created_at=NOW + 0.25)
    execution_store.release_lease(execution_id, "w2", carried=carried)  # not the holder: nothing happens
    assert execution_store.get_carried_batch(execution_id) is None

    execution_store.release_lease(execution_id, "w1", wake=NOW + 3600, carried=carried)
    assert execution_store.get_carried_batch(execution_id) == carried
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.carried == carried and second.wake_at == NOW + 3600
    execution_store.release_lease(execution_id, "w2")  # a release without one leaves it: its seq tells
    assert execution_store.get_carried_batch(execution_id) == carried
    newer = Batch(seq=5, body='{"e":[{"t":"InvocationCompleted","s":2}],"w":0}', created_at=NOW + 2)
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.carried == carried
    execution_store.release_lease(execution_id, "w3", wake=None, carried=newer)
    assert execution_store.get_carried_batch(execution_id) == newer

    assert execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60) is not None
    # The carried batch goes with the execution.
    execution_store.release_lease(execution_id, "w4", ended_at=NOW)
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
        execution_store.release_lease(execution_id, f"w{seq}", carried=batch)
        assert execution_store.get_carried_batch(execution_id) == batch
    lease = execution_store.acquire_lease(execution_id, "w9", NOW + 9, 60)
    assert lease is not None and lease.carried is not None and lease.carried.body == long_body


def test_an_ended_release_keeps_the_end_it_carries_and_frees_the_lease(
    execution_store: ExecutionStore,
) -> None:
    execution_id = record("a").execution_id
    assert execution_store.acquire_lease(execution_id, "w1", NOW, 60) is not None
    end = Batch(
        seq=4, body='{"e":[{"t":"ExecutionSucceeded"}],"z":1,"w":0}', created_at=NOW + 1, terminal=True
    )
    execution_store.release_lease(execution_id, "w2", ended_at=NOW, carried=end)  # not the holder
    assert execution_store.get_carried_batch(execution_id) is None
    execution_store.release_lease(execution_id, "w1", wake=None, ended_at=NOW, carried=end)
    kept = execution_store.get_carried_batch(execution_id)
    assert kept is not None and (kept.seq, kept.body, kept.created_at) == (end.seq, end.body, end.created_at)
    # A late message's worker takes the lease at once (it was released), finds the end, and keeps it.
    late = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert late is not None and late.carried is not None and late.carried.body == end.body
    assert late.wake_at is None
    execution_store.release_lease(execution_id, "w3", wake=None, ended_at=NOW, carried=late.carried)
    assert execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60) is not None
    execution_store.release_lease(execution_id, "w4", ended_at=NOW)  # given none, the carried end goes
    assert execution_store.get_carried_batch(execution_id) is None


def test_only_the_first_lease_of_an_execution_was_never_held(execution_store: ExecutionStore) -> None:
    """Lease.never_held: true for the first lease only, not after a run that failed or ended (an ended
    execution's record stays, so a late message reads the log), nor after an upgrade moved it."""
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.never_held
    assert execution_store.acquire_lease(execution_id, "w1", NOW + 1, 60) is not None  # its holder again
    execution_store.release_lease(execution_id, "w1")  # a run that failed: nothing recorded
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 2, 60)
    assert second is not None and not second.never_held
    execution_store.release_lease(execution_id, "w2", wake=None, ended_at=NOW)
    late = execution_store.acquire_lease(execution_id, "w3", NOW + 3, 60)
    assert late is not None and not late.never_held and late.wake_at is None and late.log_next is None

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
    assert first is not None and first.log_next is None
    execution_store.release_lease(execution_id, "w1", wake=NOW + 60, log_next=7)
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.log_next == 7 and second.wake_at == NOW + 60
    execution_store.release_lease(execution_id, "w2")  # a run that cannot tell clears it
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.log_next is None
    execution_store.release_lease(execution_id, "w3", log_next=9)
    fourth = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert fourth is not None and fourth.log_next == 9


def test_a_release_that_knows_the_log_s_length_records_it_until_the_end(
    execution_store: ExecutionStore,
) -> None:
    """Lease.log_length: a lower bound of the log's length, which a release that cannot tell leaves as it
    is (unlike log_next) and the end clears."""
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and first.log_length is None
    execution_store.release_lease(execution_id, "w1", wake=NOW + 60, log_length=3)
    second = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert second is not None and second.log_length == 3
    execution_store.release_lease(execution_id, "w2")  # a failed run: what is recorded stands
    third = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert third is not None and third.log_length == 3
    execution_store.release_lease(execution_id, "w3", log_length=5, carried=None)
    fourth = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert fourth is not None and fourth.log_length == 5
    end = Batch(seq=5, body="{}", created_at=NOW + 4, terminal=True)
    execution_store.release_lease(execution_id, "w4", wake=None, ended_at=NOW, carried=end, log_length=5)
    fifth = execution_store.acquire_lease(execution_id, "w5", NOW + 5, 60)
    assert fifth is not None and fifth.log_length is None


def test_the_lease_tells_the_version_an_upgrade_moved_it_to(
    execution_store: ExecutionStore,
) -> None:
    execution_store.create_execution(record("moved"))
    execution_id = record("moved").execution_id
    lease = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert lease is not None and lease.moved_to is None
    execution_store.release_lease(execution_id, "w1")

    execution_store.note_moved_version(execution_id, "7")
    lease = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert lease is not None and lease.moved_to == "7"
    execution_store.release_lease(execution_id, "w2", ended_at=NOW)  # the record goes with the end
    lease = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert lease is not None and lease.moved_to is None


def test_batches_keep_their_expiry_until_the_log_is_kept_or_expired(execution_store: ExecutionStore) -> None:
    execution_id = record("expiry").execution_id
    execution_store.append_batch(execution_id, Batch(seq=0, body="{}", created_at=NOW, expires_at=NOW + 99))
    execution_store.append_batch(execution_id, Batch(seq=1, body="{}", created_at=NOW + 1))
    assert [batch.expires_at for batch in execution_store.load_batches(execution_id)[0]] == [NOW + 99, None]

    execution_store.keep_log(execution_id, 3)  # one past the log's end: nothing is created
    assert [batch.expires_at for batch in execution_store.load_batches(execution_id)[0]] == [None, None]
    execution_store.expire_log(execution_id, 2, NOW + 5)
    expiry = NOW + 5 + execution_store.retention_seconds
    assert [batch.expires_at for batch in execution_store.load_batches(execution_id)[0]] == [expiry] * 2


def test_a_lease_is_exclusive_until_it_expires_or_is_released(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    first = execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    assert first is not None and not first.taken_over and first.wake_at is None
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None
    execution_store.release_lease(execution_id, "w2")  # not the holder: nothing happens
    assert execution_store.acquire_lease(execution_id, "w2", NOW + 30, 60) is None
    again = execution_store.acquire_lease(execution_id, "w1", NOW + 30, 60)  # re-entrant
    assert again is not None and not again.taken_over

    taken = execution_store.acquire_lease(execution_id, "w2", NOW + 91, 60)
    assert taken is not None and taken.owner == "w2" and taken.taken_over  # w1 died holding it
    execution_store.release_lease(execution_id, "w1")  # the dead holder's late release changes nothing
    assert execution_store.acquire_lease(execution_id, "w3", NOW + 100, 60) is None
    execution_store.release_lease(execution_id, "w2")
    freed = execution_store.acquire_lease(execution_id, "w3", NOW + 100, 60)
    assert freed is not None and not freed.taken_over  # released, not expired


def test_a_lease_release_records_the_armed_wake_up(execution_store: ExecutionStore) -> None:
    execution_id = record("a").execution_id
    execution_store.acquire_lease(execution_id, "w1", NOW, 60)
    execution_store.release_lease(execution_id, "w1", NOW + 20.123)
    lease = execution_store.acquire_lease(execution_id, "w2", NOW + 1, 60)
    assert lease is not None and lease.wake_at == NOW + 20.123  # exactly: compared with a wake-up
    execution_store.release_lease(execution_id, "w2")  # KEEP: the run armed nothing new
    lease = execution_store.acquire_lease(execution_id, "w3", NOW + 2, 60)
    assert lease is not None and lease.wake_at == NOW + 20.123
    execution_store.release_lease(execution_id, "w3", None)  # nothing armed any more
    lease = execution_store.acquire_lease(execution_id, "w4", NOW + 3, 60)
    assert lease is not None and lease.wake_at is None
    execution_store.release_lease(execution_id, "w4", NOW + 50)
    execution_store.release_lease(execution_id, "w4", NOW + 60)  # released already: nothing happens
    lease = execution_store.acquire_lease(execution_id, "w5", NOW + 4, 60)
    assert lease is not None and lease.wake_at == NOW + 50
    execution_store.release_lease(execution_id, "w5", ended_at=NOW)  # the record goes with the execution
    lease = execution_store.acquire_lease(execution_id, "w6", NOW + 5, 60)
    assert lease is not None and lease.wake_at is None and not lease.taken_over


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
            "cb#cb-s", InputKind.CALLBACK_SUCCEEDED, NOW + 1, "op-s", '{"ok": true}', on_callback_record=True
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


# --- flow control ---

LEASE = NOW + 900


def flow_scope(key: str = "k", kind: str = "concurrency") -> str:
    return FlowLimit(kind, "default", "wf", key, 0).scope


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
        return execution_store.hold_flow_slot(scope, ids[index], 3, LEASE + index, flow_labels(3))

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
    assert execution_store.hold_flow_slot(scope, first, 1, LEASE, flow_labels(1))
    assert execution_store.hold_flow_slot(scope, first, 1, LEASE + 60, flow_labels(1))  # a duplicate
    assert not execution_store.hold_flow_slot(scope, second, 1, LEASE, flow_labels(1))  # full
    state = execution_store.get_flow_slots(scope)
    assert state is not None and state.holders == {first: LEASE}
    # Keys are independent: another key's slot is free.
    assert execution_store.hold_flow_slot(flow_scope("other"), second, 1, LEASE, flow_labels(1))


def test_hold_refuses_while_the_queue_is_not_empty(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    holder, waiter, newcomer = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, holder, 3, LEASE, flow_labels(3))
    ticket = execution_store.take_flow_ticket(scope, LEASE, flow_labels(3))
    assert execution_store.put_flow_ticket(scope, ticket, waiter)
    # A slot is free, but one waits: a newcomer does not overtake it.
    assert not execution_store.hold_flow_slot(scope, newcomer, 3, LEASE, flow_labels(3))
    assert execution_store.claim_flow_ticket(scope, ticket) == waiter
    assert execution_store.advance_flow(scope, ticket, waiter, 3, LEASE)
    assert execution_store.hold_flow_slot(scope, newcomer, 3, LEASE, flow_labels(3))
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
    assert execution_store.advance_flow(scope, 0, first, 2, LEASE)
    assert execution_store.advance_flow(scope, 1, None, 2, LEASE)
    assert not execution_store.put_flow_ticket(scope, 1, third)
    assert execution_store.peek_flow_tickets(scope, 0, 3) == []


def test_the_queue_is_served_in_order_and_only_into_free_slots(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    holder, first, second = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, holder, 2, LEASE, flow_labels(2))
    for waiter in (first, second, first):  # the last: a duplicate ticket of an execution served before
        ticket = execution_store.take_flow_ticket(scope, LEASE, flow_labels(2))
        assert execution_store.put_flow_ticket(scope, ticket, waiter)

    assert not execution_store.advance_flow(scope, 1, second, 2, LEASE)  # not the head
    assert execution_store.claim_flow_ticket(scope, 0) == first
    assert execution_store.advance_flow(scope, 0, first, 2, LEASE + 1)
    assert not execution_store.advance_flow(scope, 0, first, 2, LEASE + 1)  # served already
    assert execution_store.claim_flow_ticket(scope, 1) == second
    assert not execution_store.advance_flow(scope, 1, second, 2, LEASE)  # both slots held
    assert execution_store.release_flow_slot(scope, holder) is not None
    assert execution_store.advance_flow(scope, 1, second, 2, LEASE + 2)
    state = execution_store.get_flow_slots(scope)
    assert state is not None
    assert (state.holders, state.head, state.tail) == ({first: LEASE + 1, second: LEASE + 2}, 2, 3)

    assert execution_store.claim_flow_ticket(scope, 2) == first
    assert not execution_store.advance_flow(scope, 2, first, 3, LEASE)  # it holds a slot already
    assert execution_store.advance_flow(scope, 2, None, 3, LEASE)  # passed over
    state = execution_store.get_flow_slots(scope)
    assert state is not None and (state.head, state.tail, state.waiting) == (3, 3, 0)
    assert set(state.holders) == {first, second}


def test_a_slot_is_released_and_renewed_only_from_the_expiry_read(execution_store: ExecutionStore) -> None:
    scope = flow_scope()
    first, second, stranger = flow_ids(3)
    assert execution_store.hold_flow_slot(scope, first, 2, LEASE, flow_labels(2))
    assert execution_store.hold_flow_slot(scope, second, 2, LEASE + 5, flow_labels(2))
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
    assert execution_store.put_flow_rate(scope, 0, [NOW], labels)
    assert not execution_store.put_flow_rate(scope, 0, [NOW + 1], labels)  # a stale writer loses
    assert execution_store.put_flow_rate(scope, 1, [NOW, NOW + 0.5], labels)
    assert not execution_store.put_flow_rate(scope, 1, [NOW + 2], labels)
    state = execution_store.get_flow_rate(scope)
    assert (state.starts, state.version, state.labels) == ((NOW, NOW + 0.5), 2, labels)
    assert execution_store.get_flow_rate(flow_scope("other", kind="rate")).version == 0


def test_of_rate_writers_racing_from_one_version_exactly_one_wins(execution_store: ExecutionStore) -> None:
    scope = flow_scope(kind="rate")
    racers = 6
    start = threading.Barrier(racers)

    def put(index: int) -> bool:
        start.wait()
        return execution_store.put_flow_rate(scope, 0, [NOW + index], flow_labels(3))

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


def test_an_executions_flow_limits_round_trip(execution_store: ExecutionStore) -> None:
    limits = (
        FlowLimit("concurrency", "default", "wf", "tenant-7", 5),
        FlowLimit("rate", "default", "wf", "", 100, 3600),
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
