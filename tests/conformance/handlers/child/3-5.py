import contextlib

from aws_durable_execution_sdk_python import ChildContextError, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def fail(_: object) -> str:
    raise RuntimeError("inner step failed")


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = event["Input"]
    with contextlib.suppress(ChildContextError):
        context.run_in_child_context(
            lambda child: child.step(fail, config=StepConfig(retry_strategy=RetryPresets.none()))
        )
    return context.step(lambda _: value)
