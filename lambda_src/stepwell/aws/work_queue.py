"""The SQS work queue: engine messages (invoke, reconcile) as compact JSON bodies, and the redrive of
its dead-letter queue."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from stepwell.aws.clients import error_code

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import (
        DeleteMessageBatchRequestEntryTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

MAX_DELAY_SECONDS = 900
# SQS's classic message size limit; engine messages are tiny, anything bigger is a bug upstream.
MAX_BODY_BYTES = 256 * 1024
_BATCH_SIZE = 10


class QueueError(RuntimeError):
    """SQS refused a message."""


def encode_message(message: Mapping[str, Any]) -> str:
    if "kind" not in message:
        raise ValueError(f"an engine message needs a 'kind', got {dict(message)!r}")
    body = json.dumps(message, separators=(",", ":"), sort_keys=True)
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise ValueError(f"engine message of kind {message['kind']!r} exceeds {MAX_BODY_BYTES} bytes")
    return body


def check_delay(delay_seconds: int) -> int:
    if not 0 <= delay_seconds <= MAX_DELAY_SECONDS:
        raise ValueError(f"SQS delay must be 0..{MAX_DELAY_SECONDS} seconds, got {delay_seconds}")
    return delay_seconds


class SqsWorkQueue:
    """Sends engine messages to the work queue."""

    def __init__(self, sqs: SQSClient, queue_url: str) -> None:
        if not queue_url:
            raise ValueError("the work queue URL is required")
        self._sqs = sqs
        self.queue_url = queue_url

    def send(self, message: Mapping[str, Any], delay_seconds: int = 0) -> str:
        """Send one message; returns its SQS message id."""
        response = self._sqs.send_message(
            QueueUrl=self.queue_url,
            MessageBody=encode_message(message),
            DelaySeconds=check_delay(delay_seconds),
        )
        return response["MessageId"]

    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        """The engine's WorkQueue port."""
        self.send(body, delay_seconds)

    def send_many(self, messages: Sequence[Mapping[str, Any]], delay_seconds: int = 0) -> int:
        """Send messages in batches of ten; raises QueueError if any entry is refused."""
        check_delay(delay_seconds)
        sent = 0
        for start in range(0, len(messages), _BATCH_SIZE):
            chunk = messages[start : start + _BATCH_SIZE]
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": str(index), "MessageBody": encode_message(message), "DelaySeconds": delay_seconds}
                for index, message in enumerate(chunk)
            ]
            response = self._sqs.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            failed = response.get("Failed", [])
            if failed:
                reasons = "; ".join(
                    f"{entry['Id']}: {entry.get('Message', entry['Code'])}" for entry in failed
                )
                raise QueueError(f"SQS refused {len(failed)} of {len(entries)} messages: {reasons}")
            sent += len(entries)
        return sent


@dataclass(frozen=True)
class RedriveResult:
    """How the DLQ was redriven: "move-task" (SQS moves asynchronously) or "receive-send" (done here)."""

    method: str
    moved: int = 0
    task_handle: str = ""


# Error codes with which an SQS backend says it lacks StartMessageMoveTask.
_UNSUPPORTED_CODES = frozenset(
    {"InvalidAction", "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", "NotImplemented"}
)


def redrive_dead_letters(
    sqs: SQSClient,
    dlq_url: str,
    *,
    work_queue_url: str,
    work_queue_arn: str = "",
    max_messages: int | None = None,
) -> RedriveResult:
    """Move the DLQ's messages back to the work queue: SQS StartMessageMoveTask when the backend has it
    (and no limit is asked), else receive, send and delete in batches of ten here."""
    if max_messages is not None and max_messages < 1:
        raise ValueError(f"--max (max_messages) must be at least 1, got {max_messages}")
    if max_messages is None:
        handle = _start_move_task(sqs, dlq_url, work_queue_arn or _queue_arn(sqs, work_queue_url))
        if handle is not None:
            return RedriveResult(method="move-task", task_handle=handle)
    return RedriveResult(
        method="receive-send", moved=_move_by_hand(sqs, dlq_url, work_queue_url, max_messages)
    )


def _queue_arn(sqs: SQSClient, url: str) -> str:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]


def _start_move_task(sqs: SQSClient, dlq_url: str, work_queue_arn: str) -> str | None:
    """The move task's handle, or None when the backend cannot move messages itself."""
    try:
        response = sqs.start_message_move_task(
            SourceArn=_queue_arn(sqs, dlq_url), DestinationArn=work_queue_arn
        )
    except NotImplementedError:
        return None  # moto in-process
    except ClientError as error:
        code = error_code(error)
        message = str(error.response.get("Error", {}).get("Message", "")).lower()
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        unsupported = (
            code in _UNSUPPORTED_CODES or "not implemented" in message or "not been implemented" in message
        )
        # moto's server answers an action it lacks with a bare HTTP 500. Moving by hand is correct on
        # every backend, so a server-side failure of the (optional) move task falls back to it too.
        if unsupported or status >= 500:
            return None
        raise
    return response["TaskHandle"]


def _move_by_hand(sqs: SQSClient, dlq_url: str, work_queue_url: str, max_messages: int | None) -> int:
    moved = 0
    while max_messages is None or moved < max_messages:
        # ReceiveMessage takes at most 10 (SQS's limit; some backends fail on more).
        batch_size = _BATCH_SIZE if max_messages is None else min(_BATCH_SIZE, max_messages - moved)
        response = sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=batch_size,
            WaitTimeSeconds=0,
            VisibilityTimeout=60,
            MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        if not messages:
            return moved
        entries: list[SendMessageBatchRequestEntryTypeDef] = []
        for index, message in enumerate(messages):
            entry: SendMessageBatchRequestEntryTypeDef = {"Id": str(index), "MessageBody": message["Body"]}
            if message.get("MessageAttributes"):
                entry["MessageAttributes"] = message["MessageAttributes"]
            entries.append(entry)
        sent = sqs.send_message_batch(QueueUrl=work_queue_url, Entries=entries)
        # Only messages that reached the work queue leave the DLQ; the rest stay for a later redrive.
        delivered = {entry["Id"] for entry in sent.get("Successful", [])}
        deletions: list[DeleteMessageBatchRequestEntryTypeDef] = [
            {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
            for index, message in enumerate(messages)
            if str(index) in delivered
        ]
        if deletions:
            sqs.delete_message_batch(QueueUrl=dlq_url, Entries=deletions)
        moved += len(deletions)
        if len(deletions) < len(messages):
            failed = sent.get("Failed", [])
            reasons = "; ".join(f"{item['Id']}: {item.get('Message', item['Code'])}" for item in failed)
            raise QueueError(f"redrive stopped after {moved} messages; the work queue refused: {reasons}")
    return moved
