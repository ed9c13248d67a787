"""A stopped parent: the parent invokes a durable workflow that waits an hour; the case stops the parent
while it waits (StopExecution), which stops the running child too (ParentStopped)."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


@durable_execution
def waiter(event: dict[str, Any], context: DurableContext) -> str:
    context.wait(Duration.from_hours(1), name="an-hour")
    return "woke"


WORKFLOWS = {"invoke-9-waiter": waiter}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> str:
    result: str = context.invoke("invoke-9-waiter", {"ticket": event["Input"]}, name="call-waiter")
    return result
