from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution


def unreliable(step_context: StepContext) -> str:
    if step_context.attempt < 3:
        raise RuntimeError(f"attempt {step_context.attempt} fails")
    return "succeeded on third attempt"


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.step(unreliable)
