"""A custom serdes: item results are checkpointed by item_serdes as "n=<value>", so the iterations'
ContextSucceeded payloads are that text, and the handler sees the numbers back."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import MapConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class NumberText(SerDes[int]):
    def serialize(self, value: int, serdes_context: SerDesContext) -> str:
        return f"n={value}"

    def deserialize(self, data: str, serdes_context: SerDesContext) -> int:
        return int(data.removeprefix("n="))


def triple(context: DurableContext, value: int, index: int, items: Any) -> int:
    return value * 3


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> list[int]:
    config: MapConfig[int] = MapConfig(max_concurrency=1, item_serdes=NumberText())
    return context.map([int(event["Input"]), 5], triple, name="triples", config=config).get_results()
