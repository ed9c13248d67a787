"""Plugin case 10-18: A wait still pending during a replay re-fires operation-start with replay=true."""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, ParallelConfig
from aws_durable_execution_sdk_python.plugin import OperationEndInfo, OperationStartInfo, OperationType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording

# The operation statuses an operation ends in.
TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "STOPPED"}


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit(
                "operation-start",
                type=info.operation_type.value.upper(),
                name=info.name,
                replay=info.is_replayed,
                pending=info.status.value not in TERMINAL,
            )

    def on_operation_end(self, info: OperationEndInfo) -> None:
        if info.operation_type is OperationType.WAIT:
            self.emit(
                "operation-end",
                type=info.operation_type.value.upper(),
                name=info.name,
                status=info.status.value,
            )


def short(branch: DurableContext) -> str:
    branch.wait(Duration.from_seconds(2), name="short")
    return "short-done"


def long(branch: DurableContext) -> str:
    branch.wait(Duration.from_seconds(8), name="long")
    return "long-done"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> list[str]:
    return context.parallel(
        [short, long], name="waits", config=ParallelConfig(max_concurrency=2)
    ).get_results()
