"""Tag entries in the executions table (moto): written with their record in one transaction, expiring
with it, invisible to the other listings, and costing an untagged execution nothing."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from stepwell.aws.dynamodb_store import DynamoDbExecutionStore, tag_entry_partition
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionQuery, ExecutionRecord, ExecutionStatus

from .deployment import Deployment
from .test_dynamodb_store import _store

T0 = 1_800_000_000.0


def _record(instance: str, tags: dict[str, str]) -> ExecutionRecord:
    return ExecutionRecord(
        execution_id=f"acme#wf#s/{instance}",
        domain="acme",
        workflow_id="wf",
        subject_id="s",
        instance_id=instance,
        execution_name=instance,
        status=ExecutionStatus.RUNNING,
        created_at=T0,
        updated_at=T0,
        tags=tags,
    )


def _entries(deployment: Deployment, key: str, value: str) -> list[dict[str, Any]]:
    response = deployment.clients.dynamodb.query(
        TableName=deployment.config.executions_table,
        KeyConditionExpression="contextKey = :p",
        ExpressionAttributeValues={":p": {"S": tag_entry_partition("acme", key, value)}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def _count_requests(store: DynamoDbExecutionStore, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Counts the DynamoDB requests the store makes, by operation."""
    calls: Counter[str] = Counter()
    client = store._db
    for name in ("put_item", "update_item", "transact_write_items", "get_item"):
        original = getattr(client, name)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(client, name, counted)
    return calls


def test_tag_entries_are_written_with_the_record_and_expire_before_it(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(deployment)
    calls = _count_requests(store, monkeypatch)
    tagged = _record("t", {"customer": "c-42", "tier": "gold plus"})

    assert store.create_execution(tagged) is True
    assert calls == Counter({"transact_write_items": 1})
    [entry] = _entries(deployment, "customer", "c-42")
    # Only keys: no domain, status, workflowId or pinnedVersion, so no index of the table lists it.
    assert set(entry) == {"contextKey", "instanceId"}
    assert entry["instanceId"]["S"] == f"{int(T0 * 1000):015d}#{tagged.execution_id}"

    calls.clear()
    assert store.complete_execution(
        tagged.execution_id, ExecutionStatus.FAILED, T0 + 60, error={"ErrorType": "X"}
    )
    # The untagged-only update refuses it (returning the item), then one transaction ends it.
    assert calls == Counter({"update_item": 1, "transact_write_items": 1})
    expiry = str(int(T0 + 60) + store.retention_seconds)
    item = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.executions_table,
        Key={"contextKey": {"S": "acme#wf#s"}, "instanceId": {"S": "t"}},
    )["Item"]
    # The record expires last (NAME_HOLD_SECONDS after its entries): it holds the execution's name.
    assert int(item["ttl"]["N"]) == int(expiry) + NAME_HOLD_SECONDS and "pinnedVersion" not in item
    entries = [entry for key, value in tagged.tags.items() for entry in _entries(deployment, key, value)]
    assert [entry["ttl"]["N"] for entry in entries] == [expiry, expiry]

    calls.clear()
    assert not store.complete_execution(tagged.execution_id, ExecutionStatus.STOPPED, T0 + 90)
    assert calls == Counter({"update_item": 1})
    stored = store.get_execution(tagged.execution_id)
    assert stored is not None and stored.status is ExecutionStatus.FAILED and stored.tags == tagged.tags


def test_an_untagged_execution_costs_what_it_did(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(deployment)
    calls = _count_requests(store, monkeypatch)
    plain = _record("plain", {})

    assert store.create_execution(plain) and not store.create_execution(plain)
    assert store.complete_execution(plain.execution_id, ExecutionStatus.SUCCEEDED, T0 + 1, result="1")
    assert calls == Counter({"put_item": 2, "update_item": 1})


def test_a_tag_listing_refuses_a_token_of_another_listing(deployment: Deployment) -> None:
    store = _store(deployment)
    for index in range(3):
        store.create_execution(_record(f"r{index}", {"k": "v"}))
    page = store.list_executions(ExecutionQuery(tag=("k", "v"), domain="acme"), limit=1)
    assert page.next_token is not None
    with pytest.raises(InvalidArgument, match="does not belong to this listing"):
        store.list_executions(ExecutionQuery(tag=("k", "other"), domain="acme"), 1, page.next_token)
    with pytest.raises(InvalidArgument, match="is not one this store returned"):
        store.list_executions(ExecutionQuery(tag=("k", "v"), domain="acme"), 1, "not-a-token")
