"""The operation log port's contract (stepwell.ports.log: OperationLog) on both stores."""

from __future__ import annotations

import pytest
from stepwell.errors import SequenceConflict
from stepwell.model import Batch, ExternalInput, InputKind
from stepwell.ports import ExecutionStore

from .records import NOW, record


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
