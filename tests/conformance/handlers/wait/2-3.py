from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    context.wait(Duration.from_seconds(2), name="wait-1")
    context.wait(Duration.from_seconds(2), name="wait-2")
    return {"completedWaits": 2}
