from aws_durable_execution_sdk_python import CallbackError, DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig


def submit(callback_id: str, _: object) -> None:
    """Hands the callback id to the external system (the test harness finds it in the history)."""


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    config = WaitForCallbackConfig(timeout=Duration.from_seconds(3))
    try:
        return context.wait_for_callback(submit, name=event["Input"], config=config)
    except CallbackError:
        return "timed-out-handled"
