"""Workflows as data on each deployed backend: bus -> rule -> work queue -> the deployed worker (on moto
through the harness's runtime, on LocalStack through its own mapping) -> the definitions router.

A definition is put with the client, events are put on the deployed bus with PutEvents, and the contexts
are read back with the client: a redelivered event (same event id) starts nothing twice, two tenants with
the same subject id are kept apart, a context keeps the version it started with when the definition
changes, and a context's timeout fires when the harness's virtual clock passes it. Built-in node types
only (no actions), so nothing beyond the engine needs packaging.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from deployed_backend import DeployedTarget
from stepwell.client import StepwellClient
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.store import ContextRecord
from stepwell.testing.deployed_fixtures import DeployedStack

WAIT_SECONDS = 240.0


def journey(trigger: str) -> dict[str, Any]:
    """Start on `trigger`; end `activated` on user.activated within a day, else `lapsed`."""
    return {
        "schemaVersion": 1,
        "id": "journey",
        "name": "Activation journey",
        "nodes": [
            {"id": "start", "type": "trigger", "event": trigger},
            {"id": "first_day", "type": "trigger_or_timeout", "event": "user.activated", "timeout": "1d"},
            {"id": "activated", "type": "end", "label": "activated"},
            {"id": "lapsed", "type": "end", "label": "lapsed"},
        ],
        "edges": [
            {"from": "start", "to": "first_day"},
            {"from": "first_day", "to": "activated", "branch": "event"},
            {"from": "first_day", "to": "lapsed", "branch": "timeout"},
        ],
    }


def source_for(domain: str) -> str:
    """The producer source examples/complete's event_sources lets speak for `domain` (acme-*, globex-*)."""
    return f"com.example.{domain.split('-')[0]}"


def put_events(stack: DeployedStack, *events: tuple[str, str, str]) -> list[str]:
    """PutEvents (name, domain, subject) on the deployed bus, each from its tenant's producer source;
    returns the event ids."""
    response = stack.backend.client("events").put_events(
        Entries=[
            {
                "EventBusName": stack.client_config["event_bus_name"],
                "Source": source_for(domain),
                "DetailType": name,
                "Detail": json.dumps({"domain": domain, "subjectId": subject, "data": {"n": index}}),
            }
            for index, (name, domain, subject) in enumerate(events)
        ]
    )
    assert response.get("FailedEntryCount", 0) == 0, response
    return [entry["EventId"] for entry in response["Entries"]]


def redeliver(stack: DeployedStack, event_id: str, name: str, domain: str, subject: str) -> None:
    """What the bus rule delivers to the work queue, sent again with the same event id."""
    envelope = {
        "version": "0",
        "id": event_id,
        "detail-type": name,
        "source": source_for(domain),
        "account": stack.backend.account_id,
        "time": "2026-01-01T00:00:00Z",
        "region": stack.backend.region,
        "resources": [],
        "detail": {"domain": domain, "subjectId": subject, "data": {"n": 0}},
    }
    stack.backend.client("sqs").send_message(
        QueueUrl=stack.client_config["work_queue_url"], MessageBody=json.dumps(envelope)
    )


def contexts(service: DefinitionsService, domain: str, subject: str) -> list[ContextRecord]:
    return list(service.list_contexts(domain, subject).items)


def settle_until(target: DeployedTarget, check: Any, what: str) -> None:
    """Process the queue until `check()` holds (bus deliveries are asynchronous on LocalStack)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        target.process_queue()
        if check():
            return
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.2)


def test_events_on_the_bus_start_resume_and_time_out_contexts_per_tenant_and_version(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    run = uuid.uuid4().hex[:8]
    acme, globex = f"acme-{run}", f"globex-{run}"
    service = deployed_client.definitions()
    assert service.put_definition(acme, journey("user.signed_up")).version == 1
    assert service.put_definition(globex, journey("user.signed_up")).version == 1

    # Two tenants, the same subject id; plus a second acme subject.
    signup_ids = put_events(
        deployed_stack,
        ("user.signed_up", acme, "u1"),
        ("user.signed_up", globex, "u1"),
        ("user.signed_up", acme, "u2"),
    )
    settle_until(
        deployed_target,
        lambda: all(contexts(service, d, s) for d, s in ((acme, "u1"), (globex, "u1"), (acme, "u2"))),
        "a context for each signup",
    )
    # The acme u1 signup delivered again (same event id): nothing new starts.
    redeliver(deployed_stack, signup_ids[0], "user.signed_up", acme, "u1")
    deployed_target.process_queue()
    for domain, subject in ((acme, "u1"), (globex, "u1"), (acme, "u2")):
        found = contexts(service, domain, subject)
        assert [(c.domain, c.subject_id, c.version, c.status) for c in found] == [
            (domain, subject, 1, "RUNNING")
        ], found

    # The definition changes while version 1 contexts run; acme u1 activates and ends on version 1,
    # globex's u1 (same subject id, other tenant) is untouched.
    assert service.put_definition(acme, journey("user.registered")).version == 2
    put_events(deployed_stack, ("user.activated", acme, "u1"))
    settle_until(
        deployed_target,
        lambda: contexts(service, acme, "u1")[0].status != "RUNNING",
        "acme u1 finishes after its activation",
    )
    [acme_u1] = contexts(service, acme, "u1")
    assert (acme_u1.status, acme_u1.version) == ("SUCCEEDED", 1)
    shown = service.show_context(acme, "journey", "u1", acme_u1.instance_id)
    assert shown["execution"]["Status"] == "SUCCEEDED"
    assert [c.status for c in contexts(service, globex, "u1")] == ["RUNNING"]

    # Version 2 starts on its new trigger only.
    put_events(deployed_stack, ("user.signed_up", acme, "u3"), ("user.registered", acme, "u4"))
    settle_until(deployed_target, lambda: bool(contexts(service, acme, "u4")), "a version 2 context for u4")
    assert [c.version for c in contexts(service, acme, "u4")] == [2]
    assert contexts(service, acme, "u3") == []

    # A day passes on the virtual clock: the contexts still waiting time out (lapsed).
    waiting = [contexts(service, d, s)[0] for d, s in ((globex, "u1"), (acme, "u2"), (acme, "u4"))]
    timers = deployed_target.due_timers(c.execution_id for c in waiting)
    assert set(timers) == {c.execution_id for c in waiting}
    latest = max(timers.values())
    deployed_target.clock.advance_seconds(max(0.0, latest - deployed_target.clock.now_epoch()) + 1)
    for execution_id, due_at in timers.items():
        deployed_target.nudged.add((execution_id, due_at))
        deployed_target.send_invoke(execution_id, due_at)
    settle_until(
        deployed_target,
        lambda: all(contexts(service, c.domain, c.subject_id)[0].status != "RUNNING" for c in waiting),
        "the waiting contexts time out",
    )
    for context in waiting:
        [after] = contexts(service, context.domain, context.subject_id)
        assert after.status == "SUCCEEDED", after
        timeline = service.show_context(after.domain, "journey", after.subject_id, after.instance_id)[
            "timeline"
        ]
        assert "CallbackTimedOut" in timeline, timeline


def test_resume_claims_and_the_waits_record_on_the_deployed_tables(deployed_stack: DeployedStack) -> None:
    """The router's resume claim (a conditional put answering with the standing record), a chain's budget
    of starts (a conditional counter) and the domain's waits record (an update in the definition's
    transaction, read with the definitions), on the backend's own DynamoDB."""
    from stepwell.features.definitions.store import DynamoDbDefinitionStore, DynamoDbEventLog

    config = deployed_stack.client_config
    dynamodb = deployed_stack.backend.client("dynamodb")
    events = DynamoDbEventLog(dynamodb, config["coordination_table"])
    key = f"evt#claims-{uuid.uuid4().hex[:8]}#ctx"
    now = time.time()
    assert events.claim_for(key, now, ["cbA", "cbB"]) is None
    assert events.claim_for(key, now, ["cbC"]) == ["cbA", "cbB"]
    budget = f"chain#budget-{uuid.uuid4().hex[:8]}#c#1"
    assert [events.take_from_budget(budget, 2, int(now) + 60) for _ in range(3)] == [True, True, False]

    definitions = DynamoDbDefinitionStore(dynamodb, config["definitions_table"])
    domain = f"waits-{uuid.uuid4().hex[:8]}"
    definitions.set_workflow(domain, journey("user.signed_up"))
    workflows, waited = definitions.list_for_routing(domain)
    assert [w.workflow_id for w in workflows] == ["journey"]
    assert waited == frozenset({"user.activated"})
