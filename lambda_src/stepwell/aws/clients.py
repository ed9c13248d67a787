"""boto3 clients for Stepwell, with retries configured and a request counter a benchmark can read.

Retries: botocore's `standard` mode (or `adaptive`, chosen by STEPWELL_RETRY_MODE) retries throttling
(ProvisionedThroughputExceededException, ThrottlingException, ...) and transient errors with backoff.
Endpoints: boto3 honours AWS_ENDPOINT_URL (and AWS_ENDPOINT_URL_<SERVICE>) itself; an explicit
`endpoint_url` given here wins, which is how tests point at a local AWS.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sqs import SQSClient

RETRY_MODES = ("standard", "adaptive", "legacy")
DEFAULT_MAX_ATTEMPTS = 8
# A synchronous invoke of the worker (a forwarded batch) or of a Lambda function context.invoke names runs
# as long as that function takes, at most Lambda's 15 minutes: its client waits that long instead of 30 s,
# and tries twice at most, as a retried Invoke runs the function again.
INVOKE_READ_TIMEOUT_SECONDS = 900
INVOKE_MAX_ATTEMPTS = 2


@dataclass
class RequestCounter:
    """Counts AWS API calls (one per logical call), HTTP attempts, retries (throttling and transient
    errors botocore retried) and DynamoDB consumed capacity.

    Keys are "service.Operation", e.g. "dynamodb.PutItem", "sqs.SendMessage", "scheduler.CreateSchedule".
    """

    calls: Counter[str] = field(default_factory=Counter)
    attempts: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    read_units: float = 0.0
    write_units: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.attempts.clear()
            self.retries.clear()
            self.read_units = 0.0
            self.write_units = 0.0

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "calls": dict(self.calls),
                "attempts": dict(self.attempts),
                "retries": dict(self.retries),
                "read_units": self.read_units,
                "write_units": self.write_units,
            }

    def total(self, service: str) -> int:
        prefix = service + "."
        with self._lock:
            return sum(count for key, count in self.calls.items() if key.startswith(prefix))

    def attach(self, client: Any) -> None:
        """Register the hooks on one boto3 client (events are named by the hyphenized service id)."""
        service = client.meta.service_model.service_name
        event_service = client.meta.service_model.service_id.hyphenize()
        events = client.meta.events

        def on_attempt(**kwargs: Any) -> None:
            operation = _operation_from_event(kwargs.get("event_name", ""))
            with self._lock:
                self.attempts[f"{service}.{operation}"] += 1

        def on_call(parsed: Any = None, model: Any = None, **_: Any) -> None:
            operation = getattr(model, "name", "?")
            read, write = _consumed_units(operation, parsed)
            metadata = parsed.get("ResponseMetadata", {}) if isinstance(parsed, dict) else {}
            retried = int(metadata.get("RetryAttempts", 0) or 0)
            with self._lock:
                self.calls[f"{service}.{operation}"] += 1
                if retried:
                    self.retries[f"{service}.{operation}"] += retried
                self.read_units += read
                self.write_units += write

        events.register(f"before-send.{event_service}", on_attempt)
        events.register(f"after-call.{event_service}", on_call)


def _operation_from_event(event_name: str) -> str:
    parts = event_name.split(".")
    return parts[2] if len(parts) > 2 else "?"


_READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})


def _consumed_units(operation: str, parsed: Any) -> tuple[float, float]:
    """Read and write units from a DynamoDB response's ConsumedCapacity (a dict or a list of them).

    With ReturnConsumedCapacity=TOTAL, DynamoDB reports `CapacityUnits`; whether those are read or write
    units follows from the operation.
    """
    if not isinstance(parsed, dict):
        return 0.0, 0.0
    consumed = parsed.get("ConsumedCapacity")
    entries = consumed if isinstance(consumed, list) else [consumed] if isinstance(consumed, dict) else []
    units = sum(float(entry.get("CapacityUnits", 0.0) or 0.0) for entry in entries)
    if operation in _READ_OPERATIONS:
        return units, 0.0
    return 0.0, units


class AwsClients:
    """Lazily created, shared boto3 clients for one region/endpoint, all carrying the same counter."""

    def __init__(
        self,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        retry_mode: str | None = None,
        max_attempts: int | None = None,
        session: boto3.Session | None = None,
        counter: RequestCounter | None = None,
        service_endpoints: Mapping[str, str] | None = None,
    ) -> None:
        mode = retry_mode or os.environ.get("STEPWELL_RETRY_MODE", "standard")
        if mode not in RETRY_MODES:
            raise ValueError(f"retry mode {mode!r} is not one of {', '.join(RETRY_MODES)}")
        attempts = max_attempts if max_attempts is not None else DEFAULT_MAX_ATTEMPTS
        if attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {attempts}")
        self.region = (
            region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        )
        self.endpoint_url = endpoint_url or None
        # Per service, an endpoint that wins over `endpoint_url` (a local Lambda runtime beside a local AWS).
        self.service_endpoints = dict(service_endpoints or {})
        self.counter = counter or RequestCounter()
        self._session = session or boto3.Session()
        retries: Any = {"mode": mode, "max_attempts": attempts}
        self._config = Config(
            retries=retries,
            connect_timeout=5,
            read_timeout=30,
            max_pool_connections=20,
        )
        invoke_retries: Any = {"mode": mode, "max_attempts": INVOKE_MAX_ATTEMPTS}
        wake_retries: Any = {"mode": mode, "total_max_attempts": 1}
        self._configs = {
            "invoke": self._config.merge(
                Config(read_timeout=INVOKE_READ_TIMEOUT_SECONDS, retries=invoke_retries)
            ),
            "wake": self._config.merge(Config(connect_timeout=2, read_timeout=5, retries=wake_retries)),
        }
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _client(self, service: str, purpose: str = "") -> Any:
        key = f"{service}/{purpose}"
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                client = self._session.client(
                    service,  # type: ignore[call-overload]
                    region_name=self.region,
                    endpoint_url=self.service_endpoints.get(service, self.endpoint_url),
                    config=self._configs.get(purpose, self._config),
                )
                self.counter.attach(client)
                self._clients[key] = client
            return client

    @property
    def dynamodb(self) -> DynamoDBClient:
        client: DynamoDBClient = self._client("dynamodb")
        return client

    @property
    def sqs(self) -> SQSClient:
        client: SQSClient = self._client("sqs")
        return client

    @property
    def s3(self) -> S3Client:
        client: S3Client = self._client("s3")
        return client

    @property
    def scheduler(self) -> EventBridgeSchedulerClient:
        client: EventBridgeSchedulerClient = self._client("scheduler")
        return client

    @property
    def events(self) -> EventBridgeClient:
        client: EventBridgeClient = self._client("events")
        return client

    @property
    def lambda_(self) -> LambdaClient:
        client: LambdaClient = self._client("lambda")
        return client

    @property
    def ssm(self) -> Any:
        """SSM, for the durable functions' parameter read at cold start (stepwell.aws.parameters)."""
        return self._client("ssm")

    @property
    def lambda_wake(self) -> LambdaClient:
        """Lambda for the asynchronous invokes that wake executions (stepwell.aws.direct_wake): one attempt,
        since a refused wake-up goes to the work queue at once, which retries it."""
        client: LambdaClient = self._client("lambda", "wake")
        return client

    @property
    def lambda_invoke(self) -> LambdaClient:
        """Lambda for synchronous invokes of the worker and of context.invoke's Lambda targets (see
        INVOKE_READ_TIMEOUT_SECONDS)."""
        client: LambdaClient = self._client("lambda", "invoke")
        return client


def error_code(error: ClientError) -> str:
    """The AWS error code of a refused request ("" when the response has none)."""
    return str(error.response.get("Error", {}).get("Code", ""))
