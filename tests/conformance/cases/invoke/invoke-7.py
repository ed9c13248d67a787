"""Invoke a plain function that raises: the invoke fails with ErrorType = the exception's class name and
ErrorMessage = its text, as Lambda reports a function error."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.exceptions import InvokeError


class QuotaExceeded(Exception):
    pass


def reserve(event: dict[str, Any], lambda_context: Any) -> None:
    raise QuotaExceeded(f"no capacity left for {event['customer']}")


FUNCTIONS = {"invoke-7-reserve": reserve}


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    try:
        context.invoke("invoke-7-reserve", {"customer": event["Input"]}, name="call-reserve")
    except InvokeError as error:
        return {"type": error.error_type, "message": error.message}
    raise AssertionError("the function raises, so the invoke must fail")
