"""Max attempts exceeded: the condition is never met and the strategy allows two attempts; the second
check's strategy raises the SDK's WaitForConditionError, which fails the operation and the execution."""

from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy
from aws_durable_execution_sdk_python.types import WaitForConditionCheckContext
from aws_durable_execution_sdk_python.waits import (
    WaitForConditionConfig,
    WaitForConditionDecision,
    WaitStrategyConfig,
    create_wait_strategy,
)


def still_pending(state: str, _: WaitForConditionCheckContext) -> str:
    return state


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> str:
    strategy: Callable[[str, int], WaitForConditionDecision] = create_wait_strategy(
        WaitStrategyConfig(
            should_continue_polling=lambda _: True,
            max_attempts=2,
            initial_delay=Duration.from_seconds(3),
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    state: str = context.wait_for_condition(
        still_pending,
        WaitForConditionConfig(wait_strategy=strategy, initial_state=event["Input"]),
        name="never-ready",
    )
    return state
