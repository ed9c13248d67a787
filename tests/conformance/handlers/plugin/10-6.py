"""Plugin case 10-6: Plugin sees is-first-invocation true once, then false on replay."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Lifecycle


@durable_execution(plugins=[Factory(Lifecycle)])
def handler(event: dict, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2))
