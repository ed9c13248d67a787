"""Plugin case 10-23: Context operations expose subType tokens and user-function hooks expose the children-
replay indicator.
"""

from __future__ import annotations

import sys
from pathlib import Path

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, ParallelBranch, ParallelConfig
from aws_durable_execution_sdk_python.plugin import OperationStartInfo, OperationType, UserFunctionStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, dump


class Plugin(Recording):
    def on_operation_start(self, info: OperationStartInfo) -> None:
        if info.operation_type is OperationType.CONTEXT:
            self.emit("operation-start", **dump(info))

    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.CONTEXT:
            self.emit("fn-start", **dump(info), isReplayingChildren=info.is_replay_children)


def branch_a(branch: DurableContext) -> str:
    branch.step(lambda _: "x", name="inner")
    branch.wait(Duration.from_seconds(2))
    return "a-done"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> list[str]:
    branches = [
        ParallelBranch(branch_a, name="branch-a"),
        ParallelBranch(lambda _: "b-done", name="branch-b"),
    ]
    return context.parallel(branches, name="ctx", config=ParallelConfig(max_concurrency=1)).get_results()
