"""Tenants cannot reach each other: a domain is what the event's source may speak for (bus), what the
engine stamps (a definition's `stepwell.put_event`) or what the operator chose (the client), never what a
payload claims. Each attempt on the victim's domain is rejected and the victim's state stays identical.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import pytest
from stepwell.definitions.actions import ENGINE_EVENT_SOURCE, PUT_EVENT, put_event
from stepwell.definitions.cli import run
from stepwell.definitions.router import EventSources, EventSourcesError, PathExtractor, Router
from stepwell.definitions.service import DefinitionsService

from .harness import Harness
from .test_cli import parser

VICTIM, ATTACKER = "victim", "attacker"
BUS = "tenants-bus"


def journey(workflow_id: str = "journey") -> dict[str, Any]:
    """Starts on signed_up, then waits for activated (a resumable context)."""
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "nodes": [
            {"id": "t", "type": "trigger", "event": "signed_up"},
            {"id": "w", "type": "trigger_or_timeout", "event": "activated", "timeout": "3d"},
            {"id": "e", "type": "end"},
        ],
        "edges": [
            {"from": "t", "to": "w"},
            {"from": "w", "to": "e", "branch": "event"},
            {"from": "w", "to": "e", "branch": "timeout"},
        ],
    }


def emitter(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Starts on go and emits an event with `stepwell.put_event` (its inputs as given)."""
    return {
        "schemaVersion": 1,
        "id": "emitter",
        "nodes": [
            {"id": "t", "type": "trigger", "event": "go"},
            {"id": "p", "type": "action", "action": PUT_EVENT, "input": dict(inputs)},
            {"id": "e", "type": "end"},
        ],
        "edges": [{"from": "t", "to": "p"}, {"from": "p", "to": "e"}],
    }


def bus_event(
    source: str, domain: str, name: str, subject: str, account: str = "111111111111"
) -> dict[str, Any]:
    return {
        "version": "0",
        "id": f"{source}-{domain}-{name}-{subject}",
        "detail-type": name,
        "source": source,
        "account": account,
        "detail": {"domain": domain, "subjectId": subject},
    }


class FakeBus:
    """EventBridge as the module wires it: PutEvents, then the rule hands each event to the router."""

    def __init__(self, h: Harness, router: Router) -> None:
        self.h, self.router = h, router
        self.entries: list[dict[str, Any]] = []

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.entries.extend(Entries)
        for index, entry in enumerate(Entries):
            assert entry["EventBusName"] == BUS
            self.router.process_event(
                {
                    "version": "0",
                    "id": f"bus-{len(self.entries)}-{index}",
                    "detail-type": entry["DetailType"],
                    "source": entry["Source"],
                    "account": "111111111111",
                    "detail": json.loads(entry["Detail"]),
                }
            )
        return {"FailedEntryCount": 0, "Entries": [{"EventId": f"bus-{len(self.entries)}"}]}


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.actions.register(PUT_EVENT, put_event)
    # The victim has a running context for u1 (waiting for activated) and a definition that starts on
    # signed_up; the attacker has the same definition, so its own events have something to do.
    harness.put(journey(), domain=VICTIM)
    harness.put(journey(), domain=ATTACKER)
    harness.send("signed_up", "u1", domain=VICTIM, event_id="victim-signup-u1")
    harness.send("signed_up", "u1", domain=ATTACKER, event_id="attacker-signup-u1")
    return harness


def victim_state(h: Harness) -> list[Any]:
    """Everything of the victim an attack could change: its contexts, their executions and histories,
    and its definitions."""
    state: list[Any] = [
        [(d.workflow_id, d.version, d.updated_at) for d in h.runtime.definitions.list_workflows(VICTIM)]
    ]
    for record in h.runtime.contexts.get_all_contexts(VICTIM, limit=1000).items:
        state.append(record.to_dict())
        state.append(h.local.describe(record.execution_id))
        state.append(h.local.engine.get_execution_history(record.execution_id))
    return state


def tenant_router(h: Harness, rules: Mapping[str, Any]) -> Router:
    return Router(h.local.engine, h.runtime, extractor=PathExtractor(), sources=EventSources(rules))


def test_a_bus_source_cannot_start_or_resume_another_tenants_contexts(h: Harness) -> None:
    router = tenant_router(h, {"com.attacker": [ATTACKER], "111111111111:com.partner": ["victim*"]})
    before = victim_state(h)

    start = router.process_event(bus_event("com.attacker", VICTIM, "signed_up", "u2"))
    resume = router.process_event(bus_event("com.attacker", VICTIM, "activated", "u1"))
    unknown = router.process_event(bus_event("com.stranger", VICTIM, "activated", "u1"))
    other_account = router.process_event(
        bus_event("com.partner", VICTIM, "activated", "u1", account="222222222222")
    )
    h.local.run_until_idle()

    assert [o.status for o in (start, resume, unknown, other_account)] == ["rejected"] * 4
    assert start.reason == "source 'com.attacker' may not speak for domain 'victim' (allowed: attacker)"
    assert resume.reason == start.reason
    assert unknown.reason == "source 'com.stranger' (account '111111111111') is not in event_sources"
    assert other_account.reason == "source 'com.partner' (account '222222222222') is not in event_sources"
    assert victim_state(h) == before
    rejected = {entry["eventId"]: entry["reason"] for entry in h.runtime.events.list_rejected()}
    assert rejected[start.event_id] == start.reason and rejected[unknown.event_id] == unknown.reason

    # The same router lets each source speak for its own domains: the partner's account and the
    # attacker's own tenant.
    own = router.process_event(bus_event("com.attacker", ATTACKER, "activated", "u1"))
    partner = router.process_event(bus_event("com.partner", VICTIM, "signed_up", "u3"))
    h.local.run_until_idle()
    assert own.status == "processed" and len(own.resumed) == 1
    assert partner.status == "processed" and len(partner.started) == 1


def test_no_event_sources_means_no_bus_event_is_accepted(h: Harness) -> None:
    before = victim_state(h)
    outcome = Router(h.local.engine, h.runtime, extractor=PathExtractor()).process_event(
        bus_event("com.victim", VICTIM, "activated", "u1")
    )
    h.local.run_until_idle()
    assert outcome.status == "rejected"
    assert outcome.reason == (
        "no event sources are configured, so no bus event may speak for domain 'victim' "
        "(set the module's event_sources)"
    )
    assert victim_state(h) == before


@pytest.mark.parametrize(
    ("inputs", "refusal"),
    [
        (
            {"detailType": "'activated'", "detail": {"domain": VICTIM, "subjectId": "u1"}},
            "detail.domain 'victim' is not allowed; a definition of domain 'attacker' emits events for "
            "'attacker' only",
        ),
        (
            {"detailType": "'signed_up'", "detail": {"subjectId": "u9"}, "source": "'com.victim'"},
            "source 'com.victim' is not allowed; definitions emit events with source "
            "'stepwell.definitions' only",
        ),
    ],
)
def test_put_event_from_a_definition_cannot_name_another_tenant(
    h: Harness, inputs: dict[str, Any], refusal: str
) -> None:
    router = tenant_router(h, {ENGINE_EVENT_SOURCE: ["*"], "tests": [ATTACKER]})
    bus = FakeBus(h, router)
    h.runtime.clients, h.runtime.event_bus_name = (lambda service: bus), BUS
    h.put(emitter(inputs), domain=ATTACKER)
    before = victim_state(h)

    go = router.process_event(bus_event("tests", ATTACKER, "go", "u1"))
    h.local.run_until_idle()

    [context] = h.runtime.contexts.get_contexts(ATTACKER, "emitter", "u1")
    assert go.status == "processed" and h.status(context) == "FAILED"
    assert refusal in json.dumps(h.local.describe(context.execution_id).get("Error"))
    assert bus.entries == []
    assert victim_state(h) == before


def test_put_event_reaches_its_own_domain_only(h: Harness) -> None:
    router = tenant_router(h, {ENGINE_EVENT_SOURCE: ["*"], "tests": [ATTACKER]})
    bus = FakeBus(h, router)
    h.runtime.clients, h.runtime.event_bus_name = (lambda service: bus), BUS
    # No domain given: the engine stamps the emitting context's own.
    h.put(emitter({"detailType": "'activated'", "detail": {"subjectId": "u1"}}), domain=ATTACKER)
    before = victim_state(h)

    router.process_event(bus_event("tests", ATTACKER, "go", "u1"))
    h.local.run_until_idle()

    assert [(e["Source"], json.loads(e["Detail"])["domain"]) for e in bus.entries] == [
        (ENGINE_EVENT_SOURCE, ATTACKER)
    ]
    [resumed] = h.runtime.contexts.get_contexts(ATTACKER, "journey", "u1")
    assert h.status(resumed) == "SUCCEEDED"
    assert victim_state(h) == before


def test_an_engine_event_speaks_for_its_stamped_domain_whatever_the_extractor_reads(h: Harness) -> None:
    # An extractor reading the domain from detail.tenant: a definition could put "victim" there, but the
    # engine's stamp in detail.domain says which tenant emitted it.
    router = Router(
        h.local.engine,
        h.runtime,
        extractor=PathExtractor({"domain": "detail.tenant"}),
        sources=EventSources({ENGINE_EVENT_SOURCE: ["*"]}),
    )
    before = victim_state(h)
    forged = bus_event(ENGINE_EVENT_SOURCE, ATTACKER, "activated", "u1")
    forged["detail"]["tenant"] = VICTIM
    outcome = router.process_event(forged)
    h.local.run_until_idle()
    assert outcome.status == "rejected"
    assert outcome.reason == "an event the engine stamped for domain 'attacker' maps to domain 'victim'"
    assert victim_state(h) == before


def test_the_client_processes_an_event_for_the_operators_domain_only(h: Harness) -> None:
    service = DefinitionsService(h.local.engine, h.runtime, h.router)
    before = victim_state(h)

    claimed = service.process_event(bus_event("tests", VICTIM, "activated", "u1"), ATTACKER)
    h.local.run_until_idle()
    assert claimed.status == "rejected"
    assert claimed.reason == "the event claims domain 'victim' but was sent for domain 'attacker'"
    assert victim_state(h) == before

    # A payload without a domain is for the operator's domain; so is send_event's.
    unclaimed = dict(bus_event("tests", VICTIM, "activated", "u1"), detail={"subjectId": "u1"})
    outcome = service.process_event(unclaimed, ATTACKER)
    h.local.run_until_idle()
    assert outcome.status == "processed" and outcome.domain == ATTACKER and len(outcome.resumed) == 1
    assert service.send_event(ATTACKER, "u5", "signed_up").started
    assert victim_state(h) == before


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"com acme": ["acme"]}, "event source 'com acme': letters, digits and . _ / -"),
        ({"12:com.acme": ["acme"]}, "event source '12:com.acme': letters, digits"),
        ({"com.acme": []}, "event source 'com.acme': domains must be a non-empty list"),
        ({"com.acme": ["acme#eu"]}, "event source 'com.acme': 'acme#eu' is not a domain id, a prefix"),
        ({"com.acme": "acme"}, "event source 'com.acme': domains must be a non-empty list"),
    ],
)
def test_bad_event_sources_are_refused_with_the_value_and_the_rule(
    rules: dict[str, Any], message: str
) -> None:
    with pytest.raises(EventSourcesError, match=message.replace(".", r"\.").replace("(", r"\(")):
        EventSources(rules)


def test_the_cli_puts_an_event_on_the_bus_with_the_source_it_is_given(h: Harness) -> None:
    router = tenant_router(h, {"com.attacker": [ATTACKER]})
    bus = FakeBus(h, router)
    h.runtime.clients, h.runtime.event_bus_name = (lambda service: bus), BUS
    service = DefinitionsService(h.local.engine, h.runtime, h.router)
    before = victim_state(h)
    for domain in (VICTIM, ATTACKER):
        argv = ["event", "send", "activated", "--domain", domain, "--subject", "u1", "--via-bus"]
        args = parser().parse_args([*argv, "--source", "com.attacker"])
        assert run(args, lambda: service, io.StringIO(), io.StringIO())
    h.local.run_until_idle()

    assert [(e["Source"], json.loads(e["Detail"])["domain"]) for e in bus.entries] == [
        ("com.attacker", VICTIM),
        ("com.attacker", ATTACKER),
    ]
    assert victim_state(h) == before
    [resumed] = h.runtime.contexts.get_contexts(ATTACKER, "journey", "u1")
    assert h.status(resumed) == "SUCCEEDED"
