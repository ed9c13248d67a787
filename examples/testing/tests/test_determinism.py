"""What the replay check says when a workflow is not deterministic
(docs/testing-your-workflows.md#determinism).

A workflow runs again from the top after every wait and callback, and takes each finished operation's result
from the log. Here it reads a setting outside a step, the setting changes while the execution waits, and the
replay takes the other branch: the log and the code no longer agree, and the execution fails.
"""

from __future__ import annotations

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell

express_shipping = {"enabled": False}  # a feature flag, as a remote settings service would serve it


@durable_execution
def ships_by_the_flag(event: dict[str, str], context: DurableContext) -> str:
    # Wrong: the flag is read outside a step, so a replay may see another value. Read it in a step
    # (context.step(lambda _: flags.get("express"), name="read-flag")) and the replay reuses the first answer.
    if express_shipping["enabled"]:
        booking = context.step(lambda _: "courier", name="book-courier")
    else:
        booking = context.step(lambda _: "post", name="book-post")
    context.wait(Duration.from_hours(1), name="cool-off")
    return booking


def test_a_replay_that_takes_another_path_fails_the_execution(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("shop.flagged", ships_by_the_flag)
    execution_id = stepwell_local.start("shop.flagged", {})
    stepwell_local.run_until_idle()  # booked by post, now waiting an hour
    express_shipping["enabled"] = True
    try:
        record = stepwell_local.run_to_completion(execution_id)  # the replay after the wait
    finally:
        express_shipping["enabled"] = False

    assert record.status is ExecutionStatus.FAILED
    error = stepwell_local.describe(execution_id)["Error"]
    assert error["ErrorType"] == "aws_durable_execution_sdk_python.exceptions.NonDeterministicExecutionError"
    assert error["ErrorMessage"].startswith(
        "the workflow code does not match the execution's log at operation"
    )
    assert "the log has STEP 'book-post', the code has STEP 'book-courier'" in error["ErrorMessage"]
