"""Invoke a durable workflow that succeeds: its result is the invoke's result."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def echo(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    echoed: str = context.step(lambda _: event["value"], name="echo")
    return {"echoed": echoed}


WORKFLOWS = {"invoke-1-echo": echo}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    result: dict[str, Any] = context.invoke("invoke-1-echo", {"value": event["Input"]}, name="call-echo")
    return result
