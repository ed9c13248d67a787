from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    callback = context.create_callback(name=event["Input"])
    return callback.result()
