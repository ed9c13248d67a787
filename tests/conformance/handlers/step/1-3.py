from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    first = context.step(lambda _: "first")
    return context.step(lambda _: f"{first}_second")
