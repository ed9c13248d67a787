"""Plugin case 10-17: A plugin throwing from invocation, operation, and attempt hooks never blocks a healthy
plugin.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import OperationType, UserFunctionEndInfo, UserFunctionStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Faulty, Lifecycle, StepOperations, greet


class Healthy(Lifecycle, StepOperations):
    """The lifecycle and step operations, and each attempt without its number."""

    NAME = "CONFPLUGIN-HEALTHY"

    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-start", op=info.operation_id)

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-end", op=info.operation_id, outcome=info.outcome.value)


@durable_execution(plugins=[Factory(Faulty), Factory(Healthy)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
