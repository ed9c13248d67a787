from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def handler(event: dict, context: DurableContext) -> str:
    value = event["Input"]["value"]
    return context.run_in_child_context(
        lambda child: child.step(lambda _: value), name=event["Input"]["name"]
    )
