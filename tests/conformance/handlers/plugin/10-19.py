"""Plugin case 10-19: Invocation-start and invocation-end hook info carries the full invocation field set.

The plugin's records are the JSON objects the case has it print to stdout; they go through a logger that
carries the object as `stdoutJson` (tests/conformance/log_rules.py, PRINTED_JSON), so the runner reads them
locally and from the deployed function's log as CloudWatch reads a printed JSON line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationEndInfo,
    InvocationStartInfo,
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
