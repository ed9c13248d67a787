from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, WaitForCallbackConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

RETRY = create_retry_strategy(
    RetryStrategyConfig(
        max_attempts=2,
        initial_delay=Duration.from_seconds(1),
        backoff_rate=1,
        jitter_strategy=JitterStrategy.NONE,
        retryable_error_types=[Exception],
    )
)


def failing_submit(callback_id: str, _: object) -> None:
    raise ConnectionError("the external system is unreachable")


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    config = WaitForCallbackConfig(retry_strategy=RETRY)
    return context.wait_for_callback(failing_submit, name=event["Input"], config=config)
