"""Plugin case 10-14: Operation-end info carries the checkpointed result on success and the error on
failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, retries


class Plugin(Recording):
    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit(
                "operation-end",
                op=info.operation_id,
                status=info.status.value,
                result=info.result if info.result is not None else "NONE",
                error=info.error.message if info.error is not None and info.error.message else "NONE",
            )


def boom(step: StepContext) -> str:
    raise RuntimeError("boom")


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    context.step(lambda _: "task-a")
    return context.step(boom, config=StepConfig(retry_strategy=retries(1)))
