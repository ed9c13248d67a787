from aws_durable_execution_sdk_python import (
    DurableContext,
    StepContext,
    durable_execution,
    durable_with_child_context,
)
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=3,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
    )
)


@durable_with_child_context
def retrying_child(child: DurableContext, value: str) -> str:
    def flaky(step_context: StepContext) -> str:
        if step_context.attempt == 1:
            raise RuntimeError("first attempt fails")
        return value

    return child.step(flaky, config=StepConfig(retry_strategy=RETRY))


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(retrying_child(event["Input"]))
