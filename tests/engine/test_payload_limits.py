"""Payload limits (stepwell.limits; issue 37, item 3): an execution's input, a callback's result, an
operation's payload and an execution's result, each accepted at its limit and refused one byte past it
with one error naming the limit, the size and the setting, and nothing over a limit stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.engine import INPUT_BOUNDED_ELSEWHERE
from stepwell.errors import InvalidArgument, PayloadTooLarge
from stepwell.features.callback_urls import CallbackUrlHandler
from stepwell.features.definitions.interpreter import INTERPRETER_NAME
from stepwell.limits import (
    AWS_MAX_CALLBACK_RESULT_BYTES,
    DEFAULT_MAX_CALLBACK_RESULT_BYTES,
    DEFAULT_MAX_EXECUTION_INPUT_BYTES,
    DEFAULT_MAX_EXECUTION_RESULT_BYTES,
    DEFAULT_MAX_OPERATION_PAYLOAD_BYTES,
    PAYLOAD_OVER_LIMIT_TYPE,
    PayloadLimits,
)
from stepwell.model import ExecutionQuery, ExecutionStatus
from stepwell.testing.local import LocalStepwell

from tests.engine.test_callback_urls import url_event

KIB = 1024


def text_of(size: int) -> str:
    """JSON text of exactly `size` bytes (a string)."""
    return json.dumps("x" * (size - 2))


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    return event


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return len(callback.result() or "")


@durable_execution
def large_step(event: Any, context: DurableContext) -> int:
    # The step's payload is its result's JSON: `event` characters and two quotes.
    value = context.step(lambda _: "x" * event, name="large")
    return len(value)


@durable_execution
def large_child(event: Any, context: DurableContext) -> int:
    value = context.run_in_child_context(lambda _: "x" * event, name="child")
    return len(value)


@durable_execution
def large_result(event: Any, context: DurableContext) -> str:
    return "x" * event


def test_the_defaults_are_at_least_as_strict_as_aws() -> None:
    limits = PayloadLimits()
    assert limits.execution_input_bytes == DEFAULT_MAX_EXECUTION_INPUT_BYTES == 256 * KIB
    assert limits.operation_payload_bytes == DEFAULT_MAX_OPERATION_PAYLOAD_BYTES == 256 * KIB
    assert limits.callback_result_bytes == DEFAULT_MAX_CALLBACK_RESULT_BYTES == 256 * KIB
    assert DEFAULT_MAX_CALLBACK_RESULT_BYTES <= AWS_MAX_CALLBACK_RESULT_BYTES == 1024 * KIB
    assert limits.execution_result_bytes == DEFAULT_MAX_EXECUTION_RESULT_BYTES == 1024 * KIB


def test_a_start_input_at_the_limit_is_accepted_and_one_byte_past_refused_storing_nothing(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("echo", echo)
    limit = DEFAULT_MAX_EXECUTION_INPUT_BYTES

    with pytest.raises(PayloadTooLarge) as refused:
        stepwell_local.engine.start_execution_json("echo", text_of(limit + 1), "past")
    assert str(refused.value) == (
        "the input of workflow 'echo' is 262,145 bytes; the limit on an execution's input is 262,144 bytes "
        "(module variable max_execution_input_bytes, STEPWELL_MAX_EXECUTION_INPUT_BYTES)"
    )
    assert isinstance(refused.value, InvalidArgument)  # what the client, CLI and router already report
    assert stepwell_local.store.list_executions(ExecutionQuery(workflow_id="echo"), limit=10).items == []
    assert stepwell_local.queue.sent == 0
    assert stepwell_local.payloads.references("default#echo#past/past") == []
    # start_execution counts the input's JSON text as it sends it.
    with pytest.raises(PayloadTooLarge, match="262,145 bytes"):
        stepwell_local.start("echo", "x" * (limit - 1))

    execution_id = stepwell_local.engine.start_execution_json("echo", text_of(limit), "at")
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert len(stepwell_local.engine.resolve(record.result, record.result_is_ref) or "") == limit


def test_the_definitions_interpreter_input_is_bounded_by_the_router_not_the_input_limit() -> None:
    # Its input holds a stored definition (up to 409,600 bytes) and one bus event (256 KB).
    assert frozenset({INTERPRETER_NAME}) == INPUT_BOUNDED_ELSEWHERE


def _waiting(local: LocalStepwell) -> tuple[str, str]:
    execution_id = local.start("approval", None)
    local.run_until_idle()
    return execution_id, local.callback_id(execution_id, "approval")


def test_a_callback_result_at_the_limit_is_accepted_and_one_byte_past_refused(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("approval", approval)
    limit = DEFAULT_MAX_CALLBACK_RESULT_BYTES
    execution_id, callback_id = _waiting(stepwell_local)
    sent = stepwell_local.queue.sent

    for result in (text_of(limit + 1), text_of(limit + 1).encode()):
        with pytest.raises(PayloadTooLarge) as refused:
            stepwell_local.engine.send_callback_success(callback_id, result)
        assert str(refused.value) == (
            "the callback result is 262,145 bytes; the limit on a callback's result is 262,144 bytes "
            "(module variable max_callback_result_bytes, STEPWELL_MAX_CALLBACK_RESULT_BYTES)"
        )
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed  # still open: nothing was written
    assert stepwell_local.store.list_external_inputs(execution_id) == []
    assert stepwell_local.queue.sent == sent and stepwell_local.payloads.references(execution_id) == []

    stepwell_local.engine.send_callback_success(callback_id, text_of(limit))
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and json.loads(record.result or "") == limit


def test_the_callback_result_limit_is_the_deployments() -> None:
    local = LocalStepwell(limits=PayloadLimits(callback_result_bytes=2 * KIB))
    local.register("approval", approval)
    _, callback_id = _waiting(local)
    with pytest.raises(PayloadTooLarge, match="is 2,049 bytes; the limit on a callback's result is 2,048"):
        local.engine.send_callback_success(callback_id, text_of(2 * KIB + 1))
    local.engine.send_callback_success(callback_id, text_of(2 * KIB))


def test_a_callback_failure_error_over_its_limit_is_payload_too_large(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", approval)
    _, callback_id = _waiting(stepwell_local)
    with pytest.raises(PayloadTooLarge, match=r"callback error is \d+ bytes as JSON; the limit is 65536"):
        stepwell_local.engine.send_callback_failure(callback_id, {"ErrorData": "x" * 65_536})


def test_a_step_result_at_the_limit_is_stored_and_one_byte_past_fails_the_execution_unstored(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("large_step", large_step)
    limit = DEFAULT_MAX_OPERATION_PAYLOAD_BYTES

    at = stepwell_local.run_to_completion(stepwell_local.start("large_step", limit - 2))
    assert at.status is ExecutionStatus.SUCCEEDED and at.result == str(limit - 2)

    past_id = stepwell_local.start("large_step", limit - 1)
    past = stepwell_local.run_to_completion(past_id)
    assert past.status is ExecutionStatus.FAILED
    assert past.error == {
        "ErrorType": PAYLOAD_OVER_LIMIT_TYPE,
        "ErrorMessage": (
            "the payload of step 'large' (SUCCEED) is 262,145 bytes; the limit on an operation's payload "
            "is 262,144 bytes (module variable max_operation_payload_bytes, "
            "STEPWELL_MAX_OPERATION_PAYLOAD_BYTES)"
        ),
    }
    # The step's result was never stored: no operation of it succeeded, and no object holds it.
    operations = stepwell_local.engine.load_journal(past_id).operations.values()
    assert not [op for op in operations if op.name == "large" and op.status.value == "SUCCEEDED"]
    assert stepwell_local.payloads.references(past_id) == []
    events = [event["EventType"] for event in stepwell_local.history(past_id)]
    assert "StepSucceeded" not in events and events[-1] == "ExecutionFailed"


def test_the_operation_payload_limit_counts_a_step_error_too() -> None:
    @durable_execution
    def failing_step(event: Any, context: DurableContext) -> None:
        def fail(_: Any) -> None:
            raise ValueError("x" * event)

        from aws_durable_execution_sdk_python.config import StepConfig
        from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

        no_retry = create_retry_strategy(RetryStrategyConfig(max_attempts=1))
        context.step(fail, name="fails", config=StepConfig(retry_strategy=no_retry))

    local = LocalStepwell(limits=PayloadLimits(operation_payload_bytes=4 * KIB))
    local.register("failing_step", failing_step)
    small = local.run_to_completion(local.start("failing_step", 100))
    assert small.status is ExecutionStatus.FAILED and small.error and "x" * 100 in small.error["ErrorMessage"]
    large = local.run_to_completion(local.start("failing_step", 5000))
    assert large.status is ExecutionStatus.FAILED and large.error is not None
    assert large.error["ErrorType"] == PAYLOAD_OVER_LIMIT_TYPE
    assert (
        large.error["ErrorMessage"].startswith("the payload of step 'fails' (")
        and "4,096 bytes" in (large.error["ErrorMessage"])
    )


def test_a_child_context_result_over_the_limit_is_summarized_by_the_sdk_not_refused(
    stepwell_local: LocalStepwell,
) -> None:
    # The SDK checkpoints a child context's result over 256 KB as a summary and replays the children.
    stepwell_local.register("large_child", large_child)
    record = stepwell_local.run_to_completion(stepwell_local.start("large_child", 300 * KIB))
    assert record.status is ExecutionStatus.SUCCEEDED and record.result == str(300 * KIB)


def test_an_execution_result_at_the_limit_is_stored_and_one_byte_past_fails_it(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("large_result", large_result)
    limit = DEFAULT_MAX_EXECUTION_RESULT_BYTES

    at = stepwell_local.run_to_completion(stepwell_local.start("large_result", limit - 2))
    assert at.status is ExecutionStatus.SUCCEEDED
    assert len(stepwell_local.engine.resolve(at.result, at.result_is_ref) or "") == limit

    past_id = stepwell_local.start("large_result", limit - 1)
    past = stepwell_local.run_to_completion(past_id)
    assert past.status is ExecutionStatus.FAILED and past.result is None
    assert past.error == {
        "ErrorType": PAYLOAD_OVER_LIMIT_TYPE,
        "ErrorMessage": (
            "the execution's result is 1,048,577 bytes; the limit on an execution's result is "
            "1,048,576 bytes (module variable max_execution_result_bytes, "
            "STEPWELL_MAX_EXECUTION_RESULT_BYTES)"
        ),
    }
    assert stepwell_local.payloads.references(past_id) == []
    assert stepwell_local.describe(past_id)["Status"] == "FAILED"


def test_the_limits_come_from_the_environment_and_client_config() -> None:
    base = {
        "STEPWELL_NAME": "shop",
        "STEPWELL_EXECUTIONS_TABLE": "e",
        "STEPWELL_OPERATIONS_TABLE": "o",
        "STEPWELL_COORDINATION_TABLE": "c",
        "STEPWELL_WORK_QUEUE_URL": "https://sqs/q",
    }
    assert StepwellConfig.from_env(base).payload_limits == PayloadLimits()
    env = {
        **base,
        "STEPWELL_MAX_EXECUTION_INPUT_BYTES": "1024",
        "STEPWELL_MAX_EXECUTION_RESULT_BYTES": "6291456",
        "STEPWELL_MAX_OPERATION_PAYLOAD_BYTES": "4096",
        "STEPWELL_MAX_CALLBACK_RESULT_BYTES": "1048576",
    }
    config = StepwellConfig.from_env(env)
    assert config.payload_limits == PayloadLimits(1024, 6291456, 4096, 1048576)
    assert {key: config.to_env()[key] for key in env} == env
    assert StepwellConfig.from_client_config(config.to_client_config()) == config
    as_text = {**config.to_client_config(), "max_callback_result_bytes": "2048"}
    from_json = StepwellConfig.from_client_config(as_text)
    assert from_json.max_callback_result_bytes == 2048


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "STEPWELL_MAX_CALLBACK_RESULT_BYTES",
            "1048577",
            "max_callback_result_bytes (STEPWELL_MAX_CALLBACK_RESULT_BYTES) must be a whole number of bytes "
            "from 1024 to 1,048,576 (AWS's limit on a callback's result), got 1048577",
        ),
        ("STEPWELL_MAX_EXECUTION_INPUT_BYTES", "1023", "from 1024 to 6,291,456 (AWS's limit on an"),
        ("STEPWELL_MAX_OPERATION_PAYLOAD_BYTES", "6291457", "got 6291457"),
        ("STEPWELL_MAX_EXECUTION_RESULT_BYTES", "1MB", "_RESULT_BYTES must be a whole number, got '1MB'"),
    ],
)
def test_a_bad_limit_is_named_with_what_is_allowed(variable: str, value: str, message: str) -> None:
    env = {
        "STEPWELL_NAME": "shop",
        "STEPWELL_EXECUTIONS_TABLE": "e",
        "STEPWELL_OPERATIONS_TABLE": "o",
        "STEPWELL_COORDINATION_TABLE": "c",
        "STEPWELL_WORK_QUEUE_URL": "https://sqs/q",
        variable: value,
    }
    with pytest.raises(ConfigError) as refused:
        StepwellConfig.from_env(env)
    assert message in str(refused.value)


def test_the_callback_url_answers_413_naming_the_limit_and_changes_nothing() -> None:
    local = LocalStepwell(limits=PayloadLimits(callback_result_bytes=2 * KIB))
    local.register("approval", approval)
    execution_id, callback_id = _waiting(local)
    sent = local.queue.sent
    handler = CallbackUrlHandler(local.engine)
    path = f"/callbacks/{callback_id}/success"

    refused = handler.handle(url_event(path, text_of(2 * KIB + 1)))
    assert refused["statusCode"] == 413
    assert json.loads(refused["body"]) == {
        "error": "the callback result is 2,049 bytes; the limit on a callback's result is 2,048 bytes "
        "(module variable max_callback_result_bytes, STEPWELL_MAX_CALLBACK_RESULT_BYTES)"
    }
    ref = local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed and local.queue.sent == sent
    assert local.store.list_external_inputs(execution_id) == []

    assert handler.handle(url_event(path, text_of(2 * KIB)))["statusCode"] == 202
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_the_callback_url_answers_413_for_a_failure_error_over_its_limit(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("approval", approval)
    _, callback_id = _waiting(stepwell_local)
    handler = CallbackUrlHandler(stepwell_local.engine, max_body_bytes=100 * KIB)
    body = json.dumps({"ErrorData": "x" * 65_536})
    refused = handler.handle(url_event(f"/callbacks/{callback_id}/failure", body))
    assert refused["statusCode"] == 413
    assert json.loads(refused["body"])["error"] == "callback error is 65553 bytes as JSON; the limit is 65536"
