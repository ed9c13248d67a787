"""``BackendLambdaDriver``: the local runtime's surface over a backend that runs Lambda code itself, so a
test drives moto (``LambdaRuntime``) and LocalStack alike."""

from __future__ import annotations

import json
import time
from typing import Any

from stepwell.testing.lambda_runtime.event_sources import (
    IDLE_POLL_SECONDS,
    DrainResult,
    EventSourceMapping,
    MappedQueues,
)
from stepwell.testing.lambda_runtime.functions import LATEST, ClientFactory, InvocationResult


class BackendLambdaDriver:
    """The same surface as ``LambdaRuntime`` for a backend that runs Lambda code itself: its own event
    source mappings poll, so ``drain()`` only waits for the mapped queues to settle, and ``invoke()``
    calls the Lambda API."""

    def __init__(self, client_factory: ClientFactory, function_names: list[str] | None = None) -> None:
        self._client_factory = client_factory
        self.function_names = function_names
        self.invocations: list[InvocationResult] = []
        self._queues = MappedQueues(client_factory, function_names)

    def invoke(self, function_name: str, payload: Any, qualifier: str | None = None) -> InvocationResult:
        body = payload if isinstance(payload, bytes | bytearray) else json.dumps(payload).encode()
        request: dict[str, Any] = {"FunctionName": function_name, "Payload": bytes(body)}
        if qualifier:
            request["Qualifier"] = qualifier
        response = self._client_factory("lambda").invoke(**request)
        raw = response["Payload"].read()
        decoded = json.loads(raw) if raw else None
        error = decoded if response.get("FunctionError") else None
        executed_version = str(response.get("ExecutedVersion") or LATEST)
        result = InvocationResult(function_name, None if error else decoded, error, executed_version)
        self.invocations.append(result)
        return result

    @property
    def lambda_endpoint_url(self) -> None:
        """None: Lambda requests go to the backend, which runs the code."""
        return None

    def event_source_mappings(self) -> list[EventSourceMapping]:
        return self._queues.mappings()

    def poll_once(self) -> DrainResult:
        return DrainResult(settled=self._queues.empty())

    def drain(self, max_batches: int = 200, timeout_seconds: float = 120.0) -> DrainResult:
        """Wait (up to ``timeout_seconds``) until the backend's mappings have emptied their queues."""
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self._queues.empty():
                return DrainResult(settled=True)
            time.sleep(IDLE_POLL_SECONDS)
        return DrainResult(settled=False)

    def start(self) -> None:
        """The backend polls by itself."""

    def stop(self) -> None:
        """The backend polls by itself."""

    def close(self) -> None:
        """Nothing to stop: the backend runs the code and polls the queues."""
