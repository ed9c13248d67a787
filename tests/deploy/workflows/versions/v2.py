"""Version 2 of `stepwell_versioned`: `versioned.order` renames its step and inserts a step before the
wait, so a v1 log replayed by this code disagrees at the first operation; `versioned.stable` keeps its
operations, so a v1 execution of it may move to this code."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.registry import workflow

CODE = "v2"


@workflow("versioned.order")
@durable_execution
def order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """The step renamed (price -> subtotal), a tax step inserted before the wait."""

    def subtotal(_: StepContext) -> int:
        return int(event["quantity"]) * 100

    def tax(_: StepContext) -> int:
        return int(event["quantity"]) * 20

    total = context.step(subtotal, name="subtotal")
    total += context.step(tax, name="tax")
    context.wait(Duration.from_days(1))
    return {"code": CODE, "total": total}


@workflow("versioned.stable")
@durable_execution
def stable(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """Unchanged operations; only the result names the new code."""

    def greet(_: StepContext) -> str:
        return f"hello {event['name']}"

    greeting = context.step(greet, name="greet")
    context.wait(Duration.from_days(1))
    return {"code": CODE, "greeting": greeting}
