from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryDecision


class TransientError(Exception):
    pass


def retry_on_transient(error: Exception, attempts_made: int) -> RetryDecision:
    if isinstance(error, TransientError) and attempts_made < 3:
        return RetryDecision.retry(Duration.from_seconds(1))
    return RetryDecision.no_retry()


def flaky(step_context: StepContext) -> str:
    if step_context.attempt == 1:
        raise TransientError("temporary outage")
    return "recovered"


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(flaky, config=StepConfig(retry_strategy=retry_on_transient))
