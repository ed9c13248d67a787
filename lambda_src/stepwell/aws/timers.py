"""Wake-ups: an invoke message delivered to the worker at (never before) a given time.

Up to 900 s ahead, the message goes to SQS with DelaySeconds. Further ahead, a one-time EventBridge
Scheduler schedule `at(...)` in the module's group delivers it through the scheduler role and deletes
itself afterwards. It invokes the worker's alias directly (`wake_function_arn`), so the wake-up costs no
SQS request; a run that fails there is retried by Lambda's asynchronous invocation and then sent to the
work queue as its on-failure destination (`stepwell.wiring.entry` unwraps that record). Without a wake
function
the schedule sends the message to the work queue. A wake-up Scheduler still cannot deliver after its
(default) retries goes to the dead-letter queue `dead_letter_arn` (the module's DLQ: alarmed,
redrivable) instead of being dropped. `at()` fires at minute granularity, so its time is rounded up to
the next whole minute: a wake-up may come late by under a minute, never early. The message carries
`dueAt`, and the entry re-schedules a message that still arrives early (see `is_early`).

Schedule names are `sw-<hash of execution id>-<due epoch>`: deterministic, so a repeated request is a
no-op, and listable by prefix, so stopping an execution deletes its pending schedules.

With `long_wait_wakeups = "sweep"` (`sweep_long_waits`), a wake-up more than 900 s ahead is instead an item
keyed by its due time (stepwell.ports.due_wakeups), which the recurring sweep (stepwell.core.wake_sweep)
sends to the work queue with DelaySeconds, to the second: no schedule per wait, so neither Scheduler's
CreateSchedule rate nor its invocation rate caps how many long waits start or end per second. Both kinds
are handled whatever the setting, so schedules made before a switch still fire and are still deleted.
Withdrawing a wake-up in sweep mode deletes its due item first, and calls Scheduler only when there was no
item: a wake-up is a due item or a schedule, never both, so a due item found means no schedule to delete,
and a missing one may be a schedule made before the switch (or swept already: a DeleteSchedule that finds
nothing). A stop (cancel_all) likewise lists no schedules when the execution's armed wake-up, the one wake-up
it has pending, was a due item.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from stepwell.aws.clients import error_code
from stepwell.aws.work_queue import MAX_DELAY_SECONDS, QueueError, SqsWorkQueue, check_delay, encode_message
from stepwell.ports.due_wakeups import DueWakeUps

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_scheduler.type_defs import CreateScheduleInputTypeDef
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

logger = logging.getLogger(__name__)

# A message arriving this little ahead of its due time is run: clocks differ by fractions of a second.
EARLY_TOLERANCE_SECONDS = 1.0
_NAME_PREFIX = "sw-"


class SweptWakeUps(DueWakeUps, Protocol):
    """The due wake-ups sweep mode keeps long waits in, able to say whether a withdrawn one was there."""

    def withdraw_due(self, execution_id: str, due_at: float) -> bool:
        """Drop the wake-up's item; True if it was there."""
        ...


@dataclass(frozen=True)
class ScheduledWake:
    """Where a wake-up went: "sqs" (with its delay), "scheduler" (with the schedule's name) or "sweep" (a
    due item)."""

    via: str
    due_at: float
    delay_seconds: int = 0
    schedule_name: str = ""


def invoke_message(execution_id: str, due_at: float | None = None) -> dict[str, Any]:
    """The work-queue message that runs or resumes an execution."""
    message: dict[str, Any] = {"kind": "invoke", "executionId": execution_id}
    if due_at is not None:
        message["dueAt"] = round(due_at, 3)
    return message


def schedule_prefix(execution_id: str) -> str:
    return _NAME_PREFIX + hashlib.sha256(execution_id.encode("utf-8")).hexdigest()[:24] + "-"


def schedule_name(execution_id: str, due_at: float) -> str:
    """The one-time schedule of the execution's wake-up at `due_at` (wake-ups in one minute share it)."""
    return f"{schedule_prefix(execution_id)}{at_expression(due_at)[1]}"


def at_expression(due_at: float) -> tuple[str, int]:
    """The `at()` expression for the first whole minute at or after `due_at`, and that minute's epoch."""
    minute = math.ceil(due_at / 60.0) * 60
    stamp = datetime.fromtimestamp(minute, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"at({stamp})", minute


def is_early(message: Mapping[str, Any], now: float) -> bool:
    """True when an invoke message carrying `dueAt` arrived before its time (the entry re-schedules it)."""
    due_at = message.get("dueAt")
    return isinstance(due_at, int | float) and due_at - now > EARLY_TOLERANCE_SECONDS


class WakeScheduler:
    """Schedules and cancels execution wake-ups on SQS and EventBridge Scheduler."""

    def __init__(
        self,
        queue: SqsWorkQueue,
        scheduler: EventBridgeSchedulerClient | None,
        *,
        schedule_group: str,
        scheduler_role_arn: str,
        work_queue_arn: str,
        clock: Callable[[], float] = time.time,
        kms_key_arn: str = "",
        dead_letter_arn: str = "",
        wake_function_arn: str = "",
    ) -> None:
        self._queue = queue
        self._scheduler = scheduler
        self.schedule_group = schedule_group
        self.scheduler_role_arn = scheduler_role_arn
        self.work_queue_arn = work_queue_arn
        self._clock = clock
        # Encrypts the schedules (their input names the execution) with the customer's key, if any.
        self.kms_key_arn = kms_key_arn
        # Where Scheduler puts a wake-up it could not deliver after its retries ("" = dropped).
        self.dead_letter_arn = dead_letter_arn
        # The worker alias a schedule invokes directly (asynchronously: no SQS send, receive or delete);
        # "" = schedules send to the work queue.
        self.wake_function_arn = wake_function_arn
        # Where long waits go with long_wait_wakeups = "sweep" (None: one schedule per wait).
        self.due: SweptWakeUps | None = None

    def sweep_long_waits(self, due: SweptWakeUps) -> None:
        """Keep wake-ups more than 900 s ahead as due items the recurring sweep sends, not as schedules."""
        self.due = due

    def schedule(self, execution_id: str, due_at: float) -> None:
        """The engine's Timers port: an invoke of the execution at `due_at` or later."""
        self.schedule_wake(execution_id, due_at)

    def schedule_wake(
        self, execution_id: str, due_at: float, message: Mapping[str, Any] | None = None
    ) -> ScheduledWake:
        """Deliver `message` (default: an invoke of the execution) to the work queue at `due_at` or later."""
        body = dict(message) if message is not None else invoke_message(execution_id, due_at)
        body.setdefault("dueAt", round(due_at, 3))
        delay = max(0, math.ceil(due_at - self._clock()))
        if delay <= MAX_DELAY_SECONDS:
            self._queue.send(body, delay_seconds=delay)
            return ScheduledWake(via="sqs", due_at=due_at, delay_seconds=delay)
        if self.due is not None and message is None:
            # The sweep sends the invoke message itself (stepwell.core.wake_sweep).
            self.due.put_due(execution_id, due_at)
            return ScheduledWake(via="sweep", due_at=due_at)
        return self._create_schedule(execution_id, due_at, body)

    def _create_schedule(self, execution_id: str, due_at: float, body: Mapping[str, Any]) -> ScheduledWake:
        target_arn = self.wake_function_arn or self.work_queue_arn
        if self._scheduler is None or not (self.schedule_group and self.scheduler_role_arn and target_arn):
            raise ValueError(
                "a wake-up more than 900 s ahead needs EventBridge Scheduler: configure the schedule group, "
                "the scheduler role ARN and the work queue ARN (or the wake function ARN)"
            )
        expression, _ = at_expression(due_at)
        name = schedule_name(execution_id, due_at)
        request: CreateScheduleInputTypeDef = {
            "Name": name,
            "GroupName": self.schedule_group,
            "ScheduleExpression": expression,
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "ActionAfterCompletion": "DELETE",
            "Target": {
                "Arn": target_arn,
                "RoleArn": self.scheduler_role_arn,
                "Input": encode_message(body),
            },
        }
        if self.dead_letter_arn:
            # Scheduler's default retry policy is kept; what it still cannot deliver lands there.
            request["Target"]["DeadLetterConfig"] = {"Arn": self.dead_letter_arn}
        if self.kms_key_arn:
            request["KmsKeyArn"] = self.kms_key_arn
        # The name is deterministic: a conflict means this wake-up is already scheduled.
        with contextlib.suppress(self._scheduler.exceptions.ConflictException):
            self._scheduler.create_schedule(**request)
        return ScheduledWake(via="scheduler", due_at=due_at, schedule_name=name)

    def cancel_all(self, execution_id: str) -> None:
        """The engine's Timers port: delete the execution's pending schedules. The execution has already
        ended, so a caller without scheduler permissions only leaves wake-ups that will find nothing to
        do: that is logged, not raised."""
        if self.due is not None:
            # The armed wake-up (one per execution's run) names its item's key; others fire and find it ended.
            armed = self.due.armed_wake(execution_id)
            # A past one has been swept, or is being. A due item found was the pending wake-up: no schedule.
            if (
                armed is not None
                and armed > self._clock()
                and self._withdraw_due(self.due, execution_id, armed)
            ):
                return
        try:
            self.cancel_schedules(execution_id)
        except ClientError as error:
            code = error_code(error)
            if code not in ("AccessDeniedException", "AccessDenied"):
                raise
            logger.warning(
                "cannot delete the pending schedules of %s (%s: grant scheduler:ListSchedules and "
                "scheduler:DeleteSchedule); they will fire and find the execution ended",
                execution_id,
                code,
            )

    def withdraw(self, execution_id: str, due_at: float, keep: float | None = None) -> None:
        """The engine's Timers port: delete the schedule of a wake-up the execution no longer needs (one
        DeleteSchedule by its name, no listing). Only a wake-up still more than 900 s ahead is certain to be
        a schedule; a nearer one may be an SQS message, which cannot be withdrawn, so it is left to come
        and find nothing due. A schedule `keep` shares (same minute) stays. A failure is logged, not
        raised: the execution's own writes are done, and a schedule left in place is harmless."""
        if due_at - self._clock() <= MAX_DELAY_SECONDS:
            return
        if self.due is not None and keep != due_at and self._withdraw_due(self.due, execution_id, due_at):
            return  # a due item, never a schedule
        if self._scheduler is None or not self.schedule_group:
            return
        name = schedule_name(execution_id, due_at)
        if keep is not None and schedule_name(execution_id, keep) == name:
            return
        try:
            self._scheduler.delete_schedule(Name=name, GroupName=self.schedule_group)
        except self._scheduler.exceptions.ResourceNotFoundException:
            pass  # fired, or deleted by a stop, meanwhile
        except (ClientError, BotoCoreError) as error:
            logger.warning(
                "could not delete the unneeded wake-up %s of %s (%s); it will fire and find nothing due",
                name,
                execution_id,
                type(error).__name__ if isinstance(error, BotoCoreError) else error_code(error),
            )

    def _withdraw_due(self, due: SweptWakeUps, execution_id: str, due_at: float) -> bool:
        """Drop the wake-up's due item; True if it was one (False: none, or the delete failed)."""
        try:
            return due.withdraw_due(execution_id, due_at)
        except (ClientError, BotoCoreError) as error:
            logger.warning(
                "could not delete the unneeded wake-up at %s of %s (%s); it will fire and find nothing due",
                due_at,
                execution_id,
                type(error).__name__ if isinstance(error, BotoCoreError) else error_code(error),
            )
            return False

    def cancel_schedules(self, execution_id: str) -> int:
        """Delete the execution's pending schedules (SQS-delayed messages find it stopped and do nothing);
        returns how many were deleted."""
        if self._scheduler is None or not self.schedule_group:
            return 0
        deleted = 0
        paginator = self._scheduler.get_paginator("list_schedules")
        names: list[str] = []
        for page in paginator.paginate(
            GroupName=self.schedule_group, NamePrefix=schedule_prefix(execution_id)
        ):
            names.extend(item["Name"] for item in page.get("Schedules", []) if "Name" in item)
        for name in names:
            # A schedule that fired meanwhile deleted itself.
            with contextlib.suppress(self._scheduler.exceptions.ResourceNotFoundException):
                self._scheduler.delete_schedule(Name=name, GroupName=self.schedule_group)
                deleted += 1
        return deleted


# Batches a sweep sends at once: SendMessageBatch takes ten messages, and a few requests in flight keep one
# invocation near 1,000-3,000 messages per second (20-50 ms per request in the Region).
_BATCH_SIZE = 10
_SENDERS = 8


class SqsWakeBatches:
    """WakeBatches on the work queue: SendMessageBatch, each message with its own DelaySeconds, up to
    _SENDERS requests at once."""

    def __init__(self, sqs: SQSClient, queue_url: str) -> None:
        self._sqs = sqs
        self.queue_url = queue_url

    def send_wakes(self, entries: Sequence[tuple[Mapping[str, Any], int]]) -> None:
        batches: list[list[SendMessageBatchRequestEntryTypeDef]] = []
        for start in range(0, len(entries), _BATCH_SIZE):
            batch: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": str(index), "MessageBody": encode_message(body), "DelaySeconds": check_delay(delay)}
                for index, (body, delay) in enumerate(entries[start : start + _BATCH_SIZE])
            ]
            batches.append(batch)
        if len(batches) <= 1:
            for batch in batches:
                self._send(batch)
            return
        with ThreadPoolExecutor(max_workers=min(_SENDERS, len(batches))) as pool:
            # list(): every batch's error is raised here, not dropped.
            list(pool.map(self._send, batches))

    def _send(self, batch: list[SendMessageBatchRequestEntryTypeDef]) -> None:
        response = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=batch)
        failed = response.get("Failed", [])
        if failed:
            reasons = "; ".join(f"{entry['Id']}: {entry.get('Message', entry['Code'])}" for entry in failed)
            raise QueueError(f"SQS refused {len(failed)} of {len(batch)} wake-ups: {reasons}")
