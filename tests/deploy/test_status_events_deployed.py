"""Status-change events on the deployed stack, on each backend: a user's rule on the stack's bus forwards
them to a queue the test reads, and each change of three executions (one SUCCEEDED, one FAILED, one
STOPPED) arrives exactly once with the documented detail, also when the worker gets a message twice.
The module's own rule does not take them back to the work queue."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from deployed_backend import DeployedTarget
from stepwell.client import StepwellClient
from stepwell.core.status_events import STATUS_EVENT_DETAIL_TYPE, STATUS_EVENT_SOURCE
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack

from .test_failures_deployed import _drive as drive

WAIT_SECONDS = 180.0
# After the expected events arrived, the queue stays quiet this long (a second event would show up).
QUIET_SECONDS = 3.0


@contextmanager
def temporary_queue(backend: Backend, name: str) -> Iterator[tuple[str, str]]:
    """A queue (its URL and ARN) for the test's own deliveries, deleted afterwards."""
    sqs = backend.client("sqs")
    queue_url = sqs.create_queue(QueueName=name)["QueueUrl"]
    try:
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        yield queue_url, attributes["Attributes"]["QueueArn"]
    finally:
        sqs.delete_queue(QueueUrl=queue_url)


def allow_sender(backend: Backend, queue_url: str, queue_arn: str, service: str, source_arn: str) -> None:
    """Let `service` send to the queue on behalf of `source_arn` only (as a user would set it up)."""
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": service},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": source_arn}},
            }
        ],
    }
    backend.client("sqs").set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})


@contextmanager
def status_event_queue(backend: Backend, config: dict[str, Any], domain: str) -> Iterator[str]:
    """A queue receiving, through a rule on the stack's bus, the status-change events of `domain`'s
    executions; both are removed afterwards, so the bus can be destroyed."""
    events = backend.client("events")
    name = f"{config['name']}-status-{uuid.uuid4().hex[:8]}"
    bus = config["event_bus_name"]
    with temporary_queue(backend, name) as (queue_url, queue_arn):
        rule_arn = events.put_rule(
            Name=name,
            EventBusName=bus,
            EventPattern=json.dumps(
                {
                    "source": [STATUS_EVENT_SOURCE],
                    "detail-type": [STATUS_EVENT_DETAIL_TYPE],
                    "detail": {"domain": [domain]},
                }
            ),
        )["RuleArn"]
        allow_sender(backend, queue_url, queue_arn, "events.amazonaws.com", rule_arn)
        events.put_targets(Rule=name, EventBusName=bus, Targets=[{"Id": "status-queue", "Arn": queue_arn}])
        try:
            yield queue_url
        finally:
            events.remove_targets(Rule=name, EventBusName=bus, Ids=["status-queue"])
            events.delete_rule(Name=name, EventBusName=bus)


@contextmanager
def topic_queue(backend: Backend, topic_arn: str) -> Iterator[str]:
    """A queue subscribed (raw delivery) to the stack's alarm topic, removed afterwards."""
    sns = backend.client("sns")
    with temporary_queue(backend, f"alarm-topic-{uuid.uuid4().hex[:8]}") as (queue_url, queue_arn):
        allow_sender(backend, queue_url, queue_arn, "sns.amazonaws.com", topic_arn)
        subscription = sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "true"},
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
        try:
            yield queue_url
        finally:
            sns.unsubscribe(SubscriptionArn=subscription)


def receive_events(backend: Backend, queue_url: str, expected: int) -> list[dict[str, Any]]:
    """The events on the queue: waits for `expected`, then for QUIET_SECONDS more (to see any extra)."""
    sqs = backend.client("sqs")
    received: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT_SECONDS
    quiet_until: float | None = None
    while time.monotonic() < deadline:
        response = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in response.get("Messages", []):
            received.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        if len(received) >= expected:
            quiet_until = quiet_until or time.monotonic() + QUIET_SECONDS
            if time.monotonic() >= quiet_until:
                return received
    return received


def at(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_each_status_change_is_one_event_for_a_users_rule(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    backend = deployed_stack.backend
    config = deployed_stack.client_config
    run = uuid.uuid4().hex[:10]
    domain = f"status-{run}"
    topic_arn = deployed_stack.outputs["alarm_topic_arn"]
    with (
        status_event_queue(backend, config, domain) as queue_url,
        topic_queue(backend, topic_arn) as topic_url,
    ):
        succeeded = deployed_client.start_execution(
            "orders.confirm", {"order_id": run, "lines": []}, f"ok-{run}", domain, subject_id="order-1"
        )
        failed = deployed_client.start_execution("statusevents.unregistered", {}, f"bad-{run}", domain)
        stopped = deployed_client.start_execution("failures.sequence", {"run": run}, f"stop-{run}", domain)
        drive(deployed_target, succeeded)
        drive(deployed_target, failed)
        deployed_target.process_queue()  # the sequence runs its first step and waits
        assert deployed_client.stop_execution(stopped)
        drive(deployed_target, stopped)
        for execution_id in (succeeded, failed, stopped):  # the worker gets the start's message again
            deployed_target.sqs.send_message(
                QueueUrl=config["work_queue_url"],
                MessageBody=json.dumps({"kind": "invoke", "executionId": execution_id}),
            )
        deployed_target.process_queue()

        received = receive_events(backend, queue_url, expected=6)
        # The module's notifications rule sends failed executions' events to the alarm topic.
        ours = {succeeded, failed, stopped}
        notified = [
            event["detail"]
            for event in receive_events(backend, topic_url, expected=1)
            if event.get("detail", {}).get("executionId") in ours
        ]

    assert {(event["source"], event["detail-type"]) for event in received} == {
        (STATUS_EVENT_SOURCE, STATUS_EVENT_DETAIL_TYPE)
    }
    details = [event["detail"] for event in received]
    changes = Counter((detail["executionId"], detail["status"]) for detail in details)
    assert changes == Counter(
        {
            (succeeded, "RUNNING"): 1,
            (succeeded, "SUCCEEDED"): 1,
            (failed, "RUNNING"): 1,
            (failed, "FAILED"): 1,
            (stopped, "RUNNING"): 1,
            (stopped, "STOPPED"): 1,
        }
    ), json.dumps(details, indent=1)

    version = deployed_client.describe_execution(succeeded).get("Version")
    for detail in details:
        description = deployed_client.describe_execution(detail["executionId"])
        ended = detail["status"] != "RUNNING"
        assert detail == {
            "executionId": description["ExecutionId"],
            "executionName": description["ExecutionName"],
            "workflow": description["WorkflowName"],
            "domain": domain,
            "subjectId": description["SubjectId"],
            "status": detail["status"],
            "startTime": detail["startTime"],
            "endTime": detail["endTime"] if ended else None,
            "errorType": description.get("Error", {}).get("ErrorType") if ended else None,
            "version": version,
            "eventId": hashlib.sha256(f"{detail['executionId']}|{detail['status']}".encode()).hexdigest(),
        }
        assert abs((at(detail["startTime"]) or 0) - description["StartTimestamp"]) < 0.001
        if ended:
            assert abs((at(detail["endTime"]) or 0) - description["EndTimestamp"]) < 0.001
    by_change = {(d["executionId"], d["status"]): d for d in details}
    assert by_change[(succeeded, "SUCCEEDED")]["subjectId"] == "order-1"
    assert by_change[(failed, "FAILED")]["errorType"] == "stepwell.errors.WorkflowNotFound"
    assert by_change[(stopped, "STOPPED")]["errorType"] == "Stopped"

    assert [(detail["executionId"], detail["status"]) for detail in notified] == [(failed, "FAILED")]

    # The module's rule left them out of the work queue (the worker would log them as ignored).
    lines = deployed_target.log_lines()
    assert any(stopped in line for line in lines)  # the log is there
    assert not [line for line in lines if "a status-change event" in line]
