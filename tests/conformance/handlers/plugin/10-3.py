"""Plugin case 10-3: Plugin attempt hooks fire per step attempt with attempt number and outcome.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationStartInfo,
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


class Plugin(Recording):
    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-start", n=info.attempt, op=info.operation_id)

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-end", n=info.attempt, outcome=info.outcome.value, op=info.operation_id)


def unreliable(step: StepContext) -> str:
    if step.attempt == 1:
        raise RuntimeError("first attempt fails")
    return "Operation succeeded"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(unreliable, config=StepConfig(retry_strategy=retries(2)))
