from aws_durable_execution_sdk_python import DurableContext, durable_execution


def submit(callback_id: str, _: object) -> None:
    """Hands the callback id to the external system (the test harness finds it in the history)."""


@durable_execution
def handler(event: dict, context: DurableContext) -> object:
    return context.wait_for_callback(submit, name="approval")
