"""Plugin case 10-1: Plugin invocation lifecycle hooks (start and end on a single invocation)."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Lifecycle, greet


@durable_execution(plugins=[Factory(Lifecycle)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
