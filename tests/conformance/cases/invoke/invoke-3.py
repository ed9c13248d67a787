"""Invoke a durable workflow that times out: the child has a 60 s execution timeout and waits an hour;
at its deadline it ends TIMED_OUT and the parent records ChainedInvokeTimedOut (InvokeError in the SDK)."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.exceptions import InvokeError


@durable_execution
def slow(event: dict[str, Any], context: DurableContext) -> str:
    context.wait(Duration.from_hours(1), name="too-long")
    return "never"


WORKFLOWS = {"invoke-3-slow": slow}
WORKFLOW_OPTIONS = {"invoke-3-slow": {"execution_timeout": 60}}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> str:
    try:
        context.invoke("invoke-3-slow", {"job": event["Input"]}, name="call-slow")
    except InvokeError as error:
        return error.error_type
    raise AssertionError("the child times out, so the invoke must raise")
