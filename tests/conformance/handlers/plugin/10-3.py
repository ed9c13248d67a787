"""Plugin case 10-3: Plugin attempt hooks fire per step attempt with attempt number and outcome."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, StepAttempts, retries


def unreliable(step: StepContext) -> str:
    if step.attempt == 1:
        raise RuntimeError("first attempt fails")
    return "Operation succeeded"


@durable_execution(plugins=[Factory(StepAttempts)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(unreliable, config=StepConfig(retry_strategy=retries(2)))
