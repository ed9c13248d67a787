"""Tenants on the deployed stack (examples/complete: com.example.acme speaks for acme-*, com.example.globex
for globex-*; the module's bus adds the engine's own source): globex attacks acme through the bus, through
a definition's `stepwell.put_event` and through the client, and acme's contexts, executions and histories
stay exactly as they were. The bus carries a policy that lets only the worker put the engine's source.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from deployed_backend import DeployedTarget
from stepwell.client import StepwellClient
from stepwell.core.status_events import STATUS_EVENT_SOURCE
from stepwell.features.definitions.actions import ENGINE_EVENT_SOURCE, PUT_EVENT
from stepwell.features.definitions.service import DefinitionsService
from stepwell.testing.deployed_fixtures import DeployedStack

from .test_definitions_deployed import contexts, journey, put_events, settle_until, source_for


def emitter(workflow_id: str, trigger: str, detail: dict[str, Any]) -> dict[str, Any]:
    """On `trigger`, emit user.activated with `detail` through the built-in put_event action."""
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "nodes": [
            {"id": "start", "type": "trigger", "event": trigger},
            {
                "id": "emit",
                "type": "action",
                "action": PUT_EVENT,
                "input": {"detailType": "'user.activated'", "detail": detail},
            },
            {"id": "done", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "emit"}, {"from": "emit", "to": "done"}],
    }


def tenant_state(service: DefinitionsService, domain: str) -> list[Any]:
    """A tenant's contexts with their executions and histories."""
    state: list[Any] = []
    for record in service.list_contexts(domain, limit=1000).items:
        shown = service.show_context(domain, record.workflow_id, record.subject_id, record.instance_id)
        state.append((shown["context"], shown["execution"], shown["history"]))
    return state


def execution_status(service: DefinitionsService, domain: str, subject: str) -> str | None:
    found = contexts(service, domain, subject)
    if not found:
        return None
    shown = service.show_context(domain, found[0].workflow_id, subject, found[0].instance_id)
    return str(shown["execution"]["Status"]) if shown["execution"] else None


def test_a_tenant_cannot_start_or_resume_another_tenants_contexts(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    run = uuid.uuid4().hex[:8]
    victim, attacker = f"acme-{run}", f"globex-{run}"
    service = deployed_client.definitions()
    for domain in (victim, attacker):
        service.put_definition(domain, journey("user.signed_up"))
    service.put_definition(attacker, emitter("forger", "forge", {"domain": victim, "subjectId": "u1"}))
    service.put_definition(attacker, emitter("notifier", "notify", {"subjectId": "u1"}))
    put_events(deployed_stack, ("user.signed_up", victim, "u1"), ("user.signed_up", attacker, "u1"))
    settle_until(
        deployed_target,
        lambda: bool(contexts(service, victim, "u1") and contexts(service, attacker, "u1")),
        "both tenants' u1 journeys start",
    )
    before = tenant_state(service, victim)

    # Through the bus: globex's producer claims acme's domain to start (u2) and to resume (u1).
    bus = deployed_stack.backend.client("events")
    response = bus.put_events(
        Entries=[
            {
                "EventBusName": deployed_stack.client_config["event_bus_name"],
                "Source": source_for(attacker),
                "DetailType": name,
                "Detail": json.dumps({"domain": victim, "subjectId": subject}),
            }
            for name, subject in (("user.signed_up", "u2"), ("user.activated", "u1"))
        ]
    )
    attack_ids = [entry["EventId"] for entry in response["Entries"]]
    # Through put_event: globex's forger names acme's domain and fails; its notifier's event is stamped
    # with globex's domain and resumes globex's u1 only.
    put_events(deployed_stack, ("forge", attacker, "u4"), ("notify", attacker, "u3"))
    settle_until(
        deployed_target,
        lambda: (
            execution_status(service, attacker, "u4") == "FAILED"
            and execution_status(service, attacker, "u1") == "SUCCEEDED"
        ),
        "the forger fails and the notifier resumes its own tenant's u1",
    )
    [forger] = contexts(service, attacker, "u4")
    shown = service.show_context(attacker, "forger", "u4", forger.instance_id)
    assert f"detail.domain {victim!r} is not allowed" in json.dumps(shown["execution"].get("Error"))
    # Through the client: an event claiming acme processed for globex.
    claimed = deployed_client.process_event(
        {
            "id": f"claim-{run}",
            "detail-type": "user.activated",
            "detail": {"domain": victim, "subjectId": "u1"},
        },
        attacker,
    )
    assert claimed["status"] == "rejected"
    assert claimed["reason"] == f"the event claims domain {victim!r} but was sent for domain {attacker!r}"
    deployed_target.process_queue()

    assert tenant_state(service, victim) == before
    assert contexts(service, victim, "u2") == []
    reasons = {entry["eventId"]: entry["reason"] for entry in service.rejected_events(limit=1000)}
    expected = f"source {source_for(attacker)!r} may not speak for domain {victim!r} (allowed: globex-*)"
    assert [reasons.get(event_id) for event_id in attack_ids] == [expected, expected]


def test_the_worker_trusts_the_configured_sources_and_only_it_may_put_the_engines(
    deployed_stack: DeployedStack,
) -> None:
    backend = deployed_stack.backend
    worker = backend.client("lambda").get_function_configuration(
        FunctionName=deployed_stack.client_config["worker_function_name"]
    )
    assert json.loads(worker["Environment"]["Variables"]["STEPWELL_EVENT_SOURCES"]) == {
        "com.example.acme": ["acme-*"],
        "com.example.globex": ["globex-*"],
        ENGINE_EVENT_SOURCE: ["*"],
    }
    worker_role = worker["Role"]
    described = backend.client("events").describe_event_bus(
        Name=deployed_stack.client_config["event_bus_name"]
    )
    [statement] = json.loads(described["Policy"])["Statement"]
    assert (statement["Effect"], statement["Action"], statement["Principal"]) == (
        "Deny",
        "events:PutEvents",
        "*",
    )
    assert statement["Condition"] == {
        "StringEquals": {"events:source": [ENGINE_EVENT_SOURCE, STATUS_EVENT_SOURCE]},
        "ArnNotEquals": {"aws:PrincipalArn": worker_role},
    }
