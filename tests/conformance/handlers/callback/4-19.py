from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    name_a, name_b = event["Input"]
    callback_a = context.create_callback(name=name_a)
    callback_b = context.create_callback(name=name_b)
    result_b = callback_b.result()
    result_a = callback_a.result()
    return {"a": result_a, "b": result_b}
