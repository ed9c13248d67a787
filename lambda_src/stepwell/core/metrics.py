"""Metrics: the engine's port (`Metrics`) and its CloudWatch adapter (`EmfMetrics`).

The engine adds facts where it decides them (`metrics.add(Metric.INVOCATIONS, 1, workflow)`); whoever
handles a message (the entry, the local harness) calls `flush()` once it is done, which writes what the
message added as one record per workflow it touched. `EmfMetrics` writes each record as one line of
CloudWatch's Embedded Metric Format on stdout: Lambda ships stdout to CloudWatch Logs, which turns the
line into metrics, so emitting costs no AWS call and no agent.

    {"_aws": {"Timestamp": <epoch ms>, "CloudWatchMetrics": [{"Namespace": "Stepwell",
       "Dimensions": [["Deployment", "Workflow"], ["Deployment"]],
       "Metrics": [{"Name": "Invocations", "Unit": "Count"}, ...]}]},
     "Deployment": "<module name>", "Workflow": "<workflow>", "Invocations": 1, "InvocationDuration": [12.5],
     "executionId": ..., "invocationId": ...}

Per-workflow facts carry both dimension sets (alarms read the deployment-wide series, the dashboard the
per-workflow ones); facts of no workflow (the reconciler's) carry only ["Deployment"]. Dimension values
are the module's name and workflow names: the number of metrics stays bounded (never an execution id).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Protocol

from stepwell.core.logs import current_context

NAMESPACE = "Stepwell"
DEPLOYMENT_DIMENSION = "Deployment"
WORKFLOW_DIMENSION = "Workflow"
# EMF's limits: at most 100 metrics per record and 100 values per metric.
MAX_VALUES_PER_METRIC = 100


class Metric(StrEnum):
    EXECUTIONS_STARTED = "ExecutionsStarted"
    EXECUTIONS_SUCCEEDED = "ExecutionsSucceeded"
    EXECUTIONS_FAILED = "ExecutionsFailed"
    EXECUTIONS_STOPPED = "ExecutionsStopped"
    EXECUTIONS_TIMED_OUT = "ExecutionsTimedOut"
    # Held back by a flow limit before their start (stepwell.core.flow_control): a rate limit's delay, a
    # concurrency limit's queue.
    EXECUTIONS_DELAYED = "ExecutionsDelayed"
    EXECUTIONS_WAITING = "ExecutionsWaiting"
    # Operated on (stepwell.core.lifecycle): paused (its ExecutionPaused logged), resumed (its
    # ExecutionResumed logged), deleted (its items and payloads removed).
    EXECUTIONS_PAUSED = "ExecutionsPaused"
    EXECUTIONS_RESUMED = "ExecutionsResumed"
    EXECUTIONS_DELETED = "ExecutionsDeleted"
    INVOCATIONS = "Invocations"
    INVOCATION_CRASHES = "InvocationCrashes"
    LEASE_BUSY = "LeaseBusy"
    LEASE_FENCED = "LeaseFenced"
    OPERATIONS_RECORDED = "OperationsRecorded"
    FORWARDED_MESSAGES = "ForwardedMessages"
    PAYLOAD_BYTES_OFFLOADED = "PayloadBytesOffloaded"
    WAKE_UP_LAG = "WakeUpLag"
    INVOCATION_DURATION = "InvocationDuration"
    # The reconciler's, per run (also when zero), of no workflow.
    STALLED_EXECUTIONS = "StalledExecutions"
    OVERDUE_WAKE_UPS = "OverdueWakeUps"


# Timings keep each value (CloudWatch computes their statistics); the others are summed per record.
TIMINGS = frozenset({Metric.WAKE_UP_LAG, Metric.INVOCATION_DURATION})
UNITS: dict[Metric, str] = {
    **{metric: "Count" for metric in Metric},
    Metric.PAYLOAD_BYTES_OFFLOADED: "Bytes",
    **{metric: "Milliseconds" for metric in TIMINGS},
}
# The metric an execution's end counts, by its terminal status.
ENDED: dict[str, Metric] = {
    "SUCCEEDED": Metric.EXECUTIONS_SUCCEEDED,
    "FAILED": Metric.EXECUTIONS_FAILED,
    "STOPPED": Metric.EXECUTIONS_STOPPED,
    "TIMED_OUT": Metric.EXECUTIONS_TIMED_OUT,
}


class Metrics(Protocol):
    """The engine's metrics port."""

    def add(self, metric: Metric, value: float, workflow: str | None = None) -> None:
        """Add a fact to the message being handled (`workflow`: the execution's; None for a fact of the
        whole deployment)."""
        ...

    def flush(self) -> None:
        """The message is handled: write what it added (nothing, if it added nothing) and start anew."""
        ...


class NoMetrics:
    """Metrics nowhere: the engine's default (a client on an operator's machine emits none)."""

    def add(self, metric: Metric, value: float, workflow: str | None = None) -> None:
        pass

    def flush(self) -> None:
        pass


def _write_line(record: dict[str, Any]) -> None:
    # sys.stdout at the time of writing: a runtime may replace it after import.
    sys.stdout.write(json.dumps(record, separators=(",", ":")) + "\n")
    sys.stdout.flush()


class EmfMetrics:
    """Records in CloudWatch's Embedded Metric Format, one per workflow a message touched, handed to
    `write` (by default: one JSON line on stdout)."""

    def __init__(
        self,
        deployment: str,
        write: Callable[[dict[str, Any]], None] = _write_line,
        now: Callable[[], float] = time.time,
    ) -> None:
        if not deployment:
            raise ValueError("EmfMetrics needs the deployment's name (the Deployment dimension), got ''")
        self.deployment = deployment
        self._write = write
        self._now = now
        self._pending: dict[str | None, dict[Metric, float | list[float]]] = {}
        # Per workflow: the log context (execution, invocation) its facts were added in.
        self._context: dict[str | None, dict[str, str]] = {}

    def add(self, metric: Metric, value: float, workflow: str | None = None) -> None:
        facts = self._pending.setdefault(workflow, {})
        self._context.setdefault(workflow, {}).update(current_context())
        if metric in TIMINGS:
            values = facts.setdefault(metric, [])
            assert isinstance(values, list)
            values.append(round(value, 3))
            if len(values) >= MAX_VALUES_PER_METRIC:
                self.flush()
        else:
            total = facts.get(metric, 0)
            assert not isinstance(total, list)
            facts[metric] = total + value

    def flush(self) -> None:
        pending, self._pending = self._pending, {}
        contexts, self._context = self._context, {}
        for workflow, facts in pending.items():
            if facts:
                self._write(self.record(workflow, facts, contexts.get(workflow, {})))

    def record(
        self, workflow: str | None, facts: dict[Metric, float | list[float]], context: dict[str, str]
    ) -> dict[str, Any]:
        """One EMF record of `facts`, with the context of the log lines written alongside."""
        dimensions = [[DEPLOYMENT_DIMENSION, WORKFLOW_DIMENSION], [DEPLOYMENT_DIMENSION]]
        values: dict[str, Any] = {DEPLOYMENT_DIMENSION: self.deployment}
        if workflow is None:
            dimensions = [[DEPLOYMENT_DIMENSION]]
        else:
            values[WORKFLOW_DIMENSION] = workflow
        return {
            "_aws": {
                "Timestamp": int(self._now() * 1000),
                "CloudWatchMetrics": [
                    {
                        "Namespace": NAMESPACE,
                        "Dimensions": dimensions,
                        "Metrics": [{"Name": metric.value, "Unit": UNITS[metric]} for metric in facts],
                    }
                ],
            },
            **values,
            **{metric.value: value for metric, value in facts.items()},
            # Not dimensions: properties that lead from a record to its execution's log lines.
            **{key: value for key, value in context.items() if key != "workflow"},
        }
