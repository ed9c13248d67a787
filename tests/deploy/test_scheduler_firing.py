"""The scheduler firer on each backend: one-time, recurring and disabled schedules, SQS and bus targets."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from stepwell.testing.backends import Backend
from stepwell.testing.scheduler import SchedulerFirer


@dataclass
class Group:
    backend: Backend
    name: str
    queue_url: str
    queue_arn: str
    role_arn: str

    def create(self, name: str, expression: str, target: dict[str, Any], **extra: Any) -> None:
        self.backend.client("scheduler").create_schedule(
            GroupName=self.name,
            Name=name,
            ScheduleExpression=expression,
            FlexibleTimeWindow={"Mode": "OFF"},
            Target={"RoleArn": self.role_arn, **target},
            **extra,
        )

    def queue_target(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"Arn": self.queue_arn, "Input": json.dumps(body)}

    def received(self, queue_url: str | None = None, expect: int = 0) -> list[dict[str, Any]]:
        """Bodies on the queue (deleted once read); long-polls while fewer than ``expect`` arrived, because
        some backends deliver a rule's targets asynchronously."""
        sqs = self.backend.client("sqs")
        url = queue_url or self.queue_url
        bodies: list[dict[str, Any]] = []
        empty_polls_left = 3 if expect else 1
        while empty_polls_left:
            wait = 5 if len(bodies) < expect else 0
            response = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait)
            messages = response.get("Messages", [])
            if not messages:
                empty_polls_left = empty_polls_left - 1 if len(bodies) < expect else 0
                continue
            for message in messages:
                bodies.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return bodies

    def schedule_names(self) -> list[str]:
        listed = self.backend.client("scheduler").list_schedules(GroupName=self.name)["Schedules"]
        return sorted(schedule["Name"] for schedule in listed)

    def firer(self) -> SchedulerFirer:
        return SchedulerFirer(self.backend.client, group_name=self.name)


@pytest.fixture
def group(stepwell_backend: Backend) -> Iterator[Group]:
    suffix = uuid.uuid4().hex[:8]
    sqs = stepwell_backend.client("sqs")
    queue_url = sqs.create_queue(QueueName=f"fired-{suffix}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    trust = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "scheduler.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
    )
    role_arn = stepwell_backend.client("iam").create_role(
        RoleName=f"fire-{suffix}", AssumeRolePolicyDocument=trust
    )["Role"]["Arn"]
    name = f"firing-{suffix}"
    stepwell_backend.client("scheduler").create_schedule_group(Name=name)
    yield Group(stepwell_backend, name, queue_url, queue_arn, role_arn)
    scheduler = stepwell_backend.client("scheduler")
    for schedule_name in Group(stepwell_backend, name, queue_url, queue_arn, role_arn).schedule_names():
        scheduler.delete_schedule(GroupName=name, Name=schedule_name)
    scheduler.delete_schedule_group(Name=name)
    sqs.delete_queue(QueueUrl=queue_url)


def test_a_three_day_timer_fires_after_advancing_and_deletes_itself(group: Group) -> None:
    firer = group.firer()
    due = (firer.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S")
    group.create(
        "wake-up",
        f"at({due})",
        group.queue_target({"kind": "invoke", "executionId": "e-1"}),
        ActionAfterCompletion="DELETE",
    )
    assert firer.fire_due() == []
    assert group.received() == []

    firer.advance(timedelta(days=3, seconds=1))
    fired = firer.fire_due()

    assert [(entry.name, entry.deleted) for entry in fired] == [("wake-up", True)]
    assert group.received() == [{"kind": "invoke", "executionId": "e-1"}]
    assert group.schedule_names() == []


def test_a_one_time_schedule_kept_after_completion_fires_once(group: Group) -> None:
    firer = group.firer()
    due = (firer.now() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    group.create("keep", f"at({due})", group.queue_target({"n": 1}), ActionAfterCompletion="NONE")
    firer.advance(timedelta(hours=2))
    assert [entry.deleted for entry in firer.fire_due()] == [False]
    assert firer.fire_due() == []
    assert group.received() == [{"n": 1}]
    assert group.schedule_names() == ["keep"]


def test_a_rate_schedule_fires_each_period_and_missed_runs_coalesce(group: Group) -> None:
    firer = group.firer()
    group.create("reconcile", "rate(5 minutes)", group.queue_target({"kind": "reconcile"}))
    assert firer.fire_due() == []
    firer.advance(timedelta(minutes=5, seconds=1))
    assert len(firer.fire_due()) == 1
    assert firer.fire_due() == []
    firer.advance(timedelta(hours=1))
    assert len(firer.fire_due()) == 1
    assert group.received() == [{"kind": "reconcile"}, {"kind": "reconcile"}]


def test_a_cron_schedule_fires_when_its_minute_comes(group: Group) -> None:
    firer = group.firer()
    group.create("daily", "cron(0 12 * * ? *)", group.queue_target({"kind": "daily"}))
    firer.advance(timedelta(days=1, minutes=1))
    assert [entry.name for entry in firer.fire_due()] == ["daily"]
    assert group.received() == [{"kind": "daily"}]


def test_a_disabled_schedule_never_fires(group: Group) -> None:
    firer = group.firer()
    group.create("off", "rate(1 minute)", group.queue_target({"n": 1}), State="DISABLED")
    firer.advance(timedelta(hours=1))
    assert firer.fire_due() == []
    assert group.received() == []


def test_a_bus_target_puts_the_event_that_a_rule_routes_to_a_queue(group: Group) -> None:
    events = group.backend.client("events")
    sqs = group.backend.client("sqs")
    bus_name = f"{group.name}-bus"
    bus_arn = events.create_event_bus(Name=bus_name)["EventBusArn"]
    rule_queue_url = sqs.create_queue(QueueName=f"{group.name}-routed")["QueueUrl"]
    rule_queue_arn = sqs.get_queue_attributes(QueueUrl=rule_queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    events.put_rule(
        Name="scheduled", EventBusName=bus_name, EventPattern=json.dumps({"source": ["stepwell.test"]})
    )
    events.put_targets(
        Rule="scheduled", EventBusName=bus_name, Targets=[{"Id": "queue", "Arn": rule_queue_arn}]
    )
    try:
        group.create(
            "to-bus",
            "rate(1 hour)",
            {
                "Arn": bus_arn,
                "Input": json.dumps({"orderId": "o-7"}),
                "EventBridgeParameters": {"Source": "stepwell.test", "DetailType": "Order Due"},
            },
        )
        firer = group.firer()
        firer.advance(timedelta(hours=1, seconds=1))
        assert [entry.target_arn for entry in firer.fire_due()] == [bus_arn]
        envelopes = group.received(rule_queue_url, expect=1)
        assert len(envelopes) == 1
        assert envelopes[0]["source"] == "stepwell.test"
        assert envelopes[0]["detail-type"] == "Order Due"
        assert envelopes[0]["detail"] == {"orderId": "o-7"}
    finally:
        events.remove_targets(Rule="scheduled", EventBusName=bus_name, Ids=["queue"])
        events.delete_rule(Name="scheduled", EventBusName=bus_name)
        events.delete_event_bus(Name=bus_name)
        sqs.delete_queue(QueueUrl=rule_queue_url)


def test_the_session_firer_fires_every_group(group: Group, scheduler_firer: SchedulerFirer) -> None:
    due = (scheduler_firer.now() + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%S")
    group.create(
        "session", f"at({due})", group.queue_target({"via": "fixture"}), ActionAfterCompletion="DELETE"
    )
    scheduler_firer.advance(timedelta(minutes=11))
    assert ("session", group.name) in [(entry.name, entry.group_name) for entry in scheduler_firer.fire_due()]
    assert group.received() == [{"via": "fixture"}]


def test_background_firing_delivers_a_due_schedule(group: Group) -> None:
    firer = group.firer()
    due = firer.now().strftime("%Y-%m-%dT%H:%M:%S")
    group.create("now", f"at({due})", group.queue_target({"n": "background"}), ActionAfterCompletion="DELETE")
    firer.start(interval_seconds=0.2)
    try:
        assert group.received(expect=1) == [{"n": "background"}]
    finally:
        firer.stop()
    assert not firer.background_errors
    assert group.schedule_names() == []
