"""Wake-ups on the deployed stack, on each backend: a callback answered before its one-day deadline leaves no
schedule behind once its execution ends (the deadline's one-time schedule would otherwise fire a day later,
to find nothing due); a deadline kept as a due item (long_wait_wakeups = "sweep") is woken by the recurring
wake-sweep schedule through the work queue."""

from __future__ import annotations

import json
import time
import uuid

from deployed_backend import FINISHED, DeployedTarget
from stepwell.aws.dynamodb_store.due_wakeups import DynamoDbDueWakeUps, due_item_key
from stepwell.aws.timers import WakeScheduler, schedule_name, schedule_prefix
from stepwell.aws.work_queue import SqsWorkQueue
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


def test_a_deadline_kept_as_a_due_item_is_woken_by_the_wake_sweep_schedule(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_client: StepwellClient
) -> None:
    config, backend = deployed_stack.client_config, deployed_stack.backend
    scheduler, dynamodb = backend.client("scheduler"), backend.client("dynamodb")
    group = config["schedule_group_name"]
    run = uuid.uuid4().hex[:12]
    execution_id = deployed_client.start_execution("callbacks.deadline", {"run": run}, f"swept-{run}")
    deadline = time.monotonic() + WAIT_SECONDS
    while _callback_id(deployed_client, execution_id) is None:
        assert time.monotonic() < deadline, "the callback never started"
        deployed_target.process_queue()
    armed = deployed_target.due_timers([execution_id])[execution_id]

    # What the worker does with long_wait_wakeups = "sweep" (the stack runs "schedules"): the deadline is a
    # due item in the executions table, and no schedule.
    scheduler.delete_schedule(Name=schedule_name(execution_id, armed), GroupName=group)
    due = DynamoDbDueWakeUps(
        dynamodb,
        executions_table=config["executions_table"],
        operations_table=config["operations_table"],
        coordination_table=config["coordination_table"],
        subject_index=config.get("subject_index_name") or "domain-subjectId-index",
    )
    wakes = WakeScheduler(
        SqsWorkQueue(backend.client("sqs"), config["work_queue_url"]),
        scheduler,
        schedule_group=group,
        scheduler_role_arn=config["scheduler_role_arn"],
        work_queue_arn=config["work_queue_arn"],
        clock=deployed_target.clock.now_epoch,
    )
    wakes.sweep_long_waits(due)
    assert wakes.schedule_wake(execution_id, armed).via == "sweep"
    assert _schedules_of(deployed_stack, execution_id) == []
    # The recurring schedule modules/scheduler creates with that setting.
    sweep_schedule = f"{config['name']}-wake-sweep"
    scheduler.create_schedule(
        Name=sweep_schedule,
        GroupName=group,
        ScheduleExpression="rate(1 minute)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target={
            "Arn": config["work_queue_arn"],
            "RoleArn": config["scheduler_role_arn"],
            "Input": json.dumps({"kind": "wake-sweep"}),
        },
    )
    try:
        deployed_target.clock.advance_seconds(armed - deployed_target.clock.now_epoch() + 1)
        while (description := deployed_client.describe_execution(execution_id))["Status"] not in FINISHED:
            assert time.monotonic() < deadline, json.dumps(description, default=str)
            deployed_target.fire_schedules()
            deployed_target.process_queue()
    finally:
        scheduler.delete_schedule(Name=sweep_schedule, GroupName=group)

    # The deadline came through the sweep (nothing else could wake it): the callback timed out.
    assert description["Status"] == "FAILED", json.dumps(description, default=str)
    assert "Item" not in dynamodb.get_item(
        TableName=config["executions_table"], Key=due_item_key(execution_id, armed)
    )
