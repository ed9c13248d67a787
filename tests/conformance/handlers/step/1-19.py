from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def failing(_: StepContext) -> str:
    raise RuntimeError("this step always fails")


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(failing, config=StepConfig(retry_strategy=RetryPresets.none()))
