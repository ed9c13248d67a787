"""Events: starts at most once per event id, resumes, policies, rejections, tenants, versions."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from stepwell.features.definitions.budgets import DEFAULT_EXPRESSION_CPU_SECONDS
from stepwell.features.definitions.extractors import (
    EXTRACTOR_ENV,
    ExtractedEvent,
    PathExtractor,
    register_extractor,
    unregister_extractor,
)
from stepwell.features.definitions.router import ORPHAN_AFTER_SECONDS, Router
from stepwell.features.definitions.store import ContextRecord

from .harness import PINGS, Harness, envelope


def journey(
    workflow_id: str = "onboarding", action: str = "remind", concurrency: str = "single"
) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "policy": {"concurrency": concurrency},
        "nodes": [
            {"id": "t", "type": "trigger", "event": "signed_up"},
            {"id": "w", "type": "trigger_or_timeout", "event": "activated", "timeout": "3d"},
            {
                "id": "r",
                "type": "action",
                "action": action,
                "input": {"subject": "subject", "domain": "domain"},
            },
            {"id": "e", "type": "end"},
        ],
        "edges": [
            {"from": "t", "to": "w"},
            {"from": "w", "to": "e", "branch": "event"},
            {"from": "w", "to": "r", "branch": "timeout"},
            {"from": "r", "to": "e"},
        ],
    }


@pytest.fixture
def h(harness: Harness) -> Harness:
    harness.recording_action("remind")
    harness.recording_action("remind_v2")
    return harness


def test_a_redelivered_event_starts_nothing_twice(h: Harness) -> None:
    h.put(journey(concurrency="multiple"))  # so only the de-duplication keeps the second start out
    first = h.send("signed_up", "u1", event_id="e-1")
    again = h.send("signed_up", "u1", event_id="e-1")
    assert len(first.started) == 1 and again.status == "duplicate" and again.started == []
    assert any("started by an earlier delivery" in reason for reason in again.skipped)
    third = h.send("signed_up", "u1", event_id="e-1")
    assert third.status == "duplicate" and third.started == []
    assert len(h.runtime.contexts.get_contexts("acme", "onboarding", "u1")) == 1
    executions = h.local.engine.list_executions(domain="acme", subject_id="u1").items
    assert len(executions) == 1


def test_a_redelivered_event_resumes_once(h: Harness) -> None:
    h.put(PINGS)
    h.send("start", "u1")
    assert len(h.send("ping", "u1", event_id="p-1").resumed) == 1
    redelivered = h.send("ping", "u1", event_id="p-1")
    assert redelivered.status == "duplicate" and redelivered.resumed == []
    assert "already resumed" in redelivered.skipped[0]
    assert h.context("pings", "u1").waits_for("ping")  # the second wait is still open
    h.advance(2 * 86400)
    assert len(h.calls_of("remind")) == 1  # the redelivery did not pass the second wait


def test_policy_single_and_multiple(h: Harness) -> None:
    h.put(journey("solo"))
    h.put(journey("many", concurrency="multiple"))
    h.send("signed_up", "u1")
    second = h.send("signed_up", "u1")
    assert len(second.started) == 1  # only "many"
    assert any("already has running context" in s for s in second.skipped)
    assert len(h.runtime.contexts.get_contexts("acme", "solo", "u1")) == 1
    assert len(h.runtime.contexts.get_contexts("acme", "many", "u1")) == 2
    h.advance(4 * 86400)  # every context times out and ends
    third = h.send("signed_up", "u1")
    assert len(third.started) == 2
    assert len(h.runtime.contexts.get_contexts("acme", "solo", "u1")) == 2


def test_a_context_stopped_from_outside_does_not_block_policy_single(h: Harness) -> None:
    h.put(journey())
    started = h.send("signed_up", "u1").started[0]
    h.local.engine.stop_execution(started)
    h.local.run_until_idle()
    again = h.send("signed_up", "u1")
    assert len(again.started) == 1
    statuses = sorted(c.status for c in h.runtime.contexts.get_contexts("acme", "onboarding", "u1"))
    assert statuses == ["RUNNING", "STOPPED"]


def test_a_context_ends_with_its_execution_stopped_from_outside(h: Harness) -> None:
    # Without waiting for the subject's next event: a stopped context neither shows RUNNING nor keeps its
    # data past the retention period (its end gives it its ttl).
    h.put(journey())
    started = h.send("signed_up", "u1").started[0]
    h.local.engine.stop_execution(started, {"ErrorType": "Cancelled", "ErrorMessage": "by support"})
    h.local.run_until_idle()
    (context,) = h.runtime.contexts.get_contexts("acme", "onboarding", "u1")
    assert (context.status, context.waiting) == ("STOPPED", {})
    assert context.error == {"ErrorType": "Cancelled", "ErrorMessage": "by support"}


def test_rejected_events_are_recorded_and_block_nothing(h: Harness) -> None:
    h.put(journey())
    no_subject = envelope("signed_up", "x")
    del no_subject["detail"]["subjectId"]
    bad_subject = envelope("signed_up", "a#b")
    outcomes = [
        h.router.process_event(no_subject),
        h.router.process_event(bad_subject),
        h.router.process_event({"id": "odd", "detail-type": "signed_up", "detail": "text"}),
        h.router.process_event(envelope("signed_up", "u1", event_id="good")),
    ]
    assert [o.status for o in outcomes] == ["rejected", "rejected", "rejected", "processed"]
    assert outcomes[0].reason == "extractor failed: the event maps to no subject"
    assert "must not contain '#'" in (outcomes[1].reason or "")
    assert len(outcomes[3].started) == 1
    reasons = {r["eventId"]: r["reason"] for r in h.runtime.events.list_rejected()}
    assert set(reasons) == {no_subject["id"], bad_subject["id"], "odd"}


def test_a_subject_that_is_not_a_string_is_rejected_without_its_data_in_the_log(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h.put(journey())
    event = envelope("signed_up", "x", event_id="leaky")
    event["detail"]["subjectId"] = {"ssn": "123-45-6789"}
    caplog.set_level(logging.WARNING, logger="stepwell.features.definitions.router")
    outcome = h.router.process_event(event)
    assert outcome.status == "rejected"
    assert outcome.reason == "extractor failed: the event's subject must be a string, got dict"
    assert "leaky" in caplog.text and "123-45-6789" not in caplog.text  # the type, never the value


def test_an_extractor_that_raises_is_recorded(h: Harness) -> None:
    def broken(event: Any) -> Any:
        raise KeyError("tenant")

    router = Router(h.local.engine, h.runtime, extractor=broken)
    outcome = router.process_event(envelope("signed_up", "u1", event_id="e-9"))
    assert outcome.status == "rejected" and outcome.reason == "extractor failed: 'tenant'"
    assert h.runtime.events.list_rejected()[0]["eventId"] == "e-9"


def test_two_tenants_with_the_same_subject_id_are_kept_apart(h: Harness) -> None:
    h.put(journey(), domain="acme")
    h.put(journey(), domain="globex")
    h.send("signed_up", "u1", domain="acme")
    h.send("signed_up", "u1", domain="globex")
    resumed = h.send("activated", "u1", domain="acme").resumed
    assert len(resumed) == 1 and resumed[0].startswith("acme#")
    h.advance(4 * 86400)
    assert h.context("onboarding", "u1", domain="acme").status == "SUCCEEDED"
    assert h.context("onboarding", "u1", domain="globex").status == "SUCCEEDED"
    assert h.calls_of("remind") == [{"subject": "u1", "domain": "globex"}]


def test_running_contexts_keep_their_version(h: Harness) -> None:
    h.put(journey(action="remind"))
    h.send("signed_up", "old")
    h.put(journey(action="remind_v2"))
    assert h.runtime.definitions.get_workflow("acme", "onboarding") is not None
    h.send("signed_up", "new")
    assert h.context("onboarding", "old").version == 1 and h.context("onboarding", "new").version == 2
    h.advance(4 * 86400)
    assert h.calls_of("remind") == [{"subject": "old", "domain": "acme"}]
    assert h.calls_of("remind_v2") == [{"subject": "new", "domain": "acme"}]


def test_deleting_a_definition_stops_new_starts_only(h: Harness) -> None:
    h.put(journey())
    h.send("signed_up", "u1")
    assert h.runtime.definitions.delete_workflow("acme", "onboarding")
    assert h.send("signed_up", "u2").started == []
    assert len(h.send("activated", "u1").resumed) == 1
    assert h.context("onboarding", "u1").status == "SUCCEEDED"


@pytest.fixture
def clean_extractor() -> Iterator[None]:
    yield
    unregister_extractor()


def test_registered_callable_extractor(h: Harness, clean_extractor: None) -> None:
    h.put(journey())

    @register_extractor
    def from_custom(event: Any) -> ExtractedEvent:
        return ExtractedEvent(
            domain=event["tenant"],
            subject_id=event["user"],
            name=event["type"],
            data=event.get("body"),
            event_id=event["eid"],
        )

    router = Router(h.local.engine, h.runtime, sources=h.router.sources)
    outcome = router.process_event(
        {"source": "tests", "tenant": "acme", "user": "u7", "type": "signed_up", "eid": "c-1"}
    )
    assert outcome.status == "processed" and len(outcome.started) == 1 and outcome.event_id == "c-1"


def test_path_extractor_from_env(h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    h.put(journey())
    monkeypatch.setenv(
        EXTRACTOR_ENV,
        json.dumps(
            {
                "domain": {"const": "acme"},
                "subject": "$.detail.user.id",
                "name": "detail.kind",
                "data": "detail",
            }
        ),
    )
    router = Router(h.local.engine, h.runtime, sources=h.router.sources)
    outcome = router.process_event(
        {
            "id": "x-1",
            "source": "tests",
            "detail-type": "ignored",
            "detail": {"kind": "signed_up", "user": {"id": "u5"}},
        }
    )
    assert outcome.status == "processed" and outcome.subject_id == "u5" and len(outcome.started) == 1
    with pytest.raises(ValueError, match="unknown extractor field 'tenant'"):
        PathExtractor({"tenant": "detail.t"})
    monkeypatch.setenv(EXTRACTOR_ENV, "{not json")
    rejected = Router(h.local.engine, h.runtime).process_event(envelope("signed_up", "u1"))
    assert rejected.status == "rejected" and "STEPWELL_EVENT_EXTRACTOR is not JSON" in (rejected.reason or "")


def test_an_orphaned_context_stops_blocking_policy_single(h: Harness) -> None:
    h.put(journey())
    # A context item whose execution was never created (its start failed, the event went to the DLQ).
    orphan = ContextRecord(
        domain="acme",
        workflow_id="onboarding",
        subject_id="u1",
        instance_id="orphan",
        version=1,
        execution_id="acme#stepwell.definition#u1/orphan",
    )
    h.runtime.contexts.create_context(orphan)
    blocked = h.send("signed_up", "u1")
    assert blocked.started == [] and "already has running context 'orphan'" in blocked.skipped[0]
    h.local.clock.advance(ORPHAN_AFTER_SECONDS + 1)
    assert len(h.send("signed_up", "u1").started) == 1
    kept = h.runtime.contexts.get_context("acme", "onboarding", "u1", "orphan")
    assert kept is not None and kept.status == "FAILED" and kept.error is not None


def test_an_event_no_definition_waits_for_reads_no_subject_contexts(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    h.put(PINGS)
    reads: list[str] = []
    original = h.runtime.contexts.get_all_contexts_for_subject

    def counted(domain: str, subject_id: str, **options: Any) -> Any:
        reads.append(subject_id)
        return original(domain, subject_id, **options)

    monkeypatch.setattr(h.runtime.contexts, "get_all_contexts_for_subject", counted)
    assert len(h.send("start", "u1").started) == 1  # "start" starts contexts; none waits for it
    assert h.send("unrelated", "u1").started == []
    assert reads == []
    assert h.send("ping", "u1").resumed  # a name a context may wait for reads them
    assert reads == ["u1"]


def test_a_deleted_definition_s_running_context_is_still_resumed(h: Harness) -> None:
    h.put(PINGS)
    h.send("start", "u1")
    assert h.runtime.definitions.delete_workflow("acme", "pings")
    assert len(h.send("ping", "u1").resumed) == 1
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]


def filtered(workflow_id: str = "screened") -> dict[str, Any]:
    """Started by signed_up when the event's tags hold no "stop": a walk of the whole list."""
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "nodes": [
            {"id": "t", "type": "trigger", "event": "signed_up", "filter": '"stop" not in data.tags'},
            {"id": "w", "type": "wait", "duration": "1h"},
            {"id": "e", "type": "end"},
        ],
        "edges": [{"from": "t", "to": "w"}, {"from": "w", "to": "e"}],
    }


def test_a_filter_over_the_configured_expression_budget_is_refused_at_the_router(h: Harness) -> None:
    """The router meters a trigger's filter with the runtime's expression_cpu_seconds (the deployment's
    STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS), as runs are: not with the default 0.25 s."""
    h.put(filtered())
    tags = {"tags": [str(n) for n in range(1000)]}
    h.runtime.expression_cpu_seconds = 1e-9  # metered every 64 steps: the list walk is over it
    refused = h.send("signed_up", "u1", tags)
    assert refused.status == "processed" and refused.started == []
    assert len(refused.skipped) == 1
    [context] = h.contexts("u1")
    assert context.status == "FAILED" and context.error is not None
    assert context.error["ErrorType"] == "BudgetExceeded"
    assert context.error["ErrorMessage"] == (
        "node 't' (trigger): filter failed: the evaluation took more than its CPU budget of 1e-09 s per "
        "expression in expression '\"stop\" not in data.tags'"
    )
    assert context.error["ErrorMessage"] in refused.skipped[0]
    assert h.local.engine.list_executions(domain="acme", subject_id="u1").items == []
    # Within the budget (the default) the same filter holds and the context starts.
    h.runtime.expression_cpu_seconds = DEFAULT_EXPRESSION_CPU_SECONDS
    assert len(h.send("signed_up", "u2", tags).started) == 1
    assert h.context("screened", "u2").status == "RUNNING"
