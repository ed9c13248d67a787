"""Plugin case 10-1: Plugin invocation lifecycle hooks (start and end on a single invocation).

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationEndInfo,
    InvocationStartInfo,
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


def greet(name: str) -> Any:
    def run(step: StepContext) -> str:
        step.logger.info(f"Greeting step running for: {name}")
        return f"Hello, {name}!"

    return run


class Plugin(Recording):
    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.emit("invocation-start", first=info.is_first_invocation)

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        self.emit("invocation-end", status=info.status.value)


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
