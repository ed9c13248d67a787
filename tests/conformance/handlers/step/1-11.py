from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy


def unreliable(step_context: StepContext) -> str:
    if step_context.attempt < 2:
        raise RuntimeError("first attempt fails")
    return "Operation succeeded"


RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
    )
)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(unreliable, config=StepConfig(retry_strategy=RETRY))
