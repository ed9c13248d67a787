"""Invoke inside a child context: the ChainedInvoke events carry the context as ParentId."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution


@durable_execution
def double(event: dict[str, Any], context: DurableContext) -> int:
    return int(event["n"]) * 2


WORKFLOWS = {"invoke-8-double": double}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> int:
    n = int(event["Input"])

    def in_context(child: DurableContext) -> int:
        doubled: int = child.invoke("invoke-8-double", {"n": n}, name="call-double")
        return doubled

    result: int = context.run_in_child_context(in_context, name="doubling")
    return result
