"""What GetDurableExecution and GetDurableExecutionHistory tell of a pause and of the execution timeout,
through boto3's own `lambda` client: PauseDetails (its Reason only with execution data),
ExpectedExecutionTimeoutTimestamp while the execution has not ended, and ExecutionStartedDetails'
ExecutionTimeout, which the model requires."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from stepwell.core.registry import MAX_EXECUTION_TIMEOUT_SECONDS
from stepwell.model import MAX_PAUSED_TIMEOUT_SECONDS

from tests.api.conftest import ARNS, ApiStack
from tests.engine import workflows

TIMEOUT = 3600


def _timed(stack: ApiStack, name: str) -> str:
    """An execution of a workflow with an execution timeout that waits for a callback; its ARN."""
    stack.local.register("timed", workflows.approval, execution_timeout=TIMEOUT)
    execution_id = stack.local.start("timed", {}, execution_name=name)
    stack.local.run_until_idle()
    return ARNS.execution_arn(execution_id)


def _seconds(value: Any) -> float:
    assert isinstance(value, datetime), value  # botocore parsed the wire's epoch seconds
    return value.timestamp()


def test_a_running_execution_tells_when_it_times_out_and_an_ended_one_does_not(stack: ApiStack) -> None:
    client = stack.client()
    arn = _timed(stack, "deadline")
    described = client.get_durable_execution(DurableExecutionArn=arn)
    assert described["Status"] == "RUNNING" and "PauseDetails" not in described
    started = _seconds(described["StartTimestamp"])
    assert _seconds(described["ExpectedExecutionTimeoutTimestamp"]) == started + TIMEOUT

    client.stop_durable_execution(DurableExecutionArn=arn)
    stack.local.run_until_idle()
    ended = client.get_durable_execution(DurableExecutionArn=arn)
    assert ended["Status"] == "STOPPED"
    assert "ExpectedExecutionTimeoutTimestamp" not in ended and "PauseDetails" not in ended


def test_a_paused_execution_has_pause_details_whose_reason_is_execution_data(stack: ApiStack) -> None:
    client = stack.client()
    arn = _timed(stack, "paused")
    requested = stack.local.clock.now()
    client.pause_durable_execution(DurableExecutionArn=arn, Reason="payments down")
    pausing = client.get_durable_execution(DurableExecutionArn=arn)
    assert pausing["Status"] in ("PAUSING", "PAUSED") and "PauseDetails" in pausing
    stack.local.run_until_idle()

    paused = client.get_durable_execution(DurableExecutionArn=arn)
    assert paused["Status"] == "PAUSED"
    details = paused["PauseDetails"]
    assert details["Reason"] == "payments down" and details["ExecutionTimeoutPaused"] is True
    assert abs(_seconds(details["PauseRequestTimestamp"]) - requested) < 1
    # Paused with its timeout paused: it times out 366 days after its start at the latest.
    started = _seconds(paused["StartTimestamp"])
    assert _seconds(paused["ExpectedExecutionTimeoutTimestamp"]) == started + MAX_PAUSED_TIMEOUT_SECONDS

    compact = client.get_durable_execution(DurableExecutionArn=arn, IncludeExecutionData=False)
    assert compact["PauseDetails"] == {
        "PauseRequestTimestamp": details["PauseRequestTimestamp"],
        "ExecutionTimeoutPaused": True,
    }

    stack.local.clock.advance(600)  # the time paused extends the timeout
    client.resume_durable_execution(DurableExecutionArn=arn)
    resumed = client.get_durable_execution(DurableExecutionArn=arn)
    assert resumed["Status"] == "RUNNING" and "PauseDetails" not in resumed
    assert abs(_seconds(resumed["ExpectedExecutionTimeoutTimestamp"]) - (started + TIMEOUT + 600)) < 1


def test_a_pause_whose_timeout_keeps_running_keeps_the_deadline(stack: ApiStack) -> None:
    client = stack.client()
    arn = _timed(stack, "keeps-running")
    client.pause_durable_execution(DurableExecutionArn=arn, ExecutionTimeoutPaused=False)
    stack.local.run_until_idle()
    paused = client.get_durable_execution(DurableExecutionArn=arn)
    assert paused["PauseDetails"]["ExecutionTimeoutPaused"] is False
    assert "Reason" not in paused["PauseDetails"]
    started = _seconds(paused["StartTimestamp"])
    assert _seconds(paused["ExpectedExecutionTimeoutTimestamp"]) == started + TIMEOUT


def test_execution_started_details_always_carry_an_execution_timeout(stack: ApiStack) -> None:
    client = stack.client()
    timed = _timed(stack, "history")
    [started] = client.get_durable_execution_history(DurableExecutionArn=timed, MaxItems=1)["Events"]
    assert started["ExecutionStartedDetails"]["ExecutionTimeout"] == TIMEOUT

    answer = client.invoke(FunctionName="greet", Payload=b'{"name": "Ada"}', InvocationType="Event")
    untimed = answer["DurableExecutionArn"]
    stack.local.run_until_idle()
    for include in (True, False):
        events = client.get_durable_execution_history(
            DurableExecutionArn=untimed, IncludeExecutionData=include
        )
        details = events["Events"][0]["ExecutionStartedDetails"]
        # A workflow without a timeout: the model's longest, which Stepwell never ends it at.
        assert details["ExecutionTimeout"] == MAX_EXECUTION_TIMEOUT_SECONDS
    assert "ExpectedExecutionTimeoutTimestamp" not in client.get_durable_execution(
        DurableExecutionArn=untimed
    )
