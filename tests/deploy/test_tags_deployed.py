"""Execution tags on the deployed stack, on each backend: executions started with tags through the client
are described with them and listed by tag (newest first, across pages, by status, within their domain);
their tag entries are written with them and get their TTL when they end (the retention from the end, which
the record outlives by NAME_HOLD_SECONDS), whether the worker ends them (SUCCEEDED) or the client stops them
(STOPPED)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from deployed_backend import DeployedTarget
from stepwell.aws.dynamodb_store import tag_entry_partition
from stepwell.client import StepwellClient
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.model import ExecutionRecord
from stepwell.testing.deployed_fixtures import DeployedStack

WAIT_SECONDS = 180.0


def _listed(client: StepwellClient, tag: tuple[str, str], **filters: Any) -> list[ExecutionRecord]:
    records: list[ExecutionRecord] = []
    token: str | None = None
    while True:
        page = client.list_executions(tag=tag, limit=2, next_token=token, **filters)
        records += page.items
        token = page.next_token
        if token is None:
            return records


def _newest_first(client: StepwellClient, execution_ids: list[str]) -> list[str]:
    """The ids in the order a tag listing gives: creation (milliseconds) descending, then id descending."""
    started = {each: client.describe_execution(each)["StartTimestamp"] for each in execution_ids}
    return sorted(execution_ids, key=lambda each: (int(started[each] * 1000), each), reverse=True)


def test_tagged_executions_are_described_listed_by_tag_and_expire_before_their_records(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    run = uuid.uuid4().hex[:12]
    tags = {"run": run, "customer": "c-42", "note": "tags on the deployed stack"}
    confirmed = [
        deployed_client.start_execution(
            "orders.confirm", {"order_id": f"{run}-{n}", "lines": []}, f"tagged-{run}-{n}", tags=tags
        )
        for n in range(3)
    ]
    stopped = [
        deployed_client.start_execution(
            "orders.confirm", {"order_id": f"{run}-s{n}", "lines": []}, f"stopped-{run}-{n}", tags=tags
        )
        for n in range(2)
    ]
    for execution_id in stopped:
        assert deployed_client.stop_execution(execution_id)
    elsewhere = deployed_client.start_execution(
        "orders.confirm",
        {"order_id": f"{run}-x", "lines": []},
        f"other-{run}",
        domain="tags-other",
        tags=tags,
    )
    # The same name again with other tags is the same start: the first tags stay.
    again = deployed_client.start_execution(
        "orders.confirm", {"order_id": f"{run}-0", "lines": []}, f"tagged-{run}-0", tags={"run": "other"}
    )
    assert again == confirmed[0]

    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        deployed_target.process_queue()
        statuses = [deployed_client.describe_execution(each)["Status"] for each in [*confirmed, elsewhere]]
        if statuses == ["SUCCEEDED"] * 4:
            break
        assert time.monotonic() < deadline, f"never finished: {statuses}"

    assert deployed_client.describe_execution(confirmed[0])["Tags"] == tags
    assert deployed_client.describe_execution(stopped[1])["Tags"] == tags
    everything = [*confirmed, *stopped]
    by_run = _listed(deployed_client, ("run", run))
    assert [record.execution_id for record in by_run] == _newest_first(deployed_client, everything)
    assert all(record.tags == tags for record in by_run)
    by_note = [record.execution_id for record in _listed(deployed_client, ("note", tags["note"]))]
    assert set(by_note) >= set(everything) and elsewhere not in by_note
    succeeded = _listed(deployed_client, ("run", run), status="SUCCEEDED")
    assert [record.execution_id for record in succeeded] == _newest_first(deployed_client, confirmed)
    assert [r.execution_id for r in _listed(deployed_client, ("run", run), status="STOPPED")] == (
        _newest_first(deployed_client, stopped)
    )
    assert _listed(deployed_client, ("run", run), status="RUNNING") == []
    assert [r.execution_id for r in _listed(deployed_client, ("run", run), domain="tags-other")] == [
        elsewhere
    ]
    assert _listed(deployed_client, ("run", "other")) == []

    # Each tag entry expires with its record: the worker's end and the client's stop set both TTLs at once.
    dynamodb = deployed_stack.backend.client("dynamodb")
    table = deployed_stack.client_config["executions_table"]
    for key, value in tags.items():
        entries = dynamodb.query(
            TableName=table,
            KeyConditionExpression="contextKey = :p",
            ExpressionAttributeValues={":p": {"S": tag_entry_partition("default", key, value)}},
            ConsistentRead=True,
        )["Items"]
        expiry = {entry["instanceId"]["S"].split("#", 1)[1]: entry["ttl"]["N"] for entry in entries}
        for execution_id in everything:
            context_key, _, instance_id = execution_id.rpartition("/")
            item = dynamodb.get_item(
                TableName=table,
                Key={"contextKey": {"S": context_key}, "instanceId": {"S": instance_id}},
                ConsistentRead=True,
            )["Item"]
            # Their retention ends with the record's end; the record itself goes last (it holds the name).
            assert int(expiry[execution_id]) + NAME_HOLD_SECONDS == int(item["ttl"]["N"]), (key, execution_id)
