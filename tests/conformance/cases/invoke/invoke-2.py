"""Invoke a durable workflow that fails: ChainedInvokeFailed carries the child's error, which the SDK
raises as InvokeError in the parent (caught here)."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.exceptions import InvokeError
from aws_durable_execution_sdk_python.retries import RetryPresets


def reject(order: str) -> str:
    raise ValueError(f"order {order} rejected")


@durable_execution
def rejecting(event: dict[str, Any], context: DurableContext) -> str:
    return context.step(
        lambda _: reject(event["order"]), config=StepConfig(retry_strategy=RetryPresets.none())
    )


WORKFLOWS = {"invoke-2-reject": rejecting}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    try:
        context.invoke("invoke-2-reject", {"order": event["Input"]}, name="call-reject")
    except InvokeError as error:
        return {"type": error.error_type, "message": error.message}
    raise AssertionError("the child fails, so the invoke must raise")
