"""A custom wait strategy with growing delays: the SDK's create_wait_strategy without jitter, 2 s doubling
(2, 4, 8), until the counter reaches 4."""

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


def count(state: int, _: WaitForConditionCheckContext) -> int:
    return state + 1


@durable_execution
def handler(event: dict[str, Any], context: DurableContext) -> int:
    strategy: Callable[[int, int], WaitForConditionDecision] = create_wait_strategy(
        WaitStrategyConfig(
            should_continue_polling=lambda state: state < 4,
            max_attempts=10,
            initial_delay=Duration.from_seconds(2),
            max_delay=Duration.from_seconds(60),
            backoff_rate=2,
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    return context.wait_for_condition(
        count, WaitForConditionConfig(wait_strategy=strategy, initial_state=0), name="count-to-four"
    )
