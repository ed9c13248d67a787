"""Plugin case 10-19: Invocation-start and invocation-end hook info carries the full invocation field set."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import InvocationEndInfo, InvocationStartInfo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confplugin import Factory, Recording


def invocation_fields(info: Any) -> dict[str, Any]:
    """The canonical dump of an invocation info's own fields (unset ones omitted)."""
    fields: dict[str, Any] = {
        "isFirstInvocation": info.is_first_invocation,
        "requestId": info.request_id,
        "operationsCount": len(info.operations),
        "executionStartTimestamp": (
            info.execution_start_time.isoformat() if info.execution_start_time is not None else None
        ),
    }
    return {key: value for key, value in fields.items() if value is not None}


class Plugin(Recording):
    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        super().on_invocation_start(info)
        self.emit(
            "invocation-start", **invocation_fields(info), updatedOperationsCount=len(info.updated_operations)
        )

    def on_invocation_end(self, info: InvocationEndInfo) -> None:
        status = info.status.value
        fields = {**invocation_fields(info), "status": status, "terminal": status in ("SUCCEEDED", "FAILED")}
        if info.error is not None:
            fields["executionError"] = info.error.message
        self.emit("invocation-end", **fields)


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    context.wait(Duration.from_seconds(2))
    return f"done-{event['Input']}"
