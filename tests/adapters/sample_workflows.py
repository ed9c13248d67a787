"""Workflow code imported the way the worker Lambda imports the user's modules (STEPWELL_WORKFLOW_MODULES)."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.core.registry import register


@durable_execution
def echo_length(event: dict[str, Any], context: DurableContext) -> int:
    return context.step(lambda _: len(event["text"]), name="measure")


register("sample-echo-length", echo_length)
