from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import Duration


@durable_with_child_context
def only_wait(child: DurableContext, value: str) -> str:
    child.wait(Duration.from_seconds(1))
    return value


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = context.run_in_child_context(only_wait(event["Input"]))
    return context.step(lambda _: value)
