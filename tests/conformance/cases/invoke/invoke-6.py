"""Invoke a plain function (not durable, registered with register_function): its return value is the
invoke's result."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution


def add(event: dict[str, Any], lambda_context: Any) -> dict[str, Any]:
    return {"sum": event["a"] + event["b"], "label": event["label"]}


FUNCTIONS = {"invoke-6-add": add}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    result: dict[str, Any] = context.invoke(
        "invoke-6-add", {"a": 2, "b": 3, "label": event["Input"]}, name="call-add"
    )
    return result
