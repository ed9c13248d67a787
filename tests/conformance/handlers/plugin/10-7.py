"""Plugin case 10-7: Plugin invocation-end hook receives FAILED status when execution fails."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Lifecycle, retries


def failing(step: StepContext) -> str:
    raise RuntimeError("this step always fails")


@durable_execution(plugins=[Factory(Lifecycle)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(failing, config=StepConfig(retry_strategy=retries(1)))
