from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    name = event["Input"]

    def greet(step_context: StepContext) -> str:
        step_context.logger.info(f"Greeting step started for: {name}")
        greeting = f"Hello, {name}!"
        step_context.logger.info(f"Greeting step completed with: {greeting}")
        return greeting

    return context.step(greet)
