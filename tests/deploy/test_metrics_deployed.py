"""The deployed worker's metrics and logs, on each backend: after a known run (a step, a wait, a callback
and a step, with its start and wake-up messages delivered twice) the function's log holds the EMF records
of that execution with the run's values, and the engine's lines are JSON naming it."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from deployed_backend import FINISHED, DeployedTarget
from stepwell.client import StepwellClient
from stepwell.testing.local import check_emf_record, metric_totals

from .test_failures_deployed import _callback_id

WAIT_SECONDS = 240.0
WORKFLOW = "failures.sequence"


def _json_lines(lines: list[str]) -> list[dict[str, Any]]:
    parsed: list[dict[str, Any]] = []
    for line in lines:
        start = line.find("{")
        if start < 0:
            continue
        try:
            value = json.loads(line[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            parsed.append(value)
    return parsed


def _send_invoke(target: DeployedTarget, execution_id: str) -> None:
    body = json.dumps({"kind": "invoke", "executionId": execution_id})
    target.sqs.send_message(QueueUrl=target.config["work_queue_url"], MessageBody=body)


def _records_of(target: DeployedTarget, execution_id: str) -> list[dict[str, Any]]:
    """The EMF records of the execution's messages in the function's log (lines arrive with a delay on
    LocalStack: wait for its end to be counted)."""
    deadline = time.monotonic() + 60
    while True:
        records = [
            line
            for line in _json_lines(target.log_lines())
            if "_aws" in line and line.get("executionId") == execution_id
        ]
        if any("ExecutionsSucceeded" in record for record in records) or time.monotonic() > deadline:
            return records
        time.sleep(1)


def test_a_known_run_leaves_its_metrics_and_json_lines_in_the_function_log(
    deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    run = uuid.uuid4().hex[:12]
    execution_id = deployed_client.start_execution(WORKFLOW, {"run": run}, f"metrics-{run}")
    _send_invoke(deployed_target, execution_id)  # the start, twice
    deployed_target.process_queue()
    timer = deployed_target.due_timers([execution_id])[execution_id]
    assert deployed_target.wake_when_due(execution_id)  # skips the clock to the wake-up and sends it
    deployed_target.send_invoke(execution_id, timer)  # the wake-up, twice
    deadline = time.monotonic() + WAIT_SECONDS
    while (callback_id := _callback_id(deployed_client, execution_id)) is None:
        assert time.monotonic() < deadline, "the callback never started"
        deployed_target.process_queue()
    deployed_client.send_callback_success(callback_id, "approved")
    while (description := deployed_client.describe_execution(execution_id))["Status"] not in FINISHED:
        assert time.monotonic() < deadline, json.dumps(description, default=str)
        deployed_target.process_queue()
        deployed_target.wake_when_due(execution_id)
    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)

    records = _records_of(deployed_target, execution_id)

    for record in records:
        check_emf_record(record)
        assert record["Workflow"] == WORKFLOW and record["Deployment"] == deployed_target.config["name"]
        assert record["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
            ["Deployment", "Workflow"],
            ["Deployment"],
        ]
    totals = metric_totals(records, WORKFLOW)
    # Counted once however often its messages came: one start, one end, three handler runs (to the
    # wait, to the callback, to the end).
    assert totals["ExecutionsStarted"] == 1 and totals["ExecutionsSucceeded"] == 1, totals
    assert totals["Invocations"] == 3 and len(totals["InvocationDuration"]) == 3, totals
    # The wake-up that ran it; the engine's own delayed wake-up message may come after the callback's
    # invoke and run the last invocation instead of it (whichever comes first runs it, the other is idle).
    assert 1 <= len(totals["WakeUpLag"]) <= 2 and min(totals["WakeUpLag"]) >= 0, totals
    assert totals["OperationsRecorded"] >= 7, totals  # EXECUTION x2, first x1, wait x2, callback, second
    assert "ExecutionsFailed" not in totals and "InvocationCrashes" not in totals, totals
    # The engine's lines about this execution are JSON naming it, its workflow and the Lambda request.
    lines = [
        line
        for line in _json_lines(deployed_target.log_lines())
        if "_aws" not in line and line.get("executionId") == execution_id
    ]
    assert lines, "no JSON log line names the execution"
    for line in lines:
        assert {"level", "time", "logger", "message"} <= set(line), line
        assert line["workflow"] == WORKFLOW and line["invocationId"], line
