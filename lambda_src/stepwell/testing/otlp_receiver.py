"""An OTLP/HTTP trace receiver for tests: the collector a workflow's OpenTelemetry exporter sends to.

`OtlpReceiver` listens on 127.0.0.1 (port 0: one the system picks) and takes `POST /v1/traces` as the
OTLP/HTTP specification has it: an `ExportTraceServiceRequest` in protobuf (`application/x-protobuf`) or
in OTLP/JSON (`application/json`), either optionally gzip-compressed (`Content-Encoding: gzip`), answered
with an empty `ExportTraceServiceResponse` in the request's encoding. Every accepted request is kept as it
came (`exports()`, for a normalizer such as the one in AWS's otel conformance tests) and its spans flattened
(`spans()`, for a test's own assertions):

    with OtlpReceiver() as receiver:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
        ...  # run the workflow with the SDK's OpenTelemetry plugin and an OTLP/HTTP exporter
        names = {span.name for span in receiver.spans()}

Input is bounded: a body over `max_body_bytes` (before and after decompression), a malformed body, another
path, method or content type is refused with 4xx naming what is wrong and what is allowed, and kept nowhere.
Needs `opentelemetry-proto` (in `stepwell[testing]`).
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

TRACES_PATH = "/v1/traces"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
_ALLOWED_TYPES = "application/x-protobuf, application/json"


class OtlpEncoding(Enum):
    PROTOBUF = "application/x-protobuf"
    JSON = "application/json"


@dataclass(frozen=True)
class OtlpExport:
    """One accepted export request: `payload` is the decoded `ExportTraceServiceRequest` for protobuf,
    the parsed OTLP/JSON object for JSON."""

    encoding: OtlpEncoding
    payload: ExportTraceServiceRequest | Mapping[str, Any]


@dataclass(frozen=True)
class ReceivedSpan:
    """A span as received, ids in lower-case hex (parent None for a root)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    attributes: Mapping[str, Any]
    service_name: str | None


class _Refused(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class OtlpReceiver:
    """The receiver; `start()`/`stop()` or a `with` block. Thread-safe: exporters post concurrently."""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    ):
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes={max_body_bytes}: must be at least 1")
        self._host, self._port, self.max_body_bytes = host, port, max_body_bytes
        self._lock = threading.Lock()
        self._exports: list[OtlpExport] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------------------------------- lifecycle

    def start(self) -> OtlpReceiver:
        if self._server is not None:
            raise RuntimeError("OtlpReceiver already started")
        server = ThreadingHTTPServer((self._host, self._port), _handler_class(self))
        server.daemon_threads = True
        # serve_forever polls for shutdown: a short interval keeps stop() (every test's teardown) quick.
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="otlp-receiver", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        """The base URL for OTEL_EXPORTER_OTLP_ENDPOINT (exporters append /v1/traces)."""
        if self._server is None:
            raise RuntimeError("OtlpReceiver not started: call start() or use it in a with block")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def traces_endpoint(self) -> str:
        """The full URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT."""
        return self.endpoint + TRACES_PATH

    # ------------------------------------------------------------------------------------------ store

    def exports(self) -> list[OtlpExport]:
        """Every accepted request so far, in arrival order."""
        with self._lock:
            return list(self._exports)

    def clear(self) -> None:
        with self._lock:
            self._exports.clear()

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, flattened from both encodings."""
        spans: list[ReceivedSpan] = []
        for export in self.exports():
            if isinstance(export.payload, ExportTraceServiceRequest):
                spans += _protobuf_spans(export.payload)
            else:
                spans += _json_spans(export.payload)
        return spans

    def accept(self, *, content_type: str, content_encoding: str, body: bytes) -> bytes:
        """Decode and keep one request (the HTTP handler's work, callable directly); the response body.
        Raises _Refused with the status and reason for a request that is not an OTLP trace export."""
        encoding = _encoding_of(content_type)
        data = self._decompressed(content_encoding, body)
        payload: ExportTraceServiceRequest | Mapping[str, Any]
        if encoding is OtlpEncoding.PROTOBUF:
            try:
                payload = ExportTraceServiceRequest.FromString(data)
            except DecodeError as error:
                raise _Refused(
                    HTTPStatus.BAD_REQUEST, f"malformed ExportTraceServiceRequest: {error}"
                ) from None
            response = ExportTraceServiceResponse().SerializeToString()
        else:
            try:
                parsed = json.loads(data)
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed OTLP/JSON: {error}") from None
            if not isinstance(parsed, dict) or not isinstance(parsed.get("resourceSpans", []), list):
                raise _Refused(
                    HTTPStatus.BAD_REQUEST, "OTLP/JSON must be an object whose resourceSpans is a list"
                )
            payload = parsed
            response = b"{}"
        with self._lock:
            self._exports.append(OtlpExport(encoding, payload))
        return response

    def _decompressed(self, content_encoding: str, body: bytes) -> bytes:
        coding = content_encoding.strip().lower()
        if coding in ("", "identity"):
            return body
        if coding != "gzip":
            raise _Refused(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"Content-Encoding {content_encoding[:40]!r}: allowed are gzip and identity",
            )
        # Bounded: a small gzip body may expand without limit.
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            data = inflater.decompress(body, self.max_body_bytes + 1)
        except zlib.error as error:
            raise _Refused(HTTPStatus.BAD_REQUEST, f"malformed gzip body: {error}") from None
        if len(data) > self.max_body_bytes or inflater.unconsumed_tail:
            raise _Refused(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"gzip body expands beyond {self.max_body_bytes} bytes",
            )
        return data


def _encoding_of(content_type: str) -> OtlpEncoding:
    media = content_type.split(";", 1)[0].strip().lower()
    for encoding in OtlpEncoding:
        if media == encoding.value:
            return encoding
    raise _Refused(
        HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"Content-Type {content_type[:80]!r}: allowed are {_ALLOWED_TYPES}"
    )


def _handler_class(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            content_type = self.headers.get("Content-Type", "")
            try:
                if self.path.split("?", 1)[0] != TRACES_PATH:
                    raise _Refused(HTTPStatus.NOT_FOUND, f"path {self.path[:80]!r}: only {TRACES_PATH}")
                body = self._body()
                response = receiver.accept(
                    content_type=content_type,
                    content_encoding=self.headers.get("Content-Encoding", ""),
                    body=body,
                )
            except _Refused as refused:
                self._reply(refused.status, "text/plain", str(refused).encode())
                return
            self._reply(HTTPStatus.OK, _encoding_of(content_type).value, response)

        def do_GET(self) -> None:
            self._reply(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", f"POST {TRACES_PATH} only".encode())

        def _body(self) -> bytes:
            length_text = self.headers.get("Content-Length")
            if length_text is None or not length_text.isdigit():
                raise _Refused(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
            length = int(length_text)
            if length > receiver.max_body_bytes:
                self.close_connection = True  # the unread body must not be parsed as the next request
                raise _Refused(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    f"body of {length} bytes: at most {receiver.max_body_bytes} are allowed",
                )
            return self.rfile.read(length)

        def _reply(self, status: HTTPStatus, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a test's output is not the place for every export."""

    return Handler


# ------------------------------------------------------------------------------------------- flatten


def _any_value(value: AnyValue) -> Any:
    field = value.WhichOneof("value")
    if field == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if field == "kvlist_value":
        return {item.key: _any_value(item.value) for item in value.kvlist_value.values}
    if field == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, field) if field else None


def _protobuf_spans(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = {item.key: _any_value(item.value) for item in resource_spans.resource.attributes}
        service = resource.get("service.name")
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex() or None,
                        name=span.name,
                        attributes={item.key: _any_value(item.value) for item in span.attributes},
                        service_name=str(service) if service is not None else None,
                    )
                )
    return spans


def _json_value(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])  # OTLP/JSON writes 64-bit integers as strings
    if "arrayValue" in value:
        return [_json_value(item) for item in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return _json_attributes(value["kvlistValue"].get("values", []))
    return None


def _json_attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        str(item["key"]): _json_value(item.get("value"))
        for item in items
        if isinstance(item, Mapping) and "key" in item
    }


def _json_spans(payload: Mapping[str, Any]) -> list[ReceivedSpan]:
    spans: list[ReceivedSpan] = []
    for resource_spans in payload.get("resourceSpans", []):
        if not isinstance(resource_spans, Mapping):
            continue
        resource = _json_attributes((resource_spans.get("resource") or {}).get("attributes", []))
        service = resource.get("service.name")
        for scope_spans in resource_spans.get("scopeSpans", []) or []:
            for span in (scope_spans or {}).get("spans", []) or []:
                if not isinstance(span, Mapping):
                    continue
                spans.append(
                    ReceivedSpan(
                        trace_id=str(span.get("traceId", "")).lower(),
                        span_id=str(span.get("spanId", "")).lower(),
                        parent_span_id=str(span.get("parentSpanId") or "").lower() or None,
                        name=str(span.get("name", "")),
                        attributes=_json_attributes(span.get("attributes", [])),
                        service_name=str(service) if service is not None else None,
                    )
                )
    return spans


__all__ = ["TRACES_PATH", "OtlpEncoding", "OtlpExport", "OtlpReceiver", "ReceivedSpan"]
