"""Plugin case 10-18: A wait still pending during a replay re-fires operation-start with replay=true.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, ParallelConfig
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationStartInfo,
    OperationEndInfo,
    OperationStartInfo,
    OperationType,
)

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


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit(
                "operation-start",
                type=info.operation_type.value.upper(),
                name=info.name,
                replay=info.is_replayed,
                pending=info.status.value not in TERMINAL,
            )

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit(
                "operation-end",
                type=info.operation_type.value.upper(),
                name=info.name,
                status=info.status.value,
            )


def short(branch: DurableContext) -> str:
    branch.wait(Duration.from_seconds(2), name="short")
    return "short-done"


def long(branch: DurableContext) -> str:
    branch.wait(Duration.from_seconds(8), name="long")
    return "long-done"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> list[str]:
    return context.parallel(
        [short, long], name="waits", config=ParallelConfig(max_concurrency=2)
    ).get_results()
