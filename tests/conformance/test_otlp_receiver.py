"""stepwell.testing.otlp_receiver: what OTLP/HTTP exporters send is kept and flattened; anything else is
refused with a status and a reason, and kept nowhere."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from stepwell.testing.otlp_receiver import TRACES_PATH, OtlpEncoding, OtlpReceiver

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver(max_body_bytes=64 * 1024) as otlp:
        yield otlp


def _protobuf_request() -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    service = resource_spans.resource.attributes.add()
    service.key, service.value.string_value = "service.name", "orders"
    span = resource_spans.scope_spans.add().spans.add()
    span.trace_id, span.span_id = bytes.fromhex(TRACE_ID), bytes.fromhex(SPAN_ID)
    span.parent_span_id, span.name = bytes.fromhex(PARENT_ID), "charge"
    attempt = span.attributes.add()
    attempt.key, attempt.value.int_value = "durable.attempt.number", 2
    return request.SerializeToString()


def _json_request() -> bytes:
    span = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "name": "Workflow",
        "attributes": [{"key": "durable.execution.arn", "value": {"stringValue": "arn:x"}}],
    }
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "orders"}}]}
    return json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}).encode()


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_protobuf_and_gzip_json_are_kept_and_flattened(receiver: OtlpReceiver) -> None:
    status, body = _post(
        receiver.traces_endpoint, _protobuf_request(), {"Content-Type": "application/x-protobuf"}
    )
    assert status == 200
    assert ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse()
    status, body = _post(
        receiver.traces_endpoint,
        gzip.compress(_json_request()),
        {"Content-Type": "application/json; charset=utf-8", "Content-Encoding": "gzip"},
    )
    assert (status, json.loads(body)) == (200, {})
    assert [export.encoding for export in receiver.exports()] == [OtlpEncoding.PROTOBUF, OtlpEncoding.JSON]
    charge, workflow = receiver.spans()
    assert (charge.trace_id, charge.span_id, charge.parent_span_id) == (TRACE_ID, SPAN_ID, PARENT_ID)
    assert (charge.name, dict(charge.attributes), charge.service_name) == (
        "charge",
        {"durable.attempt.number": 2},
        "orders",
    )
    assert (workflow.name, workflow.parent_span_id, dict(workflow.attributes)) == (
        "Workflow",
        None,
        {"durable.execution.arn": "arn:x"},
    )
    receiver.clear()
    assert receiver.spans() == []


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "reason"),
    [
        ("/v1/metrics", b"", {"Content-Type": "application/x-protobuf"}, 404, "only /v1/traces"),
        (TRACES_PATH, b"{}", {"Content-Type": "text/plain"}, 415, "allowed are application/x-protobuf"),
        (TRACES_PATH, b"\xff\xff", {"Content-Type": "application/x-protobuf"}, 400, "malformed"),
        (TRACES_PATH, b"[1]", {"Content-Type": "application/json"}, 400, "must be an object"),
        (TRACES_PATH, b"x", {"Content-Type": "application/json", "Content-Encoding": "br"}, 415, "gzip"),
        (
            TRACES_PATH,
            b"not gzip",
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            400,
            "gzip",
        ),
        # A small body that inflates past the bound, and a body over it.
        (
            TRACES_PATH,
            gzip.compress(b" " * 200_000),
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
            413,
            "expands beyond 65536",
        ),
        (TRACES_PATH, b" " * 70_000, {"Content-Type": "application/json"}, 413, "at most 65536"),
    ],
)
def test_what_is_not_a_trace_export_is_refused(
    receiver: OtlpReceiver, path: str, body: bytes, headers: dict[str, str], status: int, reason: str
) -> None:
    answered, text = _post(receiver.endpoint + path, body, headers)
    assert (answered, reason in text.decode()) == (status, True), text
    assert receiver.exports() == []


def test_endpoint_needs_a_started_receiver() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = OtlpReceiver().endpoint
    with pytest.raises(ValueError, match="max_body_bytes=0"):
        OtlpReceiver(max_body_bytes=0)
