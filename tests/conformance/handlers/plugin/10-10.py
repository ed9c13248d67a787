"""Plugin case 10-10: Plugin operation-start and operation-end hooks fire for wait-type operations."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationStartInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit("operation-start", op=info.operation_id, type=info.operation_type.value.upper())

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit(
                "operation-end",
                op=info.operation_id,
                type=info.operation_type.value.upper(),
                status=info.status.value,
            )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2))
