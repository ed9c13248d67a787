"""The worker's own spans (stepwell.core.run_spans) reach an OTLP/HTTP receiver in the execution's trace:
each run a stepwell.worker span, child of the trace header's Parent, with lease, load, run and release
children and a checkpoint span per written checkpoint under run; a dead collector costs a run nothing but
a logged, counted failure; with the default recorder nothing is recorded."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.aws.otlp_endpoint import OtlpEndpoint
from stepwell.aws.otlp_spans import OtlpSpanRecorder
from stepwell.core.tracing import parse_trace_header
from stepwell.ports.spans import NoSpans
from stepwell.testing.local import LocalStepwell
from stepwell.testing.otlp_receiver import OtlpReceiver, ReceivedSpan
from stepwell.wiring.entry import EntryRuntime


@durable_execution
def two_steps_and_a_wait(event: Any, context: DurableContext) -> str:
    first = context.step(lambda _: "a", name="first")
    context.wait(Duration.from_seconds(60), name="pause")
    second = context.step(lambda _: "b", name="second")
    return first + second


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _run(stepwell_local: LocalStepwell) -> tuple[str, str]:
    stepwell_local.register("spans", two_steps_and_a_wait)
    execution_id = stepwell_local.start("spans")
    stepwell_local.run_to_completion(execution_id)
    description = stepwell_local.describe(execution_id)
    assert description["Status"] == "SUCCEEDED"
    return execution_id, description["TraceHeader"]


def test_the_workers_spans_join_the_executions_trace_as_its_children(
    stepwell_local: LocalStepwell, receiver: OtlpReceiver
) -> None:
    stepwell_local.worker.spans = OtlpSpanRecorder(OtlpEndpoint(receiver.traces_endpoint))
    execution_id, header = _run(stepwell_local)
    trace = parse_trace_header(header)
    spans = receiver.spans()
    assert {span.trace_id for span in spans} == {trace.trace_id}
    assert {span.service_name for span in spans} == {"stepwell-worker"}
    by_id = {span.span_id: span for span in spans}
    runs = [span for span in spans if span.name == "stepwell.worker"]
    assert len(runs) >= 2  # the first invocation and the one after the wait
    for run in runs:
        assert run.parent_span_id == trace.parent
        assert run.attributes["stepwell.execution_id"] == execution_id
        assert run.attributes["stepwell.workflow"] == "spans"
        children = [span.name for span in spans if span.parent_span_id == run.span_id]
        assert children[:2] == ["stepwell.lease", "stepwell.load"]
        assert children[-1] == "stepwell.release" and "stepwell.run" in children
    assert [run.attributes["stepwell.outcome"] for run in runs][-1] == "finished"
    checkpoints = [span for span in spans if span.name == "stepwell.checkpoint"]
    assert checkpoints, "every written checkpoint has a span"
    for checkpoint in checkpoints:
        parent = by_id[checkpoint.parent_span_id or ""]
        assert parent.name == "stepwell.run"
        assert by_id[parent.parent_span_id or ""].name == "stepwell.worker"
        assert int(checkpoint.attributes["stepwell.updates"]) >= 1
    # One export per run: the spans are batched and sent as each run ends.
    assert len(receiver.exports()) == len(runs)


def test_a_dead_collector_costs_the_run_nothing_but_a_logged_counted_failure(
    stepwell_local: LocalStepwell, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    recorder = OtlpSpanRecorder(OtlpEndpoint(f"http://127.0.0.1:{port}/v1/traces"), timeout=0.5)
    stepwell_local.worker.spans = recorder
    with caplog.at_level(logging.WARNING, logger="stepwell.aws.otlp_spans"):
        _run(stepwell_local)
    assert recorder.failed_exports == 1  # the first failure pauses sending: later runs drop their spans
    assert recorder.dropped_spans > 0 and recorder.exports == 0
    assert any("could not send" in record.getMessage() for record in caplog.records)


def test_spans_are_off_by_default(stepwell_local: LocalStepwell, receiver: OtlpReceiver) -> None:
    assert isinstance(stepwell_local.worker.spans, NoSpans)
    _run(stepwell_local)
    assert receiver.spans() == []


def test_a_failed_phase_ends_its_span_failed_and_the_run_span_with_the_error(
    stepwell_local: LocalStepwell, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    stepwell_local.worker.spans = OtlpSpanRecorder(OtlpEndpoint(receiver.traces_endpoint))
    stepwell_local.register("spans", two_steps_and_a_wait)
    execution_id = stepwell_local.start("spans")
    store = stepwell_local.engine.store

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("the table is away")

    monkeypatch.setattr(store, "acquire_lease", broken)
    with pytest.raises(ConnectionError):
        stepwell_local.worker.run(execution_id)
    spans: dict[str, ReceivedSpan] = {span.name: span for span in receiver.spans()}
    assert set(spans) == {"stepwell.worker", "stepwell.lease"}
    assert spans["stepwell.lease"].parent_span_id == spans["stepwell.worker"].span_id
    exported = receiver.exports()[0].payload
    assert isinstance(exported, dict)
    statuses = {
        span["name"]: span.get("status") for span in exported["resourceSpans"][0]["scopeSpans"][0]["spans"]
    }
    assert statuses == {
        "stepwell.lease": {"code": 2, "message": "ConnectionError"},
        "stepwell.worker": {"code": 2, "message": "ConnectionError"},
    }


@durable_execution
def one_step(event: Any, context: DurableContext) -> str:
    return str(context.step(lambda _: "done", name="only"))


def test_a_batch_of_messages_sends_its_spans_in_one_request_per_invocation(
    stepwell_local: LocalStepwell, receiver: OtlpReceiver
) -> None:
    """The worker function's entry flushes once per Lambda invocation: three messages, one POST."""
    recorder = OtlpSpanRecorder(OtlpEndpoint(receiver.traces_endpoint))
    stepwell_local.register("batched", one_step)
    executions = [stepwell_local.start("batched", {"n": n}) for n in range(3)]
    bodies = []
    while (body := stepwell_local.queue.pop_due(stepwell_local.clock.now())) is not None:
        bodies.append(body)
    assert sorted(body["executionId"] for body in bodies) == sorted(executions)
    records = [
        {"messageId": f"m{n}", "body": json.dumps(body), "eventSource": "aws:sqs"}
        for n, body in enumerate(bodies)
    ]
    runtime = EntryRuntime(stepwell_local.engine, spans=recorder)
    answer = runtime.handle_event({"Records": records}, None)

    assert answer == {"batchItemFailures": []}
    assert {stepwell_local.describe(execution)["Status"] for execution in executions} == {"SUCCEEDED"}
    assert recorder.exports == 1 and len(receiver.exports()) == 1
    runs = [span for span in receiver.spans() if span.name == "stepwell.worker"]
    assert sorted(str(run.attributes["stepwell.execution_id"]) for run in runs) == sorted(executions)
    # Outside an invocation (a harness calling the worker itself) each run still sends its own.
    again = stepwell_local.start("batched", {"n": 3})
    runtime.worker.run(again)
    assert recorder.exports == 2
