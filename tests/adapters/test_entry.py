"""The Lambda entry: the module-level handler built from the environment, bus events, stop, big payloads."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.aws.timers import schedule_prefix
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.features.definitions.runtime import configure as configure_definitions
from stepwell.model import HandOff, OutcomeAction
from stepwell.wiring import entry
from stepwell.wiring.entry import EntryRuntime
from stepwell.wiring.events import CALLBACK_EVENT_SOURCE, CALLBACK_FAILURE, CALLBACK_HEARTBEAT

from .deployment import Deployment
from .driver import QueueDriver, callback_id_of


@durable_execution
def long_sleeper(event: dict[str, Any], context: DurableContext) -> str:
    context.wait(Duration.from_seconds(2 * 86400), name="two-days")
    return "awake"


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: event, name="echo")


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return callback.result()


@pytest.fixture
def stack(deployment: Deployment) -> tuple[StepwellClient, QueueDriver]:
    registry = Registry()
    registry.register("long-sleeper", long_sleeper)
    registry.register("echo", echo)
    registry.register("approval", approval)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return client, QueueDriver(deployment, runtime, clock)


def test_module_handler_builds_from_the_environment_and_imports_workflow_modules(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    env = deployment.config.to_env()
    env["STEPWELL_WORKFLOW_MODULES"] = "adapters.sample_workflows"
    env["STEPWELL_EVENT_SOURCES"] = '{"app": ["acme"]}'  # the domain event below comes from "app"
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(entry, "_runtime", None)
    request.addfinalizer(lambda: configure_definitions(None))
    client = StepwellClient.from_env()
    execution_id = client.start_execution("sample-echo-length", {"text": "four"}, execution_name="env-run")
    messages = deployment.clients.sqs.receive_message(QueueUrl=deployment.config.work_queue_url)["Messages"]
    event = {
        "Records": [
            {"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"} for m in messages
        ]
        + [{"messageId": "junk-1", "body": "{}", "eventSource": "aws:sqs"}]
    }
    assert entry.handler(event, None) == {"batchItemFailures": [{"itemIdentifier": "junk-1"}]}
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == 4
    assert entry.handler({"kind": "reconcile"}, None)["action"] == "ran"

    # With a definitions table, domain events go to the definitions router (no definitions: nothing starts).
    domain_event = {
        "version": "0",
        "id": "evt-1",
        "detail-type": "user.activated",
        "source": "app",
        "detail": {"domain": "acme", "subjectId": "u1", "data": {}},
    }
    routed = entry.handler({"Records": [{"messageId": "m-1", "body": json.dumps(domain_event)}]}, None)
    assert routed == {"batchItemFailures": []}
    # Nothing started or resumed, then or now: a repeat changes nothing and is processed the same way.
    assert entry.handler(domain_event, None)["action"] == "processed"


def test_stop_deletes_pending_schedules_and_later_messages_do_nothing(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    execution_id = client.start_execution("long-sleeper", None, execution_name="sleepy")
    driver.run_until_quiet(fire_schedules=False)
    scheduler = deployment.clients.scheduler
    group = deployment.config.schedule_group_name

    def pending() -> list[str]:
        names = [item["Name"] for item in scheduler.list_schedules(GroupName=group)["Schedules"]]
        return [name for name in names if name.startswith(schedule_prefix(execution_id))]

    assert len(pending()) == 1
    assert client.stop_execution(execution_id) is True
    assert pending() == []
    driver.run_until_quiet()
    # A late wake-up (as if a schedule had already fired) changes nothing.
    deployment.clients.sqs.send_message(
        QueueUrl=deployment.config.work_queue_url,
        MessageBody=json.dumps({"kind": "invoke", "executionId": execution_id}),
    )
    driver.run_until_quiet()
    description = client.describe_execution(execution_id)
    assert description["Status"] == "STOPPED"
    types = [event["EventType"] for event in client.get_execution_history(execution_id)]
    assert types.count("ExecutionStopped") == 1 and "WaitSucceeded" not in types


def test_bus_events_callback_commands_and_rejected_domain_events(
    stack: tuple[StepwellClient, QueueDriver], caplog: pytest.LogCaptureFixture
) -> None:
    _, driver = stack
    runtime = driver.runtime
    caplog.set_level(logging.WARNING, logger="stepwell.wiring.entry")
    envelope = {
        "version": "0",
        "id": "e-1",
        "source": "shop",
        "detail-type": "OrderPlaced",
        "detail": {"id": 3},
    }
    result = runtime.handle_body(envelope)
    assert (result.kind, result.action) == ("event", "rejected")
    assert "rejected bus event e-1" in caplog.text and "OrderPlaced" in caplog.text

    command = {**envelope, "source": CALLBACK_EVENT_SOURCE}
    unknown = {**command, "detail-type": CALLBACK_HEARTBEAT, "detail": {"callbackId": "nobody-knows"}}
    assert runtime.handle_body(unknown).action == "rejected"

    records = [
        {
            "messageId": "no-id",
            "body": json.dumps({**command, "detail-type": CALLBACK_FAILURE, "detail": {}}),
        },
        {"messageId": "fine", "body": json.dumps(envelope)},
        {
            "messageId": "bad-error",
            "body": json.dumps(
                {**command, "detail-type": CALLBACK_FAILURE, "detail": {"callbackId": "x", "error": "boom"}}
            ),
        },
    ]
    records.append({"messageId": "bad-id", "body": json.dumps({"kind": "invoke", "executionId": "a/b"})})
    response = runtime.handle_event({"Records": records})
    assert response == {
        "batchItemFailures": [
            {"itemIdentifier": "no-id"},
            {"itemIdentifier": "bad-error"},
            {"itemIdentifier": "bad-id"},
        ]
    }


@pytest.mark.parametrize("source", ["acme.orders", "stepwell.definitions", "stepwell.client.evil"])
def test_a_callback_command_from_another_source_is_refused_and_changes_nothing(
    stack: tuple[StepwellClient, QueueDriver], caplog: pytest.LogCaptureFixture, source: str
) -> None:
    # docs/security.md reserves callback commands for stepwell.client: an event producer granted only its
    # own source (or a definition's put_event) must not complete, fail or heartbeat anyone's callback.
    client, driver = stack
    execution_id = client.start_execution("approval", None, execution_name=f"forged-{len(source)}")
    # Without firing schedules: the callback's one-hour timeout must not end the execution here.
    driver.run_until_quiet(fire_schedules=False)
    callback_id = callback_id_of(client, execution_id)
    history = client.get_execution_history(execution_id)
    caplog.set_level(logging.WARNING, logger="stepwell.wiring.entry")
    forged = {
        "version": "0",
        "id": "e-forged",
        "source": source,
        "detail-type": CALLBACK_FAILURE,
        "detail": {"callbackId": callback_id, "error": {"ErrorMessage": "forged"}},
    }

    result = driver.runtime.handle_body(forged)
    driver.run_until_quiet(fire_schedules=False)

    assert (result.kind, result.action) == ("event", "rejected")
    assert "rejected bus event e-forged" in caplog.text and repr(source) in caplog.text
    assert client.describe_execution(execution_id)["Status"] == "RUNNING"
    assert client.get_execution_history(execution_id) == history

    # The same command from stepwell.client applies.
    applied = driver.runtime.handle_body({**forged, "source": CALLBACK_EVENT_SOURCE})
    driver.run_until_quiet(fire_schedules=False)
    assert (applied.kind, applied.action) == ("callback", "delivered")
    assert client.describe_execution(execution_id)["Status"] == "FAILED"


def test_early_wake_is_rescheduled_not_run(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    now = driver.clock.now()
    execution_id = client.start_execution("echo", 1, execution_name="early")
    early = {"kind": "invoke", "executionId": execution_id, "dueAt": now + 7200}
    result = driver.runtime.handle_body(early)
    assert result.action == "rescheduled"
    schedules = deployment.clients.scheduler.list_schedules(GroupName=deployment.config.schedule_group_name)
    assert [item["Name"][: len(schedule_prefix(execution_id))] for item in schedules["Schedules"]] == [
        schedule_prefix(execution_id)
    ]


def test_large_input_and_result_travel_through_s3(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    big = "x" * (240 * 1024)  # over the inline limit (200 KiB), within the input limit (256 KiB)
    execution_id = client.start_execution("echo", big, execution_name="big")
    driver.run_until_quiet()
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"]) == big and json.loads(description["InputPayload"]) == big
    objects = deployment.clients.s3.list_objects_v2(Bucket=deployment.config.payload_bucket).get(
        "Contents", []
    )
    assert len(objects) >= 2


def test_busy_execution_is_retried_later_with_backoff(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    execution_id = client.start_execution("echo", 5, execution_name="busy")
    store = driver.runtime.engine.store
    assert store.acquire_lease(execution_id, "another-worker", driver.clock.now(), 600) is not None
    sent_params: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent_params.append(dict(params))

    deployment.clients.sqs.meta.events.register("provide-client-params.sqs.SendMessage", record)
    first = driver.runtime.handle_body({"kind": "invoke", "executionId": execution_id})
    second = driver.runtime.handle_body({"kind": "invoke", "executionId": execution_id, "busyRetries": 3})
    assert (first.action, second.action) == (OutcomeAction.BUSY, OutcomeAction.BUSY)
    sent = [(params["DelaySeconds"], json.loads(params["MessageBody"])) for params in sent_params]
    assert sent == [
        (5, {"kind": "invoke", "executionId": execution_id, "busyRetries": 1}),
        (40, {"kind": "invoke", "executionId": execution_id, "busyRetries": 4}),
    ]
    store.release_lease(execution_id, "another-worker", HandOff())
    finished = driver.runtime.handle_body({"kind": "invoke", "executionId": execution_id})
    assert finished.action == OutcomeAction.FINISHED


def test_callback_failure_through_the_bus_and_bad_actions(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    with pytest.raises(ValueError, match="callback action 'explode' is not one of success, fail, heartbeat"):
        client.publish_callback_event("explode", "cb")
    event_id = client.publish_callback_event("fail", "unknown-callback", error={"ErrorType": "Nope"})
    [message] = deployment.clients.sqs.receive_message(QueueUrl=deployment.config.work_queue_url)["Messages"]
    envelope = json.loads(message["Body"])
    assert envelope["id"] == event_id and envelope["detail-type"] == CALLBACK_FAILURE
    assert envelope["detail"] == {"callbackId": "unknown-callback", "error": {"ErrorType": "Nope"}}
    assert driver.runtime.handle_body(envelope).action == "rejected"


def test_a_long_wait_wakes_by_invoking_the_worker_alias_with_no_sqs_request(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment
) -> None:
    client, driver = stack
    execution_id = client.start_execution("long-sleeper", None, execution_name="direct")
    driver.run_until_quiet(fire_schedules=False)
    scheduler = deployment.clients.scheduler
    group = deployment.config.schedule_group_name
    [summary] = scheduler.list_schedules(GroupName=group)["Schedules"]
    target = scheduler.get_schedule(Name=summary["Name"], GroupName=group)["Target"]
    assert target["Arn"].endswith(f":function:{deployment.config.name}-worker:live")
    assert target["Arn"] == deployment.config.wake_function_arn
    assert target["RoleArn"] == deployment.config.scheduler_role_arn
    assert target["DeadLetterConfig"] == {"Arn": deployment.config.dlq_arn}
    assert json.loads(target["Input"])["executionId"] == execution_id
    sqs_calls: list[str] = []
    deployment.clients.sqs.meta.events.register(
        "before-call.sqs.*", lambda model, **_: sqs_calls.append(model.name)
    )
    driver.run_until_quiet()
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"
    assert [outcome.attempts for outcome in driver.direct_invocations] == [1]
    assert "SendMessage" not in sqs_calls


def test_a_direct_wake_that_keeps_failing_reaches_the_work_queue_and_runs_there(
    stack: tuple[StepwellClient, QueueDriver], deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, driver = stack
    execution_id = client.start_execution("long-sleeper", None, execution_name="direct-fails")
    driver.run_until_quiet(fire_schedules=False)
    real = driver.runtime.worker.handle_message
    failures = iter(range(3))

    def flaky(body: Any, context: Any = None) -> Any:
        if next(failures, None) is not None:
            raise RuntimeError("throttled beyond the retries")
        return real(body, context)

    monkeypatch.setattr(driver.runtime.worker, "handle_message", flaky)
    driver.run_until_quiet()
    [outcome] = driver.direct_invocations
    assert (outcome.attempts, outcome.sent_to_destination) == (3, True)
    assert outcome.error is not None and outcome.error["errorType"] == "RuntimeError"
    # Lambda's destination record went to the work queue, whose worker ran the payload it carries.
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"
    assert driver.failed_message_ids == []


@pytest.mark.parametrize(
    "payload",
    [
        "not an object",
        ["invoke"],
        {"requestContext": {}, "requestPayload": {"kind": "invoke"}},
    ],
    ids=["text", "list", "nested-record"],
)
def test_a_destination_record_without_an_engine_message_is_left_to_the_dlq(
    stack: tuple[StepwellClient, QueueDriver], payload: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _client, driver = stack
    record = {
        "version": "1.0",
        "requestContext": {"condition": "RetriesExhausted"},
        "requestPayload": payload,
        "responseContext": {"statusCode": 200},
        "responsePayload": None,
    }
    answer = driver.runtime.handle_event({"Records": [{"messageId": "wrapped", "body": json.dumps(record)}]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": "wrapped"}]}
    assert "not an engine message" in caplog.text and "InvalidMessage" in caplog.text


def test_an_invocation_that_aged_out_unrun_reaches_the_queue_as_a_record_and_runs(
    stack: tuple[StepwellClient, QueueDriver],
) -> None:
    """Lambda drops an event it could not run within its maximum age (throttled throughout) to the
    destination with no response: the record has no responseContext, and is still the payload's."""
    client, driver = stack
    execution_id = client.start_execution("echo", 7, execution_name="aged-out")
    record = {
        "version": "1.0",
        "timestamp": "2026-11-25T00:00:00.000Z",
        "requestContext": {"requestId": "r1", "condition": "EventAgeExceeded", "approximateInvokeCount": 0},
        "requestPayload": {"kind": "invoke", "executionId": execution_id},
    }
    answer = driver.runtime.handle_event({"Records": [{"messageId": "aged", "body": json.dumps(record)}]})
    assert answer == {"batchItemFailures": []}
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == 7
