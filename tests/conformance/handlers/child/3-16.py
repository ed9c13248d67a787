from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context


@durable_with_child_context
def nothing(child: DurableContext) -> None:
    return None


@durable_execution
def handler(event: dict, context: DurableContext) -> None:
    return context.run_in_child_context(nothing())
