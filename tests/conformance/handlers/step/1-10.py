from aws_durable_execution_sdk_python import DurableContext, StepContext, StepError, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


def failing(step_context: StepContext) -> str:
    step_context.logger.info("step executed")
    raise RuntimeError("permanent failure")


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    try:
        context.step(failing, config=StepConfig(retry_strategy=RetryPresets.none()))
        outcome = "unexpected success"
    except StepError as error:
        outcome = f"caught: {error}"
    context.wait(Duration.from_seconds(1))
    return outcome
