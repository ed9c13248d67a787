import sys

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig, StepSemantics
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
        retryable_error_types=[Exception],
    )
)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    text = event["Input"]

    def at_most_once_step(step_context: StepContext) -> str:
        step_context.logger.info(f"running step for {text}")
        if step_context.attempt == 1:
            sys.exit(1)  # the Lambda process dies during the first attempt
        return "succeeded on second attempt"

    return context.step(
        at_most_once_step,
        config=StepConfig(retry_strategy=RETRY, step_semantics=StepSemantics.AT_MOST_ONCE_PER_RETRY),
    )
