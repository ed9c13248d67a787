"""Small workflows the engine tests run."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryPresets


@durable_execution
def greet(event: Any, context: DurableContext) -> str:
    return context.step(lambda _: f"Hello, {event['name']}!", name="greet")


@durable_execution
def three_day_wait(event: Any, context: DurableContext) -> str:
    before = context.step(lambda _: "before", name="before")
    context.wait(Duration.from_days(3), name="three days")
    after = context.step(lambda _: "after", name="after")
    return f"{before}-{after}"


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return callback.result()


@durable_execution
def two_deadlines(event: Any, context: DurableContext) -> Any:
    later = context.create_callback(name="later", config=CallbackConfig(timeout=Duration.from_hours(3)))
    sooner = context.create_callback(name="sooner", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return [sooner.result(), later.result()]


@durable_execution
def counted_steps(event: Any, context: DurableContext) -> int:
    total = 0
    for index in range(event["steps"]):
        total += context.step(lambda _, index=index: index, name=f"step-{index}")
    return total


@durable_execution
def big_result(event: Any, context: DurableContext) -> str:
    return context.step(lambda _: "x" * event["size"], name="big")


@durable_execution
def doubler(event: Any, context: DurableContext) -> int:
    return context.step(lambda _: event["value"] * 2, name="double")


@durable_execution
def failing_child(event: Any, context: DurableContext) -> int:
    def fail(_: StepContext) -> int:
        raise ValueError(f"cannot handle {event['value']}")

    return context.step(fail, name="fail", config=StepConfig(retry_strategy=RetryPresets.none()))


@durable_execution
def invoker(event: Any, context: DurableContext) -> Any:
    doubled = context.invoke(event["target"], {"value": event["value"]}, name="call child")
    return {"doubled": doubled}


@durable_execution
def poll_until_ready(event: Any, context: DurableContext) -> int:
    from aws_durable_execution_sdk_python.waits import WaitForConditionConfig, WaitForConditionDecision

    def check(polls: int, _: Any) -> int:
        return polls + 1

    def strategy(polls: int, attempts: int) -> WaitForConditionDecision:
        if polls >= event["ready_after"]:
            return WaitForConditionDecision.stop_polling()
        return WaitForConditionDecision.continue_waiting(Duration.from_minutes(10))

    return context.wait_for_condition(check, WaitForConditionConfig(wait_strategy=strategy, initial_state=0))


@durable_execution
def map_squares(event: Any, context: DurableContext) -> list[int]:
    def square(child: DurableContext, item: int, index: int, items: Any) -> int:
        return child.step(lambda _: item * item, name=f"square-{index}")

    return context.map(event["items"], square, name="squares").get_results()


@durable_execution
def always_crashes(event: Any, context: DurableContext) -> str:
    def crash(_: StepContext) -> str:
        raise SystemExit(1)  # the Lambda process dies in every attempt

    return context.step(crash, name="crash")
