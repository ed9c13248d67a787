"""The plugin scaffolding every plugin conformance case (10-*.py beside this file) shares.

A case's module holds only what is particular to it: its plugin's hooks and its workflow. The deployed
package copies each case's module alone, so a case imports this module from its own directory (sys.path)
and tests/conformance/deployed_backend.py copies it into the `stepwell_conformance` package beside them.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from aws_durable_execution_sdk_python import StepContext
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationEndInfo,
    InvocationStartInfo,
    OperationChangeInfo,
    OperationEndInfo,
    OperationStartInfo,
    OperationType,
    UserFunctionEndInfo,
    UserFunctionStartInfo,
)
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

_LOG = logging.getLogger("conformance.plugin")


class Recording(DurableInstrumentationPlugin):
    """Stamps each record with the execution ARN its invocation-start hook's info carried."""

    NAME = "CONFPLUGIN"

    def __init__(self) -> None:
        self.arn: str | None = None

    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        self.arn = info.execution_arn

    def emit(self, hook: str, **fields: Any) -> None:
        record = {"plugin": self.NAME, "hook": hook, **fields, "durableExecutionArn": self.arn}
        _LOG.info(json.dumps(record), extra={"stdoutJson": record})


class Factory:
    """The SDK's plugin factory: a new plugin for each invocation."""

    def __init__(self, plugin: type[Recording]) -> None:
        self.plugin = plugin

    def create_plugin(self, info: InvocationStartInfo, /) -> Recording:
        return self.plugin()


class Lifecycle(Recording):
    """Records each invocation's start (is it the first?) and end (its status)."""

    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.emit("invocation-start", first=info.is_first_invocation)

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        self.emit("invocation-end", status=info.status.value)


class StepOperations(Recording):
    """Records each step operation's start and end (its status)."""

    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-start", op=info.operation_id)

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-end", op=info.operation_id, status=info.status.value)


class StepAttempts(Recording):
    """Records each step attempt's start and end with its number and outcome."""

    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-start", n=info.attempt, op=info.operation_id)

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-end", n=info.attempt, outcome=info.outcome.value, op=info.operation_id)


class PluginFault(Exception):
    """What the faulty plugin raises from each hook."""


class Faulty(Recording):
    """Every hook logs its line, then raises."""

    NAME = "CONFPLUGIN-FAULTY"

    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.fail("invocation-start")

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        self.fail("invocation-end")

    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.fail("operation-start")

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.fail("operation-end")

    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.fail("attempt-start")

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.fail("attempt-end")

    def fail(self, hook: str) -> None:
        self.emit(hook)
        raise PluginFault(f"{self.NAME} fails in {hook}")


def greet(name: str) -> Callable[[StepContext], str]:
    """A step that logs a line and greets `name`."""

    def run(step: StepContext) -> str:
        step.logger.info(f"Greeting step running for: {name}")
        return f"Hello, {name}!"

    return run


def retries(attempts: int) -> Any:
    """The SDK's retry strategy: `attempts` in all, one second apart."""
    return create_retry_strategy(
        RetryStrategyConfig(
            max_attempts=attempts,
            initial_delay=Duration.from_seconds(1),
            backoff_rate=1,
            jitter_strategy=JitterStrategy.NONE,
            retryable_error_types=[Exception],
        )
    )


def dump(info: Any) -> dict[str, Any]:
    """The canonical camelCase dump of an operation info: unset fields omitted, tokens as reported,
    timestamps in ISO 8601, an error as its message."""
    fields: dict[str, Any] = {
        "id": info.operation_id,
        "name": info.name,
        "type": info.operation_type.value,
        "subType": info.sub_type,
        "parentId": info.parent_id,
        "status": info.status.value if info.status is not None else None,
        "startTimestamp": info.start_time.isoformat() if info.start_time is not None else None,
        "endTimestamp": info.end_time.isoformat() if info.end_time is not None else None,
        "error": info.error.message if info.error is not None else None,
        "attempt": info.attempt,
        "isReplay": info.is_replayed,
    }
    return {key: value for key, value in fields.items() if value is not None}


def updated_steps(info: OperationChangeInfo) -> Iterator[tuple[str, Any]]:
    """The step operations an operation-change hook's delta holds, with their ids."""
    for operation_id, operation in info.updated_operations.items():
        if operation.operation_type is OperationType.STEP:
            yield operation_id, operation
