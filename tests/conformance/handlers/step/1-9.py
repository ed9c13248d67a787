from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


def cached(step_context: StepContext) -> str:
    step_context.logger.info("step executed")
    return "cached_value"


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    result = context.step(cached)
    context.wait(Duration.from_seconds(1))
    return result
