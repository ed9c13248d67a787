"""Plugin case 10-15: Attempt hooks fire for every attempt until exhaustion, then operation-end reports
FAILED.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, StepAttempts, retries


class Plugin(StepAttempts):
    """The attempts, then the step's end."""

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("operation-end", op=info.operation_id, status=info.status.value)


def always_fail(step: StepContext) -> str:
    raise RuntimeError(f"attempt {step.attempt} fails")


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(always_fail, config=StepConfig(retry_strategy=retries(2)))
