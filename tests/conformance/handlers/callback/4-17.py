from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    name_a, name_b = event["Input"]
    result_a = context.create_callback(name=name_a).result()
    result_b = context.create_callback(name=name_b).result()
    return {"a": result_a, "b": result_b}
