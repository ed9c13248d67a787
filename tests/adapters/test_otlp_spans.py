"""The span recorder port's contract (stepwell.ports.spans) on the no-op default and the OTLP/HTTP adapter
(stepwell.aws.otlp_spans, to a local receiver); the OTLP endpoint document and its reading from a Secrets
Manager secret or an SSM parameter on moto (stepwell.aws.otlp_endpoint, wiring.build.span_recorder)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from moto import mock_aws
from stepwell.aws.clients import AwsClients
from stepwell.aws.otlp_endpoint import OtlpEndpoint, parse_otlp_endpoint
from stepwell.aws.otlp_spans import OtlpSpanRecorder
from stepwell.client import StepwellClient
from stepwell.config import ConfigError
from stepwell.core.registry import Registry
from stepwell.core.tracing import trace_id_of
from stepwell.model import InvokeMessage
from stepwell.ports.spans import NoSpans, SpanRecorder
from stepwell.testing.otlp_receiver import OtlpReceiver
from stepwell.wiring.build import span_recorder
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment

REGION = "eu-west-1"
TRACE = "6b0a50b9cfb26d38b1e77f56130efb0a"
PARENT = "0e7be06134132673"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@pytest.fixture(params=["none", "otlp"])
def recorder(request: pytest.FixtureRequest, receiver: OtlpReceiver) -> SpanRecorder:
    if request.param == "none":
        return NoSpans()
    return OtlpSpanRecorder(OtlpEndpoint(receiver.traces_endpoint))


def test_every_recorder_keeps_the_ports_contract(recorder: SpanRecorder, receiver: OtlpReceiver) -> None:
    parent = recorder.start("outer", trace_id=TRACE, parent_span_id=PARENT, attributes={"a": 1})
    child = recorder.start("inner", trace_id=TRACE, parent_span_id=parent.span_id)
    open_span = recorder.start("never-ended", trace_id=TRACE, parent_span_id=None)
    assert len(parent.span_id) == 16 and int(parent.span_id, 16) >= 0
    child.set("flag", True)
    child.end(error="ValueError")
    child.end()  # a second end changes nothing
    parent.end()
    recorder.flush()
    recorder.flush()  # nothing new: nothing sent
    spans = receiver.spans()
    if not recorder.enabled:
        assert spans == [] and open_span.span_id == parent.span_id  # the no-op records nothing
        return
    assert [(span.name, span.trace_id, span.parent_span_id) for span in spans] == [
        ("inner", TRACE, parent.span_id),
        ("outer", TRACE, PARENT),
    ]
    assert spans[0].attributes == {"flag": True} and spans[1].attributes == {"a": 1}
    assert len(receiver.exports()) == 1


def test_an_export_the_collector_refuses_is_dropped_logged_and_counted(
    receiver: OtlpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    refused = OtlpSpanRecorder(OtlpEndpoint(receiver.endpoint + "/elsewhere"))  # the receiver answers 404
    for _ in range(3):
        refused.start("s", trace_id=TRACE, parent_span_id=None).end()
    with caplog.at_level(logging.WARNING):
        refused.flush()
    assert (refused.failed_exports, refused.dropped_spans, refused.exports) == (1, 3, 0)
    assert "HTTPError" in caplog.text


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("not json", "not JSON"),
        ("[]", "expected a JSON object"),
        ('{"endpoint": "ftp://collector:4318"}', "http:// or https://"),
        ('{"endpoint": "https://user:pw@collector:4318"}', "no user, query or fragment"),
        ('{"endpoint": "https://collector:99999"}', "is not a URL"),
        ('{"endpoint": "https://c:4318", "extra": 1}', "unknown keys ['extra']"),
        ('{"endpoint": "https://c:4318", "headers": {"bad name": "x"}}', "is not an HTTP token"),
        (
            '{"endpoint": "https://c:4318", "headers": {"x-key": "s3cr3t\\r\\nInjected: 1"}}',
            "printable ASCII",
        ),
    ],
)
def test_a_bad_endpoint_document_is_refused_naming_its_source_and_never_a_header_value(
    document: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match="secret S") as refused:
        parse_otlp_endpoint("secret S", document)
    assert problem in str(refused.value) and "s3cr3t" not in str(refused.value)


def test_the_endpoint_takes_a_base_or_a_traces_url_and_hides_its_headers() -> None:
    base = parse_otlp_endpoint(
        "p", '{"endpoint": "https://c.example.com:4318/", "headers": {"x-key": "s3cr3t"}}'
    )
    assert base.traces_url == "https://c.example.com:4318/v1/traces"
    assert base.headers == {"x-key": "s3cr3t"} and "s3cr3t" not in repr(base)
    full = parse_otlp_endpoint("p", '{"endpoint": "http://127.0.0.1:4318/v1/traces"}')
    assert full.traces_url == "http://127.0.0.1:4318/v1/traces"


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[AwsClients]:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        yield AwsClients(region=REGION)


def test_spans_reach_the_collector_the_secret_names(clients: AwsClients, receiver: OtlpReceiver) -> None:
    document = {"endpoint": receiver.endpoint, "headers": {"x-collector-key": "k1"}}
    secret = boto3.client("secretsmanager", region_name=REGION).create_secret(
        Name="otlp", SecretString=json.dumps(document)
    )["ARN"]
    recorder = span_recorder({"STEPWELL_WORKER_SPANS": "true", "STEPWELL_OTLP_SECRET_ARN": secret}, clients)
    assert isinstance(recorder, OtlpSpanRecorder)
    recorder.start("s", trace_id=TRACE, parent_span_id=PARENT).end()
    recorder.flush()
    assert [span.name for span in receiver.spans()] == ["s"]


def test_the_parameter_gives_the_endpoint_and_spans_stay_off_unless_asked(clients: AwsClients) -> None:
    clients.ssm.put_parameter(
        Name="/unit/otlp", Value='{"endpoint": "https://c.example.com"}', Type="SecureString"
    )
    on = span_recorder({"STEPWELL_WORKER_SPANS": "true", "STEPWELL_OTLP_PARAMETER": "/unit/otlp"}, clients)
    assert isinstance(on, OtlpSpanRecorder)
    assert isinstance(span_recorder({"STEPWELL_OTLP_PARAMETER": "/unit/otlp"}, clients), NoSpans)


def test_an_unreadable_endpoint_turns_spans_off_with_an_error_in_the_log(
    clients: AwsClients, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        recorder = span_recorder(
            {"STEPWELL_WORKER_SPANS": "true", "STEPWELL_OTLP_PARAMETER": "/unit/missing"}, clients
        )
    assert isinstance(recorder, NoSpans)
    assert "SSM parameter /unit/missing could not be read: ParameterNotFound" in caplog.text


def test_a_bad_setting_is_the_deployments_error(clients: AwsClients) -> None:
    with pytest.raises(ConfigError, match="STEPWELL_WORKER_SPANS is true but neither"):
        span_recorder({"STEPWELL_WORKER_SPANS": "true"}, clients)


@durable_execution
def _one_step(event: Any, context: DurableContext) -> int:
    return int(context.step(lambda _: 41, name="add")) + 1


def test_the_deployed_worker_sends_each_runs_spans_in_the_executions_trace(
    deployment: Deployment, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EntryRuntime.from_config (the worker function's wiring) reads the deployment's span settings."""
    secret = boto3.client("secretsmanager", region_name=deployment.clients.region).create_secret(
        Name="otlp", SecretString=json.dumps({"endpoint": receiver.endpoint})
    )["ARN"]
    monkeypatch.setenv("STEPWELL_WORKER_SPANS", "true")
    monkeypatch.setenv("STEPWELL_OTLP_SECRET_ARN", secret)
    registry = Registry()
    registry.register("one-step", _one_step)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry)
    client = StepwellClient(deployment.config, deployment.clients, registry=registry)
    execution = client.start_execution("one-step", None)
    runtime.handle_body(InvokeMessage(execution).to_body())

    described = client.describe_execution(execution)
    assert described["Status"] == "SUCCEEDED"
    spans = receiver.spans()
    assert {"stepwell.worker", "stepwell.run"} <= {span.name for span in spans}
    assert {span.trace_id for span in spans} == {trace_id_of(described["TraceHeader"])}
