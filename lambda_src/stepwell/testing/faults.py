"""Fault injection for boto3 clients (`make chaos`, tests/chaos): throttling and transient errors, and
duplicated, delayed SQS messages, added with botocore's event hooks so the engine's clients stay the
ones it builds (`stepwell.aws.AwsClients`).

- `FaultInjector.attach(client)`: each HTTP attempt of a call fails at `rate` with a throttling or 5xx
  error the service's own protocol would return (answered in `before-send`, so nothing reaches the
  server). botocore's retry handler sees a real error response and retries it; a share `burst_rate` of
  calls fails every attempt, so the error reaches the engine (its own redelivery path runs).
- `SqsDuplicator.attach(sqs_client)`: every SendMessage / SendMessageBatch gets a random extra
  DelaySeconds and is sent a second time after it succeeded (the copy delayed from the original's delay on,
  as SQS delivers a duplicate no earlier than the message), so messages arrive twice, late and out of
  order.

Counts are kept per kind in `counts` ("dynamodb throttle", "sqs 5xx", ...), thread-safe.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders

# Errors a throttled or failing service answers with, per service (botocore retries each of them).
THROTTLE_CODES: Mapping[str, str] = {
    "dynamodb": "ProvisionedThroughputExceededException",
    "sqs": "RequestThrottled",
    "scheduler": "ThrottlingException",
}
TRANSIENT_STATUS = 500
TRANSIENT_CODE = "InternalFailure"
MAX_SQS_DELAY_SECONDS = 900
# Where a send's final parameters wait (in botocore's request context) for the copy sent after it.
_SENT = "stepwell_faults_sent"


class _Body:
    """The raw stream botocore reads an AWSResponse's content from."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._content


def error_response(url: str, status: int, code: str) -> AWSResponse:
    """An error response as the json (DynamoDB, SQS) and rest-json (Scheduler) protocols send it: the code
    in the body's `__type` and in `x-amzn-ErrorType`."""
    body = json.dumps({"__type": code, "message": "injected fault (stepwell.testing.faults)"}).encode()
    headers = HTTPHeaders()
    headers["x-amzn-ErrorType"] = code
    headers["x-amzn-query-error"] = f"{code};Receiver"
    headers["Content-Type"] = "application/x-amz-json-1.0"
    headers["Content-Length"] = str(len(body))
    return AWSResponse(url, status, headers, _Body(body))


class FaultInjector:
    """Fails a share of a client's HTTP attempts with throttling or 5xx errors."""

    def __init__(self, rate: float, burst_rate: float, seed: int | None = None) -> None:
        for label, value in (("rate", rate), ("burst_rate", burst_rate)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fault {label} must be between 0 and 1, got {value!r}")
        self.rate = rate
        self.burst_rate = burst_rate
        self.counts: Counter[str] = Counter()
        self.attempts = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        # Whether the call running on this thread fails every attempt (set per call in before-call).
        self._burst = threading.local()

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.service_name
        if service not in THROTTLE_CODES:
            raise ValueError(f"no faults for service {service!r}; known: {', '.join(THROTTLE_CODES)}")
        event_service = client.meta.service_model.service_id.hyphenize()

        def on_call(**_: Any) -> None:
            with self._lock:
                self._burst.active = self._random.random() < self.burst_rate

        def on_attempt(request: Any, **_: Any) -> AWSResponse | None:
            with self._lock:
                self.attempts += 1
                burst = bool(getattr(self._burst, "active", False))
                if not burst and self._random.random() >= self.rate:
                    return None
                throttle = self._random.random() < 0.5
                kind = f"{service} {'throttle' if throttle else '5xx'}{' (every attempt)' if burst else ''}"
                self.counts[kind] += 1
            if throttle:
                return error_response(request.url, 400, THROTTLE_CODES[service])
            return error_response(request.url, TRANSIENT_STATUS, TRANSIENT_CODE)

        client.meta.events.register(f"before-call.{event_service}", on_call)
        client.meta.events.register(f"before-send.{event_service}", on_attempt)

    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())


class SqsDuplicator:
    """Sends every SQS message twice, each copy with a random extra delay of up to `max_extra_delay`
    seconds (SQS's 900 s at most)."""

    def __init__(self, resend_client: Any, max_extra_delay: int, seed: int | None = None) -> None:
        # The copies go through a client without these hooks, so a copy is never copied again.
        self._resend = resend_client
        self.max_extra_delay = max_extra_delay
        self.counts: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def _delay(self, current: int) -> int:
        with self._lock:
            extra = self._random.randint(0, self.max_extra_delay)
            self.counts["sqs messages delayed"] += 1 if extra else 0
        return min(MAX_SQS_DELAY_SECONDS, current + extra)

    def attach(self, client: Any) -> None:
        events = client.meta.events

        def delay_one(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            params["DelaySeconds"] = self._delay(int(params.get("DelaySeconds", 0)))
            context[_SENT] = dict(params)

        def delay_batch(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            for entry in params.get("Entries", []):
                entry["DelaySeconds"] = self._delay(int(entry.get("DelaySeconds", 0)))
            context[_SENT] = dict(params)

        # After the call succeeded: the copy is a second delivery of a message SQS accepted.
        def copy_one(context: Mapping[str, Any], **_: Any) -> None:
            # A duplicate comes when SQS delivers the message, or later: never before its delay.
            sent = dict(context[_SENT])
            sent["DelaySeconds"] = self._delay(int(sent.get("DelaySeconds", 0)))
            self._resend.send_message(**sent)
            with self._lock:
                self.counts["sqs messages duplicated"] += 1

        def copy_batch(context: Mapping[str, Any], **_: Any) -> None:
            sent = context[_SENT]
            entries = [
                dict(entry, DelaySeconds=self._delay(int(entry.get("DelaySeconds", 0))))
                for entry in sent.get("Entries", [])
            ]
            if entries:
                self._resend.send_message_batch(QueueUrl=sent["QueueUrl"], Entries=entries)
            with self._lock:
                self.counts["sqs messages duplicated"] += len(entries)

        events.register("provide-client-params.sqs.SendMessage", delay_one)
        events.register("provide-client-params.sqs.SendMessageBatch", delay_batch)
        events.register("after-call.sqs.SendMessage", copy_one)
        events.register("after-call.sqs.SendMessageBatch", copy_batch)
