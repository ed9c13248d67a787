"""Plugin case 10-5: Multiple registered plugins all receive lifecycle hooks."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import InvocationEndInfo, InvocationStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, greet


class PluginA(Recording):
    NAME = "CONFPLUGIN-A"

    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.emit("invocation-start")

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        self.emit("invocation-end", status=info.status.value)


class PluginB(PluginA):
    NAME = "CONFPLUGIN-B"


@durable_execution(plugins=[Factory(PluginA), Factory(PluginB)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(greet(event["Input"]))
