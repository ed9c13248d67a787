from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import Duration


@durable_with_child_context
def log_only(child: DurableContext, value: str) -> str:
    child.logger.info(f"child body ran for {value}")
    return value


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    result = context.run_in_child_context(log_only(event["Input"]))
    context.wait(Duration.from_seconds(1))
    return result
