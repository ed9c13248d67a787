"""Plugin case 10-12: Plugin user-function hooks fire per parallel branch with parent linkage.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationStartInfo,
    OperationType,
    UserFunctionEndInfo,
    UserFunctionStartInfo,
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


def is_branch(info: Any) -> bool:
    return info.operation_type is OperationType.CONTEXT and info.sub_type == "ParallelBranch"


class Plugin(Recording):
    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if is_branch(info):
            self.emit("fn-start", op=info.operation_id, parent=info.parent_id or "NONE")

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if is_branch(info):
            self.emit(
                "fn-end", op=info.operation_id, parent=info.parent_id or "NONE", outcome=info.outcome.value
            )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> list[str]:
    branches = [lambda _: "task-1", lambda _: "task-2"]
    return context.parallel(branches, name="parallel", config=ParallelConfig(max_concurrency=1)).get_results()
