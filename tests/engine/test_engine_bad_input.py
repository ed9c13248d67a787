"""The engine refuses what AWS refuses: a second completion of a callback, an execution name reused with
another input, a malformed stop error, NaN and Infinity; and callback ids never look like options."""

from __future__ import annotations

import json
import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.core.engine import MAX_ERROR_BYTES
from stepwell.core.journal import derived_callback_id, new_callback_id, new_callback_key
from stepwell.errors import CallbackNotFound, ExecutionAlreadyExists, InvalidArgument
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell


@durable_execution
def outlives_its_callback(event: Any, context: DurableContext) -> str:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    try:
        callback.result()
    except Exception:  # the SDK's CallbackError on the timeout
        context.wait(Duration.from_days(1), name="after-timeout")
        return "timed out"
    return "answered"


def _waiting_for_approval(local: LocalStepwell) -> tuple[str, str]:
    """An execution of `approval` waiting for its callback: its id and the callback's."""
    local.register("approval", workflows.approval)
    execution_id = local.start("approval", None)
    local.run_until_idle()
    return execution_id, local.callback_id(execution_id, "approval")


def test_callback_ids_never_start_with_a_dash_and_keep_192_random_bits() -> None:
    ids = [new_callback_id() for _ in range(5000)]
    assert not any(callback_id.startswith("-") for callback_id in ids)
    assert len(set(ids)) == len(ids)
    # 24 random bytes are 32 URL-safe base64 characters after the fixed prefix.
    assert {len(callback_id) for callback_id in ids} == {34}
    # Derived ids (executions with a callback key) have the same shape.
    key = new_callback_key()
    derived = [derived_callback_id(key, "default#wf#s/e", f"op-{index}") for index in range(5000)]
    assert not any(callback_id.startswith("-") for callback_id in derived)
    assert len(set(derived)) == len(derived) and {len(callback_id) for callback_id in derived} == {34}


def test_a_second_completion_of_a_callback_is_refused_and_the_first_wins(
    stepwell_local: LocalStepwell,
) -> None:
    execution_id, callback_id = _waiting_for_approval(stepwell_local)

    stepwell_local.engine.send_callback_success(callback_id, '"first"')
    with pytest.raises(CallbackNotFound, match=f"callback {callback_id!r} has already completed"):
        stepwell_local.engine.send_callback_success(callback_id, '"second"')
    with pytest.raises(CallbackNotFound, match="already completed"):
        stepwell_local.engine.send_callback_failure(callback_id, {"ErrorMessage": "late"})
    with pytest.raises(CallbackNotFound, match="already completed"):
        stepwell_local.engine.send_callback_heartbeat(callback_id)

    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and json.loads(record.result or "null") == '"first"'


def test_of_two_completions_at_the_same_moment_exactly_one_is_accepted(
    stepwell_local: LocalStepwell,
) -> None:
    execution_id, callback_id = _waiting_for_approval(stepwell_local)
    start = threading.Barrier(2)

    def complete(answer: str) -> str | None:
        start.wait()
        try:
            stepwell_local.engine.send_callback_success(callback_id, json.dumps(answer))
        except CallbackNotFound:
            return None
        return answer

    with ThreadPoolExecutor(2) as pool:
        accepted = [answer for answer in pool.map(complete, ["a", "b"]) if answer is not None]
    assert len(accepted) == 1
    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == json.dumps(accepted[0])


def test_a_completion_after_the_callback_timed_out_is_refused(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("outlives_its_callback", outlives_its_callback)
    execution_id = stepwell_local.start("outlives_its_callback", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id, "approval")
    assert stepwell_local.advance_to_next_wakeup()  # the hour passes: the callback times out
    stepwell_local.run_until_idle()
    assert stepwell_local.record(execution_id).status is ExecutionStatus.RUNNING  # now in its day's wait

    with pytest.raises(CallbackNotFound, match="already completed \\(or timed out\\)"):
        stepwell_local.engine.send_callback_success(callback_id, '"too late"')
    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == "timed out"


def test_a_completion_that_cannot_be_delivered_leaves_the_callback_open(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    execution_id, callback_id = _waiting_for_approval(stepwell_local)

    def refuse(*_: Any, **__: Any) -> None:
        raise OSError("the queue is unreachable")

    with monkeypatch.context() as patch:
        # The result is written to the callback's record, then the execution cannot be woken.
        patch.setattr(stepwell_local.engine.queue, "enqueue", refuse)
        with pytest.raises(OSError, match="unreachable"):
            stepwell_local.engine.send_callback_success(callback_id, '"lost"')
    assert stepwell_local.store.get_callback_results([callback_id]) == []  # the result went with it
    stepwell_local.engine.send_callback_success(callback_id, '"retried"')
    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == '"retried"'


def test_an_execution_name_with_another_input_is_refused(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "Ada"}, execution_name="once")
    assert stepwell_local.start("greet", {"name": "Ada"}, execution_name="once") == first

    with pytest.raises(ExecutionAlreadyExists, match=r"'once' of workflow 'greet'.*different input"):
        stepwell_local.start("greet", {"name": "Bob"}, execution_name="once")
    record = stepwell_local.run_to_completion(first)
    assert json.loads(record.result or "null") == "Hello, Ada!"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"nested": [1, math.nan]}])
def test_nan_and_infinity_in_an_input_are_refused(stepwell_local: LocalStepwell, value: Any) -> None:
    stepwell_local.register("greet", workflows.greet)
    with pytest.raises(InvalidArgument, match="nor are NaN and Infinity"):
        stepwell_local.start("greet", value)
    assert "create_execution" not in stepwell_local.store.counters


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("boom", "stop error must be an object with fields"),
        ({"Reason": "x"}, r"unknown stop error fields \['Reason'\]"),
        ({"ErrorType": 7}, "stop error field ErrorType must be a string, got 7"),
        ({"StackTrace": "line"}, "StackTrace must be a list of strings"),
        ({"ErrorData": "x" * MAX_ERROR_BYTES}, f"the limit is {MAX_ERROR_BYTES}"),
    ],
)
def test_stop_validates_its_error_as_a_callback_failure_does(
    stepwell_local: LocalStepwell, error: Any, message: str
) -> None:
    execution_id, callback_id = _waiting_for_approval(stepwell_local)
    with pytest.raises(InvalidArgument, match=message):
        stepwell_local.engine.stop_execution(execution_id, error)
    with pytest.raises(InvalidArgument, match=message.replace("stop", "callback")):
        stepwell_local.engine.send_callback_failure(callback_id, error)
    assert stepwell_local.record(execution_id).status is ExecutionStatus.RUNNING

    assert stepwell_local.engine.stop_execution(execution_id, {"ErrorType": "Cancelled", "StackTrace": ["a"]})
    assert stepwell_local.record(execution_id).error == {"ErrorType": "Cancelled", "StackTrace": ["a"]}
