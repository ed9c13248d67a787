import json
from datetime import datetime
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class MessageSerDes(SerDes[dict[str, Any]]):
    """Reads the raw JSON into a typed message whose ISO timestamp becomes epoch seconds."""

    def serialize(self, value: dict[str, Any], serdes_context: SerDesContext) -> str:
        return json.dumps(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> dict[str, Any]:
        raw = json.loads(data)
        stamp = datetime.fromisoformat(raw["timestamp"].replace("Z", "+00:00"))
        return {"id": raw["id"], "message": raw["message"], "timestamp": int(stamp.timestamp())}


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    callback = context.create_callback(name=event["Input"], config=CallbackConfig(serdes=MessageSerDes()))
    return {"received": callback.result()}
