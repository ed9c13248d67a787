"""Plugin case 10-22: Operation-change hook info carries full operation items in the delta and their
membership in the full map.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationStartInfo,
    OperationChangeInfo,
    OperationType,
)

_LOG = logging.getLogger("conformance.plugin")


class Recording(DurableInstrumentationPlugin):
    """Stamps each record with the execution ARN its invocation-start hook's info carried."""

    NAME = "CONFPLUGIN"

    def __init__(self) -> None:
        self.arn: str | None = None

    def on_invocation_start(self, info: InvocationStartInfo) -> None:
        self.arn = info.execution_arn

    def emit(self, hook: str, **fields: Any) -> None:
        record = {"plugin": self.NAME, "hook": hook, **fields, "durableExecutionArn": self.arn}
        _LOG.info(json.dumps(record), extra={"stdoutJson": record})


class Factory:
    """The SDK's plugin factory: a new plugin for each invocation."""

    def __init__(self, plugin: type[Recording]) -> None:
        self.plugin = plugin

    def create_plugin(self, info: InvocationStartInfo, /) -> Recording:
        return self.plugin()


TERMINAL = {"SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELLED", "STOPPED"}


def dump(info: Any) -> dict[str, Any]:
    """The canonical camelCase dump of an operation info: unset fields omitted, tokens as reported,
    timestamps in ISO 8601, an error as its message."""
    fields: dict[str, Any] = {
        "id": info.operation_id,
        "name": info.name,
        "type": info.operation_type.value,
        "subType": info.sub_type,
        "parentId": info.parent_id,
        "status": info.status.value if info.status is not None else None,
        "startTimestamp": info.start_time.isoformat() if info.start_time is not None else None,
        "endTimestamp": info.end_time.isoformat() if info.end_time is not None else None,
        "error": info.error.message if info.error is not None else None,
        "attempt": info.attempt,
        "isReplay": info.is_replayed,
    }
    return {key: value for key, value in fields.items() if value is not None}


class Plugin(Recording):
    def on_operation_change(self, info: OperationChangeInfo) -> None:
        for operation_id, operation in info.updated_operations.items():
            if operation.operation_type is OperationType.STEP:
                self.emit(
                    "operation-change",
                    executionArn=info.execution_arn,
                    updatedOperationsCount=len(info.updated_operations),
                    operationsCount=len(info.operations),
                    inFullMap=operation_id in info.operations,
                    **dump(operation),
                )


@durable_execution(plugins=[Factory(Plugin)])
def handler(event: dict, context: DurableContext) -> str:
    return context.step(lambda _: "task-a", name="greet")
