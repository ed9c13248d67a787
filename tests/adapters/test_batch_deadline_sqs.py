"""Batch isolation on moto's SQS and DynamoDB (issue 37, item 1): a batch with a fast message and a slow
one, whose invocation's deadline comes while the slow one runs, answers in time with the slow one alone as
a batch item failure. As the event source mapping does, the fast one is deleted and the slow one comes
back alone; its retry waits for the handed-back run and ends the execution once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

RELEASE = threading.Event()
STEP_RUNS = {"fast": 0, "slow": 0}


def _fast_step(_: Any) -> str:
    STEP_RUNS["fast"] += 1
    return "fast done"


def _slow_step(_: Any) -> str:
    STEP_RUNS["slow"] += 1
    assert RELEASE.wait(30), "the test never let the slow step go"
    return "slow done"


@durable_execution
def fast(event: Any, context: DurableContext) -> str:
    return context.step(_fast_step, name="fast step")


@durable_execution
def slow(event: Any, context: DurableContext) -> str:
    return context.step(_slow_step, name="slow step")


class RealTimeContext:
    """A Lambda context whose invocation ends `seconds` of real time after it is made."""

    aws_request_id = "request-1"

    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


@pytest.fixture
def runtime(deployment: Deployment) -> Iterator[tuple[StepwellClient, EntryRuntime, VirtualClock]]:
    RELEASE.clear()
    STEP_RUNS.update(fast=0, slow=0)
    registry = Registry()
    registry.register("fast", fast)
    registry.register("slow", slow)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    yield client, runtime, clock
    # No run may outlive moto's mock (it would reach for AWS).
    RELEASE.set()
    runtime.handle_event({"Records": []})


def _ended_events(client: StepwellClient, execution_id: str) -> list[str]:
    return [
        event["EventType"]
        for event in client.get_execution_history(execution_id)
        if event["EventType"] in ("ExecutionSucceeded", "ExecutionFailed")
    ]


def test_the_slow_message_alone_comes_back_and_ends_its_execution_once(
    deployment: Deployment, runtime: tuple[StepwellClient, EntryRuntime, VirtualClock]
) -> None:
    client, entry, clock = runtime
    fast_id = client.start_execution("fast", None, execution_name="fast-1")
    slow_id = client.start_execution("slow", None, execution_name="slow-1")
    sqs = deployment.clients.sqs
    queue_url = deployment.config.work_queue_url
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    by_execution = {json.loads(message["Body"])["executionId"]: message for message in messages}
    assert set(by_execution) == {fast_id, slow_id}
    ordered = [by_execution[fast_id], by_execution[slow_id]]
    records = [{"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"} for m in ordered]

    # One batch in a five-second invocation (room for the fast message on a loaded machine): the fast
    # message ends, the slow one's step still waits at the deadline.
    started = time.monotonic()
    answer = entry.handle_event({"Records": records}, RealTimeContext(5.0))
    assert time.monotonic() - started < 5.0
    slow_message_id = by_execution[slow_id]["MessageId"]
    assert answer == {"batchItemFailures": [{"itemIdentifier": slow_message_id}]}

    # The mapping deletes what succeeded; the failure comes back (at once here: its visibility ends).
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=by_execution[fast_id]["ReceiptHandle"])
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=by_execution[slow_id]["ReceiptHandle"], VisibilityTimeout=0
    )
    assert client.describe_execution(fast_id)["Status"] == "SUCCEEDED"
    assert client.describe_execution(slow_id)["Status"] == "RUNNING"

    RELEASE.set()
    driver = QueueDriver(deployment, entry, clock)
    driver.run_until_quiet()
    assert driver.distinct_delivered == {slow_message_id}  # the slow one alone was delivered again
    assert driver.failed_message_ids == []
    assert STEP_RUNS == {"fast": 1, "slow": 1}
    for execution_id, result in ((fast_id, "fast done"), (slow_id, "slow done")):
        description = client.describe_execution(execution_id)
        assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == result
        assert _ended_events(client, execution_id) == ["ExecutionSucceeded"]


def test_a_batch_handing_back_its_slow_message_keeps_the_fast_ones_done(
    deployment: Deployment, runtime: tuple[StepwellClient, EntryRuntime, VirtualClock]
) -> None:
    """Fast, slow, fast in one batch: the first is done, the slow one is handed back while it runs and the
    last, not started, with it; neither comes back done twice."""
    client, entry, clock = runtime
    ids = [
        client.start_execution("fast", None, execution_name="fast-a"),
        client.start_execution("slow", None, execution_name="slow-b"),
        client.start_execution("fast", None, execution_name="fast-c"),
    ]
    sqs = deployment.clients.sqs
    queue_url = deployment.config.work_queue_url
    messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    by_execution = {json.loads(message["Body"])["executionId"]: message for message in messages}
    ordered = [by_execution[execution_id] for execution_id in ids]
    records = [{"messageId": m["MessageId"], "body": m["Body"], "eventSource": "aws:sqs"} for m in ordered]

    answer = entry.handle_event({"Records": records}, RealTimeContext(5.0))
    handed_back = [item["itemIdentifier"] for item in answer["batchItemFailures"]]
    assert handed_back == [ordered[1]["MessageId"], ordered[2]["MessageId"]]
    assert STEP_RUNS == {"fast": 1, "slow": 1}
    assert [client.describe_execution(i)["Status"] for i in ids] == ["SUCCEEDED", "RUNNING", "RUNNING"]

    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=ordered[0]["ReceiptHandle"])
    for message in ordered[1:]:
        sqs.change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    RELEASE.set()
    driver = QueueDriver(deployment, entry, clock)
    driver.run_until_quiet()
    assert driver.distinct_delivered == set(handed_back)
    assert STEP_RUNS == {"fast": 2, "slow": 1}
    assert all(_ended_events(client, execution_id) == ["ExecutionSucceeded"] for execution_id in ids)
