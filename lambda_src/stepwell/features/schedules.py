"""Schedules: start a workflow on a cron, rate or at() expression with a fixed input.

A schedule is an EventBridge Scheduler schedule in the module's group, named `start.<schedule>` (the
engine's own schedules are `sw-...` wake-ups and `<name>-reconcile`; `.` appears in neither, since the
module's name allows no dot), that sends the work queue

    {"kind": "scheduled-start", "schedule": S, "workflow": W, "input": <JSON value>, "overlap": "ALLOW"
     or "SKIP", "firedAt": "<aws.scheduler.scheduled-time>"}

and Scheduler puts the occurrence's time (`2026-11-23T06:00:00Z`) in place of the keyword. The worker
starts W with execution name `<schedule>-<YYYYMMDDTHHMMSSZ>` and subject `<schedule>`: a delivery of the
same occurrence again is the engine's idempotent start by name, so it starts nothing twice.

With overlap SKIP, the store keeps a pointer per schedule to the last execution it started
(ExecutionStore.get_schedule_pointer / claim_schedule_pointer). An occurrence reads it: when it names this
occurrence's own execution, the start goes on (a duplicate delivery, or a retry after a crash between the
claim and the start: the start is idempotent); when it names an execution of the same workflow that has
not ended (running, or paused), it starts nothing ("skipped"); otherwise (none, ended, expired) it moves
the pointer to its own execution with a conditional write from the value read and starts it. Of
occurrences racing, only the one whose write succeeds starts (the others are "skipped"). The cost does
not grow with the schedule's history: one GetItem of the pointer, at most one GetItem of the last
execution and one conditional write (then the start). ALLOW never reads or writes the pointer. The
pointer has a `ttl` (ports.SCHEDULE_POINTER_HOLD_SECONDS past the occurrence that claimed it), so a
deleted schedule leaves nothing behind; an occurrence skipped for an execution that has not ended keeps
it that long again (one conditional write), so it never expires under a running or paused execution.

A message that cannot start anything (an unknown workflow, a bad time) is logged and dropped: a retry would
fail the same way.

Declared in Terraform (`schedules`) or managed at run time through the client (`ScheduleManager`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from stepwell.core.registry import validate_workflow_name
from stepwell.errors import InvalidArgument, StepwellError, WorkflowNotFound
from stepwell.model import ExecutionId, make_execution_id

if TYPE_CHECKING:
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_scheduler.type_defs import CreateScheduleInputTypeDef

    from stepwell.core.engine import Engine
    from stepwell.ports import SchedulePointers

logger = logging.getLogger(__name__)

SCHEDULED_START = "scheduled-start"
# Scheduler names of the user's schedules; no engine schedule name contains a dot.
SCHEDULE_NAME_PREFIX = "start."
SCHEDULE_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,57}\Z")
SCHEDULE_NAME_RULE = "1-58 characters: letters, digits, '_' and '-', starting with a letter or digit"
OVERLAP_POLICIES = ("ALLOW", "SKIP")
# Scheduled executions run in the default domain, with the schedule's name as their subject.
DEFAULT_DOMAIN = "default"
# What Scheduler replaces with the occurrence's time when it delivers the target input.
SCHEDULED_TIME_KEYWORD = "<aws.scheduler.scheduled-time>"
# Scheduler keeps a target's Input up to 8192 characters: the input's JSON text gets most of it, the
# rest is the message around it.
MAX_INPUT_CHARS = 7000

# The three expression forms (the harness's firer reads their fields: stepwell.testing.scheduler).
AT_PATTERN = re.compile(r"^at\(([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\)\Z")
RATE_PATTERN = re.compile(r"^rate\(([0-9]+) +(minute|minutes|hour|hours|day|days)\)\Z")
CRON_PATTERN = re.compile(r"^cron\((.+)\)\Z")
EXPRESSION_FORMS = (
    "at(yyyy-mm-ddThh:mm:ss), rate(N minute[s]|hour[s]|day[s]) or "
    "cron(minutes hours day-of-month month day-of-week year)"
)
TIMEZONE_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}\Z")
_FIRED_AT_PATTERN = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z\Z")


def check_schedule_name(name: object) -> str:
    if not isinstance(name, str) or not SCHEDULE_NAME_PATTERN.match(name):
        raise InvalidArgument(f"invalid schedule name {name!r}: a name is {SCHEDULE_NAME_RULE}")
    return name


def check_schedule_expression(expression: object) -> str:
    """The expression's shape (EventBridge Scheduler checks the fields' values when it is created)."""
    text = expression.strip() if isinstance(expression, str) else ""
    rate = RATE_PATTERN.match(text)
    cron = CRON_PATTERN.match(text)
    if (
        AT_PATTERN.match(text)
        or (rate and int(rate.group(1)) >= 1)
        or (cron and len(cron.group(1).split()) == 6)
    ):
        return text
    raise InvalidArgument(f"invalid schedule expression {expression!r}: use {EXPRESSION_FORMS}")


def check_timezone(timezone: object) -> str:
    if not isinstance(timezone, str) or not TIMEZONE_PATTERN.match(timezone):
        raise InvalidArgument(
            f"invalid schedule time zone {timezone!r}: use an IANA name such as UTC or Europe/Dublin"
        )
    return timezone


def check_overlap(overlap: object) -> str:
    if overlap not in OVERLAP_POLICIES:
        raise InvalidArgument(f"invalid overlap policy {overlap!r}: use one of {', '.join(OVERLAP_POLICIES)}")
    return str(overlap)


def scheduled_start_message(schedule: str, workflow: str, input: Any, overlap: str) -> dict[str, Any]:
    """The target input of a schedule (Terraform's `schedules` builds the same)."""
    return {
        "kind": SCHEDULED_START,
        "schedule": schedule,
        "workflow": workflow,
        "input": input,
        "overlap": overlap,
        "firedAt": SCHEDULED_TIME_KEYWORD,
    }


def execution_name(schedule: str, fired_at: datetime) -> str:
    """The execution one occurrence starts: the same for every delivery of that occurrence."""
    return f"{schedule}-{fired_at.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"


@dataclass(frozen=True)
class ScheduledStart:
    schedule: str
    workflow: str
    input: Any
    overlap: str
    fired_at: datetime

    @property
    def execution_name(self) -> str:
        return execution_name(self.schedule, self.fired_at)


def parse_scheduled_start(body: Mapping[str, Any]) -> ScheduledStart:
    """A scheduled-start message, or InvalidArgument naming what is wrong (never quoting the input)."""
    allowed = {"kind", "schedule", "workflow", "input", "overlap", "firedAt"}
    unknown = sorted(str(key)[:40] for key in body if key not in allowed)
    if unknown:
        raise InvalidArgument(f"unknown fields {unknown} (allowed: {sorted(allowed)})")
    schedule = check_schedule_name(body.get("schedule"))
    workflow = body.get("workflow")
    try:
        validate_workflow_name(workflow)
    except ValueError as error:
        raise InvalidArgument(str(error)) from None
    fired_at = body.get("firedAt")
    if fired_at == SCHEDULED_TIME_KEYWORD:
        raise InvalidArgument(
            f"firedAt is still {SCHEDULED_TIME_KEYWORD}: EventBridge Scheduler substitutes it, so this "
            "message was not sent by a schedule"
        )
    if not isinstance(fired_at, str) or not _FIRED_AT_PATTERN.match(fired_at):
        raise InvalidArgument(f"firedAt {str(fired_at)[:40]!r} is not a UTC time like 2026-11-23T06:00:00Z")
    try:
        when = datetime.fromisoformat(fired_at)
    except ValueError:
        raise InvalidArgument(f"firedAt {fired_at!r} is not a valid time") from None
    return ScheduledStart(
        schedule=schedule,
        workflow=str(workflow),
        input=body.get("input"),
        overlap=check_overlap(body.get("overlap", "ALLOW")),
        fired_at=when,
    )


@dataclass(frozen=True)
class ScheduledStartOutcome:
    """`action`: started, skipped (SKIP and one still runs), duplicate (this occurrence already started)
    or rejected (`reason`: why nothing can start)."""

    action: str
    execution_id: str | None = None
    reason: str = ""


def start_scheduled(engine: Engine, body: Mapping[str, Any]) -> ScheduledStartOutcome:
    """Start the execution of one occurrence of a schedule (see the module's docstring)."""
    try:
        message = parse_scheduled_start(body)
    except InvalidArgument as error:
        return _rejected(body, f"bad scheduled-start message: {error}")
    if message.overlap == "SKIP":
        running = _claim_or_running(engine, message)
        if running is not None:
            logger.info(
                "schedule %s at %s: skipped (%s still runs)",
                message.schedule,
                message.execution_name,
                running,
            )
            return ScheduledStartOutcome("skipped", running)
    try:
        input_text = json.dumps(message.input, allow_nan=False)
    except (TypeError, ValueError) as error:
        return _rejected(body, f"schedule {message.schedule}: input is not JSON-serializable ({error})")
    try:
        existing = engine.store.get_execution(_execution_id(message))
        execution_id = engine.start_execution_json(
            message.workflow, input_text, message.execution_name, subject_id=message.schedule
        )
    except (WorkflowNotFound, InvalidArgument) as error:
        return _rejected(body, f"schedule {message.schedule}: {type(error).__name__}: {error}")
    except StepwellError as error:  # another input under that name: nothing this message can change
        return _rejected(body, f"schedule {message.schedule}: {type(error).__name__}")
    return ScheduledStartOutcome("duplicate" if existing is not None else "started", execution_id)


def _execution_id(message: ScheduledStart) -> str:
    return make_execution_id(DEFAULT_DOMAIN, message.workflow, message.schedule, message.execution_name)


def _claim_or_running(engine: Engine, message: ScheduledStart) -> str | None:
    """SKIP: the id of the schedule's execution that has not ended (start nothing), or None once the
    schedule's pointer names this occurrence's execution (start it). The pointer names the last execution
    the schedule started and moves only by a conditional write from the value read, so of occurrences
    racing exactly one moves it; a delivery finding its own execution there (a duplicate, or a retry after
    a crash between the claim and the start) starts it, as the start is idempotent by name."""
    own = _execution_id(message)
    store: SchedulePointers = engine.store
    now = engine.clock.now()
    pointer = store.get_schedule_pointer(DEFAULT_DOMAIN, message.schedule)
    if pointer == own:
        return None
    if pointer is not None and _runs(engine, pointer, message.workflow):
        # The pointer expires (its ttl) a hold past the occurrence that last used it: kept while the
        # execution it names runs, however long, so no later occurrence starts beside it.
        store.keep_schedule_pointer(DEFAULT_DOMAIN, message.schedule, pointer, now)
        return pointer
    if store.claim_schedule_pointer(
        DEFAULT_DOMAIN, message.schedule, expected=pointer, execution_id=own, now=now
    ):
        return None
    # Another delivery moved the pointer since it was read (pointers are never removed): another
    # occurrence's execution, which has just started, or this one's (a duplicate delivery racing this one).
    winner = store.get_schedule_pointer(DEFAULT_DOMAIN, message.schedule)
    return None if winner in (own, None) else winner


def _runs(engine: Engine, execution_id: str, workflow: str) -> bool:
    """Whether the execution a pointer names is one of `workflow` (a schedule changed to another workflow
    does not wait for the old one's) and has not ended: RUNNING, PAUSING or PAUSED (a paused one resumes
    later, so an occurrence starting beside it would overlap it; an ended, deleting or expired one no
    longer blocks)."""
    try:
        if ExecutionId.parse(execution_id).workflow_id != workflow:
            return False
    except ValueError:
        return False
    record = engine.store.get_execution(execution_id)
    return record is not None and not record.status.is_terminal


def _rejected(body: Mapping[str, Any], reason: str) -> ScheduledStartOutcome:
    logger.warning("dropped scheduled-start of schedule %r: %s", str(body.get("schedule"))[:80], reason)
    return ScheduledStartOutcome("rejected", reason=reason)


# --------------------------------------------------------------------------- managing schedules


# What UpdateSchedule would reset unless sent again (it replaces the whole schedule).
_KEPT_ON_UPDATE = (
    "Description",
    "ScheduleExpressionTimezone",
    "StartDate",
    "EndDate",
    "KmsKeyArn",
    "ActionAfterCompletion",
)


class ScheduleNotFound(StepwellError, LookupError):
    pass


@dataclass(frozen=True)
class ScheduleTarget:
    """Where a deployment's schedules deliver: its group, the work queue and the role Scheduler assumes."""

    group_name: str
    work_queue_arn: str
    role_arn: str
    kms_key_arn: str = ""
    # The module's DLQ: a firing Scheduler cannot deliver goes there (alarmed, redrivable), not lost.
    dead_letter_arn: str = ""


class ScheduleManager:
    """Create, list, pause, resume and delete the user's schedules of one deployment's group. Only names
    under `start.` are reachable: the engine's own schedules are listed (`include_engine`), never changed."""

    def __init__(self, scheduler: EventBridgeSchedulerClient, target: ScheduleTarget) -> None:
        self._scheduler = scheduler
        self.target = target

    def create_schedule(
        self,
        name: str,
        workflow: str,
        expression: str,
        *,
        input: Any = None,
        timezone: str = "UTC",
        overlap: str = "ALLOW",
        enabled: bool = True,
    ) -> dict[str, Any]:
        check_schedule_name(name)
        try:
            validate_workflow_name(workflow)
        except ValueError as error:
            raise InvalidArgument(str(error)) from None
        try:
            input_text = json.dumps(input if input is not None else {}, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidArgument(f"input of schedule {name!r} is not JSON: {error}") from None
        if len(input_text) > MAX_INPUT_CHARS:
            raise InvalidArgument(
                f"input of schedule {name!r} is {len(input_text)} characters of JSON; the limit is "
                f"{MAX_INPUT_CHARS} (EventBridge Scheduler keeps at most 8192 per target input)"
            )
        message = scheduled_start_message(name, workflow, json.loads(input_text), check_overlap(overlap))
        request: CreateScheduleInputTypeDef = {
            "Name": SCHEDULE_NAME_PREFIX + name,
            "GroupName": self.target.group_name,
            "Description": f"Starts Stepwell workflow {workflow}.",
            "ScheduleExpression": check_schedule_expression(expression),
            "ScheduleExpressionTimezone": check_timezone(timezone),
            "State": "ENABLED" if enabled else "DISABLED",
            "FlexibleTimeWindow": {"Mode": "OFF"},
            "Target": {
                "Arn": self.target.work_queue_arn,
                "RoleArn": self.target.role_arn,
                "Input": json.dumps(message, sort_keys=True, separators=(",", ":")),
            },
        }
        if self.target.kms_key_arn:
            request["KmsKeyArn"] = self.target.kms_key_arn
        if self.target.dead_letter_arn:
            request["Target"]["DeadLetterConfig"] = {"Arn": self.target.dead_letter_arn}
        try:
            self._scheduler.create_schedule(**request)
        except self._scheduler.exceptions.ConflictException:
            raise InvalidArgument(
                f"schedule {name!r} already exists in group {self.target.group_name!r}: delete it first "
                "or choose another name"
            ) from None
        return self.get_schedule(name)

    def get_schedule(self, name: str) -> dict[str, Any]:
        return _describe(self._get(name))

    def list_schedules(self, include_engine: bool = False) -> list[dict[str, Any]]:
        """The user's schedules (name, workflow, expression, timezone, state, overlap), sorted by name;
        with `include_engine`, the engine's own too (`kind` "engine": name, expression, state)."""
        found: list[dict[str, Any]] = []
        paginator = self._scheduler.get_paginator("list_schedules")
        for page in paginator.paginate(GroupName=self.target.group_name):
            for summary in page["Schedules"]:
                full_name = summary.get("Name", "")
                if full_name.startswith(SCHEDULE_NAME_PREFIX):
                    found.append(self.get_schedule(full_name.removeprefix(SCHEDULE_NAME_PREFIX)))
                elif include_engine:
                    found.append({"kind": "engine", "name": full_name, "state": summary.get("State")})
        return sorted(found, key=lambda each: (each["kind"], each["name"]))

    def pause_schedule(self, name: str) -> dict[str, Any]:
        return self._set_state(name, "DISABLED")

    def resume_schedule(self, name: str) -> dict[str, Any]:
        return self._set_state(name, "ENABLED")

    def delete_schedule(self, name: str) -> None:
        check_schedule_name(name)
        try:
            self._scheduler.delete_schedule(
                GroupName=self.target.group_name, Name=SCHEDULE_NAME_PREFIX + name
            )
        except self._scheduler.exceptions.ResourceNotFoundException:
            raise self._not_found(name) from None

    def _get(self, name: str) -> dict[str, Any]:
        check_schedule_name(name)
        try:
            found = self._scheduler.get_schedule(
                GroupName=self.target.group_name, Name=SCHEDULE_NAME_PREFIX + name
            )
        except self._scheduler.exceptions.ResourceNotFoundException:
            raise self._not_found(name) from None
        return dict(found)

    def _not_found(self, name: str) -> ScheduleNotFound:
        return ScheduleNotFound(f"no schedule {name!r} in group {self.target.group_name!r}")

    def _set_state(self, name: str, state: str) -> dict[str, Any]:
        """UpdateSchedule replaces the whole schedule: send back what GetSchedule has, with `state`."""
        current = self._get(name)
        request: dict[str, Any] = {
            "Name": current["Name"],
            "GroupName": self.target.group_name,
            "ScheduleExpression": current["ScheduleExpression"],
            "FlexibleTimeWindow": current["FlexibleTimeWindow"],
            "Target": current["Target"],
            "State": "ENABLED" if state == "ENABLED" else "DISABLED",
        }
        request.update({key: current[key] for key in _KEPT_ON_UPDATE if current.get(key)})
        self._scheduler.update_schedule(**request)
        return self.get_schedule(name)


def _describe(schedule: Mapping[str, Any]) -> dict[str, Any]:
    """A user schedule as the client shows it (what its target input says it starts)."""
    try:
        message = json.loads(schedule.get("Target", {}).get("Input") or "{}")
    except json.JSONDecodeError:
        message = {}
    if not isinstance(message, dict):
        message = {}
    return {
        "kind": "user",
        "name": str(schedule["Name"]).removeprefix(SCHEDULE_NAME_PREFIX),
        "workflow": message.get("workflow"),
        "expression": schedule.get("ScheduleExpression"),
        "timezone": schedule.get("ScheduleExpressionTimezone") or "UTC",
        "state": schedule.get("State"),
        "overlap": message.get("overlap"),
        "input": message.get("input"),
    }
