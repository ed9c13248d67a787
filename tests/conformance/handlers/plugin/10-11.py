"""Plugin case 10-11: Plugin operation hooks report parent id for a step nested in a child context."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import OperationEndInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, greet


class Plugin(Recording):
    def on_operation_end(self, info: OperationEndInfo) -> None:
        self.emit(
            "operation-end", op=info.operation_id, parent=info.parent_id or "NONE", status=info.status.value
        )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    name = event["Input"]

    def child(child_context: DurableContext) -> str:
        return child_context.step(greet(name))

    return context.run_in_child_context(child)
