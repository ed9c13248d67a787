from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext


class NumberSerDes(SerDes[int]):
    def serialize(self, value: int, serdes_context: SerDesContext) -> str:
        return str(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> int:
        return int(data)


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    callback = context.create_callback(name=event["Input"], config=CallbackConfig(serdes=NumberSerDes()))
    count = callback.result()
    return {"count": count, "doubled": count * 2}
