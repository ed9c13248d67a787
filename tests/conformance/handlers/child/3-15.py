from aws_durable_execution_sdk_python import DurableContext, durable_execution, durable_with_child_context


@durable_with_child_context
def throws(child: DurableContext) -> str:
    raise ValueError("thrown directly in the child body")


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    return context.run_in_child_context(throws())
