"""The DynamoDB ExecutionStore against moto, with the tables exactly as docs/architecture.md has them."""

from __future__ import annotations

import base64
import dataclasses
import json
import time
import zlib
from typing import Any

import pytest
from stepwell.aws.dynamodb_store import DEFAULT_INLINE_LIMIT, DynamoDbExecutionStore, due_shard
from stepwell.aws.dynamodb_store.shards import IndexShards
from stepwell.aws.payloads import S3PayloadStore
from stepwell.clock import VirtualClock
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.flow_control import FlowControl
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowLimit,
    HandOff,
    InputKind,
    OutcomeAction,
    make_execution_id,
)
from stepwell.testing.local import LocalQueue

from .deployment import Deployment

T0 = 1_800_000_000.0


def _store(deployment: Deployment, inline_limit: int = DEFAULT_INLINE_LIMIT) -> DynamoDbExecutionStore:
    payloads = S3PayloadStore(deployment.clients.s3, deployment.config.payload_bucket)
    return deployment.execution_store(payloads=payloads, inline_limit=inline_limit)


def _record(
    workflow: str = "orders",
    subject: str = "o-1",
    instance: str = "i1",
    created: float = T0,
    domain: str = "default",
) -> ExecutionRecord:
    return ExecutionRecord(
        execution_id=make_execution_id(domain, workflow, subject, instance),
        domain=domain,
        workflow_id=workflow,
        subject_id=subject,
        instance_id=instance,
        execution_name=subject,
        status=ExecutionStatus.RUNNING,
        created_at=created,
        updated_at=created,
        input_payload='{"amount": 3}',
    )


def test_create_is_idempotent_and_get_round_trips(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    assert store.create_execution(record) is True
    assert store.create_execution(_record()) is False
    assert store.get_execution(record.execution_id) == record
    assert store.get_execution(make_execution_id("default", "orders", "o-1", "other")) is None
    with pytest.raises(InvalidArgument, match="not an execution id: 'nope'"):
        store.get_execution("nope")


def test_complete_once_only(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    store.create_execution(record)
    assert store.complete_execution(record.execution_id, ExecutionStatus.SUCCEEDED, T0 + 5, result='"ok"')
    assert not store.complete_execution(
        record.execution_id, ExecutionStatus.FAILED, T0 + 6, error={"ErrorType": "X", "ErrorMessage": "late"}
    )
    done = store.get_execution(record.execution_id)
    assert done is not None
    assert (done.status, done.result, done.error, done.ended_at) == (
        ExecutionStatus.SUCCEEDED,
        '"ok"',
        None,
        T0 + 5,
    )
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.executions_table,
        Key={"contextKey": {"S": "default#orders#o-1"}, "instanceId": {"S": "i1"}},
    )["Item"]
    # Its item outlives the retention period, last of the execution's items (the name is taken meanwhile).
    assert int(item["ttl"]["N"]) == int(T0 + 5) + 30 * 86400 + NAME_HOLD_SECONDS
    absent = make_execution_id("default", "orders", "ghost", "i1")
    assert not store.complete_execution(absent, ExecutionStatus.STOPPED, T0)
    with pytest.raises(InvalidArgument, match="terminal status, got RUNNING"):
        store.complete_execution(record.execution_id, ExecutionStatus.RUNNING, T0)


def test_failed_execution_keeps_its_error(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    store.create_execution(record)
    error = {"ErrorType": "ValueError", "ErrorMessage": "bad", "StackTrace": ["a", "b"]}
    assert store.complete_execution(record.execution_id, ExecutionStatus.FAILED, T0 + 1, error=error)
    failed = store.get_execution(record.execution_id)
    assert failed is not None and failed.error == error and failed.status is ExecutionStatus.FAILED


def _collect(store: DynamoDbExecutionStore, query: ExecutionQuery, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        page = store.list_executions(query, limit=limit, next_token=token)
        pages.append([record.subject_id for record in page.items])
        token = page.next_token
        if token is None:
            return pages


def test_list_by_workflow_status_and_subject_paginates_newest_first(deployment: Deployment) -> None:
    store = _store(deployment)
    for index in range(5):
        store.create_execution(_record(subject=f"o-{index}", created=T0 + index))
    store.create_execution(_record(workflow="billing", subject="o-1", created=T0 + 10))
    store.create_execution(_record(workflow="billing", subject="b-9", created=T0 + 11, domain="shop"))
    store.complete_execution(
        make_execution_id("default", "orders", "o-3", "i1"), ExecutionStatus.SUCCEEDED, T0 + 20
    )

    by_workflow = _collect(store, ExecutionQuery(workflow_id="orders"), limit=2)
    assert [s for page in by_workflow for s in page] == ["o-4", "o-3", "o-2", "o-1", "o-0"]
    assert all(len(page) <= 2 for page in by_workflow)

    running = _collect(store, ExecutionQuery(status=ExecutionStatus.RUNNING), limit=3)
    assert sorted(s for page in running for s in page) == ["b-9", "o-0", "o-1", "o-1", "o-2", "o-4"]
    succeeded = store.list_executions(ExecutionQuery(status=ExecutionStatus.SUCCEEDED)).items
    assert [r.execution_id for r in succeeded] == ["default#orders#o-3/i1"]

    subject = store.list_executions(ExecutionQuery(domain="default", subject_id="o-1")).items
    assert sorted(r.workflow_id for r in subject) == ["billing", "orders"]
    shop = store.list_executions(ExecutionQuery(domain="shop")).items
    assert [r.subject_id for r in shop] == ["b-9"]


def test_listing_from_the_keys_only_indexes_reads_whole_items_in_index_order(deployment: Deployment) -> None:
    store = _store(deployment)
    # 130 executions: one listing page needs two BatchGetItem requests (at most 100 keys each).
    for index in range(130):
        record = _record(subject=f"s{index:03d}", created=T0 + index)
        store.create_execution(dataclasses.replace(record, input_payload=json.dumps({"n": index})))
    store.complete_execution(
        _record(subject="s007").execution_id, ExecutionStatus.FAILED, T0 + 500, error={"E": 1}
    )

    page = store.list_executions(ExecutionQuery(workflow_id="orders"), limit=130)
    assert [r.subject_id for r in page.items] == [f"s{index:03d}" for index in reversed(range(130))]
    assert [json.loads(r.input_payload or "null")["n"] for r in page.items[:3]] == [129, 128, 127]
    assert page.items[-8].status is ExecutionStatus.FAILED and page.items[-8].error == {"E": 1}

    failed = store.list_executions(ExecutionQuery(status=ExecutionStatus.FAILED)).items
    assert [(r.subject_id, r.ended_at) for r in failed] == [("s007", T0 + 500)]
    running = store.list_executions(ExecutionQuery(status=ExecutionStatus.RUNNING), limit=1000).items
    assert len(running) == 129 and all(r.status is ExecutionStatus.RUNNING for r in running)


def test_bad_page_token_and_limit_are_refused(deployment: Deployment) -> None:
    store = _store(deployment)
    with pytest.raises(InvalidArgument, match="page token 'garbage!' is not one this store returned"):
        store.list_executions(ExecutionQuery(workflow_id="orders"), next_token="garbage!")
    for index in range(3):
        store.create_execution(_record(subject=f"s{index}", created=T0 + index))
    status_token = store.list_executions(ExecutionQuery(status=ExecutionStatus.RUNNING), limit=1).next_token
    assert status_token is not None
    with pytest.raises(InvalidArgument, match="does not belong to this listing"):
        store.list_executions(ExecutionQuery(workflow_id="orders"), next_token=status_token)
    listing = "workflow-index|" + json.dumps({":k": {"S": "orders"}}, sort_keys=True)
    forged = base64.urlsafe_b64encode(json.dumps({"l": listing, "k": {"contextKey": 5}}).encode()).decode()
    with pytest.raises(InvalidArgument, match="is not one this store returned"):
        store.list_executions(ExecutionQuery(workflow_id="orders"), next_token=forged)
    with pytest.raises(InvalidArgument, match=r"limit must be 1\.\.1000, got 0"):
        store.list_executions(ExecutionQuery(workflow_id="orders"), limit=0)


def test_batches_are_fenced_and_load_in_pages(deployment: Deployment) -> None:
    store = _store(deployment)
    execution_id = _record().execution_id
    for seq in range(7):
        store.append_batch(execution_id, Batch(seq=seq, body=json.dumps({"o": [seq]}), created_at=T0 + seq))
    with pytest.raises(SequenceConflict, match="batch 3"):
        store.append_batch(execution_id, Batch(seq=3, body="{}", created_at=T0))
    loaded: list[int] = []
    after = -1
    while True:
        batches, last = store.load_batches(execution_id, after_seq=after, limit=3)
        loaded.extend(batch.seq for batch in batches)
        if last is None:
            break
        after = last
    assert loaded == list(range(7))
    assert store.load_batches(execution_id, after_seq=4)[0][0].body == '{"o": [5]}'
    # Inputs of the same execution share the partition but never show up as batches.
    store.put_external_input(execution_id, ExternalInput("0001", InputKind.STOP, T0))
    assert [b.seq for b in store.load_batches(execution_id, after_seq=5)[0]] == [6]


def test_a_long_batch_body_is_stored_deflated_and_reads_back_as_written(deployment: Deployment) -> None:
    """A body over DEFLATE_MIN_BYTES is kept deflated with the store's dictionary as `bd` (Binary); a short
    one, one an older engine deflated without it (`bz`) and one written before deflating (`b`) read back
    unchanged."""
    store = _store(deployment)
    execution_id = _record().execution_id
    operations = [{"Id": f"{index:064x}", "Type": "STEP", "Status": "SUCCEEDED"} for index in range(40)]
    long_body = json.dumps({"o": operations, "note": "é✓"})
    bodies = [long_body, '{"o": []}']
    for seq, body in enumerate(bodies):
        store.append_batch(execution_id, Batch(seq=seq, body=body, created_at=T0))
    raw = deployment.clients.dynamodb
    table = deployment.config.operations_table
    older = [
        {"bz": {"B": zlib.compress(long_body.encode("utf-8"), 6)}},  # as engines before v18 deflated it
        {"b": {"S": long_body}},  # as an engine before deflating wrote it: the body as text
    ]
    for seq, body_attribute in enumerate(older, start=2):
        raw.put_item(
            TableName=table,
            Item={
                "executionId": {"S": execution_id},
                "sk": {"S": f"b#{seq:012d}"},
                "t": {"N": str(T0)},
                **body_attribute,
            },
        )
    items = raw.query(
        TableName=table,
        KeyConditionExpression="executionId = :e",
        ExpressionAttributeValues={":e": {"S": execution_id}},
    )["Items"]
    stored = {item["sk"]["S"]: sorted(set(item) & {"b", "bd", "bz"}) for item in items}
    assert stored == {
        "b#000000000000": ["bd"],
        "b#000000000001": ["b"],
        "b#000000000002": ["bz"],
        "b#000000000003": ["b"],
    }
    # The dictionary's own keys and values: smaller than zlib's deflate of the same body.
    assert len(items[0]["bd"]["B"]) < len(items[2]["bz"]["B"])
    assert len(items[0]["bd"]["B"]) < len(long_body.encode("utf-8")) / 3
    assert [batch.body for batch in store.load_batches(execution_id)[0]] == [*bodies, long_body, long_body]


def test_external_inputs_in_arrival_order_and_deleted_after_absorbing(deployment: Deployment) -> None:
    store = _store(deployment)
    execution_id = _record().execution_id
    store.put_external_input(
        execution_id,
        ExternalInput("0000000002-b", InputKind.CALLBACK_FAILED, T0 + 2, "op2", error={"ErrorType": "E"}),
    )
    store.put_external_input(
        execution_id,
        ExternalInput("0000000001-a", InputKind.CALLBACK_SUCCEEDED, T0 + 1, "op1", payload='"yes"'),
    )
    inputs = store.list_external_inputs(execution_id)
    assert [i.input_id for i in inputs] == ["0000000001-a", "0000000002-b"]
    assert inputs[0] == ExternalInput(
        "0000000001-a", InputKind.CALLBACK_SUCCEEDED, T0 + 1, "op1", payload='"yes"'
    )
    assert inputs[1].error == {"ErrorType": "E"}
    store.delete_external_inputs(execution_id, ["0000000001-a"])
    assert [i.input_id for i in store.list_external_inputs(execution_id)] == ["0000000002-b"]


def _coordination_item(deployment: Deployment, key: str) -> dict[str, Any] | None:
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.coordination_table, Key={"key": {"S": key}}, ConsistentRead=True
    ).get("Item")
    return dict(item) if item is not None else None


def test_a_long_carried_batch_is_kept_deflated_on_the_record_and_a_short_one_as_text(
    deployment: Deployment,
) -> None:
    store = _store(deployment)
    execution_id = _record().execution_id
    wait = {"Id": "f" * 64, "Type": "WAIT", "Status": "STARTED", "Name": "nap", "StartTimestamp": T0}
    events = [{"t": "WaitStarted", "s": 1, "o": 0}, {"t": "InvocationCompleted", "s": 2}]
    long_body = json.dumps({"o": [wait], "e": events, "d": {"f" * 64: {"duration": 60}}, "w": 0})
    short_body = '{"e":[{"t":"InvocationCompleted","s":3}],"w":0}'
    key = "lease#" + execution_id
    for seq, (body, kept_as) in enumerate([(long_body, "pz"), (short_body, "pb"), (long_body, "pz")]):
        assert store.acquire_lease(execution_id, "w", now=T0 + seq, duration=60) is not None
        store.release_lease(execution_id, "w", HandOff(carried=Batch(seq=seq, body=body, created_at=T0)))
        item = _coordination_item(deployment, key)
        assert item is not None and {"pb", "pz"} & set(item) == {kept_as}  # the other one went
        assert store.get_carried_batch(execution_id) == Batch(seq=seq, body=body, created_at=T0)
    assert item is not None and len(item["pz"]["B"]) < len(long_body) / 2
    assert store.acquire_lease(execution_id, "w", now=T0 + 9, duration=60) is not None
    # The end carries nothing: both go
    store.release_lease(execution_id, "w", HandOff(wake_at=None, ended_at=T0 + 9))
    item = _coordination_item(deployment, key)
    assert item is not None and not {"pb", "pz"} & set(item)


def test_the_lease_record_stays_out_of_the_due_index_and_carries_the_wake_up(deployment: Deployment) -> None:
    store = _store(deployment)
    execution_id = _record().execution_id
    lease = store.acquire_lease(execution_id, "worker-a", now=T0, duration=60)
    assert lease is not None and lease.expires_at == T0 + 60
    item = _coordination_item(deployment, "lease#" + execution_id)
    assert item is not None and "dueShard" not in item and "dueAt" not in item  # one write unit each way
    store.release_lease(execution_id, "worker-a", HandOff(wake_at=T0 + 3600))
    assert _coordination_item(deployment, "lease#" + execution_id) == {
        "key": {"S": "lease#" + execution_id},
        "eid": {"S": execution_id},
        "w": {"N": "1800003600"},
    }
    store.acquire_lease(execution_id, "worker-b", now=T0 + 1, duration=60)
    store.release_lease(execution_id, "worker-b", HandOff(ended_at=T0 + 0.5))
    # The ended execution's record stays for the retention period from its end, so a late message's lease
    # is not its first (Lease.never_held): the same one write unit as a delete.
    item = _coordination_item(deployment, "lease#" + execution_id)
    assert item is not None and set(item) == {"key", "eid", "ttl"}
    assert int(item["ttl"]["N"]) == int(T0) + store.retention_seconds


def test_a_lease_record_an_earlier_engine_wrote_is_honoured_and_cleaned(deployment: Deployment) -> None:
    store = _store(deployment)
    execution_id = _record().execution_id
    deployment.clients.dynamodb.put_item(
        TableName=deployment.config.coordination_table,
        Item={
            "key": {"S": "lease#" + execution_id},
            "o": {"S": "old-worker"},
            "eid": {"S": execution_id},
            "dueShard": {"S": f"lease#{due_shard(execution_id)}"},
            "dueAt": {"N": str(T0 + 60)},
        },
    )
    assert store.acquire_lease(execution_id, "worker-a", now=T0 + 30, duration=60) is None  # still held
    taken = store.acquire_lease(execution_id, "worker-a", now=T0 + 61, duration=60)
    assert taken is not None and taken.taken_over
    store.release_lease(execution_id, "worker-a", HandOff(wake_at=None))
    item = _coordination_item(deployment, "lease#" + execution_id)
    assert item == {"key": {"S": "lease#" + execution_id}, "eid": {"S": execution_id}}


def test_callbacks(deployment: Deployment) -> None:
    store = _store(deployment)
    ref = CallbackRef("cb-secret", "default#orders#o-1/i1", "op-7")
    store.put_callback(ref)
    assert store.get_callback("cb-secret") == ref
    assert store.get_callback("cb-unknown") is None
    assert "ttl" not in (_coordination_item(deployment, "cb#cb-secret") or {})  # open: kept while it waits


def test_a_completed_callback_expires_with_the_retention_period(deployment: Deployment) -> None:
    store = _store(deployment)
    store.put_callback(CallbackRef("cb-done", "default#orders#o-1/i1", "op-7"))
    assert store.complete_callback("cb-done", T0 + 5)
    item = _coordination_item(deployment, "cb#cb-done") or {}
    assert int(item["ttl"]["N"]) == int(T0 + 5) + 30 * 86400
    store.reopen_callback("cb-done")  # its completion could not be delivered: open again, kept
    assert {"done", "ttl"}.isdisjoint(_coordination_item(deployment, "cb#cb-done") or {})


def test_values_too_big_for_an_item_go_to_s3_and_come_back(deployment: Deployment) -> None:
    store = _store(deployment, inline_limit=1000)
    record = _record()
    record.input_payload = json.dumps("x" * 5000)
    store.create_execution(record)
    stored = store.get_execution(record.execution_id)
    assert stored is not None and stored.input_is_ref and stored.input_payload is not None
    payloads = S3PayloadStore(deployment.clients.s3, deployment.config.payload_bucket)
    assert payloads.get(stored.input_payload) == record.input_payload

    big_error = {"ErrorType": "E", "ErrorMessage": "y" * 5000}
    store.complete_execution(record.execution_id, ExecutionStatus.FAILED, T0 + 1, error=big_error)
    failed = store.get_execution(record.execution_id)
    assert failed is not None and failed.error == big_error

    store.append_batch(record.execution_id, Batch(seq=0, body="z" * 5000, created_at=T0))
    batch = store.load_batches(record.execution_id)[0][0]
    assert batch.body_is_ref and payloads.get(batch.body) == "z" * 5000

    store.put_external_input(
        record.execution_id, ExternalInput("1", InputKind.CALLBACK_SUCCEEDED, T0, "op", payload="p" * 5000)
    )
    absorbed = store.list_external_inputs(record.execution_id)[0]
    assert absorbed.payload_is_ref and absorbed.payload is not None
    assert payloads.get(absorbed.payload) == "p" * 5000


def test_without_a_bucket_an_oversized_value_is_a_clear_error(deployment: Deployment) -> None:
    config = deployment.config
    store = DynamoDbExecutionStore(
        deployment.clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
        inline_limit=100,
    )
    with pytest.raises(InvalidArgument, match="over the item limit 100, and no payload bucket"):
        store.append_batch("default#w#s/i", Batch(seq=0, body="z" * 101, created_at=T0))


def test_store_never_scans_and_reports_capacity(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    store.create_execution(record)
    store.append_batch(record.execution_id, Batch(seq=0, body="{}", created_at=T0))
    store.load_batches(record.execution_id)
    store.list_executions(ExecutionQuery(workflow_id="orders"))
    snapshot = deployment.clients.counter.snapshot()
    assert not any(name.endswith(".Scan") for name in snapshot["calls"])
    assert snapshot["write_units"] > 0 and snapshot["read_units"] > 0


def test_input_and_result_near_the_engine_limit_still_fit_one_item(deployment: Deployment) -> None:
    store = _store(deployment)  # the default per-value limit
    record = _record()
    record.input_payload = json.dumps("i" * (199 * 1024))
    store.create_execution(record)
    result = json.dumps("r" * (199 * 1024))
    assert store.complete_execution(record.execution_id, ExecutionStatus.SUCCEEDED, T0 + 1, result=result)
    done = store.get_execution(record.execution_id)
    assert done is not None and done.status is ExecutionStatus.SUCCEEDED
    payloads = S3PayloadStore(deployment.clients.s3, deployment.config.payload_bucket)
    stored_result = payloads.get(done.result) if done.result_is_ref and done.result else done.result
    assert stored_result == result
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.executions_table,
        Key={"contextKey": {"S": "default#orders#o-1"}, "instanceId": {"S": "i1"}},
    )["Item"]
    size = sum(len(name) + len(str(next(iter(value.values())))) for name, value in item.items())
    assert size < 350 * 1024


def test_a_rate_key_expires_a_retention_period_after_its_last_start_leaves_the_window(
    deployment: Deployment,
) -> None:
    # Its labels name the key's value (a customer id, say): a key no longer used must not stay for good.
    store = _store(deployment)
    clock = VirtualClock()
    queue = LocalQueue(clock)
    gate = FlowControl(store, queue, timers=queue, clock=clock)
    limit = FlowLimit(
        kind="rate", domain="default", workflow="orders", key="customer-42", limit=2, period=3600
    )
    outcomes = []
    for index in range(3):
        record = _record(subject=f"o-{index}", instance=f"i{index}")
        store.create_execution(record)
        outcomes.append(gate.gate(record, (limit,), None, gate.clock.now()))

    assert outcomes[:2] == [None, None]
    third = outcomes[2]
    assert third is not None and third.action is OutcomeAction.DELAYED
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.coordination_table, Key={"key": {"S": limit.scope}}
    )["Item"]
    starts = sorted(float(start["N"]) for start in item["starts"]["L"])
    assert starts[-1] == third.details["startAt"]  # the third start, an hour after the first
    assert int(item["ttl"]["N"]) == int(starts[-1] + 3600) + 30 * 86400


def _concurrency_gate(
    deployment: Deployment, key: str, executions: int
) -> tuple[DynamoDbExecutionStore, FlowControl, FlowLimit, list[ExecutionRecord]]:
    """A limit of 1 on `key` and that many started executions, not yet gated."""
    store = _store(deployment)
    clock = VirtualClock()
    queue = LocalQueue(clock)
    records = [_record(subject=f"{key}-{index}", instance=f"{key}{index}") for index in range(executions)]
    for record in records:
        store.create_execution(record)
    limit = FlowLimit(kind="concurrency", domain="default", workflow="orders", key=key, limit=1)
    return store, FlowControl(store, queue, timers=queue, clock=clock), limit, records


def test_a_concurrency_key_expires_a_retention_period_after_it_falls_idle(deployment: Deployment) -> None:
    # Its labels name the key's value too; but while anyone holds or waits for it, it keeps no ttl.
    _, gate, limit, records = _concurrency_gate(deployment, "customer-7", 3)

    def ttl() -> int | None:
        item = _coordination_item(deployment, limit.scope)
        assert item is not None
        return int(item["ttl"]["N"]) if "ttl" in item else None

    assert gate.gate(records[0], (limit,), None, gate.clock.now()) is None  # holds the slot
    waiting = gate.gate(records[1], (limit,), None, gate.clock.now())
    assert waiting is not None  # waits in line behind it
    assert ttl() is None

    gate.release(records[0].execution_id, (limit,))  # serves the waiting one: still held
    assert ttl() is None
    before = int(time.time())
    gate.release(records[1].execution_id, (limit,))  # nobody holds or waits now
    expires = ttl()
    assert expires is not None and before + 30 * 86400 <= expires <= int(time.time()) + 30 * 86400

    assert gate.gate(records[2], (limit,), None, gate.clock.now()) is None  # used again: the ttl goes
    assert ttl() is None


def test_a_concurrency_key_whose_last_waiting_execution_ended_expires_too(deployment: Deployment) -> None:
    store, gate, limit, (first, second) = _concurrency_gate(deployment, "customer-8", 2)
    assert gate.gate(first, (limit,), None, gate.clock.now()) is None
    assert gate.gate(second, (limit,), None, gate.clock.now()) is not None
    assert store.complete_execution(second.execution_id, ExecutionStatus.STOPPED, T0 + 1)

    gate.release(first.execution_id, (limit,))  # the waiting ticket is skipped: the key is idle
    item = _coordination_item(deployment, limit.scope)
    assert item is not None and int(item["head"]["N"]) == int(item["tail"]["N"]) == 1
    assert not item["holders"]["M"] and "ttl" in item


def test_expire_log_gives_every_batch_the_retention_period_after_the_end(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    store.create_execution(record)
    for seq in range(40):  # longer than one run of sequential updates: the threaded path
        store.append_batch(record.execution_id, Batch(seq=seq, body="{}", created_at=T0 + seq))

    store.expire_log(record.execution_id, 41, T0 + 100)  # one past the log's end: nothing is created

    items = deployment.clients.dynamodb.query(
        TableName=deployment.config.operations_table,
        KeyConditionExpression="executionId = :e",
        ExpressionAttributeValues={":e": {"S": record.execution_id}},
    )["Items"]
    assert len(items) == 40
    assert {int(item["ttl"]["N"]) for item in items} == {int(T0) + 100 + 30 * 86400}


def test_a_batch_keeps_its_expiry_as_its_ttl_and_keep_log_takes_it_off(deployment: Deployment) -> None:
    store = _store(deployment)
    record = _record()
    store.create_execution(record)
    store.append_batch(record.execution_id, Batch(seq=0, body="{}", created_at=T0, expires_at=T0 + 99.0))
    store.append_batch(record.execution_id, Batch(seq=1, body="{}", created_at=T0 + 1))

    batches, _ = store.load_batches(record.execution_id)
    assert [batch.expires_at for batch in batches] == [T0 + 99.0, None]

    store.keep_log(record.execution_id, 3)  # one past the log's end: nothing is created
    batches, _ = store.load_batches(record.execution_id)
    assert [batch.expires_at for batch in batches] == [None, None]
    items = deployment.clients.dynamodb.query(
        TableName=deployment.config.operations_table,
        KeyConditionExpression="executionId = :e",
        ExpressionAttributeValues={":e": {"S": record.execution_id}},
    )["Items"]
    assert len(items) == 2 and all("ttl" not in item for item in items)


def _every_page(store: DynamoDbExecutionStore, query: ExecutionQuery, limit: int) -> list[str]:
    ids: list[str] = []
    token: str | None = None
    while True:
        page = store.list_executions(query, limit, token)
        ids += [r.instance_id for r in page.items]
        token = page.next_token
        if token is None:
            return ids


def test_raising_the_index_shards_read_count_first_loses_no_listing(deployment: Deployment) -> None:
    # docs/reference/tables.md, "Index shards": readers read the raised count before writers write it.
    before = deployment.execution_store(index_shards=IndexShards(write=2, read=2))
    for n in range(6):
        assert before.create_execution(_record(instance=f"a{n}", created=T0 + n))
    raised_readers = deployment.execution_store(index_shards=IndexShards(write=2, read=5))
    raised = deployment.execution_store(index_shards=IndexShards(write=5, read=5))
    for n in range(6, 12):
        assert raised.create_execution(_record(instance=f"a{n}", created=T0 + n))
    # An item written under 2 shards ends under 5: it moves to the status's shard of the new count.
    assert raised.complete_execution(_record(instance="a0").execution_id, ExecutionStatus.SUCCEEDED, T0 + 50)
    newest = [f"a{n}" for n in range(11, -1, -1)]

    for store in (raised_readers, raised):
        assert _every_page(store, ExecutionQuery(workflow_id="orders"), 5) == newest
        assert _every_page(store, ExecutionQuery(status=ExecutionStatus.RUNNING), 4) == newest[:-1]
        assert _every_page(store, ExecutionQuery(status=ExecutionStatus.SUCCEEDED), 4) == ["a0"]
    # Readers still on 2 shards would miss what the new count put in shards 2..4: why readers go first.
    assert len(_every_page(before, ExecutionQuery(workflow_id="orders"), 100)) < 12
    items = deployment.clients.dynamodb.scan(TableName=deployment.config.executions_table)["Items"]
    assert {item["workflowId"]["S"] for item in items} > {"orders", "orders#1"}  # sharded, shard 0 bare
    assert raised.get_execution(_record(instance="a7").execution_id).workflow_id == "orders"  # type: ignore[union-attr]


def test_a_token_of_another_shard_count_or_of_another_shard_is_refused_and_an_old_one_honoured(
    deployment: Deployment,
) -> None:
    one = deployment.execution_store()
    four = deployment.execution_store(index_shards=IndexShards(write=4, read=4))
    for n in range(5):
        one.create_execution(_record(instance=f"b{n}", created=T0 + n))
    query = ExecutionQuery(workflow_id="orders")
    token = four.list_executions(query, 2).next_token
    assert token is not None
    with pytest.raises(InvalidArgument, match="had 4 shards; it has 1 now"):
        one.list_executions(query, 2, token)

    # A token the single-Query listing returned before sharding: one shard continues it, more refuse it.
    first = one.list_executions(query, 2)
    last = first.items[-1]
    old_key = {
        "contextKey": {"S": last.execution_id.split("/")[0]},
        "instanceId": {"S": last.instance_id},
        "workflowId": {"S": "orders"},
        "createdAt": {"N": str(int(last.created_at))},
    }
    listing = 'workflow-index|{":k": {"S": "orders"}}'
    old = base64.urlsafe_b64encode(json.dumps({"l": listing, "k": old_key}).encode()).decode().rstrip("=")
    assert [r.instance_id for r in one.list_executions(query, 2, old).items] == ["b2", "b1"]
    with pytest.raises(InvalidArgument, match="before the listing was sharded"):
        four.list_executions(query, 2, old)

    # A position moved to another shard's partition (tampered) is refused before any Query.
    positions = [None, None, None, dict(old_key, workflowId={"S": "orders"})]
    forged = base64.urlsafe_b64encode(json.dumps({"l": listing, "p": positions}).encode()).decode()
    with pytest.raises(InvalidArgument, match="not one this store returned"):
        four.list_executions(query, 2, forged)


def test_a_listing_page_costs_one_query_per_read_shard_when_the_shards_share_it_evenly(
    deployment: Deployment,
) -> None:
    store = deployment.execution_store(index_shards=IndexShards(write=4, read=4))
    for n in range(40):
        store.create_execution(_record(instance=f"c{n:02d}", created=T0 + n))
    queries: list[dict[str, Any]] = []
    deployment.clients.dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query", lambda params, **_: queries.append(params)
    )
    page = store.list_executions(ExecutionQuery(workflow_id="orders"), 8)
    assert [r.instance_id for r in page.items] == [f"c{n:02d}" for n in range(39, 31, -1)]
    # Each shard reads its share of the page and two more (ceil(8 / 4) + 2): no shard is read twice.
    assert sorted(q["ExpressionAttributeValues"][":k"]["S"] for q in queries) == [
        "orders",
        "orders#1",
        "orders#2",
        "orders#3",
    ]
    assert {q["Limit"] for q in queries} == {4}


def test_the_index_shard_settings_are_validated_and_reach_the_environment() -> None:
    with pytest.raises(ValueError, match="readers must read at least"):
        IndexShards(write=4, read=2)
    with pytest.raises(ValueError, match=r"1\.\.64"):
        IndexShards(write=0)
    base = {"name": "n", "executions_table": "e", "operations_table": "o", "coordination_table": "c"}
    config = StepwellConfig(**base, work_queue_url="q", index_shards=4, index_read_shards=8)
    assert StepwellConfig.from_env(config.to_env()) == config
    assert config.to_env()["STEPWELL_INDEX_SHARDS"] == "4"
    with pytest.raises(ConfigError, match="index_read_shards \\(2\\) must be 0"):
        StepwellConfig(**base, work_queue_url="q", index_shards=4, index_read_shards=2)
    with pytest.raises(ConfigError, match=r"index_shards must be 1\.\.64"):
        StepwellConfig.from_env({**config.to_env(), "STEPWELL_INDEX_SHARDS": "65"})
