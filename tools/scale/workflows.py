"""The workflows `make scale` runs beside tools/bench_workflows.py's: a step, a wait of a given length,
a step (one handler per length, so each length is a workflow of its own), and an invoke of a child."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration

MINUTE = 60
HOUR = 3600
DAY = 86400
YEAR = 365 * DAY


def waiting(seconds: int) -> Callable[..., Any]:
    """A step, a wait of `seconds`, a step."""

    @durable_execution
    def handler(event: dict[str, Any], context: DurableContext) -> int:
        first = context.step(lambda _: 1, name="before")
        context.wait(Duration.from_seconds(seconds), name="wait")
        return int(context.step(lambda _: first + 1, name="after"))

    return handler


@durable_execution
def child(event: dict[str, Any], context: DurableContext) -> int:
    return int(context.step(lambda _: 7, name="child-step"))


@durable_execution
def parent(event: dict[str, Any], context: DurableContext) -> int:
    before = context.step(lambda _: 1, name="before")
    result = context.invoke("scale-child", {"from": "parent"}, name="call-child")
    return int(context.step(lambda _: before + int(result), name="after"))
