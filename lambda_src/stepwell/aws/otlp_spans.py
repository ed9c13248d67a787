"""The worker's spans sent to an OTLP/HTTP collector as OTLP/JSON (stepwell.ports.spans' adapter).

Standard library only (urllib), so the Lambda package stays small. Spans are kept in memory as they end
and sent in one request at `flush` (once per Lambda invocation: Worker.spans_per_invocation; after each
run elsewhere). Sending is bounded: at most MAX_BUFFERED_SPANS wait (more are dropped and counted), a
request waits `timeout` seconds at most, and a failed request drops its spans, is logged (its error type
and the URL, never the headers) and counted, and pauses sending for PAUSE_AFTER_FAILURE_SECONDS, so a dead
collector costs one invocation one timeout, not every one. Nothing here raises into the run.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import urllib.request
from collections.abc import Mapping
from typing import Any

from stepwell.aws.otlp_endpoint import OtlpEndpoint
from stepwell.ports.spans import Span, SpanValue

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 1.0
MAX_BUFFERED_SPANS = 2048
PAUSE_AFTER_FAILURE_SECONDS = 30.0
SERVICE_NAME = "stepwell-worker"
SCOPE_NAME = "stepwell.worker"
_SPAN_KIND_INTERNAL = 1
_STATUS_ERROR = 2


class _OtlpSpan:
    """One span being recorded; its OTLP/JSON form is made once, when it ends."""

    def __init__(
        self,
        recorder: OtlpSpanRecorder,
        name: str,
        *,
        trace_id: str,
        parent_span_id: str | None,
        attributes: Mapping[str, SpanValue] | None,
    ) -> None:
        self._recorder = recorder
        self._name = name
        self._trace_id = trace_id
        self._parent = parent_span_id
        self._attributes: dict[str, SpanValue] = dict(attributes or {})
        self._start = time.time_ns()
        self._ended = False
        self.span_id = os.urandom(8).hex()

    def set(self, key: str, value: SpanValue) -> None:
        self._attributes[key] = value

    def end(self, *, error: str | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        span: dict[str, Any] = {
            "traceId": self._trace_id,
            "spanId": self.span_id,
            "name": self._name,
            "kind": _SPAN_KIND_INTERNAL,
            "startTimeUnixNano": str(self._start),
            "endTimeUnixNano": str(time.time_ns()),
            "attributes": [{"key": key, "value": _value(value)} for key, value in self._attributes.items()],
        }
        if self._parent is not None:
            span["parentSpanId"] = self._parent
        if error is not None:
            span["status"] = {"code": _STATUS_ERROR, "message": error}
        self._recorder.ended(span)


def _value(value: SpanValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # OTLP/JSON writes 64-bit integers as strings
    return {"stringValue": value}


class OtlpSpanRecorder:
    """Spans to `endpoint` (stepwell.aws.otlp_endpoint), sent at each flush. `failed_exports` and
    `dropped_spans` count what went wrong (for tests and the bench); `exports` counts requests sent."""

    enabled = True

    def __init__(
        self,
        endpoint: OtlpEndpoint,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        service_name: str = SERVICE_NAME,
        opener: urllib.request.OpenerDirector | None = None,
    ) -> None:
        if not 0 < timeout <= 10:
            raise ValueError(f"timeout={timeout}: an export must wait more than 0 and at most 10 seconds")
        self._endpoint = endpoint
        self._timeout = timeout
        self._resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]}
        # No proxy from the environment and no redirects' surprises: the collector named, nothing else.
        self._opener = opener or urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._lock = threading.Lock()
        self._ended: list[dict[str, Any]] = []
        self._paused_until = 0.0
        self.exports = 0
        self.failed_exports = 0
        self.dropped_spans = 0

    def start(
        self,
        name: str,
        *,
        trace_id: str,
        parent_span_id: str | None,
        attributes: Mapping[str, SpanValue] | None = None,
    ) -> Span:
        return _OtlpSpan(self, name, trace_id=trace_id, parent_span_id=parent_span_id, attributes=attributes)

    def ended(self, span: dict[str, Any]) -> None:
        with self._lock:
            if len(self._ended) >= MAX_BUFFERED_SPANS:
                self.dropped_spans += 1
                return
            self._ended.append(span)

    def flush(self) -> None:
        with self._lock:
            spans, self._ended = self._ended, []
            if not spans:
                return
            if time.monotonic() < self._paused_until:
                self.dropped_spans += len(spans)
                return
        body = json.dumps(
            {
                "resourceSpans": [
                    {
                        "resource": self._resource,
                        "scopeSpans": [{"scope": {"name": SCOPE_NAME}, "spans": spans}],
                    }
                ]
            },
            separators=(",", ":"),
        ).encode()
        request = urllib.request.Request(
            self._endpoint.traces_url,
            data=body,
            method="POST",
            headers={**self._endpoint.headers, "Content-Type": "application/json"},
        )
        try:
            with self._opener.open(request, timeout=self._timeout) as response:
                response.read(65_536)  # the (empty) ExportTraceServiceResponse; bounded
            with self._lock:
                self.exports += 1
        except Exception as error:  # tracing never fails a run: any failure drops this batch
            with self._lock:
                self.failed_exports += 1
                self.dropped_spans += len(spans)
                self._paused_until = time.monotonic() + PAUSE_AFTER_FAILURE_SECONDS
            logger.warning(
                "could not send %d spans to %s (%s); sending pauses for %.0f s",
                len(spans),
                self._endpoint.traces_url,
                type(error).__name__,
                PAUSE_AFTER_FAILURE_SECONDS,
            )


__all__ = ["DEFAULT_TIMEOUT_SECONDS", "OtlpSpanRecorder"]
