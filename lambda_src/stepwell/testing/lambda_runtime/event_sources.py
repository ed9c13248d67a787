"""SQS event source mappings, as Lambda's pollers run them: the mappings of a backend's functions, their
queues, a batch received within the mapping's batch size and batching window, the SQS event Lambda gives
the function, and which messages stay on the queue afterwards.

``ReportBatchItemFailures``: only the reported items stay on the queue; a malformed response fails the
whole batch, as Lambda does, and so does a raised error or a timeout. SQS itself keeps received
messages invisible and moves them to the DLQ after ``maxReceiveCount`` receives (moto does that on
receive); ``settle_batch(release_failed=True)`` ends the visibility timeout of failed messages at once,
as if it had passed, so tests see retries and redrive without waiting.
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any

from stepwell.testing.lambda_runtime.functions import (
    ClientFactory,
    InvocationResult,
    split_function_reference,
)

IDLE_POLL_SECONDS = 0.2
SQS_MAX_RECEIVE = 10


@dataclass(frozen=True)
class EventSourceMapping:
    uuid: str
    function_name: str
    qualifier: str | None  # the alias or version the mapping invokes; None: $LATEST
    queue_arn: str
    batch_size: int
    batching_window_seconds: int
    report_batch_item_failures: bool


@dataclass
class DrainResult:
    batches: int = 0
    messages: int = 0
    failed_messages: int = 0
    settled: bool = False
    errors: list[dict[str, Any]] = field(default_factory=list)


def queue_name_and_account(queue_arn: str) -> tuple[str, str]:
    parts = queue_arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(
            f"event source {queue_arn!r} is not an SQS queue ARN (arn:aws:sqs:region:account:name)"
        )
    return parts[5], parts[4]


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    attributes = {key: str(value) for key, value in message.get("Attributes", {}).items()}
    message_attributes: dict[str, Any] = {}
    for name, value in message.get("MessageAttributes", {}).items():
        binary = value.get("BinaryValue")
        message_attributes[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode() if binary is not None else None,
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": [
                base64.b64encode(item).decode() for item in value.get("BinaryListValues", [])
            ],
            "dataType": value.get("DataType"),
        }
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.get("MD5OfBody", hashlib.md5(message["Body"].encode()).hexdigest()),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def failed_item_ids(result: InvocationResult, batch_ids: set[str], reports_failures: bool) -> set[str]:
    """Which messages of the batch stay on the queue, following Lambda's rules for SQS."""
    if not result.succeeded:
        return set(batch_ids)
    if not reports_failures:
        return set()
    payload = result.payload
    if (
        payload is None
        or payload == ""
        or (isinstance(payload, dict) and not payload.get("batchItemFailures"))
    ):
        return set()
    if not isinstance(payload, dict) or not isinstance(payload["batchItemFailures"], list):
        return set(batch_ids)
    failed: set[str] = set()
    for item in payload["batchItemFailures"]:
        identifier = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(identifier, str) or identifier not in batch_ids:
            return set(batch_ids)  # a malformed or unknown identifier fails the whole batch
        failed.add(identifier)
    return failed


class MappedQueues:
    """The SQS event source mappings of a backend's functions (of ``function_names``, when given) and
    their queues, whose URLs it keeps once read."""

    def __init__(self, client_factory: ClientFactory, function_names: list[str] | None = None) -> None:
        self._client_factory = client_factory
        self.function_names = function_names
        self._queue_urls: dict[str, str] = {}

    def mappings(self) -> list[EventSourceMapping]:
        """The enabled SQS mappings, read again on each call (a new or disabled mapping is seen at once)."""
        client = self._client_factory("lambda")
        mappings: list[EventSourceMapping] = []
        for page in client.get_paginator("list_event_source_mappings").paginate():
            for raw in page["EventSourceMappings"]:
                arn = raw.get("EventSourceArn", "")
                if ":sqs:" not in arn or raw.get("State", "Enabled") not in (
                    "Enabled",
                    "Enabling",
                    "Updating",
                ):
                    continue
                function_name, qualifier = split_function_reference(raw["FunctionArn"])
                if self.function_names is not None and function_name not in self.function_names:
                    continue
                mappings.append(
                    EventSourceMapping(
                        uuid=raw["UUID"],
                        function_name=function_name,
                        qualifier=qualifier,
                        queue_arn=arn,
                        batch_size=int(raw.get("BatchSize") or 10),
                        batching_window_seconds=int(raw.get("MaximumBatchingWindowInSeconds") or 0),
                        report_batch_item_failures="ReportBatchItemFailures"
                        in (raw.get("FunctionResponseTypes") or []),
                    )
                )
        return mappings

    def queue_url(self, queue_arn: str) -> str:
        if queue_arn not in self._queue_urls:
            name, account = queue_name_and_account(queue_arn)
            response = self._client_factory("sqs").get_queue_url(
                QueueName=name, QueueOwnerAWSAccountId=account
            )
            self._queue_urls[queue_arn] = response["QueueUrl"]
        return self._queue_urls[queue_arn]

    def receive_batch(
        self, mapping: EventSourceMapping, wait_for_batching_window: bool
    ) -> list[dict[str, Any]]:
        """Up to the batch size of messages; waits out the batching window for a fuller batch when asked."""
        sqs = self._client_factory("sqs")
        queue_url = self.queue_url(mapping.queue_arn)
        window_ends = time.monotonic() + (mapping.batching_window_seconds if wait_for_batching_window else 0)
        messages: list[dict[str, Any]] = []
        while len(messages) < mapping.batch_size:
            response = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=min(SQS_MAX_RECEIVE, mapping.batch_size - len(messages)),
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
                WaitTimeSeconds=0,
            )
            received = response.get("Messages", [])
            messages.extend(received)
            if not received:
                # Lambda waits out the batching window for a fuller batch, but never with nothing to send.
                if not messages or time.monotonic() >= window_ends:
                    break
                time.sleep(min(IDLE_POLL_SECONDS, max(0.0, window_ends - time.monotonic())))
        return messages

    def settle_batch(
        self,
        mapping: EventSourceMapping,
        messages: list[dict[str, Any]],
        failed_ids: set[str],
        release_failed: bool,
    ) -> int:
        """Delete a handled batch's messages but the failed ones, and, with ``release_failed``, end the
        failed ones' visibility timeout at once (they are received again at once); how many failed."""
        sqs = self._client_factory("sqs")
        queue_url = self.queue_url(mapping.queue_arn)
        succeeded = [message for message in messages if message["MessageId"] not in failed_ids]
        failed = [message for message in messages if message["MessageId"] in failed_ids]
        for start in range(0, len(succeeded), SQS_MAX_RECEIVE):
            chunk = succeeded[start : start + SQS_MAX_RECEIVE]
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"]} for index, m in enumerate(chunk)
                ],
            )
        if release_failed:
            for start in range(0, len(failed), SQS_MAX_RECEIVE):
                chunk = failed[start : start + SQS_MAX_RECEIVE]
                sqs.change_message_visibility_batch(
                    QueueUrl=queue_url,
                    Entries=[
                        {"Id": str(index), "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
                        for index, m in enumerate(chunk)
                    ],
                )
        return len(failed)

    def empty(self) -> bool:
        """Whether every mapped queue is empty: nothing visible, in flight or delayed."""
        sqs = self._client_factory("sqs")
        for mapping in self.mappings():
            attributes = sqs.get_queue_attributes(
                QueueUrl=self.queue_url(mapping.queue_arn),
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
            if any(int(value) for value in attributes.values()):
                return False
        return True
