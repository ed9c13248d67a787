"""Tenants cannot reach each other: a domain is what the event's source may speak for (bus), what the
engine stamps (a definition's `stepwell.put_event`) or what the operator chose (the client), never what a
payload claims. Each attempt on the victim's domain is rejected and the victim's state stays identical.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Mapping
from typing import Any

import pytest
from stepwell.cli.definitions import run
from stepwell.features.definitions import actions
from stepwell.features.definitions import router as router_module
from stepwell.features.definitions.actions import (
    ENGINE_EVENT_SOURCE,
    EVENT_CHAIN_KEY,
    EVENT_DEPTH_KEY,
    MAX_EVENT_DEPTH,
    PUT_EVENT,
    put_event,
)
from stepwell.features.definitions.router import EventSources, EventSourcesError, PathExtractor, Router
from stepwell.features.definitions.service import DefinitionsService

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


def wired_bus(h: Harness, rules: Mapping[str, Any] | None = None) -> FakeBus:
    """The bus the definitions' actions put events on, routed by a router with `rules` (default: trusting
    the engine's own events, as the module configures it, and the tests' source for the attacker)."""
    bus = FakeBus(h, tenant_router(h, rules or {ENGINE_EVENT_SOURCE: ["*"], "tests": [ATTACKER]}))
    h.runtime.clients, h.runtime.event_bus_name = (lambda service: bus), BUS
    return bus


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
    bus = wired_bus(h)
    router = bus.router
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
    bus = wired_bus(h)
    router = bus.router
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
    bus = wired_bus(h, {"com.attacker": [ATTACKER]})
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


def looping_emitter(fan_out: int) -> dict[str, Any]:
    """Starts on go and emits `fan_out` go events for the same subject (policy multiple: "single" would
    skip a start while the emitter runs): unbounded, its contexts multiply by `fan_out` per generation.
    Each detail claims depth 0 and a chain of its own, which the engine's stamps replace."""
    looping = emitter({})
    inputs = {"detailType": "'go'", "detail": {"subjectId": "u1", "stepwellDepth": 0, "stepwellChain": "x"}}
    actions = [
        {"id": f"p{i}", "type": "action", "action": PUT_EVENT, "input": inputs} for i in range(fan_out)
    ]
    looping["nodes"] = [looping["nodes"][0], *actions, looping["nodes"][-1]]
    path = ["t", *(node["id"] for node in actions), "e"]
    looping["edges"] = [{"from": a, "to": b} for a, b in itertools.pairwise(path)]
    looping["policy"] = {"concurrency": "multiple"}
    return looping


def emitter_contexts(h: Harness) -> list[Any]:
    return [
        c
        for c in h.runtime.contexts.get_all_contexts(ATTACKER, limit=1000).items
        if c.workflow_id == "emitter"
    ]


def test_a_definition_that_triggers_itself_stops_at_the_chains_depth(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 generations instead of 8 (a test of 511 contexts would take a minute); the rule is the same.
    depth_limit = 4
    monkeypatch.setattr(actions, "MAX_EVENT_DEPTH", depth_limit)
    monkeypatch.setattr(router_module, "MAX_EVENT_DEPTH", depth_limit)
    bus = wired_bus(h)
    h.put(looping_emitter(2), domain=ATTACKER)
    before = victim_state(h)

    root = bus.router.process_event(bus_event("tests", ATTACKER, "go", "u1"))
    h.local.run_until_idle()

    details = [json.loads(entry["Detail"]) for entry in bus.entries]
    depths = [detail[EVENT_DEPTH_KEY] for detail in details]
    # Generation d (started by an event d deep) emits two events d + 1 deep, up to the last allowed depth;
    # the stamps a definition writes itself are replaced.
    assert sorted(set(depths)) == list(range(1, depth_limit + 1))
    assert len(depths) == sum(2**depth for depth in range(1, depth_limit + 1))
    assert {detail[EVENT_CHAIN_KEY] for detail in details} == {root.event_id}
    failed = [c for c in emitter_contexts(h) if h.status(c) == "FAILED"]
    assert len(failed) == 2**depth_limit  # the deepest generation: refused, each with the reason
    error = json.dumps(h.local.describe(failed[0].execution_id)["Error"])
    assert f"its event would be {depth_limit + 1} deep; at most {depth_limit} allowed" in error
    assert victim_state(h) == before


def test_a_chain_that_fans_out_stops_at_its_budget_of_starts(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(router_module, "CHAIN_STARTS_PER_DAY", 6)
    bus = wired_bus(h)
    h.put(looping_emitter(3), domain=ATTACKER)
    before = victim_state(h)

    root = bus.router.process_event(bus_event("tests", ATTACKER, "go", "u1"))
    h.local.run_until_idle()

    # The outside event's context (not counted) emits 3, which start 3 that emit 9: 3 of those start,
    # the 6 others fail at their start, and the 3 of the last generation emit 9 more, all refused.
    statuses = [c.status for c in emitter_contexts(h)]
    assert statuses.count("SUCCEEDED") == 1 + 6
    refused = [
        c for c in emitter_contexts(h) if c.error and c.error.get("ErrorType") == "EventChainLimitExceeded"
    ]
    assert len(refused) == 6 + 9
    assert f"began with event {root.event_id!r} started 6 contexts today" in refused[0].error["ErrorMessage"]
    assert len(bus.entries) == 3 + 9 + 9
    assert victim_state(h) == before

    # Another outside event begins a chain of its own, with its own budget.
    h.local.clock.advance(1)
    bus.router.process_event(dict(bus_event("tests", ATTACKER, "go", "u1"), id="second"))
    h.local.run_until_idle()
    assert len(bus.entries) == 2 * (3 + 9 + 9)


def test_a_redelivered_chain_event_neither_counts_again_nor_fails_its_context(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(router_module, "CHAIN_STARTS_PER_DAY", 1)
    router = wired_bus(h).router
    event = bus_event(ENGINE_EVENT_SOURCE, ATTACKER, "signed_up", "u5")
    event["detail"].update({EVENT_DEPTH_KEY: 1, EVENT_CHAIN_KEY: "root-1"})
    assert len(router.process_event(event).started) == 1  # the chain's one start: its budget is spent
    h.local.run_until_idle()

    again = router.process_event(event)
    h.local.run_until_idle()
    assert again.status == "duplicate" and again.started == []
    [context] = h.runtime.contexts.get_contexts(ATTACKER, "journey", "u5")
    assert context.status == "RUNNING" and context.error is None and h.status(context) == "RUNNING"
    other = dict(event, id="another", detail={**event["detail"], "subjectId": "u6"})
    refused = router.process_event(other)  # a new start of that chain is refused
    assert refused.started == [] and "started 1 contexts today" in refused.skipped[0]


def test_a_context_resumed_by_a_deep_event_emits_deeper_ones(h: Harness) -> None:
    bus = wired_bus(h)
    relay = journey("relay")
    relay["nodes"].insert(
        2,
        {
            "id": "p",
            "type": "action",
            "action": PUT_EVENT,
            "input": {"detailType": "'relayed'", "detail": {"subjectId": "u7"}},
        },
    )
    relay["edges"] = [
        {"from": "t", "to": "w"},
        {"from": "w", "to": "p", "branch": "event"},
        {"from": "w", "to": "e", "branch": "timeout"},
        {"from": "p", "to": "e"},
    ]
    h.put(relay, domain=ATTACKER)
    bus.router.process_event(bus_event("tests", ATTACKER, "signed_up", "u7"))
    h.local.run_until_idle()
    assert bus.entries == []  # started by an outside event (depth 0), it waits

    resume = bus_event(ENGINE_EVENT_SOURCE, ATTACKER, "activated", "u7")
    resume["detail"][EVENT_DEPTH_KEY] = 5
    assert len(bus.router.process_event(resume).resumed) == 2  # relay's context and journey's
    h.local.run_until_idle()
    assert [json.loads(entry["Detail"])[EVENT_DEPTH_KEY] for entry in bus.entries] == [6]


@pytest.mark.parametrize(
    ("stamp", "shown"),
    [(MAX_EVENT_DEPTH + 1, str(MAX_EVENT_DEPTH + 1)), (0, "0"), ("3", "str"), (True, "True")],
)
def test_the_router_refuses_an_engine_event_deeper_than_allowed_or_badly_stamped(
    h: Harness, stamp: Any, shown: str
) -> None:
    router = wired_bus(h).router
    before = victim_state(h)
    forged = bus_event(ENGINE_EVENT_SOURCE, ATTACKER, "signed_up", "u8")
    forged["detail"][EVENT_DEPTH_KEY] = stamp
    outcome = router.process_event(forged)
    h.local.run_until_idle()
    assert outcome.status == "rejected"
    assert outcome.reason == (
        f"an event a definition emitted is {shown} definitions deep (detail.stepwellDepth); "
        f"a whole number from 1 to {MAX_EVENT_DEPTH} is allowed"
    )
    assert h.runtime.contexts.get_contexts(ATTACKER, "journey", "u8") == []
    assert victim_state(h) == before

    # An engine event stamped before the engine counted is one deep; an outside event's stamp is ignored.
    del forged["detail"][EVENT_DEPTH_KEY]
    assert len(router.process_event(forged).started) == 1
    outside = bus_event("tests", ATTACKER, "signed_up", "u9")
    outside["detail"][EVENT_DEPTH_KEY] = stamp
    assert len(router.process_event(outside).started) == 1
    h.local.run_until_idle()
    [started] = h.runtime.contexts.get_contexts(ATTACKER, "journey", "u9")
    assert "depth" not in h.local.describe(started.execution_id)["InputPayload"]
