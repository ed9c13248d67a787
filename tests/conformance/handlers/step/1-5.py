from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution


def do_nothing(_: StepContext) -> None:
    return None


@durable_execution
def handler(event: dict, context: DurableContext) -> None:
    return context.step(do_nothing)
