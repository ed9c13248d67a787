from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    name = event["Input"]
    return context.step(lambda _: f"Hello, {name}!", name="custom_step_name")
