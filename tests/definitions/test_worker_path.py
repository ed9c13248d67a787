"""The worker path on the AWS adapters (moto): bus envelope -> work queue -> worker entry -> router ->
interpreter executions on the DynamoDB store, timers through EventBridge Scheduler, on a virtual clock.

The entry is wired as the deployed worker's (`stepwell.wiring.entry.load_runtime`): bus events that are not
callback commands go to the definitions Router built by `install`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from adapters.deployment import Deployment, create_deployment
from adapters.driver import QueueDriver
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.features.definitions.actions import ActionContext, default_actions
from stepwell.features.definitions.runtime import configure
from stepwell.features.definitions.service import DefinitionsService, install
from stepwell.wiring.entry import EntryRuntime

from .test_examples import EXAMPLES, document

REGION = "us-east-1"
DAY = 86400


@pytest.fixture
def stack(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[Deployment, EntryRuntime, QueueDriver, list[Any]]]:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    sent: list[Any] = []

    def send_email(inputs: dict[str, Any], context: ActionContext) -> Any:
        sent.append((context.domain, context.subject_id, inputs["template"]))
        return {"ok": True}

    previous = (
        default_actions.get("onboarding.send_email") if "onboarding.send_email" in default_actions else None
    )
    default_actions.register("onboarding.send_email", send_email)
    with mock_aws():
        # The bus events' source "app" speaks for the two tenants of these tests.
        config = dataclasses.replace(create_deployment(), event_sources={"app": ["acme", "globex"]})
        deployment = Deployment(config=config, clients=AwsClients(region=REGION))
        clock = VirtualClock()
        registry = Registry()
        base = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
        router = install(base.engine, deployment.config, deployment.clients, registry=registry)
        runtime = EntryRuntime(base.engine, base.reconciler, event_router=router)
        try:
            yield deployment, runtime, QueueDriver(deployment, runtime, clock), sent
        finally:
            configure(None)
            if previous is not None:
                default_actions.register("onboarding.send_email", previous)


def bus_event(
    deployment: Deployment, name: str, domain: str, subject: str, event_id: str, data: Any = None
) -> None:
    """What the module's bus rule delivers to the work queue."""
    body = {
        "version": "0",
        "id": event_id,
        "detail-type": name,
        "source": "app",
        "account": "123456789012",
        "time": "2026-01-01T00:00:00Z",
        "region": REGION,
        "resources": [],
        "detail": {"domain": domain, "subjectId": subject, "data": data or {}},
    }
    deployment.clients.sqs.send_message(
        QueueUrl=deployment.config.work_queue_url, MessageBody=json.dumps(body)
    )


def test_events_through_the_queue_start_and_resume_contexts(
    stack: tuple[Deployment, EntryRuntime, QueueDriver, list[Any]],
) -> None:
    deployment, _runtime, driver, sent = stack
    client = StepwellClient(deployment.config, deployment.clients)
    service = DefinitionsService.for_client(client)
    assert service.put_definition("acme", document("onboarding.json")).version == 1
    assert service.put_definition("globex", document("onboarding.json")).version == 1
    for tenant in ("acme", "globex"):
        bus_event(deployment, "user.signed_up", tenant, "u1", f"{tenant}-signup", {"email": "u1@example.com"})
    # A redelivered event (same id) starts nothing twice.
    bus_event(deployment, "user.signed_up", "acme", "u1", "acme-signup", {"email": "u1@example.com"})
    bus_event(deployment, "user.signed_up", "acme", "u2", "acme-signup-2", {"email": "u2@example.com"})
    driver.run_until_quiet(fire_schedules=False)
    assert len(service.list_contexts("acme", "u1").items) == 1
    assert len(service.list_contexts("globex", "u1").items) == 1
    # The definition changes while contexts of version 1 run.
    changed = document("onboarding.json")
    changed["nodes"][0]["event"] = "user.registered"
    assert service.put_definition("acme", changed).version == 2
    bus_event(deployment, "user.activated", "acme", "u1", "acme-activated")
    driver.run_until_quiet(fire_schedules=False)
    acme = service.list_contexts("acme", "u1").items[0]
    assert acme.status == "SUCCEEDED" and acme.version == 1
    assert service.list_contexts("globex", "u1").items[0].status == "RUNNING"
    driver.run_until_quiet()  # fires the timers: one day, then two more
    assert sorted(sent) == [
        ("acme", "u2", "reminder"),
        ("acme", "u2", "tips"),
        ("globex", "u1", "reminder"),
        ("globex", "u1", "tips"),
    ]
    shown = service.show_context(
        "globex", "onboarding", "u1", service.list_contexts("globex", "u1").items[0].instance_id
    )
    assert shown["context"]["status"] == "SUCCEEDED" and "CallbackTimedOut" in shown["timeline"]
    # Version 2 starts on the new event name only.
    bus_event(deployment, "user.signed_up", "acme", "u3", "acme-signup-3", {"email": "u3@example.com"})
    bus_event(deployment, "user.registered", "acme", "u4", "acme-reg-4", {"email": "u4@example.com"})
    bus_event(deployment, "user.signed_up", "acme", "a#b", "bad-subject")
    driver.run_until_quiet(fire_schedules=False)
    assert service.list_contexts("acme", "u3").items == []
    assert [c.version for c in service.list_contexts("acme", "u4").items] == [2]
    assert [r["eventId"] for r in service.rejected_events()] == ["bad-subject"]
    assert driver.failed_message_ids == []
    assert json.loads((EXAMPLES / "onboarding.json").read_text())["id"] == "onboarding"


def test_client_process_event_starts_once_and_reports_rejections(
    stack: tuple[Deployment, EntryRuntime, QueueDriver, list[Any]],
) -> None:
    deployment, _runtime, _driver, _sent = stack
    client = StepwellClient(deployment.config, deployment.clients)
    client.definitions().put_definition("acme", document("onboarding.json"))
    envelope = {
        "id": "evt-signup-1",
        "detail-type": "user.signed_up",
        "source": "app",
        "detail": {"domain": "acme", "subjectId": "u9", "data": {"email": "u9@example.com"}},
    }
    first = client.process_event(envelope, "acme")
    assert first["status"] == "processed" and len(first["started"]) == 1
    again = client.process_event(envelope, "acme")
    assert again["started"] == [] and again["status"] in {"processed", "duplicate"}
    assert len(client.definitions().list_contexts("acme", "u9").items) == 1
    rejected = client.process_event(
        {"id": "evt-no-subject", "detail-type": "user.signed_up", "detail": {}}, "acme"
    )
    assert rejected["status"] == "rejected" and rejected["reason"]


def test_a_long_context_continues_in_new_executions_on_the_worker_path(
    stack: tuple[Deployment, EntryRuntime, QueueDriver, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the DynamoDB stores, each bus event resumes the listener: past the bound it hands off (the
    context item names the new execution, conditionally) and the next events reach the new execution."""
    from stepwell.features.definitions.continuation import CONTINUE_AFTER_VISITS, chain_ids

    from .test_continuation import PINGS

    deployment, _runtime, driver, _sent = stack
    got: list[Any] = []
    monkeypatch.setitem(default_actions._actions, "got", lambda inputs, context: got.append(inputs["n"]))
    client = StepwellClient(deployment.config, deployment.clients)
    service = DefinitionsService.for_client(client)
    service.put_definition("acme", PINGS)
    bus_event(deployment, "start", "acme", "u1", "start-1")
    driver.run_until_quiet(fire_schedules=False)
    pings = CONTINUE_AFTER_VISITS // 3 + 8  # three visits a ping: one hand-off on the way
    for n in range(pings):
        bus_event(deployment, "ping", "acme", "u1", f"ping-{n}", {"n": n})
        driver.run_until_quiet(fire_schedules=False)
    (context,) = service.list_contexts("acme", "u1").items
    assert context.status == "RUNNING" and context.execution_id.endswith(".c1")
    assert got == list(range(pings))
    bus_event(deployment, "ping", "acme", "u1", "ping-stop", {"n": -1})
    driver.run_until_quiet(fire_schedules=False)
    (context,) = service.list_contexts("acme", "u1").items
    assert context.status == "SUCCEEDED"
    shown = service.show_context("acme", "listener", "u1", context.instance_id)
    assert shown["executions"] == chain_ids(context) and len(shown["executions"]) == 2
    assert driver.failed_message_ids == []
