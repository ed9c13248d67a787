"""Items processed in batches of one (max_concurrency=1, so the history's order is fixed) with the
iterations named by item_namer; the results come back in item order."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import MapConfig


def price(context: DurableContext, sku: str, index: int, items: Any) -> str:
    return context.step(lambda _: f"{sku}:{(index + 1) * 10}", name="price")


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> list[str]:
    skus = [f"{event['Input']}-{n}" for n in range(3)]
    config: MapConfig[str] = MapConfig(max_concurrency=1, item_namer=lambda sku, index: f"sku-{index}")
    return context.map(skus, price, name="prices", config=config).get_results()
