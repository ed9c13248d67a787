"""A definition's `flowControl`: validation, its resolution into the engine's flow limits, and contexts
held, delayed or refused by it on the local backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from stepwell.core.flow_limits import MAX_CONCURRENCY, MAX_RATE, MAX_RATE_PERIOD_SECONDS
from stepwell.errors import InvalidArgument
from stepwell.features.definitions import SCHEMA_PATH
from stepwell.features.definitions.actions import ActionContext
from stepwell.features.definitions.interpreter import definition_flow
from stepwell.features.definitions.validation import parse_definition, validate_definition
from stepwell.model import FlowLimit

from .harness import DOMAIN, Harness


def limited(workflow_id: str = "orders", **flow_control: Any) -> dict[str, Any]:
    """trigger `order.placed` -> action `work` -> wait for `order.done` (or a day) -> end."""
    return {
        "schemaVersion": 1,
        "id": workflow_id,
        "policy": {"concurrency": "multiple"},
        "flowControl": flow_control,
        "nodes": [
            {"id": "t", "type": "trigger", "event": "order.placed"},
            {"id": "work", "type": "action", "action": "work", "input": {"subject": "subject"}},
            {"id": "w", "type": "trigger_or_timeout", "event": "order.done", "timeout": "1d"},
            {"id": "e", "type": "end"},
        ],
        "edges": [
            {"from": "t", "to": "work"},
            {"from": "work", "to": "w"},
            {"from": "w", "to": "e", "branch": "event"},
            {"from": "w", "to": "e", "branch": "timeout"},
        ],
    }


def start_input(definition: dict[str, Any], subject: str = "u1", data: Any = None) -> dict[str, Any]:
    """The interpreter's input as the router writes it."""
    return {
        "domain": DOMAIN,
        "workflowId": definition["id"],
        "subjectId": subject,
        "instanceId": "i-1",
        "version": 1,
        "definition": definition,
        "trigger": "t",
        "event": {"id": "e-1", "name": "order.placed", "data": data},
    }


# --- validation -----------------------------------------------------------------------------------


def test_a_flow_control_block_parses_into_the_engines_declarations() -> None:
    definition = parse_definition(
        limited(
            concurrency={"limit": 2, "key": "event.data.tenant"},
            rate={"limit": 5, "period": "PT1M", "key": "subject"},
        )
    )
    assert definition.flow_concurrency is not None and definition.flow_concurrency.limit == 2
    assert definition.flow_rate is not None and (definition.flow_rate.limit, definition.flow_rate.period) == (
        5,
        60,
    )
    without = parse_definition(limited())
    assert (without.flow_concurrency, without.flow_rate) == (None, None)
    for period, seconds in ((30, 30), ("15m", 900), ("1h", 3600), ("P7D", MAX_RATE_PERIOD_SECONDS)):
        parsed = parse_definition(limited(rate={"limit": 1, "period": period})).flow_rate
        assert parsed is not None and parsed.period == seconds


@pytest.mark.parametrize(
    ("flow_control", "message"),
    [
        (
            {"concurrency": {"limit": 0}},
            f"flowControl.concurrency.limit: 0 is not allowed: a whole number from 1 to {MAX_CONCURRENCY}",
        ),
        (
            {"concurrency": {"limit": MAX_CONCURRENCY + 1}},
            f"flowControl.concurrency.limit: 101 is not allowed: a whole number from 1 to {MAX_CONCURRENCY}",
        ),
        ({"concurrency": {"limit": 2.5}}, "flowControl.concurrency.limit: 2.5 is not allowed"),
        ({"concurrency": {"limit": "3"}}, "flowControl.concurrency.limit: '3' is not allowed"),
        ({"concurrency": {"limit": True}}, "flowControl.concurrency.limit: True is not allowed"),
        (
            {"rate": {"limit": MAX_RATE + 1, "period": 60}},
            f"flowControl.rate.limit: 1001 is not allowed: a whole number from 1 to {MAX_RATE}",
        ),
        ({"concurrency": {}}, "flowControl.concurrency: missing 'limit' (a whole number from 1 to 100"),
        ({"rate": {"limit": 1}}, "flowControl.rate: missing 'period' (whole seconds from 1 to 604,800"),
        (
            {"concurrency": {"limit": 1, "keys": "subject"}},
            "flowControl.concurrency: unknown keys ['keys'] (allowed: ['key', 'limit'])",
        ),
        ({"burst": {"limit": 1}}, "flowControl: unknown keys ['burst'] (allowed: ['concurrency', 'rate'])"),
        ({"rate": {"limit": 1, "period": "1.5s"}}, "flowControl.rate.period: '1.5s' is not allowed: whole"),
        ({"rate": {"limit": 1, "period": "P8D"}}, "flowControl.rate.period: 'P8D' is not allowed: whole"),
        ({"rate": {"limit": 1, "period": 0}}, "flowControl.rate.period: 0 is not allowed"),
        ({"rate": {"limit": 1, "period": "soon"}}, "flowControl.rate.period: 'soon' is not allowed"),
        (
            {"concurrency": {"limit": 1, "key": "data.tenant"}},
            "flowControl.concurrency.key: bad expression: unknown name 'data' (allowed roots: event, "
            "subject, domain)",
        ),
        (
            {"rate": {"limit": 1, "period": 60, "key": "event.data.("}},
            "flowControl.rate.key: bad expression:",
        ),
        ({"concurrency": {"limit": 1, "key": 7}}, "flowControl.concurrency.key: bad expression:"),
        ({"concurrency": 3}, "flowControl.concurrency must be an object with ['limit', 'key'], got 3"),
    ],
)
def test_a_bad_flow_control_block_is_refused_naming_the_field(
    flow_control: dict[str, Any], message: str
) -> None:
    errors = validate_definition(limited(**flow_control))
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_a_flow_control_that_is_not_an_object_is_refused() -> None:
    document = limited()
    document["flowControl"] = [1]
    assert validate_definition(document) == [
        "flowControl must be an object with 'concurrency' and/or 'rate', got [1]"
    ]


def test_the_published_schema_states_the_engines_limits() -> None:
    schema = json.loads(Path(SCHEMA_PATH).read_text())
    flow = schema["properties"]["flowControl"]["properties"]
    assert flow["concurrency"]["properties"]["limit"]["maximum"] == MAX_CONCURRENCY
    assert flow["rate"]["properties"]["limit"]["maximum"] == MAX_RATE
    assert flow["rate"]["required"] == ["limit", "period"]
    assert str(MAX_RATE_PERIOD_SECONDS) in flow["rate"]["properties"]["period"]["description"]


# --- resolution -----------------------------------------------------------------------------------


def test_limits_are_counted_per_domain_definition_and_key_value() -> None:
    definition = limited(
        concurrency={"limit": 1, "key": "event.data.tenant"}, rate={"limit": 3, "period": "1m"}
    )
    assert definition_flow(DOMAIN, start_input(definition, data={"tenant": "t-7"})) == (
        FlowLimit(kind="concurrency", domain=DOMAIN, workflow="orders", key="t-7", limit=1),
        FlowLimit(kind="rate", domain=DOMAIN, workflow="orders", key="", limit=3, period=60),
    )
    by_subject = limited(concurrency={"limit": 4, "key": "subject"})
    assert definition_flow("other", start_input(by_subject, subject="u-9")) == (
        FlowLimit(kind="concurrency", domain="other", workflow="orders", key="u-9", limit=4),
    )
    by_number = limited(rate={"limit": 2, "period": 10, "key": "event.data.shop"})
    assert definition_flow(DOMAIN, start_input(by_number, data={"shop": 42}))[0].key == "42"
    assert definition_flow(DOMAIN, start_input(limited())) == ()
    assert definition_flow(DOMAIN, {"not": "a context's start"}) == ()


@pytest.mark.parametrize(
    ("data", "found"),
    [({}, "gave None"), ({"tenant": ""}, "gave ''"), ({"tenant": {"id": 1}}, "gave {'id': 1}")],
)
def test_a_key_with_no_usable_value_is_an_invalid_argument_naming_the_key(data: Any, found: str) -> None:
    definition = limited(concurrency={"limit": 1, "key": "event.data.tenant"})
    with pytest.raises(InvalidArgument) as raised:
        definition_flow(DOMAIN, start_input(definition, data=data))
    assert str(raised.value).startswith(
        f"the concurrency limit of 'orders' key 'event.data.tenant' {found}: a key's value is a string of "
        "1-256 printable characters or an integer"
    )


def test_a_key_that_fails_to_evaluate_names_the_key_and_the_reason() -> None:
    definition = limited(rate={"limit": 1, "period": 60, "key": "event.data.n + 1"})
    with pytest.raises(InvalidArgument) as raised:
        definition_flow(DOMAIN, start_input(definition, data={"n": "x"}))
    assert "the rate limit of 'orders' key 'event.data.n + 1' failed: ExpressionError:" in str(raised.value)


def test_a_start_input_with_an_invalid_flow_control_is_refused() -> None:
    definition = limited(concurrency={"limit": 0})
    with pytest.raises(InvalidArgument) as raised:
        definition_flow(DOMAIN, start_input(definition))
    assert "flowControl.concurrency.limit: 0 is not allowed" in str(raised.value)


# --- contexts on the local backend -----------------------------------------------------------------


def started_at(harness: Harness) -> list[tuple[str, float]]:
    """Registers the action `work`, which records (subject, seconds since the harness started)."""
    calls: list[tuple[str, float]] = []

    def work(inputs: dict[str, Any], _: ActionContext) -> None:
        calls.append((inputs["subject"], harness.elapsed()))

    harness.actions.register("work", work)
    return calls


@pytest.mark.parametrize(
    ("key", "starts", "key_values"),
    [
        ("subject", [("u1", {}), ("u1", {}), ("u2", {})], ["u1", "u1", "u2"]),
        (
            "event.data.tenant",
            [("u1", {"tenant": "t1"}), ("u2", {"tenant": "t1"}), ("u3", {"tenant": 7})],
            ["t1", "t1", "7"],
        ),
    ],
)
def test_concurrency_one_holds_a_second_context_of_the_key_until_the_first_ends(
    harness: Harness, key: str, starts: list[tuple[str, dict[str, Any]]], key_values: list[str]
) -> None:
    calls = started_at(harness)
    harness.put(limited(concurrency={"limit": 1, "key": key}))
    outcomes = [harness.send("order.placed", subject, data) for subject, data in starts]
    first, second, other = (outcome.started[0] for outcome in outcomes)

    # The first and the other key's context run; the second waits, its execution RUNNING and never run.
    assert [subject for subject, _ in calls] == [starts[0][0], starts[2][0]]
    assert harness.local.describe(second)["Status"] == "RUNNING"
    assert harness.local.engine.get_execution_history(second) == []
    status = harness.local.engine.flow_status("orders", key_values[0], DOMAIN)
    assert status["concurrency"] == {
        "limit": 1,
        "running": 1,
        "waiting": 1,
        "holders": [first],
        "next": [second],
    }
    assert harness.local.engine.flow_status("orders", key_values[2], DOMAIN)["concurrency"]["holders"] == [
        other
    ]

    harness.send("order.done", starts[0][0])  # the first ends: the second starts
    assert harness.local.describe(first)["Status"] == "SUCCEEDED"
    assert [subject for subject, _ in calls] == [starts[0][0], starts[2][0], starts[1][0]]
    after = harness.local.engine.flow_status("orders", key_values[0], DOMAIN)["concurrency"]
    assert (after["running"], after["waiting"], after["holders"]) == (1, 0, [second])


def test_a_rate_limited_definition_delays_starts_in_order(harness: Harness) -> None:
    calls = started_at(harness)
    harness.put(limited(rate={"limit": 2, "period": "1m"}))
    for subject in ("u1", "u2", "u3", "u4"):
        harness.send("order.placed", subject)
    assert [subject for subject, _ in calls] == ["u1", "u2"]
    rate = harness.local.engine.flow_status("orders", "", DOMAIN)["rate"]
    assert (rate["limit"], rate["period"], rate["recentStarts"], rate["delayed"]) == (2, 60, 2, 2)
    assert 120 <= rate["nextStartAt"] - harness.start_time < 121  # after the two delayed ones

    harness.advance(59)
    assert len(calls) == 2
    harness.advance(2)
    assert [subject for subject, _ in calls] == ["u1", "u2", "u3", "u4"]
    assert all(60 <= elapsed < 61 for _, elapsed in calls[2:])
    rate = harness.local.engine.flow_status("orders", "", DOMAIN)["rate"]
    assert (rate["recentStarts"], rate["delayed"]) == (2, 0)


def test_a_key_with_no_usable_value_fails_its_context_and_blocks_no_other_start(harness: Harness) -> None:
    calls = started_at(harness)
    harness.put(limited(concurrency={"limit": 1, "key": "event.data.tenant"}))
    harness.put(limited("audit"))
    outcome = harness.send("order.placed", "u1", {"region": "eu"})

    failed = harness.context("orders", "u1")
    assert failed.status == "FAILED" and failed.error is not None
    assert failed.error["ErrorType"] == "InvalidArgument"
    assert failed.error["ErrorMessage"].startswith(
        "node 't' (trigger): the concurrency limit of 'orders' key 'event.data.tenant' gave None"
    )
    assert any("orders: context" in skipped and "gave None" in skipped for skipped in outcome.skipped)
    # No execution of it exists; the other definition started and ran.
    executions = harness.local.engine.list_executions(domain=DOMAIN, subject_id="u1").items
    assert [record.execution_id for record in executions] == outcome.started
    assert harness.context("audit", "u1").status == "RUNNING" and calls == [("u1", calls[0][1])]


def test_a_client_resolves_a_contexts_limits_when_it_creates_it() -> None:
    """A client (no workflow code) starts contexts through `process_event`: the interpreter's resolver is
    registered there too, so the start is refused or limited at creation as in the worker."""
    from stepwell.features.definitions.interpreter import INTERPRETER_NAME
    from stepwell.testing.local import LocalStepwell
    from stepwell.wiring.build import AnyWorkflowRegistry

    local = LocalStepwell(registry=AnyWorkflowRegistry())
    definition = limited(concurrency={"limit": 3, "key": "event.data.tenant"})
    with pytest.raises(InvalidArgument, match=r"key 'event\.data\.tenant' gave None"):
        local.engine.start_execution(INTERPRETER_NAME, start_input(definition), domain=DOMAIN)
    assert local.engine.list_executions(domain=DOMAIN).items == []
    started = local.engine.start_execution(
        INTERPRETER_NAME, start_input(definition, data={"tenant": "t1"}), domain=DOMAIN
    )
    record = local.engine.store.get_execution(started)
    assert record is not None and record.flow == (
        FlowLimit(kind="concurrency", domain=DOMAIN, workflow="orders", key="t1", limit=3),
    )
