import sys

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig, StepSemantics
from aws_durable_execution_sdk_python.retries import RetryPresets


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    text = event["Input"]

    def at_most_once_flaky_step(step_context: StepContext) -> str:
        step_context.logger.info(f"running step for {text}")
        sys.exit(1)  # the Lambda process dies mid-step (process.exit)

    return context.step(
        at_most_once_flaky_step,
        name="at_most_once_flaky_step",
        config=StepConfig(
            retry_strategy=RetryPresets.none(), step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY
        ),
    )
