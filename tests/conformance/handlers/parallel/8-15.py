import json
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import ParallelConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class WrappingSerDes(SerDes[Any]):
    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return json.dumps({"wrapped": value})

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return json.loads(data)["wrapped"]


@durable_execution
def handler(event: dict, context: DurableContext) -> list:
    config = ParallelConfig(max_concurrency=1, item_serdes=WrappingSerDes())
    return context.parallel([lambda _: "x", lambda _: "y"], name="wrapped", config=config).get_results()
