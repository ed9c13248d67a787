import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


def _upper(value: Any) -> Any:
    if isinstance(value, str):
        return value.upper()
    if isinstance(value, list):
        return [_upper(item) for item in value]
    if isinstance(value, dict):
        return {key: _upper(item) for key, item in value.items()}
    return value


class UppercaseSerDes(SerDes[Any]):
    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps(_upper(value))

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return json.loads(data)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    text = event["Input"]
    return context.step(lambda _: text, config=StepConfig(serdes=UppercaseSerDes()))
