from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def fail(_: object) -> str:
    raise RuntimeError("inner step failed")


@durable_with_child_context
def failing_child(child: DurableContext) -> str:
    return child.step(fail, config=StepConfig(retry_strategy=RetryPresets.none()))


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(failing_child())
