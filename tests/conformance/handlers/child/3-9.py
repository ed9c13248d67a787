from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = event["Input"]
    result = context.run_in_child_context(lambda child: child.step(lambda _: value))
    context.wait(Duration.from_seconds(1))
    return result
