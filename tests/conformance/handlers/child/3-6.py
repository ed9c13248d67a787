from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context


@durable_with_child_context
def inner(child: DurableContext, value: str) -> str:
    return child.step(lambda _: value)


@durable_with_child_context
def outer(child: DurableContext, value: str) -> str:
    child.step(lambda _: value)
    return child.run_in_child_context(inner(value))


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(outer(event["Input"]))
