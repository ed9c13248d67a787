"""Version 1 of `stepwell_versioned` (tests/deploy/test_versions_deployed.py deploys it, starts executions
that wait, then deploys v2.py over it): each workflow says which code ran it."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.registry import workflow

CODE = "v1"


@workflow("versioned.order")
@durable_execution
def order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """A step, a day's wait, and a result naming the code that finished it."""

    def price(_: StepContext) -> int:
        return int(event["quantity"]) * 100

    total = context.step(price, name="price")
    context.wait(Duration.from_days(1))
    return {"code": CODE, "total": total}


@workflow("versioned.stable")
@durable_execution
def stable(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    """The same operations in every version: an execution of it can be upgraded safely."""

    def greet(_: StepContext) -> str:
        return f"hello {event['name']}"

    greeting = context.step(greet, name="greet")
    context.wait(Duration.from_days(1))
    return {"code": CODE, "greeting": greeting}
