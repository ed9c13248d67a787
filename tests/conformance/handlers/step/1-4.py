from aws_durable_execution_sdk_python import DurableContext, durable_execution


def build_response(user: dict) -> dict:
    return {"user": {"name": user["name"], "tags": list(user["tags"])}, "count": len(user["tags"])}


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    user = event["Input"]
    return context.step(lambda _: build_response(user))
