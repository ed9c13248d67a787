from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import Duration


@durable_with_child_context
def step_then_wait(child: DurableContext, value: str) -> str:
    result = child.step(lambda _: value)
    child.wait(Duration.from_seconds(1))
    return result


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = context.run_in_child_context(step_then_wait(event["Input"]))
    result = context.step(lambda _: value)
    context.wait(Duration.from_seconds(1))
    return result
