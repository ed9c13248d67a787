"""Two contracts of the SDK that Stepwell keeps as AWS does (issue 39), pinned here.

A failed step: the step's error records the exception's own type (StepFailed: KeyError), and the
execution fails with what the SDK makes of the StepError that escaped the handler: ErrorType its class,
aws_durable_execution_sdk_python.exceptions.StepError, and the step exception's message.

A callback's result is text (SendDurableExecutionCallbackSuccess's Result is a blob): the SDK hands it to
the code as it was sent, unless the callback's config has a serdes that reads it (docs/reference/inputs.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import StepConfig, WaitForCallbackConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from aws_durable_execution_sdk_python.serdes import JsonSerDes
from stepwell.testing.local import LocalStepwell

TWO_ATTEMPTS = StepConfig(retry_strategy=create_retry_strategy(RetryStrategyConfig(max_attempts=2)))
PICKED = WaitForCallbackConfig(serdes=JsonSerDes())


@durable_execution
def charge(event: dict[str, Any], context: DurableContext) -> int:
    return context.step(lambda _: int(event["amount_cents"]), name="charge", config=TWO_ATTEMPTS)


def test_a_failed_step_keeps_its_exception_type_and_the_execution_fails_with_the_sdks_step_error(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("orders.charge", charge)
    execution_id = stepwell_local.start("orders.charge", {"order": 7})
    record = stepwell_local.run_to_completion(execution_id)

    assert record.status.value == "FAILED"
    assert stepwell_local.describe(execution_id)["Error"] == {
        "ErrorType": "aws_durable_execution_sdk_python.exceptions.StepError",
        "ErrorMessage": "'amount_cents'",
    }
    failures = [
        event["StepFailedDetails"]
        for event in stepwell_local.history(execution_id)
        if event["EventType"] == "StepFailed"
    ]
    assert [each["Error"]["Payload"] for each in failures] == [
        {"ErrorType": "KeyError", "ErrorMessage": "'amount_cents'"}
    ] * 2
    assert [each["RetryDetails"]["CurrentAttempt"] for each in failures] == [1, 2]


@durable_execution
def pick_as_text(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(lambda callback_id, _: None, name="picked")


@durable_execution
def pick_as_json(event: Any, context: DurableContext) -> Any:
    picked = context.wait_for_callback(lambda callback_id, _: None, name="picked", config=PICKED)
    return {"bay": picked["picked_by"]}


def _answer(local: LocalStepwell, workflow: str, result: Any) -> dict[str, Any]:
    execution_id = local.start(workflow, {})
    local.run_until_idle()
    local.engine.send_callback_success(local.callback_id(execution_id, "picked"), result)
    local.run_to_completion(execution_id)
    return local.describe(execution_id)


@pytest.mark.parametrize(
    ("workflow", "sent", "result"),
    [
        ("pick.text", '{"picked_by": "bay-7"}', '"{\\"picked_by\\": \\"bay-7\\"}"'),  # the text itself
        ("pick.text", "yes please", '"yes please"'),
        ("pick.json", '{"picked_by": "bay-7"}', '{"bay": "bay-7"}'),  # the serdes reads it
    ],
)
def test_a_callback_result_reaches_the_code_as_text_unless_its_serdes_reads_it(
    stepwell_local: LocalStepwell, workflow: str, sent: str, result: str
) -> None:
    stepwell_local.register("pick.text", pick_as_text)
    stepwell_local.register("pick.json", pick_as_json)
    description = _answer(stepwell_local, workflow, sent)
    assert (description["Status"], description["Result"]) == ("SUCCEEDED", result)


def test_text_a_json_serdes_cannot_read_fails_the_wait_with_the_sdks_serdes_error(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("pick.json", pick_as_json)
    description = _answer(stepwell_local, "pick.json", "yes please")
    assert description["Status"] == "FAILED"
    assert description["Error"]["ErrorType"] == "aws_durable_execution_sdk_python.exceptions.SerDesError"
    assert "Expecting value: line 1 column 1 (char 0)" in description["Error"]["ErrorMessage"]
