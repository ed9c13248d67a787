"""Plugin case 10-2: Plugin operation lifecycle hooks (step start and terminal end)."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, StepOperations, greet


@durable_execution(plugins=[Factory(StepOperations)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
