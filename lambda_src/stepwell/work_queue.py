"""The SQS work queue: engine messages (invoke, reconcile) as compact JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import SendMessageBatchRequestEntryTypeDef

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
