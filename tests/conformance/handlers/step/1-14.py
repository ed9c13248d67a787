from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy


def fails_twice(step_context: StepContext) -> str:
    # The attempt number is durable (the service counts attempts), so no external counter is needed.
    if step_context.attempt < 3:
        raise RuntimeError(f"attempt {step_context.attempt} fails")
    return "succeeded on third attempt"


RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=5,
        initial_delay=Duration.from_seconds(2),
        max_delay=Duration.from_seconds(60),
        backoff_rate=3,
        jitter_strategy=JitterStrategy.NONE,
    )
)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(fails_twice, config=StepConfig(retry_strategy=RETRY))
