"""Plays the AWS machinery around the worker Lambda for in-process tests: SQS's event source mapping
(batches, partial batch failures, redelivery), EventBridge Scheduler (fires one-time schedules, skipping
a virtual clock to their time: a schedule on the worker's alias is an asynchronous invocation, retried
and then sent to the work queue as Lambda does) and the bus rule (events put on the bus reach the work
queue)."""

from __future__ import annotations

import contextlib
import json
import time
from datetime import UTC, datetime
from typing import Any

from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.testing.async_invoke import AsyncInvokeOutcome, attempt_in_process, invoke_asynchronously
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment

# moto makes a delayed message visible in real time: poll for it this often.
_DELAY_POLL_SECONDS = 0.2


class QueueDriver:
    def __init__(self, deployment: Deployment, runtime: EntryRuntime, clock: VirtualClock) -> None:
        self.deployment = deployment
        self.runtime = runtime
        self.clock = clock
        self.duplicate_every_message = False
        self.delivered = 0
        self.distinct_delivered: set[str] = set()
        self.failed_message_ids: list[str] = []
        self.schedules_created = 0
        self.results: list[dict[str, Any]] = []
        self.direct_invocations: list[AsyncInvokeOutcome] = []

    @property
    def _sqs(self) -> Any:
        return self.deployment.clients.sqs

    def run_until_quiet(
        self, redeliver_failures: bool = False, fire_schedules: bool = True, max_rounds: int = 500
    ) -> None:
        """Deliver messages (and fire schedules) until nothing is left to do."""
        for _ in range(max_rounds):
            response = self._sqs.receive_message(
                QueueUrl=self.deployment.config.work_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = response.get("Messages", [])
            if messages:
                self._deliver(messages, redeliver_failures)
                continue
            if self._delayed_messages() > 0:
                time.sleep(_DELAY_POLL_SECONDS)
                continue
            if fire_schedules and self._fire_next_schedule():
                continue
            return
        raise AssertionError(f"the queue did not go quiet within {max_rounds} rounds")

    def _deliver(self, messages: list[dict[str, Any]], redeliver_failures: bool) -> None:
        records = [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "eventSource": "aws:sqs",
            }
            for message in messages
        ]
        rounds = 2 if self.duplicate_every_message else 1
        failed: set[str] = set()
        for _ in range(rounds):
            response = self.runtime.handle_event({"Records": records}, None)
            self.delivered += len(records)
            failed |= {item["itemIdentifier"] for item in response["batchItemFailures"]}
        self.distinct_delivered.update(record["messageId"] for record in records)
        queue_url = self.deployment.config.work_queue_url
        for message in messages:
            if message["MessageId"] in failed:
                self.failed_message_ids.append(message["MessageId"])
                if redeliver_failures:
                    self._sqs.change_message_visibility(
                        QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                    )
            else:
                self._sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    def _delayed_messages(self) -> int:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.deployment.config.work_queue_url,
            AttributeNames=["ApproximateNumberOfMessagesDelayed"],
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessagesDelayed", "0"))

    def _fire_next_schedule(self) -> bool:
        """Fire the earliest one-time schedule: skip the clock to its time, send its input, delete it."""
        scheduler = self.deployment.clients.scheduler
        group = self.deployment.config.schedule_group_name
        summaries = scheduler.list_schedules(GroupName=group).get("Schedules", [])
        if not summaries:
            return False
        schedules = [scheduler.get_schedule(Name=item["Name"], GroupName=group) for item in summaries]
        earliest = min(schedules, key=lambda schedule: _at_epoch(schedule["ScheduleExpression"]))
        self.clock.advance_to(_at_epoch(earliest["ScheduleExpression"]))
        target = earliest["Target"]
        if target["Arn"] == self.deployment.config.wake_function_arn:
            self.direct_invocations.append(self.invoke_async(json.loads(target["Input"])))
        else:
            assert target["Arn"] == self.deployment.config.work_queue_arn
            self._sqs.send_message(
                QueueUrl=self.deployment.config.work_queue_url, MessageBody=target["Input"]
            )
        # ActionAfterCompletion DELETE; the run it started may have deleted it already (an execution that
        # ended there cancels its pending schedules).
        with contextlib.suppress(scheduler.exceptions.ResourceNotFoundException):
            scheduler.delete_schedule(Name=earliest["Name"], GroupName=group)
        self.schedules_created += 1
        return True

    def invoke_async(self, payload: Any) -> AsyncInvokeOutcome:
        """An asynchronous invocation of the worker's alias: retried, then its destination record goes to
        the work queue (the module's event invoke config)."""

        def to_queue(record: dict[str, Any]) -> None:
            self._sqs.send_message(
                QueueUrl=self.deployment.config.work_queue_url, MessageBody=json.dumps(record)
            )

        return invoke_asynchronously(
            attempt_in_process(self.runtime.handle_event),
            payload,
            self.deployment.config.wake_function_arn,
            on_failure=to_queue,
        )

    def pending_bodies(self) -> list[str]:
        response = self._sqs.receive_message(
            QueueUrl=self.deployment.config.work_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        return [message["Body"] for message in response.get("Messages", [])]


def _at_epoch(expression: str) -> float:
    if not (expression.startswith("at(") and expression.endswith(")")):
        raise ValueError(f"not a one-time schedule expression: {expression!r}")
    return datetime.strptime(expression[3:-1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()


def callback_id_of(client: StepwellClient, execution_id: str) -> str:
    """The id of the execution's (first) callback, from its history."""
    for event in client.get_execution_history(execution_id):
        if event["EventType"] == "CallbackStarted":
            callback_id: str = event["CallbackStartedDetails"]["CallbackId"]
            return callback_id
    raise AssertionError("the execution has no callback")
