"""The definitions' context items share the executions table and its indexes on DynamoDB: they must never
pass for executions (listed, described or stopped as one), or stopping one would strand the context's
real execution."""

from __future__ import annotations

import pytest
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.definitions.service import install
from stepwell.entry import EntryRuntime
from stepwell.errors import ExecutionNotFound
from stepwell.model import ExecutionStatus, make_execution_id
from stepwell.registry import Registry

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
