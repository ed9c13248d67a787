"""Plugin case 10-9: Plugin sees a wait completed externally between invocations as an updated operation."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import InvocationStartInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording


class Plugin(Recording):
    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        for operation_id, operation in info.updated_operations.items():
            if operation.operation_type is OperationType.WAIT:
                self.emit(
                    "updated-on-invoke",
                    op=operation_id,
                    status=operation.status.value,
                    first=info.is_first_invocation,
                )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2))
