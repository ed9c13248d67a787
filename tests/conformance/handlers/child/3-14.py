from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import ChildConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class UppercaseTextSerDes(SerDes[Any]):
    """Stores the result as plain uppercase text (not JSON)."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return str(value).upper()

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return data


@durable_with_child_context
def echo(child: DurableContext, value: str) -> str:
    return child.step(lambda _: value)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(
        echo(event["Input"]), config=ChildConfig(serdes=UppercaseTextSerDes())
    )
