"""Plugin case 10-8: Plugin operation-change hook reports updated operations and the full operation map."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import OperationChangeInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, greet, updated_steps


class Plugin(Recording):
    def on_operation_change(self, info: OperationChangeInfo) -> None:
        for operation_id, operation in updated_steps(info):
            self.emit(
                "operation-change",
                op=operation_id,
                status=operation.status.value,
                in_full_map=operation_id in info.operations,
            )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
