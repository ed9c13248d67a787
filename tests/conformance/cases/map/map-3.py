"""Tolerated failures by percentage exceeded: two of four items fail where 25 % are tolerated, so the map
completes with FAILURE_TOLERANCE_EXCEEDED after the second failure and the items after it never start."""

from typing import Any

from aws_durable_execution_sdk_python import BatchResult, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CompletionConfig, MapConfig, StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def check(value: int) -> int:
    if value <= 2:
        raise RuntimeError(f"item {value} failed")
    return value


def work(context: DurableContext, value: int, index: int, items: Any) -> int:
    return context.step(
        lambda _: check(value), name="work", config=StepConfig(retry_strategy=RetryPresets.none())
    )


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    config: MapConfig[int] = MapConfig(
        max_concurrency=1, completion_config=CompletionConfig(tolerated_failure_percentage=25)
    )
    batch: BatchResult[int] = context.map([1, 2, 3, 4], work, name="work-items", config=config)
    return {
        "succeeded": batch.success_count,
        "failed": batch.failure_count,
        "reason": batch.completion_reason.value,
    }
