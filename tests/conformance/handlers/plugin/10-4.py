"""Plugin case 10-4: Plugin exceptions are swallowed and never affect the execution outcome."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Faulty, greet


@durable_execution(plugins=[Factory(Faulty)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
