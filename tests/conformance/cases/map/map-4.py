"""Completion by min successful: two successes out of four items are enough, so the map completes with
MIN_SUCCESSFUL_REACHED and the last two items never start."""

from typing import Any

from aws_durable_execution_sdk_python import BatchResult, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CompletionConfig, MapConfig


def fetch(context: DurableContext, region: str, index: int, items: Any) -> str:
    return context.step(lambda _: f"{region}-ok", name="fetch")


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    config: MapConfig[str] = MapConfig(
        max_concurrency=1, completion_config=CompletionConfig(min_successful=2)
    )
    batch: BatchResult[str] = context.map(["eu", "us", "ap", "sa"], fetch, name="regions", config=config)
    return {"results": batch.get_results(), "reason": batch.completion_reason.value}
