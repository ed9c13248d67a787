import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import WaitForCallbackConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class JsonObjectSerDes(SerDes[Any]):
    """Reads the callback payload as parsed JSON (the submitter step's null result passes through)."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return json.loads(data)


def submit(callback_id: str, _: object) -> None:
    """Hands the callback id to the external system (the test harness finds it in the history)."""


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    config = WaitForCallbackConfig(serdes=JsonObjectSerDes())
    decision = context.wait_for_callback(submit, name=event["Input"], config=config)
    return decision["status"]
