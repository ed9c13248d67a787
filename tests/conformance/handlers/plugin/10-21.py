"""Plugin case 10-21: Attempt-start and attempt-end hook info carries the full attempt field set."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.plugin import OperationType, UserFunctionEndInfo, UserFunctionStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording, dump, retries


class Plugin(Recording):
    def on_user_function_start(self, info: UserFunctionStartInfo) -> None:
        if info.operation_type is OperationType.STEP:
            self.emit("attempt-start", **attempt_fields(info))

    def on_user_function_end(self, info: UserFunctionEndInfo) -> None:
        if info.operation_type is OperationType.STEP:
            fields = {**attempt_fields(info), "outcome": info.outcome.value}
            if info.error is not None:
                fields["error"] = info.error.message
            self.emit("attempt-end", **fields)


def attempt_fields(info: Any) -> dict[str, Any]:
    """An attempt info's dump: the operation's fields but its status and error (the end adds those)."""
    fields = dump(info)
    fields.pop("status", None)
    fields.pop("error", None)
    return fields


def flaky(step: StepContext) -> str:
    if step.attempt == 1:
        raise RuntimeError("flaky fails its first attempt")
    return "ok"


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(flaky, name="flaky", config=StepConfig(retry_strategy=retries(2)))
