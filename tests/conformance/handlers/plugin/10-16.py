"""Plugin case 10-16: Invocation-end fires for every invocation, non-terminal on suspension and terminal at
completion.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import InvocationEndInfo, InvocationStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording


class Plugin(Recording):
    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.emit("invocation-start", first=info.is_first_invocation)

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        status = info.status.value
        self.emit(
            "invocation-end",
            first=info.is_first_invocation,
            terminal=status in ("SUCCEEDED", "FAILED"),
            status=status,
        )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> None:
    context.wait(Duration.from_seconds(2))
