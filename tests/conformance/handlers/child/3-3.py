from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context


@durable_with_child_context
def two_steps(child: DurableContext, value: str) -> str:
    first = child.step(lambda _: value)
    return child.step(lambda _: first)


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(two_steps(event["Input"]))
