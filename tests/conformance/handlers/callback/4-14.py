from aws_durable_execution_sdk_python import CallbackError, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    callback = context.create_callback(
        name=event["Input"], config=CallbackConfig(timeout=Duration.from_seconds(3))
    )
    try:
        outcome = callback.result()
    except CallbackError as error:
        outcome = f"callback timed out: {error}"
    context.wait(Duration.from_seconds(2))
    return outcome
