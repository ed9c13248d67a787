"""Large payloads: the invoke's input and the child's result are 450 KB each, over the 200 KB inline
limit and over DynamoDB's 400 KB item size, so on the deployed stack they can only pass through the
PayloadStore (S3); the history and the SDK still see them whole."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution

BLOB_CHARACTERS = 450_000


@durable_execution
def mirror(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    return {"size": len(event["blob"]), "mirrored": "y" * BLOB_CHARACTERS + event["blob"][-8:]}


WORKFLOWS = {"invoke-4-mirror": mirror}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    blob = "x" * BLOB_CHARACTERS + event["Input"]
    result: dict[str, Any] = context.invoke("invoke-4-mirror", {"blob": blob}, name="call-mirror")
    return {"size": result["size"], "tail": result["mirrored"][-8:], "length": len(result["mirrored"])}
