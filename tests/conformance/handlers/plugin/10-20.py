"""Plugin case 10-20: Operation-start and operation-end hook info carries the full operation field set."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationStartInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, dump


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-start", **dump(info))

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-end", **dump(info))


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(lambda _: "task-a", name="greet")
