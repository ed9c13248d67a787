"""Plugin case 10-12: Plugin user-function hooks fire per parallel branch with parent linkage."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig
from aws_durable_execution_sdk_python.plugin import OperationType, UserFunctionEndInfo, UserFunctionStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording


def is_branch(info: Any) -> bool:
    return info.operation_type is OperationType.CONTEXT and info.sub_type == "ParallelBranch"


class Plugin(Recording):
    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if is_branch(info):
            self.emit("fn-start", op=info.operation_id, parent=info.parent_id or "NONE")

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if is_branch(info):
            self.emit(
                "fn-end", op=info.operation_id, parent=info.parent_id or "NONE", outcome=info.outcome.value
            )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> list[str]:
    branches = [lambda _: "task-1", lambda _: "task-2"]
    return context.parallel(branches, name="parallel", config=ParallelConfig(max_concurrency=1)).get_results()
