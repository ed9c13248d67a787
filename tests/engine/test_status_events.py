"""Status-change events (stepwell.core.status_events): one event per change of an execution's status, with the
documented detail, never a second one for duplicated messages, and never lost when the bus refuses one."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
import workflows
from botocore.stub import Stubber
from stepwell.aws.clients import AwsClients
from stepwell.aws.status_events import EventBridgeStatusEvents
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.registry import Registry
from stepwell.core.status_events import (
    STATUS_EVENT_DETAIL_TYPE,
    STATUS_EVENT_SOURCE,
    MemoryStatusEvents,
    NoStatusEvents,
    StatusEventNotPut,
)
from stepwell.model import ExecutionStatus, InvokeMessage
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.build import build_engine
from stepwell.wiring.entry import EntryRuntime


class RefusesOnce(MemoryStatusEvents):
    """A bus that refuses the first announcement of `status` (as PutEvents with a failed entry does)."""

    def __init__(self, status: str) -> None:
        super().__init__()
        self.status = status
        self.calls: list[list[str]] = []
        self.refused = 0

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        self.calls.append([str(detail["status"]) for detail in details])
        if not self.refused and any(detail["status"] == self.status for detail in details):
            self.refused += 1
            raise StatusEventNotPut(f"refused {self.status}")
        super().publish(details)


def deliver_all(local: LocalStepwell) -> int:
    """Run every message, skipping the clock ahead, and deliver a message again when its handling failed
    (as SQS does after the visibility timeout). Returns how many deliveries failed."""
    failed = 0
    while True:
        body = local.queue.pop_due(local.clock.now())
        if body is None:
            if not local.advance_to_next_wakeup():
                return failed
            continue
        try:
            local.process_one(body)
        except StatusEventNotPut:
            failed += 1
            local.queue.enqueue(body, delay_seconds=30)


def iso(epoch: float | None) -> str:
    assert epoch is not None
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_run_announces_running_then_succeeded_with_the_documented_detail(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.deploy({"greet": workflows.greet})
    execution_id = stepwell_local.start("greet", {"name": "Ada"}, execution_name="ada", subject_id="user-1")

    record = stepwell_local.run_to_completion(execution_id)

    running, succeeded = stepwell_local.status_events.published
    assert running == {
        "executionId": execution_id,
        "executionName": "ada",
        "workflow": "greet",
        "domain": "default",
        "subjectId": "user-1",
        "status": "RUNNING",
        "startTime": iso(record.created_at),
        "endTime": None,
        "errorType": None,
        "version": "1",
        "eventId": hashlib.sha256(f"{execution_id}|RUNNING".encode()).hexdigest(),
    }
    assert succeeded == {
        **running,
        "status": "SUCCEEDED",
        "endTime": iso(record.ended_at),
        "eventId": hashlib.sha256(f"{execution_id}|SUCCEEDED".encode()).hexdigest(),
    }


def test_a_failure_names_its_error_type(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("failing", workflows.failing_child)
    execution_id = stepwell_local.start("failing", {"value": 3})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED and record.error is not None
    assert stepwell_local.status_events.statuses(execution_id) == ["RUNNING", "FAILED"]
    failed = stepwell_local.status_events.published[-1]
    assert (
        failed["errorType"]
        == record.error["ErrorType"]
        == "aws_durable_execution_sdk_python.exceptions.StepError"
    )
    assert failed["version"] is None  # unversioned code pins nothing


def test_a_stop_is_announced_once_by_the_worker_that_logs_it(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", {})
    stepwell_local.run_until_idle()
    assert stepwell_local.status_events.statuses(execution_id) == ["RUNNING"]

    assert stepwell_local.engine.stop_execution(execution_id)
    assert stepwell_local.status_events.statuses(execution_id) == ["RUNNING"]  # the client puts nothing
    stepwell_local.run_until_idle()

    assert stepwell_local.status_events.statuses(execution_id) == ["RUNNING", "STOPPED"]
    assert stepwell_local.status_events.published[-1]["errorType"] == "Stopped"


def test_a_stop_before_the_first_run_announces_both_changes_in_one_request() -> None:
    bus = RefusesOnce(status="none")
    local = LocalStepwell()
    local.engine.status_events = bus
    local.register("greet", workflows.greet)
    execution_id = local.start("greet", {"name": "Ada"})

    local.engine.stop_execution(execution_id)
    local.run_until_idle()

    assert bus.calls == [["RUNNING", "STOPPED"]]
    assert [event["EventType"] for event in local.history(execution_id)] == [
        "ExecutionStarted",
        "ExecutionStopped",
    ]


def test_duplicated_messages_announce_nothing_twice(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("wait", {})
    for _ in range(3):  # the start's message, delivered four times
        stepwell_local.queue.enqueue(InvokeMessage(execution_id).to_body())
    stepwell_local.run_until_idle()
    stepwell_local.run_to_completion(execution_id)
    for _ in range(3):  # and late duplicates after the end
        stepwell_local.queue.enqueue(InvokeMessage(execution_id).to_body())
    stepwell_local.run_until_idle()

    assert stepwell_local.status_events.statuses(execution_id) == ["RUNNING", "SUCCEEDED"]


@pytest.mark.parametrize("refused", ["RUNNING", "SUCCEEDED"])
def test_a_refused_announcement_fails_the_message_and_its_retry_announces_it(refused: str) -> None:
    bus = RefusesOnce(refused)
    local = LocalStepwell()
    local.engine.status_events = bus
    local.register("greet", workflows.greet)
    execution_id = local.start("greet", {"name": "Ada"})

    assert deliver_all(local) == 1

    assert local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert bus.statuses(execution_id) == ["RUNNING", "SUCCEEDED"]
    history = [event["EventType"] for event in local.history(execution_id)]
    assert history.count("ExecutionStarted") == history.count("ExecutionSucceeded") == 1


def test_a_child_whose_end_was_refused_still_resumes_its_parent() -> None:
    bus = RefusesOnce("SUCCEEDED")
    local = LocalStepwell()
    local.engine.status_events = bus
    local.register("doubler", workflows.doubler)
    local.register("invoker", workflows.invoker)
    parent_id = local.start("invoker", {"target": "doubler", "value": 21})

    assert deliver_all(local) == 1  # the child's end (the first SUCCEEDED) was refused once

    parent = local.record(parent_id)
    assert parent.status is ExecutionStatus.SUCCEEDED
    assert json.loads(parent.result or "null") == {"doubled": 42}
    child_id = next(d["executionId"] for d in bus.published if d["workflow"] == "doubler")
    assert bus.statuses(child_id) == ["RUNNING", "SUCCEEDED"]
    assert bus.statuses(parent_id) == ["RUNNING", "SUCCEEDED"]


def test_the_worker_ignores_status_events_a_rule_sends_back(stepwell_local: LocalStepwell) -> None:
    runtime = EntryRuntime(stepwell_local.engine)
    envelope = {
        "version": "0",
        "id": "e-1",
        "detail-type": STATUS_EVENT_DETAIL_TYPE,
        "source": STATUS_EVENT_SOURCE,
        "detail": {"executionId": "default#greet#a/a", "status": "SUCCEEDED"},
    }

    result = runtime.handle_body(envelope)
    answer = runtime.handle_sqs_batch([{"messageId": "m-1", "body": json.dumps(envelope)}])

    assert (result.kind, result.action) == ("event", "ignored")
    assert answer == {"batchItemFailures": []}  # not left to the DLQ


CONFIG = {
    "name": "sw",
    "executions_table": "sw-executions",
    "operations_table": "sw-operations",
    "coordination_table": "sw-coordination",
    "work_queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/sw-work",
    "event_bus_name": "sw",
    "region": "us-east-1",
}


def test_the_switch_turns_the_announcements_off() -> None:
    on = StepwellConfig.from_client_config(CONFIG)
    off = StepwellConfig.from_env({**on.to_env(), "STEPWELL_STATUS_EVENTS": "false"})
    clients = AwsClients(region="us-east-1")

    assert on.to_env()["STEPWELL_STATUS_EVENTS"] == "true"
    assert isinstance(build_engine(on, clients, Registry()).status_events, EventBridgeStatusEvents)
    assert off.status_events is False
    assert isinstance(build_engine(off, clients, Registry()).status_events, NoStatusEvents)
    with pytest.raises(ConfigError, match="STEPWELL_STATUS_EVENTS must be true or false, got 'yes'"):
        StepwellConfig.from_env({**on.to_env(), "STEPWELL_STATUS_EVENTS": "yes"})


def test_a_refused_entry_is_an_error_naming_the_change() -> None:
    events = boto3.client("events", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    bus = EventBridgeStatusEvents(events, "sw")
    detail = {"executionId": "default#greet#a/a", "status": "FAILED"}
    with Stubber(events) as stub:
        stub.add_response(
            "put_events",
            {"FailedEntryCount": 1, "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "x"}]},
            {
                "Entries": [
                    {
                        "EventBusName": "sw",
                        "Source": STATUS_EVENT_SOURCE,
                        "DetailType": STATUS_EVENT_DETAIL_TYPE,
                        "Detail": json.dumps(detail),
                    }
                ]
            },
        )
        with pytest.raises(StatusEventNotPut, match="FAILED of default#greet#a/a: InternalFailure"):
            bus.publish([detail])
