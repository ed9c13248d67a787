"""A check that raises: the first poll records its state, the second raises ValueError, which fails the
operation (StepFailed with the error); the handler catches the SDK's WaitForConditionError and returns
what it carries."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.exceptions import WaitForConditionError
from aws_durable_execution_sdk_python.types import WaitForConditionCheckContext
from aws_durable_execution_sdk_python.waits import WaitForConditionConfig, WaitForConditionDecision


def check_sensor(state: str, check: WaitForConditionCheckContext) -> str:
    if check.attempt >= 2:
        raise ValueError(f"sensor {state} unreachable")
    return state


def every_ten_seconds(_: str, attempt: int) -> WaitForConditionDecision:
    return WaitForConditionDecision.continue_waiting(Duration.from_seconds(10))


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    config = WaitForConditionConfig(wait_strategy=every_ten_seconds, initial_state=event["Input"])
    try:
        context.wait_for_condition(check_sensor, config, name="sensor")
    except WaitForConditionError as error:
        return {"type": error.error_type, "message": error.message}
    raise AssertionError("the check raised on its second attempt, so wait_for_condition must fail")
