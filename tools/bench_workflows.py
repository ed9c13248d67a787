"""The workflows `tools/bench.py` measures: unmodified `@durable_execution` handlers of the AWS Durable
Execution SDK, the same objects for Stepwell (moto and local backends) and for the SDK's own local runner.

- `sequential_steps`: `event["steps"]` sequential `context.step` calls, each returning a small number.
- `mixed`: steps, a short wait (SQS delay), a long wait (EventBridge Scheduler), a callback and a parallel
  fan-out, so non-step operations show their cost.
- `single_*`: one step plus at most one operation of a kind; the bench subtracts `single_step` from each
  to get the marginal cost of that kind of operation. `single_callback_timeout` is a callback with a
  one-day deadline whose result comes first, as an approval's usually does.
- `long_lived`: `event["cycles"]` cycles of a step then a one-hour wait: one execution that wakes up once
  per cycle, so the cost of resuming shows as its log grows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, WaitForCallbackConfig

SHORT_WAIT_SECONDS = 2  # under SQS's 900 s delay: an SQS message with DelaySeconds
LONG_WAIT_SECONDS = 2 * 3600  # beyond 900 s: a one-time EventBridge Scheduler schedule
PARALLEL_BRANCHES = 3
# Over the engine's 200 KiB inline limit (the batch goes to S3), under the 256 KiB limit on an operation's
# payload (max_operation_payload_bytes' default), which fails the execution.
LARGE_RESULT_BYTES = 240 * 1024
LONG_LIVED_WAIT_SECONDS = 3600  # each cycle's wait: an EventBridge Scheduler wake-up
CALLBACK_TIMEOUT_SECONDS = 86400  # an approval's deadline: an EventBridge Scheduler wake-up, usually unneeded

# Callback ids handed out by `wait_for_callback` submitters, in order; the bench sends their results.
CALLBACKS: list[str] = []


def _submit(callback_id: str, _context: Any) -> None:
    CALLBACKS.append(callback_id)


def _value(index: int) -> Callable[[Any], int]:
    def value(_step_context: Any) -> int:
        return index

    return value


def _branch(index: int) -> Callable[[DurableContext], int]:
    def branch(context: DurableContext) -> int:
        return context.step(lambda _: index * index, name=f"branch-{index}")

    return branch


@durable_execution
def sequential_steps(event: dict[str, Any], context: DurableContext) -> int:
    total = 0
    for index in range(int(event["steps"])):
        total += context.step(_value(index), name=f"step-{index}")
    return total


@durable_execution
def mixed(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    first = context.step(lambda _: event.get("order", 0) + 1, name="reserve")
    context.wait(Duration.from_seconds(SHORT_WAIT_SECONDS), name="cool-off")
    second = context.step(lambda _: first * 2, name="charge")
    context.wait(Duration.from_seconds(LONG_WAIT_SECONDS), name="settle")
    approval = context.wait_for_callback(_submit, name="approval")
    fan_out = context.parallel([_branch(i) for i in range(PARALLEL_BRANCHES)], name="fan-out").get_results()
    third = context.step(lambda _: second + sum(fan_out), name="close")
    return {"result": third, "approval": approval}


@durable_execution
def single_step(event: dict[str, Any], context: DurableContext) -> int:
    return context.step(lambda _: 1, name="only")


@durable_execution
def single_short_wait(event: dict[str, Any], context: DurableContext) -> int:
    context.wait(Duration.from_seconds(SHORT_WAIT_SECONDS), name="short")
    return context.step(lambda _: 1, name="only")


@durable_execution
def single_long_wait(event: dict[str, Any], context: DurableContext) -> int:
    context.wait(Duration.from_seconds(LONG_WAIT_SECONDS), name="long")
    return context.step(lambda _: 1, name="only")


@durable_execution
def single_callback(event: dict[str, Any], context: DurableContext) -> int:
    context.wait_for_callback(_submit, name="approval")
    return context.step(lambda _: 1, name="only")


@durable_execution
def single_callback_timeout(event: dict[str, Any], context: DurableContext) -> int:
    deadline = WaitForCallbackConfig(timeout=Duration.from_seconds(CALLBACK_TIMEOUT_SECONDS))
    context.wait_for_callback(_submit, name="approval", config=deadline)
    return context.step(lambda _: 1, name="only")


@durable_execution
def single_parallel(event: dict[str, Any], context: DurableContext) -> int:
    results = context.parallel([_branch(i) for i in range(PARALLEL_BRANCHES)], name="fan-out").get_results()
    return context.step(lambda _: sum(results), name="only")


@durable_execution
def single_large_step(event: dict[str, Any], context: DurableContext) -> int:
    large = context.step(lambda _: "x" * LARGE_RESULT_BYTES, name="large")
    return context.step(lambda _: len(large), name="only")


@durable_execution
def long_lived(event: dict[str, Any], context: DurableContext) -> int:
    total = 0
    for index in range(int(event["cycles"])):
        total += context.step(_value(index), name=f"step-{index}")
        context.wait(Duration.from_seconds(LONG_LIVED_WAIT_SECONDS), name=f"wait-{index}")
    return total


# name -> (handler, needs a callback result sent while it waits)
WORKFLOWS: dict[str, tuple[Callable[..., Any], bool]] = {
    "sequential-steps": (sequential_steps, False),
    "mixed": (mixed, True),
    "single-step": (single_step, False),
    "single-short-wait": (single_short_wait, False),
    "single-long-wait": (single_long_wait, False),
    "single-callback": (single_callback, True),
    "single-callback-timeout": (single_callback_timeout, True),
    "single-parallel": (single_parallel, False),
    "single-large-step": (single_large_step, False),
    "long-lived": (long_lived, False),
}
