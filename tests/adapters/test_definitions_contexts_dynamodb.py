"""The definitions' context items share the executions table and its indexes on DynamoDB: they must never
pass for executions (listed, described or stopped as one), or stopping one would strand the context's
real execution."""

from __future__ import annotations

import pytest
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.errors import ExecutionNotFound
from stepwell.features.definitions.service import install
from stepwell.model import ExecutionStatus, make_execution_id
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

ONBOARDING = {
    "schemaVersion": 1,
    "id": "onboarding",
    "nodes": [
        {"id": "signed_up", "type": "trigger", "event": "signup"},
        {"id": "verify", "type": "trigger_or_timeout", "event": "verified", "timeout": "1d"},
        {"id": "done", "type": "end"},
    ],
    "edges": [
        {"from": "signed_up", "to": "verify"},
        {"from": "verify", "to": "done", "branch": "event"},
        {"from": "verify", "to": "done", "branch": "timeout"},
    ],
}


def test_a_context_item_is_never_an_execution(deployment: Deployment) -> None:
    clock = VirtualClock()
    registry = Registry()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime.event_router = install(runtime.engine, deployment.config, deployment.clients, registry)
    driver = QueueDriver(deployment, runtime, clock)
    client = StepwellClient(deployment.config, deployment.clients, clock=clock)
    definitions = client.definitions()
    definitions.put_definition("acme", ONBOARDING)
    (started,) = definitions.send_event("acme", "user-1", "signup", {}).started
    driver.run_until_quiet(fire_schedules=False)
    (context,) = definitions.list_contexts("acme", "user-1").items
    context_item_id = make_execution_id("acme", "onboarding", "user-1", context.instance_id)

    listings = [
        client.list_executions(domain="acme").items,
        client.list_executions(domain="acme", subject_id="user-1").items,
        client.list_executions(status="RUNNING").items,
        client.list_executions(workflow="onboarding").items,
    ]
    assert [[record.execution_id for record in listing] for listing in listings] == [
        [started],
        [started],
        [started],
        [],
    ]
    for operation in (client.describe_execution, client.stop_execution):
        with pytest.raises(ExecutionNotFound):
            operation(context_item_id)

    # The context still resumes its own execution, which ends.
    assert definitions.send_event("acme", "user-1", "verified", {}).resumed
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(started)["Status"] == ExecutionStatus.SUCCEEDED.value


# Waits far longer than the retention period, so the context is still RUNNING once its version expired.
LONG_WAIT = {
    **ONBOARDING,
    "nodes": [
        {"id": "signed_up", "type": "trigger", "event": "signup"},
        {"id": "verify", "type": "trigger_or_timeout", "event": "verified", "timeout": "300d"},
        {"id": "done", "type": "end"},
    ],
}
APPROVALS = {
    "schemaVersion": 1,
    "id": "approvals",
    "nodes": [
        {"id": "asked", "type": "trigger", "event": "asked"},
        {"id": "approve", "type": "trigger_or_timeout", "event": "approved", "timeout": "1d"},
        {"id": "done", "type": "end"},
    ],
    "edges": [
        {"from": "asked", "to": "approve"},
        {"from": "approve", "to": "done", "branch": "event"},
        {"from": "approve", "to": "done", "branch": "timeout"},
    ],
}


def _definitions_items(deployment: Deployment) -> dict[str, int | None]:
    """Sort key -> `ttl` of every item in the definitions table."""
    table = deployment.config.definitions_table
    items = deployment.clients.dynamodb.scan(TableName=table)["Items"]
    return {item["workflowId"]["S"]: int(item["ttl"]["N"]) if "ttl" in item else None for item in items}


def _apply_ttl(deployment: Deployment, now: float) -> int:
    """DynamoDB's TTL on the definitions table at `now`: the items whose `ttl` has passed go."""
    table, db = deployment.config.definitions_table, deployment.clients.dynamodb
    expired = [
        item for item in db.scan(TableName=table)["Items"] if float(item.get("ttl", {"N": "inf"})["N"]) <= now
    ]
    for item in expired:
        db.delete_item(TableName=table, Key={"domain": item["domain"], "workflowId": item["workflowId"]})
    return len(expired)


def _stack(deployment: Deployment) -> tuple[VirtualClock, QueueDriver, StepwellClient]:
    clock = VirtualClock()
    registry = Registry()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime.event_router = install(runtime.engine, deployment.config, deployment.clients, registry)
    return (
        clock,
        QueueDriver(deployment, runtime, clock),
        StepwellClient(deployment.config, deployment.clients, clock=clock),
    )


def test_a_deleted_definition_expires_after_the_retention_while_its_running_context_runs_to_its_end(
    deployment: Deployment,
) -> None:
    clock, driver, client = _stack(deployment)
    retention = deployment.config.retention_days * 86400
    definitions = client.definitions()
    definitions.put_definition("acme", LONG_WAIT)
    (started,) = definitions.send_event("acme", "user-1", "signup", {}).started
    driver.run_until_quiet(fire_schedules=False)
    deleted_at = int(clock.now())
    assert definitions.delete_definition("acme", "onboarding")
    # Its version and (its domain's last definition) the waits record expire after the retention period.
    items = _definitions_items(deployment)
    assert set(items) == {"onboarding#000001", "~waits"}
    assert all(ttl is not None and 0 <= ttl - (deleted_at + retention) <= 2 for ttl in items.values()), items

    clock.advance(retention + 60)
    assert _apply_ttl(deployment, clock.now()) == 2 and _definitions_items(deployment) == {}
    # The context runs on, its version gone. A waits record written afresh now cannot name what it waits
    # for, so it stays incomplete and "verified" still reaches the context.
    definitions.put_definition("acme", APPROVALS)
    assert definitions.runtime.definitions.list_for_routing("acme")[1] is None
    assert definitions.send_event("acme", "user-1", "verified", {}).resumed
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(started)["Status"] == ExecutionStatus.SUCCEEDED.value
    (context,) = definitions.list_contexts("acme", "user-1").items
    assert (context.status, context.version) == ("SUCCEEDED", 1)
    # Once it ended, the next write makes the record complete again.
    definitions.put_definition("acme", APPROVALS)
    assert definitions.runtime.definitions.list_for_routing("acme")[1] == frozenset({"approved"})


def test_a_definition_set_again_after_its_delete_continues_its_numbering_and_routes(
    deployment: Deployment,
) -> None:
    clock, driver, client = _stack(deployment)
    retention = deployment.config.retention_days * 86400
    definitions = client.definitions()
    definitions.put_definition("acme", LONG_WAIT)
    assert definitions.delete_definition("acme", "onboarding")
    clock.advance(3600)
    assert definitions.put_definition("acme", ONBOARDING).version == 2
    # Set again: the delete's `ttl`s are gone, so nothing expires.
    assert _definitions_items(deployment) == dict.fromkeys(
        ["onboarding", "onboarding#000001", "onboarding#000002", "~waits"]
    )
    clock.advance(retention + 60)
    assert _apply_ttl(deployment, clock.now()) == 0
    assert [stored.version for stored in definitions.list_versions("acme", "onboarding")] == [1, 2]
    assert definitions.runtime.definitions.list_for_routing("acme")[1] == frozenset({"verified"})
    (started,) = definitions.send_event("acme", "user-2", "signup", {}).started
    driver.run_until_quiet(fire_schedules=False)
    assert definitions.send_event("acme", "user-2", "verified", {}).resumed
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(started)["Status"] == ExecutionStatus.SUCCEEDED.value
    (context,) = definitions.list_contexts("acme", "user-2").items
    assert (context.status, context.version) == ("SUCCEEDED", 2)
