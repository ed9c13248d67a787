from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    return context.wait_for_callback(lambda callback_id, _: None)
