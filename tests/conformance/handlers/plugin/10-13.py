"""Plugin case 10-13: Non-terminal operations replay with replay=true; terminal operations are not re-
emitted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationStartInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, retries


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-start", op=info.operation_id, replay=info.is_replayed)

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-end", op=info.operation_id, status=info.status.value)


def step_b(step: StepContext) -> str:
    if step.attempt == 1:
        raise RuntimeError("step B fails its first attempt")
    return "Operation succeeded"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    context.step(lambda _: "step A done")
    return context.step(step_b, config=StepConfig(retry_strategy=retries(2)))
