"""Workflow schedules on the deployed stack, on each backend: the schedule examples/complete declares (kept
DISABLED there) resumed through the client and fired by the harness's virtual clock starts the execution
named by its fire time, once however often the occurrence is delivered; the client (and the CLI) create,
list, pause, resume and delete a schedule, whose firing starts its workflow too."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import pytest
from deployed_backend import DeployedTarget
from stepwell.client import StepwellClient
from stepwell.errors import InvalidArgument
from stepwell.features.schedules import (
    SCHEDULE_NAME_PREFIX,
    ScheduleNotFound,
    execution_name,
    scheduled_start_message,
)
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.scheduler import FiredSchedule, SchedulerFirer

from .test_cli_deployed import _config_file, _stepwell

DECLARED = "morning-confirm"
DECLARED_INPUT = {"order_id": "scheduled", "lines": [{"quantity": 2, "unit_price_cents": 150}]}


def _fire_once(
    client: StepwellClient, firer: SchedulerFirer, schedule: str, delta: timedelta, resume: Callable[[], Any]
) -> FiredSchedule:
    """Resume the schedule (`resume`), move the clock by `delta` and fire: it fires once; then pause it,
    whatever happened, so no other test's firings start anything."""
    try:
        resume()
        firer.advance(delta)
        fired = [each for each in firer.fire_due() if each.name == SCHEDULE_NAME_PREFIX + schedule]
    finally:
        assert client.pause_schedule(schedule)["state"] == "DISABLED"
    assert len(fired) == 1, f"schedule {schedule} fired {len(fired)} times"
    return fired[0]


def _resumed_by_client(client: StepwellClient, schedule: str) -> Callable[[], None]:
    def resume() -> None:
        assert client.resume_schedule(schedule)["state"] == "ENABLED"

    return resume


def _ids_of(client: StepwellClient, schedule: str) -> list[str]:
    page = client.list_executions(domain="default", subject_id=schedule)
    return sorted(record.execution_id for record in page.items)


def test_the_declared_schedule_starts_one_execution_per_occurrence(
    deployed_stack: DeployedStack,
    deployed_client: StepwellClient,
    deployed_target: DeployedTarget,
    scheduler_firer: SchedulerFirer,
) -> None:
    config = deployed_stack.client_config
    assert deployed_stack.outputs["workflow_schedule_names"] == {DECLARED: SCHEDULE_NAME_PREFIX + DECLARED}
    declared = deployed_stack.backend.client("scheduler").get_schedule(
        GroupName=config["schedule_group_name"], Name=SCHEDULE_NAME_PREFIX + DECLARED
    )
    # Terraform writes the message the client would, with Scheduler's keyword as it is.
    raw_input = declared["Target"]["Input"]
    assert json.loads(raw_input) == scheduled_start_message(
        DECLARED, "orders.confirm", DECLARED_INPUT, "SKIP"
    )
    assert '"firedAt":"<aws.scheduler.scheduled-time>"' in raw_input
    # A firing Scheduler cannot deliver goes to the module's DLQ, for the reconcile schedule too.
    assert declared["Target"]["DeadLetterConfig"] == {"Arn": config["dlq_arn"]}
    reconcile = deployed_stack.backend.client("scheduler").get_schedule(
        GroupName=config["schedule_group_name"], Name=f"{config['name']}-reconcile"
    )
    assert reconcile["Target"]["DeadLetterConfig"] == {"Arn": config["dlq_arn"]}
    assert {each["name"]: each for each in deployed_client.list_schedules()}[DECLARED] == {
        "kind": "user",
        "name": DECLARED,
        "workflow": "orders.confirm",
        "expression": "cron(0 6 * * ? *)",
        "timezone": "Europe/Dublin",
        "state": "DISABLED",
        "overlap": "SKIP",
        "input": DECLARED_INPUT,
    }
    deployed_target.process_queue()

    resume = _resumed_by_client(deployed_client, DECLARED)
    fired = _fire_once(deployed_client, scheduler_firer, DECLARED, timedelta(days=1, minutes=1), resume)
    deployed_target.process_queue()

    started = f"default#orders.confirm#{DECLARED}/{execution_name(DECLARED, fired.scheduled_time)}"
    assert _ids_of(deployed_client, DECLARED) == [started]
    description = deployed_client.describe_execution(started)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"])["total_cents"] == 300

    # The same occurrence delivered again (Scheduler delivers at least once) starts nothing.
    fired_at = fired.scheduled_time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    again = {**json.loads(raw_input), "firedAt": fired_at}
    deployed_stack.backend.client("sqs").send_message(
        QueueUrl=config["work_queue_url"], MessageBody=json.dumps(again)
    )
    deployed_target.process_queue()
    assert _ids_of(deployed_client, DECLARED) == [started]


def test_the_client_and_cli_manage_schedules_that_start_their_workflow(
    deployed_stack: DeployedStack,
    deployed_client: StepwellClient,
    deployed_target: DeployedTarget,
    scheduler_firer: SchedulerFirer,
    tmp_path: Path,
) -> None:
    name = f"hourly-{uuid.uuid4().hex[:8]}"
    order: dict[str, Any] = {"order_id": name, "lines": [{"quantity": 1, "unit_price_cents": 99}]}
    config_file = _config_file(deployed_stack, tmp_path)

    created = deployed_client.create_schedule(
        name, "orders.confirm", "rate(1 hour)", input=order, enabled=False
    )
    try:
        assert created == {
            "kind": "user",
            "name": name,
            "workflow": "orders.confirm",
            "expression": "rate(1 hour)",
            "timezone": "UTC",
            "state": "DISABLED",
            "overlap": "ALLOW",
            "input": order,
        }
        stored = deployed_stack.backend.client("scheduler").get_schedule(
            GroupName=deployed_stack.client_config["schedule_group_name"], Name=SCHEDULE_NAME_PREFIX + name
        )
        assert stored["Target"]["DeadLetterConfig"] == {"Arn": deployed_stack.client_config["dlq_arn"]}
        with pytest.raises(InvalidArgument, match=f"schedule '{name}' already exists"):
            deployed_client.create_schedule(name, "orders.confirm", "rate(2 hours)")
        users = deployed_client.list_schedules()
        assert name in [each["name"] for each in users]
        assert {each["kind"] for each in users} == {"user"}
        engine = [
            each for each in deployed_client.list_schedules(include_engine=True) if each["kind"] == "engine"
        ]
        assert f"{deployed_stack.client_config['name']}-reconcile" in [each["name"] for each in engine]

        listed = _stepwell(deployed_stack, config_file, "schedules", "list", "--json")
        assert listed.returncode == 0, listed.stderr
        assert name in [each["name"] for each in json.loads(listed.stdout)["Schedules"]]

        def resume_with_cli() -> None:
            resumed = _stepwell(deployed_stack, config_file, "schedules", "resume", name)
            assert (resumed.returncode, resumed.stdout) == (0, f"schedule {name}: ENABLED\n"), resumed.stderr

        fired = _fire_once(
            deployed_client, scheduler_firer, name, timedelta(hours=1, minutes=1), resume_with_cli
        )
        deployed_target.process_queue()
        started = f"default#orders.confirm#{name}/{execution_name(name, fired.scheduled_time)}"
        assert _ids_of(deployed_client, name) == [started]
        assert deployed_client.describe_execution(started)["Status"] == "SUCCEEDED"

        bad = _stepwell(
            deployed_stack,
            config_file,
            "schedules",
            "create",
            "x",
            "--workflow",
            "w",
            "--expression",
            "daily",
        )
        assert bad.returncode == 1
        assert "invalid schedule expression 'daily'" in bad.stderr
    finally:
        deleted = _stepwell(deployed_stack, config_file, "schedules", "delete", name)
        assert (deleted.returncode, deleted.stdout) == (0, f"schedule {name}: deleted\n"), deleted.stderr
    assert name not in [each["name"] for each in deployed_client.list_schedules()]
    with pytest.raises(ScheduleNotFound, match=f"no schedule '{name}'"):
        deployed_client.delete_schedule(name)
