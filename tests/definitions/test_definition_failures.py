"""A definition that fails (an expression, a stored document, any exception from a node) fails its own
context, recorded with the error; the event's other starts and resumes go on and nothing is retried."""

from __future__ import annotations

from typing import Any

import pytest
from adapters.deployment import Deployment
from adapters.driver import QueueDriver
from stepwell.client import StepwellClient
from stepwell.features.definitions import router as router_module
from stepwell.features.definitions.expressions import Expression, Meter
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.validation import parse_definition
from stepwell.wiring.entry import EntryRuntime

from .harness import Harness
from .test_nodes import graph
from .test_worker_path import bus_event
from .test_worker_path import stack as stack  # the worker-path fixture


def started_by(event: str, workflow_id: str, **trigger: Any) -> dict[str, Any]:
    return graph(
        [
            {"id": "t", "type": "trigger", "event": event, **trigger},
            {"id": "pause", "type": "wait", "duration": "1h"},
            {"id": "e", "type": "end"},
        ],
        [("t", "pause"), ("pause", "e")],
        workflow_id=workflow_id,
    )


def waiting_for(event: str, workflow_id: str) -> dict[str, Any]:
    return graph(
        [
            {"id": "t", "type": "trigger", "event": "signed_up"},
            {"id": "w", "type": "trigger_or_timeout", "event": event, "timeout": "1d", "output": "got"},
            {"id": "e", "type": "end"},
        ],
        [("t", "w"), ("w", "e", "event"), ("w", "e", "timeout")],
        workflow_id=workflow_id,
    )


def break_expression(monkeypatch: pytest.MonkeyPatch, text: str, error: Exception) -> None:
    """Evaluating the expression `text` raises `error` (a fault the language itself never raises)."""
    evaluate = Expression.evaluate

    def faulty(self: Expression, env: Any, meter: Meter | None = None) -> Any:
        if self.text == text:
            raise error
        return evaluate(self, env, meter)

    monkeypatch.setattr(Expression, "evaluate", faulty)


def test_a_failing_filter_fails_its_context_and_blocks_no_other_start_or_resume(harness: Harness) -> None:
    harness.put(waiting_for("paid", "billing"))
    harness.send("signed_up", "u1")
    harness.put(started_by("paid", "broken", filter="data.amount > 10"))
    harness.put(started_by("paid", "healthy"))

    outcome = harness.send("paid", "u1", {"amount": "lots"})

    assert outcome.status == "processed"
    broken = harness.context("broken", "u1")
    assert broken.status == "FAILED" and broken.error is not None
    assert broken.error["ErrorType"] == "ExpressionError"
    assert (
        "node 't' (trigger): filter failed: cannot compare string 'lots' > number 10"
        in (broken.error["ErrorMessage"])
    )
    assert harness.context("healthy", "u1").status == "RUNNING"
    assert harness.context("billing", "u1").data["got"] == {"amount": "lots"}
    assert len(outcome.started) == 1 and len(outcome.resumed) == 1
    # A redelivery of the event changes nothing.
    again = harness.router.process_event(
        {
            "version": "0",
            "id": outcome.event_id,
            "detail-type": "paid",
            "source": "tests",
            "detail": {"domain": "acme", "subjectId": "u1", "data": {"amount": "lots"}},
        }
    )
    assert again.status == "duplicate"
    assert len(harness.runtime.contexts.get_contexts("acme", "broken", "u1")) == 1


def test_any_exception_from_a_filter_fails_only_that_context(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    break_expression(monkeypatch, "data.boom", RuntimeError("a fault outside the expression language"))
    harness.put(started_by("paid", "broken", filter="data.boom"))
    harness.put(started_by("paid", "healthy", filter="data.amount > 1"))

    outcome = harness.send("paid", "u1", {"amount": 5})

    broken = harness.context("broken", "u1")
    assert broken.status == "FAILED" and broken.error is not None
    assert broken.error["ErrorType"] == "RuntimeError"
    assert "a fault outside the expression language" in broken.error["ErrorMessage"]
    assert len(outcome.started) == 1 and harness.context("healthy", "u1").status == "RUNNING"


def test_a_stored_definition_that_no_longer_parses_skips_only_itself(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed_old: list[int] = []

    def parse(document: Any) -> Any:
        if document.get("id") == "old":
            parsed_old.append(1)
            raise RecursionError("stored by a version that allowed it")
        return parse_definition(document)

    monkeypatch.setattr(router_module, "parse_definition", parse)
    harness.put(started_by("paid", "old"))
    harness.put(started_by("paid", "healthy"))

    outcome = harness.send("paid", "u1")
    again = harness.send("paid", "u2")

    for each in (outcome, again):
        assert any("old: stored definition is invalid: stored by a version" in s for s in each.skipped)
        assert len(each.started) == 1
    assert harness.context("healthy", "u1").status == "RUNNING"
    assert len(parsed_old) == 1, "a version that does not parse is parsed once, not once per event"


def test_any_exception_from_a_node_fails_that_context_with_the_error(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    break_expression(monkeypatch, "data.boom", MemoryError("out of memory in a condition"))
    harness.put(
        graph(
            [
                {"id": "t", "type": "trigger", "event": "paid"},
                {"id": "c", "type": "condition", "expression": "data.boom"},
                {"id": "e", "type": "end"},
            ],
            [("t", "c"), ("c", "e", "true"), ("c", "e", "false")],
            workflow_id="broken",
        )
    )
    harness.put(started_by("paid", "healthy"))

    harness.send("paid", "u1")
    harness.run_all()

    broken = harness.context("broken", "u1")
    assert broken.status == "FAILED" and harness.status(broken) == "FAILED"
    assert broken.error is not None and broken.error["ErrorType"] == "DefinitionRuntimeError"
    assert broken.error["ErrorMessage"] == "node 'c' (condition): MemoryError: out of memory in a condition"
    assert harness.context("healthy", "u1").status == "SUCCEEDED"


def test_a_redelivery_after_a_new_version_does_not_poison_the_event(harness: Harness) -> None:
    """The start is keyed by the event id: an execution that an earlier delivery started (with the
    version of then) is that context, whatever the definition became since."""
    harness.put(started_by("paid", "billing"))
    first = harness.send("paid", "u1", event_id="evt-paid-1")
    assert len(first.started) == 1
    harness.put(started_by("paid", "billing", filter="true"))  # version 2
    again = harness.send("paid", "u1", event_id="evt-paid-1")

    assert again.status == "duplicate" and again.started == []
    assert any("started by an earlier delivery" in reason for reason in again.skipped)
    assert harness.context("billing", "u1").version == 1


def test_on_the_worker_path_a_failing_definition_fails_no_message(
    stack: tuple[Deployment, EntryRuntime, QueueDriver, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the work queue and the entry on DynamoDB (moto): the message succeeds, the failing
    definition's context is FAILED in the table, the other definition's context runs."""
    deployment, _runtime, driver, _sent = stack
    service = DefinitionsService.for_client(StepwellClient(deployment.config, deployment.clients))
    service.put_definition("acme", started_by("paid", "broken", filter="data.boom"))
    service.put_definition("acme", started_by("paid", "healthy", filter="data.amount > 1"))
    break_expression(monkeypatch, "data.boom", RuntimeError("a fault outside the expression language"))

    bus_event(deployment, "paid", "acme", "u1", "evt-paid-1", {"amount": 5})
    driver.run_until_quiet(fire_schedules=False)

    assert driver.failed_message_ids == []
    (broken,) = service.list_contexts("acme", "u1", workflow_id="broken").items
    assert broken.status == "FAILED" and broken.error is not None
    assert "a fault outside the expression language" in broken.error["ErrorMessage"]
    (healthy,) = service.list_contexts("acme", "u1", workflow_id="healthy").items
    assert healthy.status == "RUNNING"


def test_a_store_failing_to_record_the_end_retries_the_run_and_never_fails_the_context(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness.put(started_by("paid", "billing"))
    started = harness.send("paid", "u1").started
    contexts = harness.runtime.contexts
    finish = contexts.finish
    failures = {"left": 1}

    def flaky_finish(*args: Any, **kwargs: Any) -> bool:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("throttled")
        return finish(*args, **kwargs)

    monkeypatch.setattr(contexts, "finish", flaky_finish)
    harness.advance(3600)  # the wait ends; recording the end fails once, and the run is retried
    harness.run_all()
    assert failures["left"] == 0
    assert harness.local.describe(started[0])["Status"] == "SUCCEEDED"
    assert harness.context("billing", "u1").status == "SUCCEEDED"
    history = [event["EventType"] for event in harness.local.history(started[0])]
    assert "ExecutionFailed" not in history and history[-1] == "ExecutionSucceeded"
