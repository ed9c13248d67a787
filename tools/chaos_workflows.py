"""The workflows `tools/chaos.py` runs: unmodified `@durable_execution` handlers of the AWS Durable
Execution SDK. Every step body appends one line to the ledger (`record_run`) before it returns, outside
the engine: (execution id, step, attempt, pid, invocation, virtual time, outcome). The chaos run reads it
back to find step bodies that ran more than once and whether each re-run is explained.

- `retrying`: a step that raises on its first attempt (the SDK's retry strategy runs it again), then one.
- `waiting`: a step, a short wait (an SQS delay), a long wait (an EventBridge Scheduler schedule), a step.
- `callback`: a callback completed by the chaos run's concurrent sender, then a step.
- `fan_out`: a parallel of three branches, each a step, then a step.
- `parent`: a step, an invoke of `child` (one step), a step.
- `journey` (a definition, not a handler): a context started by a `chaos.begin` bus event runs an action,
  then waits for `chaos.next` (or two hours).
- `three_steps` (tools/throughput.py's, not in the chaos mix): a step, a one-second wait, two steps.
- `slow`: a step whose first run sleeps past the engine's lease and then has its execution delivered again,
  so another worker takes the execution over while it still runs (its checkpoint is then fenced); the
  first run waits for that takeover, and one execution at a time does this, so workers stay free for it.

The worker process sets `CLOCK`, `INVOCATION`, `LEASE_SECONDS`, `TAKE_OVER` and `AFTER_RECORD` (its kill
switch); the defaults keep the workflows runnable anywhere.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from aws_durable_execution_sdk_python.types import StepContext
from stepwell.core.logs import current_context
from stepwell.features.definitions.actions import ActionContext, ActionRegistry, default_actions

LEDGER_ENV = "STEPWELL_CHAOS_LEDGER"
CALLBACKS_ENV = "STEPWELL_CHAOS_CALLBACKS"
SLOW_MARKS_ENV = "STEPWELL_CHAOS_SLOW_MARKS"
SHORT_WAIT_SECONDS = 2
LONG_WAIT_SECONDS = 3600  # beyond SQS's 900 s: a one-time Scheduler schedule
THROUGHPUT_WAIT_SECONDS = 1
FAN_OUT_BRANCHES = 3
SLOW_STEP = "slow"
# The slow step's first run: past its lease it asks for a delivery of its execution (as a duplicate would
# bring), then runs on until another worker has taken the execution over and run the step (or, if every
# worker is busy that long, until the bound below).
SLOW_PAST_LEASE_SECONDS = 1.0
SLOW_TAKE_OVER_SECONDS = 60.0

# Set by the chaos worker process.
CLOCK: Callable[[], float] = time.time
INVOCATION: str = ""
AFTER_RECORD: Callable[[], None] = lambda: None  # noqa: E731  (a hook; the worker may kill itself here)
TAKE_OVER: Callable[[str], None] = lambda _execution_id: None  # noqa: E731  (sends a message for it)
LEASE_SECONDS: float = 0.0


class FirstAttemptFails(Exception):
    """Raised by a retried step on its first attempt, on purpose."""


def _append(variable: str, record: dict[str, Any]) -> None:
    path = os.environ.get(variable)
    if not path:
        return
    # One write of one line to a file opened for appending: concurrent writers never interleave.
    line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)
    finally:
        os.close(descriptor)


def record_run(step: str, attempt: int, outcome: str = "returned", started_at: float | None = None) -> None:
    """The ledger line of one run of a step body or action (`at`: when the run began)."""
    _append(
        LEDGER_ENV,
        {
            "execution": current_context().get("executionId", ""),
            "step": step,
            "attempt": attempt,
            "pid": os.getpid(),
            "invocation": INVOCATION,
            "at": CLOCK() if started_at is None else started_at,
            "real": time.time(),
            "outcome": outcome,
        },
    )
    AFTER_RECORD()


def _step(name: str, value: Any) -> Callable[[StepContext], Any]:
    def body(step_context: StepContext) -> Any:
        record_run(name, step_context.attempt)
        return value

    return body


def _flaky(step_context: StepContext) -> str:
    if step_context.attempt == 1:
        record_run("flaky", step_context.attempt, "raised")
        raise FirstAttemptFails("the first attempt fails on purpose")
    record_run("flaky", step_context.attempt)
    return "second time lucky"


RETRY_ONCE = StepConfig(
    retry_strategy=create_retry_strategy(
        RetryStrategyConfig(max_attempts=3, initial_delay=Duration.from_seconds(1), backoff_rate=1)
    )
)


@durable_execution
def retrying(event: dict[str, Any], context: DurableContext) -> str:
    result: str = context.step(_flaky, name="flaky", config=RETRY_ONCE)
    context.step(_step("after", 1), name="after")
    return result


@durable_execution
def waiting(event: dict[str, Any], context: DurableContext) -> int:
    context.step(_step("before", 1), name="before")
    context.wait(Duration.from_seconds(SHORT_WAIT_SECONDS), name="short")
    context.wait(Duration.from_seconds(LONG_WAIT_SECONDS), name="long")
    return int(context.step(_step("after", 2), name="after"))


@durable_execution
def three_steps(event: dict[str, Any], context: DurableContext) -> int:
    context.step(_step("first", 1), name="first")
    context.wait(Duration.from_seconds(THROUGHPUT_WAIT_SECONDS), name="short")
    context.step(_step("second", 2), name="second")
    return int(context.step(_step("third", 3), name="third"))


def _submit(callback_id: str, _context: Any) -> None:
    # The sender completes it; written before the callback is checkpointed, so a re-run writes it again.
    _append(CALLBACKS_ENV, {"callback": callback_id, "execution": current_context().get("executionId", "")})


@durable_execution
def callback(event: dict[str, Any], context: DurableContext) -> Any:
    answer = context.wait_for_callback(_submit, name="approval")
    context.step(_step("after", 1), name="after")
    return answer


def _branch(index: int) -> Callable[[DurableContext], int]:
    def branch(context: DurableContext) -> int:
        return int(context.step(_step(f"branch-{index}", index), name=f"branch-{index}"))

    return branch


@durable_execution
def fan_out(event: dict[str, Any], context: DurableContext) -> int:
    results = context.parallel([_branch(i) for i in range(FAN_OUT_BRANCHES)], name="fan-out").get_results()
    return int(context.step(_step("total", sum(results)), name="total"))


@durable_execution
def child(event: dict[str, Any], context: DurableContext) -> int:
    return int(context.step(_step("child-step", 7), name="child-step"))


@durable_execution
def parent(event: dict[str, Any], context: DurableContext) -> int:
    context.step(_step("before", 1), name="before")
    result = context.invoke("child", {"from": "parent"}, name="call-child")
    context.step(_step("after", 1), name="after")
    return int(result)


def _slow(step_context: StepContext) -> str:
    marks = os.environ.get(SLOW_MARKS_ENV)
    execution = current_context().get("executionId", "")
    mark = Path(marks, execution.replace("/", "_").replace("#", "_")) if marks else None
    if mark is not None and not mark.exists():
        # One first run at a time outlives its lease (a lock the kernel drops if its worker is killed): the
        # others run plainly, so the workers left free can take the outliving one over.
        with Path(marks, "outliving.lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                record_run(SLOW_STEP, step_context.attempt)
                return "slow"
            started_at = CLOCK()
            mark.touch()
            time.sleep(LEASE_SECONDS + SLOW_PAST_LEASE_SECONDS)
            TAKE_OVER(execution)
            taken = Path(f"{mark}.taken")
            deadline = time.monotonic() + SLOW_TAKE_OVER_SECONDS
            while not taken.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            record_run(SLOW_STEP, step_context.attempt, "outlived its lease", started_at)
            return "slow"
    if mark is not None:
        # The worker that took the execution over runs the step: its first run may end now.
        Path(f"{mark}.taken").touch()
    record_run(SLOW_STEP, step_context.attempt)
    return "slow"


@durable_execution
def slow(event: dict[str, Any], context: DurableContext) -> str:
    result: str = context.step(_slow, name=SLOW_STEP)
    context.step(_step("after", 1), name="after")
    return result


# A definitions context driven by bus events (stepwell.features.definitions): `chaos.begin` starts it, its
# action writes the ledger, and `chaos.next` (or a two-hour timeout) ends it.
JOURNEY_DOMAIN = "chaos"
JOURNEY_SOURCE = "chaos.sender"  # the module's event_sources lets it speak for JOURNEY_DOMAIN
JOURNEY_BEGIN = "chaos.begin"
JOURNEY_NEXT = "chaos.next"
NOTE_ACTION = "chaos.note"
JOURNEY: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "journey",
    "name": "Chaos journey: an action between two events",
    "policy": {"concurrency": "single"},
    "nodes": [
        {"id": "begin", "type": "trigger", "event": JOURNEY_BEGIN},
        {
            "id": "note",
            "type": "action",
            "action": NOTE_ACTION,
            "input": {"subject": "subject"},
            "retry": {"maxAttempts": 3, "initialDelay": "1s", "maxDelay": "5s"},
        },
        {"id": "await_next", "type": "trigger_or_timeout", "event": JOURNEY_NEXT, "timeout": "2h"},
        {"id": "continued", "type": "end", "label": "continued"},
        {"id": "timed_out", "type": "end", "label": "timed out"},
    ],
    "edges": [
        {"from": "begin", "to": "note"},
        {"from": "note", "to": "await_next"},
        {"from": "await_next", "to": "continued", "branch": "event"},
        {"from": "await_next", "to": "timed_out", "branch": "timeout"},
    ],
}


def _note(inputs: dict[str, Any], context: ActionContext) -> dict[str, Any]:
    record_run("note", context.attempt)
    return {"noted": inputs.get("subject")}


def register_actions(actions: ActionRegistry = default_actions) -> None:
    if NOTE_ACTION not in actions:
        actions.register(NOTE_ACTION, _note)


# Name -> handler, in the order the run mixes them (child is only started by parent).
WORKFLOWS: dict[str, Any] = {
    "retrying": retrying,
    "waiting": waiting,
    "callback": callback,
    "fan_out": fan_out,
    "parent": parent,
    "slow": slow,
}
THROUGHPUT = "three_steps"  # tools/throughput.py's one kind
ALL_HANDLERS: dict[str, Any] = {**WORKFLOWS, "child": child, THROUGHPUT: three_steps}
