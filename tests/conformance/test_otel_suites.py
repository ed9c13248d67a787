"""AWS's OpenTelemetry conformance suites (otel-invocation, otel-execution, otel-long-running) on the local
backend: workflows using the SDK's OpenTelemetry plugin unmodified (handlers/otel), their spans exported over
OTLP/HTTP to a receiver on 127.0.0.1 and judged by AWS's validate_trace (otel_cases.py). Known failures are
strict xfails naming their cause (KNOWN_FAILURES), so a fix shows as an unexpected pass."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_cases import OTEL_SITE, SERVICE_NAME, otel_cases, run_otel_case
from runner import Case
from stepwell.testing.otlp_receiver import OtlpReceiver

CASES = otel_cases()

# case id -> why it fails (each a strict xfail: it must fail, for that reason, until fixed).
KNOWN_FAILURES: dict[str, str] = {}


def _params() -> list[object]:
    if not CASES:
        marks = (
            [] if os.environ.get("CI", "").lower() == "true" else [pytest.mark.skip(reason="no otel wheels")]
        )
        return [pytest.param(None, marks=marks, id="no-otel-conformance")]
    params = []
    for case in CASES:
        reason = KNOWN_FAILURES.get(case.case_id)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(case, marks=marks, id=case.test_id))
    return params


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    """The receiver, and the process's global tracer provider exporting to it over OTLP/HTTP protobuf (the
    plugin uses the global provider, as with the ADOT layer, and flushes it at each invocation's end).
    OpenTelemetry lets a process set its global provider once: later modules reuse this one."""
    with OtlpReceiver() as otlp:
        provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp.traces_endpoint)))
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:
            pytest.fail("another global tracer provider was set before this module's")
        yield otlp
        provider.shutdown()


@pytest.mark.parametrize("otel_case", _params())
def test_otel_case(otel_case: Case | None, receiver: OtlpReceiver) -> None:
    assert otel_case is not None, f"CI=true but AWS's otel suites were not found: no {OTEL_SITE}"
    result = run_otel_case(otel_case, receiver)
    assert result.passed, "\n".join(
        [
            *result.errors,
            "actual history:",
            *(str(event) for event in result.history),
            "spans:",
            *result.spans,
        ]
    )


def test_spans_of_the_other_view_fail_the_case(receiver: OtlpReceiver) -> None:
    """The judge is not vacuous: the invocation view's spans for an execution-view case (success) fail it,
    by AWS's validator, while the history and result still pass."""
    case = next((case for case in CASES if case.case_id == "otel-execution-1"), None)
    if case is None:
        pytest.skip("no otel wheels")
    wrong_view = Case(
        case.suite, case.case_id, case.yaml_path, case.handler_path.with_name("invocation.py"), case.data
    )
    result = run_otel_case(wrong_view, receiver)
    assert result.errors and all(error.startswith("OpenTelemetry: ") for error in result.errors), (
        result.errors
    )
    assert any("expect.parent.name: expected 'Workflow'" in error for error in result.errors), result.errors
