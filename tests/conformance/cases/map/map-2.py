"""Tolerated failures by count: one of four items fails, CompletionConfig tolerates one failure, so the
map succeeds with three results and the failure's error."""

from typing import Any

from aws_durable_execution_sdk_python import BatchResult, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CompletionConfig, MapConfig, StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def check(value: int) -> int:
    if value == 3:
        raise ValueError(f"item {value} is odd one out")
    return value * value


def square(context: DurableContext, value: int, index: int, items: Any) -> int:
    return context.step(
        lambda _: check(value), name="square", config=StepConfig(retry_strategy=RetryPresets.none())
    )


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    config: MapConfig[int] = MapConfig(
        max_concurrency=1, completion_config=CompletionConfig(tolerated_failure_count=1)
    )
    batch: BatchResult[int] = context.map([1, 2, 3, 4], square, name="squares", config=config)
    # The class name: the SDK's module path (aws_durable_execution_sdk_python.exceptions.) is its own.
    errors = [error.type.rsplit(".", 1)[-1] if error and error.type else None for error in batch.get_errors()]
    return {"results": batch.get_results(), "errors": errors, "reason": batch.completion_reason.value}
