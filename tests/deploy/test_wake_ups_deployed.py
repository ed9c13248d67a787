"""Wake-ups an execution no longer needs, on the deployed stack, on each backend: a callback answered
before its one-day deadline leaves no schedule behind once its execution ends (the deadline's one-time
schedule would otherwise fire a day later, to find nothing due)."""

from __future__ import annotations

import json
import time
import uuid

from deployed_backend import FINISHED, DeployedTarget
from stepwell.aws.timers import schedule_name, schedule_prefix
from stepwell.client import StepwellClient
from stepwell.testing.deployed_fixtures import DeployedStack

from .test_failures_deployed import _callback_id

WAIT_SECONDS = 240.0


def _schedules_of(stack: DeployedStack, execution_id: str) -> list[str]:
    listed = stack.backend.client("scheduler").list_schedules(
        GroupName=stack.client_config["schedule_group_name"], NamePrefix=schedule_prefix(execution_id)
    )
    return sorted(each["Name"] for each in listed["Schedules"])


def test_a_callback_answered_before_its_deadline_leaves_no_schedule(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    run = uuid.uuid4().hex[:12]
    execution_id = deployed_client.start_execution("callbacks.deadline", {"run": run}, f"deadline-{run}")
    deadline = time.monotonic() + WAIT_SECONDS
    while (callback_id := _callback_id(deployed_client, execution_id)) is None:
        assert time.monotonic() < deadline, "the callback never started"
        deployed_target.process_queue()
    armed = deployed_target.due_timers([execution_id])[execution_id]
    assert armed - deployed_target.clock.now_epoch() > 86000  # the deadline, a day ahead
    assert _schedules_of(deployed_stack, execution_id) == [schedule_name(execution_id, armed)]

    deployed_client.send_callback_success(callback_id, json.dumps({"approved": run}))
    while (description := deployed_client.describe_execution(execution_id))["Status"] not in FINISHED:
        assert time.monotonic() < deadline, json.dumps(description, default=str)
        deployed_target.process_queue()

    assert description["Status"] == "SUCCEEDED", json.dumps(description, default=str)
    assert json.loads(json.loads(description["Result"])) == {"approved": run}
    assert _schedules_of(deployed_stack, execution_id) == []
