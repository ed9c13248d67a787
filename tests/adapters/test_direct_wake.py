"""A client wakes executions by invoking the worker's alias asynchronously (stepwell.aws.direct_wake): no SQS
message when Lambda takes the event, the work queue when it does not, and nothing lost either way."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from botocore.exceptions import ClientError, EndpointConnectionError
from stepwell.aws.direct_wake import PAUSE_SECONDS, DirectWakeQueue
from stepwell.aws.work_queue import SqsWorkQueue
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.registry import Registry
from stepwell.testing.async_invoke import take_event_invokes
from stepwell.wiring.build import build_engine
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

ALIAS = "arn:aws:lambda:us-east-1:123456789012:function:sw-worker:live"


class FakeLambda:
    """Records asynchronous invokes; raises the queued errors first."""

    def __init__(self) -> None:
        self.invoked: list[dict[str, Any]] = []
        self.errors: list[Exception] = []

    def invoke(self, **request: Any) -> dict[str, Any]:
        if self.errors:
            raise self.errors.pop(0)
        self.invoked.append(request)
        return {"StatusCode": 202}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def refused(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, "Invoke")


def queued(deployment: Deployment) -> list[dict[str, Any]]:
    """The work queue's visible messages (received, so gone from the queue for this test)."""
    answer = deployment.clients.sqs.receive_message(
        QueueUrl=deployment.config.work_queue_url, MaxNumberOfMessages=10
    )
    return [json.loads(message["Body"]) for message in answer.get("Messages", [])]


def delayed(deployment: Deployment) -> int:
    attributes = deployment.clients.sqs.get_queue_attributes(
        QueueUrl=deployment.config.work_queue_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesDelayed"])


@pytest.fixture
def wake(deployment: Deployment) -> tuple[DirectWakeQueue, FakeLambda, Clock]:
    functions, clock = FakeLambda(), Clock()
    queue = SqsWorkQueue(deployment.clients.sqs, deployment.config.work_queue_url)
    return DirectWakeQueue(queue, functions, ALIAS, monotonic=clock), functions, clock  # type: ignore[arg-type]


def test_a_wake_up_now_invokes_the_alias_asynchronously_and_sends_no_message(
    wake: tuple[DirectWakeQueue, FakeLambda, Clock], deployment: Deployment
) -> None:
    queue, functions, _ = wake
    queue.enqueue({"kind": "invoke", "executionId": "e-1"})
    assert functions.invoked == [
        {
            "FunctionName": ALIAS,
            "InvocationType": "Event",
            "Payload": b'{"executionId":"e-1","kind":"invoke"}',
        }
    ]
    assert queued(deployment) == []


def test_delayed_wake_ups_and_other_kinds_go_to_the_queue(
    wake: tuple[DirectWakeQueue, FakeLambda, Clock], deployment: Deployment
) -> None:
    queue, functions, _ = wake
    queue.enqueue({"kind": "invoke", "executionId": "e-1"}, delay_seconds=5)
    queue.enqueue({"kind": "reconcile"})
    assert functions.invoked == []
    assert queued(deployment) == [{"kind": "reconcile"}]
    assert delayed(deployment) == 1


@pytest.mark.parametrize(
    "error",
    [
        refused("TooManyRequestsException"),
        refused("ServiceException"),
        EndpointConnectionError(endpoint_url="x"),
    ],
    ids=["throttled", "service-error", "unreachable"],
)
def test_a_passing_failure_sends_that_wake_up_to_the_queue_and_the_next_one_invokes_again(
    wake: tuple[DirectWakeQueue, FakeLambda, Clock], deployment: Deployment, error: Exception
) -> None:
    queue, functions, _ = wake
    functions.errors.append(error)
    queue.enqueue({"kind": "invoke", "executionId": "e-1"})
    assert queued(deployment) == [{"kind": "invoke", "executionId": "e-1"}]
    queue.enqueue({"kind": "invoke", "executionId": "e-2"})
    assert [json.loads(request["Payload"])["executionId"] for request in functions.invoked] == ["e-2"]


@pytest.mark.parametrize("code", ["AccessDeniedException", "ResourceNotFoundException"])
def test_a_lasting_refusal_sends_wake_ups_to_the_queue_for_a_pause_then_tries_again(
    wake: tuple[DirectWakeQueue, FakeLambda, Clock], deployment: Deployment, code: str
) -> None:
    queue, functions, clock = wake
    functions.errors.append(refused(code))  # an access policy from before the grant, or no alias
    queue.enqueue({"kind": "invoke", "executionId": "e-1"})
    clock.now += PAUSE_SECONDS - 1
    queue.enqueue({"kind": "invoke", "executionId": "e-2"})  # not tried: straight to the queue
    assert functions.invoked == []
    assert sorted(message["executionId"] for message in queued(deployment)) == ["e-1", "e-2"]
    clock.now += 1
    queue.enqueue({"kind": "invoke", "executionId": "e-3"})
    assert [json.loads(request["Payload"])["executionId"] for request in functions.invoked] == ["e-3"]


@durable_execution
def greet(event: dict[str, Any], context: DurableContext) -> str:
    name = context.step(lambda _: str(event["name"]).title(), name="title")
    approval = context.wait_for_callback(lambda callback_id, _: CALLBACKS.append(callback_id), name="ok")
    return f"hello {name}, {approval}"


CALLBACKS: list[str] = []


def test_a_client_starts_and_completes_a_callback_by_invoking_the_worker_which_runs_the_event(
    deployment: Deployment,
) -> None:
    CALLBACKS.clear()
    registry = Registry()
    registry.register("greet", greet)
    clock = VirtualClock()
    config = dataclasses.replace(deployment.config, direct_wake_ups=True)
    client = StepwellClient(config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)
    events: list[dict[str, Any]] = []
    invoked: list[str] = []

    def take(function: str, payload: Any) -> None:
        invoked.append(function)
        events.append(payload)

    take_event_invokes(deployment.clients.lambda_wake, take)
    execution_id = client.start_execution("greet", {"name": "ana"})
    assert events == [{"kind": "invoke", "executionId": execution_id}]
    assert invoked == [config.wake_function_arn]
    assert driver.pending_bodies() == []  # no SQS message for the start
    runtime.handle_event(events.pop())  # Lambda runs the event on the alias
    driver.run_until_quiet()
    assert len(CALLBACKS) == 1

    client.send_callback_success(CALLBACKS[0], "approved")
    assert events == [{"kind": "invoke", "executionId": execution_id}]
    assert driver.pending_bodies() == []
    runtime.handle_event(events.pop())
    description = client.describe_execution(execution_id)
    assert (description["Status"], json.loads(description["Result"])) == ("SUCCEEDED", "hello Ana, approved")


def test_direct_wake_ups_are_on_only_where_the_client_config_says() -> None:
    base = {
        "name": "sw",
        "executions_table": "sw-executions",
        "operations_table": "sw-operations",
        "coordination_table": "sw-coordination",
        "work_queue_url": "http://localhost/sw-work",
        "wake_function_arn": ALIAS,
    }
    assert StepwellConfig.from_client_config(base).direct_wake_ups is False  # an older module's config
    assert StepwellConfig.from_client_config({**base, "direct_wake_ups": "true"}).direct_wake_ups is True
    with pytest.raises(ConfigError, match=r"direct_wake_ups must be true or false, got 'yes'"):
        StepwellConfig.from_client_config({**base, "direct_wake_ups": "yes"})
    without_alias = {key: value for key, value in base.items() if key != "wake_function_arn"}
    with pytest.raises(ConfigError, match="direct_wake_ups needs wake_function_arn"):
        StepwellConfig.from_client_config({**without_alias, "direct_wake_ups": True})


def test_only_a_config_with_direct_wake_ups_builds_the_direct_queue(deployment: Deployment) -> None:
    registry = Registry()
    assert isinstance(build_engine(deployment.config, deployment.clients, registry).queue, SqsWorkQueue)
    direct = dataclasses.replace(deployment.config, direct_wake_ups=True)
    engine = build_engine(direct, deployment.clients, registry)
    assert isinstance(engine.queue, DirectWakeQueue)
    assert engine.queue.wake_function_arn == deployment.config.wake_function_arn
