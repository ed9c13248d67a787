"""A worker that dies mid-invocation (after a checkpoint, still holding the lease) never answers its SQS
message: SQS delivers it again, the next worker takes the expired lease over, the execution resumes and
every step's result is recorded once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

RUNS = {"first": 0, "second": 0}
DIE_IN_SECOND_STEP = [True]


def _first(_: Any) -> str:
    RUNS["first"] += 1
    return "one"


def _second(_: Any) -> str:
    RUNS["second"] += 1
    if DIE_IN_SECOND_STEP[0]:
        DIE_IN_SECOND_STEP[0] = False
        # Stands for the Lambda process being killed: the one exception the worker lets through.
        raise KeyboardInterrupt
    return "two"


@durable_execution
def fragile(event: Any, context: DurableContext) -> str:
    return context.step(_first, name="first") + "+" + context.step(_second, name="second")


def test_execution_resumes_after_its_worker_died(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = Registry()
    registry.register("fragile", fragile)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)
    store = runtime.engine.store
    execution_id = client.start_execution("fragile", None, execution_name="fragile-1")

    # The process dies: the lease is never released and the message is never answered.
    original_release = store.release_lease
    monkeypatch.setattr(store, "release_lease", lambda *args, **kwargs: None)
    sqs = deployment.clients.sqs
    [message] = sqs.receive_message(QueueUrl=deployment.config.work_queue_url)["Messages"]
    with pytest.raises(KeyboardInterrupt):
        runtime.handle_event({"Records": [{"messageId": message["MessageId"], "body": message["Body"]}]})
    monkeypatch.setattr(store, "release_lease", original_release)
    assert RUNS == {"first": 1, "second": 1}

    # Its visibility timeout runs out (by then the dead worker's lease has too): SQS delivers the
    # message again and the next worker takes the lease over.
    clock.advance(runtime.engine.lease_seconds + 1)
    sqs.change_message_visibility(
        QueueUrl=deployment.config.work_queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    driver.run_until_quiet()

    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == "one+two"
    assert RUNS == {"first": 1, "second": 2}
    history = client.get_execution_history(execution_id)
    succeeded = [event.get("Name") for event in history if event["EventType"] == "StepSucceeded"]
    assert succeeded == ["first", "second"]


def test_a_redelivered_message_waits_while_the_lease_is_held(deployment: Deployment) -> None:
    """SQS may deliver the message again while its first worker still runs (or before a dead worker's
    lease ran out): the worker finds the execution busy and backs off instead of running it twice."""
    registry = Registry()
    registry.register("fragile", fragile)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    execution_id = client.start_execution("fragile", None, execution_name="fragile-2")
    store = runtime.engine.store
    assert store.acquire_lease(execution_id, "the first worker", clock.now(), 600) is not None
    sqs = deployment.clients.sqs
    [message] = sqs.receive_message(QueueUrl=deployment.config.work_queue_url)["Messages"]
    answer = runtime.handle_event({"Records": [{"messageId": message["MessageId"], "body": message["Body"]}]})
    assert answer == {"batchItemFailures": []}  # handled: a delayed retry carries it on
    assert client.describe_execution(execution_id)["Status"] == "RUNNING"
    assert RUNS["first"] == 1  # the test above ran it once; nothing ran here
