"""The examples in examples/definitions on the local backend: the onboarding journey for several users
with different event timings (definition stores in memory and on DynamoDB via moto), and the order DAG."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stepwell.features.definitions.actions import ActionContext
from stepwell.features.definitions.store import (
    DynamoDbContextStore,
    DynamoDbDefinitionStore,
    DynamoDbEventLog,
)
from stepwell.features.definitions.validation import parse_definition

from .harness import Harness, envelope
from .test_store import REGION, SUBJECT_INDEX, create_tables

EXAMPLES = Path(__file__).parents[2] / "examples" / "definitions"
HOUR, DAY = 3600, 86400


def load_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"stepwell_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def document(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES / name).read_text())
    return loaded


@pytest.fixture(params=["memory", "dynamodb"])
def onboarding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    harness = Harness()
    actions = load_module("onboarding_actions")
    emails: list[tuple[str, str]] = []

    def send_email(inputs: dict[str, Any], context: ActionContext) -> Any:
        result = actions.send_email(inputs, context)
        emails.append((context.subject_id, inputs["template"]))
        return result

    harness.actions.register("onboarding.send_email", send_email)
    harness.emails = emails  # type: ignore[attr-defined]
    if request.param == "memory":
        harness.put(document("onboarding.json"))
        yield harness
        return
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        db = boto3.client("dynamodb", region_name=REGION)
        create_tables(db)
        clock = harness.local.clock
        harness.runtime.definitions = DynamoDbDefinitionStore(
            db, "sw-definitions", now_ms=lambda: int(clock.now() * 1000)
        )
        harness.runtime.contexts = DynamoDbContextStore(db, "sw-executions", SUBJECT_INDEX, now=clock.now)
        harness.runtime.events = DynamoDbEventLog(db, "sw-coordination")
        harness.put(document("onboarding.json"))
        yield harness


def test_the_example_definitions_validate_with_their_actions() -> None:
    onboarding_actions = load_module("onboarding_actions")
    orders_actions = load_module("orders_actions")
    from stepwell.features.definitions.actions import ActionRegistry

    registry = ActionRegistry()
    onboarding_actions.register(registry)
    orders_actions.register(registry)
    parse_definition(document("onboarding.json"), registry.names())
    parse_definition(document("orders.json"), registry.names())


def test_onboarding_journey_for_several_users(onboarding: Harness) -> None:
    h = onboarding
    users = {"alice": 2 * HOUR, "bob": 2 * DAY, "carol": None, "dave": 3 * DAY + HOUR, "erin": DAY - 60}
    for user in users:
        outcome = h.send("user.signed_up", user, {"email": f"{user}@example.com", "name": user.title()})
        assert len(outcome.started) == 1
    # Without an email the trigger's filter does not match.
    assert h.send("user.signed_up", "nomail", {"name": "x"}).started == []
    resumed: dict[str, list[str]] = {}
    for at, user in sorted((at, user) for user, at in users.items() if at is not None):
        h.advance(at - h.elapsed())
        resumed[user] = h.send("user.activated", user).resumed
    h.advance(5 * DAY - h.elapsed())
    emails: list[tuple[str, str]] = h.emails  # type: ignore[attr-defined]
    assert sorted(emails) == [
        ("bob", "tips"),
        ("carol", "reminder"),
        ("carol", "tips"),
        ("dave", "reminder"),
        ("dave", "tips"),
    ]
    assert {user: len(ids) for user, ids in resumed.items()} == {"alice": 1, "bob": 1, "dave": 0, "erin": 1}
    for user in users:
        context = h.context("onboarding", user)
        assert context.status == "SUCCEEDED" and h.status(context) == "SUCCEEDED" and context.waiting == {}
    alice = h.context("onboarding", "alice").data
    assert "activation" in alice and alice["activation"] is None and "tips" not in alice
    assert "reminder" in h.context("onboarding", "carol").data
    # The timeline of a context is the engine's history of its execution.
    history = h.local.history(h.context("onboarding", "carol").execution_id)
    assert [e["EventType"] for e in history].count("CallbackTimedOut") == 2


def test_order_dag_fans_out_and_joins(harness: Harness) -> None:
    orders_actions = load_module("orders_actions")
    orders_actions.register(harness.actions)
    harness.put(document("orders.json"))
    harness.send("order.paid", "o-1", {"amount": 40, "address": "1 Main St"})
    harness.send("order.paid", "o-2", {"amount": 2500, "address": "2 High St"})
    harness.advance(DAY)
    assert len(harness.send("order.shipped", "o-1").resumed) == 1
    harness.advance(6 * DAY)
    calls = [(name, inputs["order"]) for name, inputs in orders_actions.LOG]
    assert sorted(c for c in calls if c[1] == "o-1") == [
        ("create_invoice", "o-1"),
        ("notify_customer", "o-1"),
        ("request_shipment", "o-1"),
    ]
    assert ("escalate", "o-2") in calls and ("notify_customer", "o-2") in calls
    vip = [
        inputs
        for name, inputs in orders_actions.LOG
        if name == "notify_customer" and inputs["order"] == "o-2"
    ]
    assert vip == [{"order": "o-2", "template": "vip-thanks"}]
    first = harness.context("order-fulfilment", "o-1")
    assert first.status == "SUCCEEDED"
    assert first.data["invoice"]["amount"] == 40 and first.data["shipment"]["request"].startswith("SHP-")
    assert "shipped" in first.data


def test_bad_order_amount_fails_that_context_only(harness: Harness) -> None:
    orders_actions = load_module("orders_actions")
    orders_actions.register(harness.actions)
    harness.put(document("orders.json"))
    harness.send("order.paid", "bad", {"amount": -1})
    harness.send("order.paid", "good", {"amount": 10})
    harness.send("order.shipped", "good")
    assert harness.context("order-fulfilment", "bad").status == "FAILED"
    assert harness.context("order-fulfilment", "good").status == "SUCCEEDED"


def test_an_event_whose_id_or_name_no_store_takes_is_rejected_naming_it(onboarding: Harness) -> None:
    """JSON's "\\ud800" is a lone surrogate, which UTF-8 cannot encode: on DynamoDB it made the event fail
    (and go to the DLQ) instead of being rejected with the reason."""
    bad_id = onboarding.router.process_event(
        envelope("user.signed_up", "u1", {"email": "a@x.io"}, event_id="\ud800x")
    )
    bad_name = onboarding.router.process_event(envelope("user.\udfff", "u1", {"email": "a@x.io"}))
    assert (bad_id.status, bad_name.status) == ("rejected", "rejected")
    assert (
        bad_id.reason
        == "extractor failed: the event's id holds a lone surrogate at character 0; it must be UTF-8 text"
    )
    assert bad_name.reason == (
        "extractor failed: the event's name holds a lone surrogate at character 5; it must be UTF-8 text"
    )
    rejected = {entry["eventId"]: entry["reason"] for entry in onboarding.runtime.events.list_rejected()}
    assert rejected[bad_id.event_id] == bad_id.reason and "\ud800" not in bad_id.event_id
    assert onboarding.runtime.contexts.get_contexts("acme", "onboarding", "u1") == []
