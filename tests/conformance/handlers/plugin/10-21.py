"""Plugin case 10-21: Attempt-start and attempt-end hook info carries the full attempt field set.

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


TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "STOPPED"}


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
            self.emit("attempt-start", **attempt_fields(info))

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            fields = {**attempt_fields(info), "outcome": info.outcome.value}
            if info.error is not None:
                fields["error"] = info.error.message
            self.emit("attempt-end", **fields)


def attempt_fields(info: Any) -> dict[str, Any]:
    """An attempt info's dump: the operation's fields but its status and error (the end adds those)."""
    fields = dump(info)
    fields.pop("status", None)
    fields.pop("error", None)
    return fields


def flaky(step: StepContext) -> str:
    if step.attempt == 1:
        raise RuntimeError("flaky fails its first attempt")
    return "ok"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(flaky, name="flaky", config=StepConfig(retry_strategy=retries(2)))
