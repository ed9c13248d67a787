"""The worker's structured logs (stepwell.core.logs): every line one JSON object carrying the execution, its
workflow and the Lambda request id, never a payload; and the EMF record of the same message."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.logs import (
    CONTEXT_FIELDS,
    JsonFormatter,
    current_context,
    install_json_logging,
    log_context,
)
from stepwell.core.metrics import EmfMetrics
from stepwell.core.registry import Registry
from stepwell.model import ExecutionRecord, ExecutionStatus, InvokeMessage, make_execution_id
from stepwell.testing.local import metric_totals
from stepwell.wiring import entry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment

SECRET = "card-4111-1111-1111-1111"
LINE_FIELDS = {"level", "time", "logger", "message", *CONTEXT_FIELDS}


class LambdaContext:
    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id


@pytest.fixture
def json_logging() -> Iterator[None]:
    """install_json_logging as load_runtime calls it; the root handlers' formatters and levels (pytest's,
    here) and the engine's level are put back after the test."""
    root = logging.getLogger()
    before = {handler: (handler.formatter, handler.level) for handler in root.handlers}
    level = logging.getLogger("stepwell").level
    install_json_logging("INFO")
    yield
    for handler in root.handlers[:]:
        if handler in before:
            handler.setFormatter(before[handler][0])
            handler.setLevel(before[handler][1])
        else:
            root.removeHandler(handler)
    logging.getLogger("stepwell").setLevel(level)


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert len(lines) == len([line for line in text.splitlines() if line.strip()]), text  # all of them JSON
    return lines


@durable_execution
def crashes(event: Any, context: DurableContext) -> str:
    def dies(_: StepContext) -> str:
        raise SystemExit(f"could not charge {event['card']}")

    return context.step(dies, name="charge")


def test_a_message_s_lines_carry_its_execution_workflow_and_request_id(
    deployment: Deployment, caplog: pytest.LogCaptureFixture, json_logging: None
) -> None:
    registry = Registry()
    registry.register("crashes", crashes)
    clock = VirtualClock()
    records: list[dict[str, Any]] = []
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(
        deployment.config,
        deployment.clients,
        registry=registry,
        clock=clock,
        metrics=EmfMetrics("orders-prod", write=records.append),
    )
    execution_id = client.start_execution("crashes", {"card": SECRET}, execution_name="run-1")
    (message,) = deployment.clients.sqs.receive_message(QueueUrl=deployment.config.work_queue_url)["Messages"]
    caplog.set_level(logging.INFO)

    answer = runtime.handle_event(
        {"Records": [{"messageId": message["MessageId"], "body": message["Body"]}]}, LambdaContext("req-1")
    )

    assert answer == {"batchItemFailures": []}
    lines = json_lines(caplog.text)
    engine_lines = [line for line in lines if line["logger"].startswith("stepwell")]
    assert {line["logger"] for line in engine_lines} >= {"stepwell.core.worker", "stepwell.wiring.entry"}
    for line in engine_lines:
        assert set(line) >= LINE_FIELDS
        assert (line["executionId"], line["workflow"], line["invocationId"]) == (
            execution_id,
            "crashes",
            "req-1",
        )
        assert datetime.fromisoformat(line["time"].replace("Z", "+00:00")).tzinfo is not None
    assert any(line["message"].endswith("crashed: Runtime.ExitError") for line in engine_lines)
    assert SECRET not in caplog.text
    # The message's one EMF record: the same execution and request, no payload either.
    (record,) = records
    assert (record["executionId"], record["invocationId"], record["Workflow"]) == (
        execution_id,
        "req-1",
        "crashes",
    )
    totals = metric_totals(records, "crashes")
    assert (totals["ExecutionsStarted"], totals["Invocations"], totals["InvocationCrashes"]) == (1, 1, 1)
    assert SECRET not in json.dumps(records)


def test_lines_outside_a_message_have_null_context_and_extra_fields(json_logging: None) -> None:
    formatter = JsonFormatter()
    logger = logging.getLogger("stepwell.test")

    def line(record: logging.LogRecord) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(formatter.format(record))
        return parsed

    plain = logger.makeRecord("stepwell.test", logging.WARNING, __file__, 1, "found %d", (3,), None)
    with_extra = logger.makeRecord(
        "stepwell.test", logging.INFO, __file__, 1, "message", (), None, extra={"messageId": "m-1"}
    )
    assert line(plain) == {
        **line(plain),
        "level": "WARNING",
        "logger": "stepwell.test",
        "message": "found 3",
        "executionId": None,
        "invocationId": None,
        "workflow": None,
    }
    assert line(with_extra)["messageId"] == "m-1"
    with log_context("default#orders#o-1/o-1", "req-9"):
        inner = line(plain)
        with log_context(invocation_id="engine-request", keep_invocation=True):
            assert line(plain)["invocationId"] == "req-9"  # Lambda's request id stays
    assert (inner["executionId"], inner["workflow"], inner["invocationId"]) == (
        "default#orders#o-1/o-1",
        "orders",
        "req-9",
    )
    with log_context("not-an-execution-id"):
        assert line(plain)["workflow"] is None


def test_an_exception_is_logged_by_type_and_place_not_by_text(json_logging: None) -> None:
    try:
        raise ValueError(f"declined {SECRET}")
    except ValueError:
        record = logging.getLogger("stepwell.test").makeRecord(
            "stepwell.test", logging.ERROR, __file__, 1, "charging failed", (), __import__("sys").exc_info()
        )
    text = JsonFormatter().format(record)

    parsed = json.loads(text)
    assert parsed["errorType"] == "ValueError" and "test_an_exception_is_logged" in parsed["stackTrace"]
    assert SECRET not in text


def test_the_lambda_handler_logs_json_and_writes_emf_to_stdout(
    deployment: Deployment,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    json_logging: None,
) -> None:
    for variable, value in deployment.config.to_env().items():
        monkeypatch.setenv(variable, value)
    monkeypatch.setattr(entry, "_runtime", None)
    capsys.readouterr()

    # A message for an execution another worker holds: the worker counts LeaseBusy, a per-workflow fact.
    config = deployment.config
    store = deployment.execution_store()
    execution_id = make_execution_id("default", "orders", "o-1", "i1")
    now = time.time()
    record = ExecutionRecord(
        execution_id=execution_id,
        domain="default",
        workflow_id="orders",
        subject_id="o-1",
        instance_id="i1",
        execution_name="o-1",
        status=ExecutionStatus.RUNNING,
        created_at=now,
        updated_at=now,
    )
    assert store.create_execution(record)
    assert store.acquire_lease(execution_id, "another worker", now, 600) is not None
    event = {"Records": [{"messageId": "m-1", "body": json.dumps(InvokeMessage(execution_id).to_body())}]}

    assert entry.handler(event, LambdaContext("req-7")) == {"batchItemFailures": []}

    assert all(isinstance(handler.formatter, JsonFormatter) for handler in logging.getLogger().handlers)
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert len(emf) == 1  # one record for the one message
    (emitted,) = emf
    assert emitted["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["Deployment", "Workflow"],
        ["Deployment"],
    ]
    assert (emitted["Deployment"], emitted["Workflow"]) == (config.name, "orders")
    assert (emitted["invocationId"], emitted["LeaseBusy"]) == ("req-7", 1)


def test_a_thread_the_sdk_starts_sees_the_message_s_context() -> None:
    seen: list[dict[str, str]] = []
    with log_context("default#orders#o-1/o-1", "req-3"):
        thread = threading.Thread(target=lambda: seen.append(current_context()))  # no context inherited
        thread.start()
        thread.join()

    assert seen == [{"executionId": "default#orders#o-1/o-1", "workflow": "orders", "invocationId": "req-3"}]
    assert current_context() == {}  # unbound once the message is handled
