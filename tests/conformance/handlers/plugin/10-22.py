"""Plugin case 10-22: Operation-change hook info carries full operation items in the delta and their
membership in the full map.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import OperationChangeInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, dump, updated_steps


class Plugin(Recording):
    def on_operation_change(self, info: OperationChangeInfo) -> None:
        for operation_id, operation in updated_steps(info):
            self.emit(
                "operation-change",
                executionArn=info.execution_arn,
                updatedOperationsCount=len(info.updated_operations),
                operationsCount=len(info.operations),
                inFullMap=operation_id in info.operations,
                **dump(operation),
            )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(lambda _: "task-a", name="greet")
