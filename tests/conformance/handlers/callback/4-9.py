from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    callback = context.create_callback(name=event["Input"])
    context.wait(Duration.from_seconds(5))
    return callback.result()
