from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryDecision


class TransientError(Exception):
    pass


def no_retry_on_transient_error(error: Exception, attempts_made: int) -> RetryDecision:
    if isinstance(error, TransientError):
        return RetryDecision.no_retry()
    return RetryDecision.retry(Duration.from_seconds(1))


def flaky(step_context: StepContext) -> str:
    raise TransientError("temporary outage")


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(flaky, config=StepConfig(retry_strategy=no_retry_on_transient_error))
