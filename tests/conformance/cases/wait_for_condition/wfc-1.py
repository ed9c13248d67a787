"""Polls that carry their state to a stop: each poll's state ([token, polls]) is checkpointed, the wait
strategy asks for a fixed 5 s between checks and stops at the third poll."""

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.types import WaitForConditionCheckContext
from aws_durable_execution_sdk_python.waits import WaitForConditionConfig, WaitForConditionDecision


def poll(state: list[Any], check: WaitForConditionCheckContext) -> list[Any]:
    token, polls = state
    return [token, polls + 1]


def every_five_seconds_until_three_polls(state: list[Any], attempt: int) -> WaitForConditionDecision:
    if state[1] >= 3:
        return WaitForConditionDecision.stop_polling()
    return WaitForConditionDecision.continue_waiting(Duration.from_seconds(5))


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> list[Any]:
    config = WaitForConditionConfig(
        wait_strategy=every_five_seconds_until_three_polls, initial_state=[event["Input"], 0]
    )
    return context.wait_for_condition(poll, config, name="poll-until-three")
