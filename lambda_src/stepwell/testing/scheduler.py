"""A firer for EventBridge Scheduler schedules, for local backends that only store them.

Neither moto nor LocalStack fires schedules, so tests call ``SchedulerFirer.fire_due()``: it lists
the group's schedules through the scheduler API, fires each due one to its target with the target's
``Input`` (its context attributes, ``<aws.scheduler.scheduled-time>`` and the others, replaced as
Scheduler does), deletes one-time ``at(...)`` schedules whose ``ActionAfterCompletion`` is ``DELETE``, and
runs recurring ``rate(...)``/``cron(...)`` schedules when their next occurrence has come.

Time is virtual: ``advance(timedelta(days=3))`` moves the firer's clock, so a three-day timer fires now.
``start()``/``stop()`` fire due schedules from a background thread (for demos and long-running tests).

Deliberate simplifications, all in the direction of firing at the earliest allowed moment:
``FlexibleTimeWindow`` is ignored (fired at the scheduled time); a recurring schedule that missed
several occurrences fires once per ``fire_due()`` call (the occurrences coalesce; an updated schedule,
a resumed one say, counts from its update); retry policies
and dead-letter configs of targets are not emulated (a failing target raises).

Targets: an SQS queue ARN (SendMessage, with ``SqsParameters.MessageGroupId``), an EventBridge bus
ARN (PutEvents, with ``EventBridgeParameters``), a Lambda function ARN (through the given invoker),
and universal targets ``arn:aws:scheduler:::aws-sdk:<service>:<action>`` (the Input holds the call's
parameters).
"""

from __future__ import annotations

import calendar
import json
import os
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from stepwell.clock import clock_file_text
from stepwell.features.schedules import AT_PATTERN, CRON_PATTERN, EXPRESSION_FORMS, RATE_PATTERN

ClientFactory = Callable[[str], Any]
LambdaInvoker = Callable[[str, bytes], Any]

_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_MONTHS = {name: index for index, name in enumerate(calendar.month_abbr) if name}
_MONTHS_UPPER = {name.upper(): index for name, index in _MONTHS.items()}
# AWS cron numbers days of the week 1 (SUN) to 7 (SAT).
_WEEKDAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}
_CRON_SEARCH_YEARS = 5


class ScheduleExpressionError(ValueError):
    """A schedule expression this firer cannot read; the message names it and the allowed forms."""


def _expression_error(expression: str, why: str) -> ScheduleExpressionError:
    return ScheduleExpressionError(
        f"unsupported schedule expression {expression!r}: {why}; allowed forms are {EXPRESSION_FORMS}"
    )


@dataclass(frozen=True)
class AtExpression:
    when: datetime  # aware, in the schedule's time zone

    def next_after(self, moment: datetime) -> datetime | None:
        return self.when if self.when > moment else None


@dataclass(frozen=True)
class RateExpression:
    period: timedelta

    def next_after(self, moment: datetime, anchor: datetime) -> datetime:
        """The first occurrence anchor + k*period (k >= 1) strictly after ``moment``."""
        if moment < anchor:
            return anchor + self.period
        elapsed = (moment - anchor) // self.period
        return anchor + (elapsed + 1) * self.period


@dataclass(frozen=True)
class _CronField:
    values: frozenset[int]
    any_value: bool  # '*' or '?': days of month and week combine differently when one is unrestricted


@dataclass(frozen=True)
class CronExpression:
    """AWS cron: minutes hours day-of-month month day-of-week year (L, W and # are not supported)."""

    minutes: _CronField
    hours: _CronField
    days_of_month: _CronField
    months: _CronField
    days_of_week: _CronField  # AWS numbering: 1 = Sunday .. 7 = Saturday
    years: _CronField

    def _day_matches(self, day: date) -> bool:
        if day.month not in self.months.values or day.year not in self.years.values:
            return False
        aws_weekday = (day.isoweekday() % 7) + 1
        dom_ok = day.day in self.days_of_month.values
        dow_ok = aws_weekday in self.days_of_week.values
        if self.days_of_month.any_value:
            return dow_ok
        if self.days_of_week.any_value:
            return dom_ok
        return dom_ok and dow_ok

    def next_after(self, moment: datetime) -> datetime | None:
        """The first matching minute strictly after ``moment`` (same time zone), or None within 5 years."""
        start = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.date()
        last_day = day + timedelta(days=366 * _CRON_SEARCH_YEARS)
        while day <= last_day:
            if self._day_matches(day):
                for hour in sorted(self.hours.values):
                    for minute in sorted(self.minutes.values):
                        candidate = datetime(day.year, day.month, day.day, hour, minute, tzinfo=moment.tzinfo)
                        if candidate >= start:
                            return candidate
            day += timedelta(days=1)
        return None


ScheduleExpression = AtExpression | RateExpression | CronExpression


def _parse_cron_value(token: str, names: dict[str, int], expression: str) -> int:
    upper = token.upper()
    if upper in names:
        return names[upper]
    if not token.isdigit():
        raise _expression_error(expression, f"cannot read {token!r}")
    return int(token)


def _parse_cron_field(
    text: str, low: int, high: int, *, expression: str, names: dict[str, int] | None = None
) -> _CronField:
    lookup = names or {}
    if text in ("*", "?"):
        return _CronField(frozenset(range(low, high + 1)), any_value=True)
    values: set[int] = set()
    for part in text.split(","):
        if any(marker in part for marker in ("L", "W", "#")) and part.upper() not in lookup:
            raise _expression_error(expression, f"the L, W and # cron markers ({part!r}) are not supported")
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step_text and not step_text.isdigit():
            raise _expression_error(expression, f"bad step {step_text!r}")
        if base == "*":
            first, last = low, high
        elif "-" in base:
            first_text, last_text = base.split("-", 1)
            first = _parse_cron_value(first_text, lookup, expression)
            last = _parse_cron_value(last_text, lookup, expression)
        else:
            first = _parse_cron_value(base, lookup, expression)
            last = high if step_text else first
        if not (low <= first <= high and low <= last <= high and first <= last and step >= 1):
            raise _expression_error(expression, f"{part!r} is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    return _CronField(frozenset(values), any_value=False)


def parse_schedule_expression(expression: str, timezone: str = "UTC") -> ScheduleExpression:
    """Parse an EventBridge Scheduler expression; at() and cron() are read in ``timezone``."""
    text = expression.strip()
    try:
        zone = ZoneInfo(timezone or "UTC")
    except Exception as error:
        raise ScheduleExpressionError(f"unknown schedule time zone {timezone!r}: use an IANA name") from error
    at_match = AT_PATTERN.match(text)
    if at_match:
        return AtExpression(datetime.fromisoformat(at_match.group(1)).replace(tzinfo=zone))
    rate_match = RATE_PATTERN.match(text)
    if rate_match:
        amount = int(rate_match.group(1))
        unit = rate_match.group(2).rstrip("s")
        if amount < 1:
            raise _expression_error(expression, "a rate must be at least 1")
        return RateExpression(timedelta(seconds=amount * _RATE_UNITS[unit]))
    cron_match = CRON_PATTERN.match(text)
    if cron_match:
        fields = cron_match.group(1).split()
        if len(fields) != 6:
            raise _expression_error(expression, f"cron needs 6 fields, got {len(fields)}")
        minutes, hours, days_of_month, months, days_of_week, years = fields
        if days_of_month != "?" and days_of_week != "?":
            raise _expression_error(expression, "one of day-of-month and day-of-week must be '?'")
        return CronExpression(
            minutes=_parse_cron_field(minutes, 0, 59, expression=expression),
            hours=_parse_cron_field(hours, 0, 23, expression=expression),
            days_of_month=_parse_cron_field(days_of_month, 1, 31, expression=expression),
            months=_parse_cron_field(months, 1, 12, expression=expression, names=_MONTHS_UPPER),
            days_of_week=_parse_cron_field(days_of_week, 1, 7, expression=expression, names=_WEEKDAYS),
            years=_parse_cron_field(years, 1970, 2199, expression=expression),
        )
    raise _expression_error(expression, "not an at(), rate() or cron() expression")


@dataclass
class VirtualClock:
    """Wall-clock time plus an offset a test can move forward.

    ``freeze()`` stops it at its current reading: until ``thaw()``, it moves only when advanced, and a
    deployed handler's clock reads the frozen instant at the start of each invocation (timers then fire
    in their order whatever real time the harness spends between invocations). ``listeners`` are called
    after every change (the LocalStack backend writes the clock for its handlers to a file).
    """

    offset: timedelta = field(default_factory=timedelta)
    frozen_at: datetime | None = None
    listeners: list[Callable[[VirtualClock], None]] = field(default_factory=list, repr=False, compare=False)

    def now(self) -> datetime:
        if self.frozen_at is not None:
            return self.frozen_at
        return datetime.now(UTC) + self.offset

    def now_epoch(self) -> float:
        return self.now().timestamp()

    def offset_seconds(self) -> float:
        """Seconds a handler's ``time.time()`` runs ahead of the real clock, now."""
        if self.frozen_at is not None:
            return (self.frozen_at - datetime.now(UTC)).total_seconds()
        return self.offset.total_seconds()

    def advance(self, delta: timedelta) -> None:
        if delta < timedelta(0):
            raise ValueError(f"the clock only moves forward: got {delta}")
        if self.frozen_at is not None:
            self.frozen_at += delta
        else:
            self.offset += delta
        self._changed()

    def advance_seconds(self, seconds: float) -> None:
        self.advance(timedelta(seconds=seconds))

    def freeze(self) -> None:
        if self.frozen_at is None:
            self.frozen_at = self.now()
            self._changed()

    def thaw(self) -> None:
        """Let the clock run again from its reading (never backwards)."""
        if self.frozen_at is not None:
            self.offset = max(self.offset, self.frozen_at - datetime.now(UTC))
            self.frozen_at = None
            self._changed()

    def _changed(self) -> None:
        for listener in self.listeners:
            listener(self)


class EngineClock:
    """A ``VirtualClock`` as the engine and a client read a clock (epoch seconds): a client built in the
    harness with ``clock=EngineClock(virtual)`` stamps its starts, stops and callbacks on the clock the
    deployed handlers follow."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock

    def now(self) -> float:
        return self.clock.now_epoch()


def write_clock_file(path: str) -> Callable[[VirtualClock], None]:
    """A clock listener that keeps ``path`` holding what a handler's clock should read: ``at <epoch>``
    while frozen, else the offset in seconds (stepwell.clock.clock_file_text). LocalStack's runtime worker
    reads it per invocation, and a client whose ``STEPWELL_CLOCK_OFFSET_FILE`` names it at each reading
    (stepwell.clock.OffsetFileClock)."""

    def write(clock: VirtualClock) -> None:
        frozen_at = clock.frozen_at.timestamp() if clock.frozen_at is not None else None
        text = clock_file_text(clock.offset.total_seconds(), frozen_at)
        staging = f"{path}.{os.getpid()}.tmp"
        with open(staging, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(staging, path)

    return write


def publish_clock(clock: VirtualClock, path: str) -> None:
    """Write ``clock``'s reading to ``path`` now and after every change (``write_clock_file``), for the
    processes that read it there: LocalStack's handlers, and the clients, CLI and console whose
    ``STEPWELL_CLOCK_OFFSET_FILE`` names it."""
    writer = write_clock_file(path)
    clock.listeners.append(writer)
    writer(clock)


@dataclass(frozen=True)
class FiredSchedule:
    group_name: str
    name: str
    target_arn: str
    scheduled_time: datetime
    deleted: bool


def _as_datetime(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    return datetime.fromisoformat(str(value)).astimezone(UTC)


def _with_context_attributes(payload: str, schedule: dict[str, Any], scheduled_time: datetime) -> str:
    """The Input with EventBridge Scheduler's context attributes put in (each delivery is attempt 1)."""
    values = {
        "<aws.scheduler.schedule-arn>": str(schedule.get("Arn", "")),
        "<aws.scheduler.scheduled-time>": scheduled_time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "<aws.scheduler.execution-id>": uuid.uuid4().hex[:16],
        "<aws.scheduler.attempt-number>": "1",
    }
    for keyword, value in values.items():
        payload = payload.replace(keyword, value)
    return payload


def _snake_case(action: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", action[0].upper() + action[1:]).lower()


class SchedulerFirer:
    """Fires the due schedules of one group (or of every group) against a backend."""

    def __init__(
        self,
        client_factory: ClientFactory,
        group_name: str | None = None,
        clock: VirtualClock | None = None,
        lambda_invoker: LambdaInvoker | None = None,
    ) -> None:
        self._client_factory = client_factory
        self.group_name = group_name
        self.clock = clock or VirtualClock()
        self._lambda_invoker = lambda_invoker
        # Last fire time of each recurring schedule, keyed by ARN and creation time so a
        # re-created schedule of the same name starts afresh; one-time schedules kept (not deleted).
        self._last_fired: dict[tuple[str, str], datetime] = {}
        self._lock = threading.Lock()
        self.fired: list[FiredSchedule] = []
        self.background_errors: list[BaseException] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def advance(self, delta: timedelta) -> None:
        """Move the virtual clock forward (fire with ``fire_due()``)."""
        self.clock.advance(delta)

    def now(self) -> datetime:
        return self.clock.now()

    def _group_names(self) -> list[str]:
        if self.group_name is not None:
            return [self.group_name]
        client = self._client_factory("scheduler")
        names: list[str] = []
        for page in client.get_paginator("list_schedule_groups").paginate():
            names.extend(group["Name"] for group in page["ScheduleGroups"])
        return names

    def list_schedules(self) -> list[dict[str, Any]]:
        """Full descriptions (GetSchedule) of every schedule in the group(s)."""
        client = self._client_factory("scheduler")
        schedules: list[dict[str, Any]] = []
        for group in self._group_names():
            for page in client.get_paginator("list_schedules").paginate(GroupName=group):
                for summary in page["Schedules"]:
                    try:
                        schedules.append(client.get_schedule(GroupName=group, Name=summary["Name"]))
                    except client.exceptions.ResourceNotFoundException:
                        continue  # deleted since the listing (a worker withdrew its wake-up): nothing to fire
        return schedules

    def due_time(self, schedule: dict[str, Any], now: datetime) -> datetime | None:
        """When the schedule's pending occurrence was due, if it is due at ``now``; else None."""
        if schedule.get("State", "ENABLED") != "ENABLED":
            return None
        start = _as_datetime(schedule.get("StartDate"))
        end = _as_datetime(schedule.get("EndDate"))
        if (start and now < start) or (end and now > end):
            return None
        zone_name = schedule.get("ScheduleExpressionTimezone") or "UTC"
        expression = parse_schedule_expression(schedule["ScheduleExpression"], zone_name)
        key = self._key(schedule)
        last = self._last_fired.get(key)
        local_now = now.astimezone(ZoneInfo(zone_name))
        if isinstance(expression, AtExpression):
            return expression.when if last is None and expression.when <= local_now else None
        created = _as_datetime(schedule.get("CreationDate")) or now
        anchor = start or created
        # An update (a resume, say) counts occurrences from then on: none fire for the time it was paused.
        modified = _as_datetime(schedule.get("LastModificationDate"))
        reference = max(last or anchor, modified or anchor).astimezone(ZoneInfo(zone_name))
        if isinstance(expression, RateExpression):
            upcoming: datetime | None = expression.next_after(
                reference, anchor.astimezone(ZoneInfo(zone_name))
            )
        else:
            upcoming = expression.next_after(reference)
        return upcoming if upcoming is not None and upcoming <= local_now else None

    @staticmethod
    def _key(schedule: dict[str, Any]) -> tuple[str, str]:
        return (str(schedule["Arn"]), str(schedule.get("CreationDate")))

    def fire_due(self) -> list[FiredSchedule]:
        """Fire every schedule due at the virtual now; return what fired."""
        with self._lock:
            now = self.now()
            fired: list[FiredSchedule] = []
            for schedule in self.list_schedules():
                scheduled_time = self.due_time(schedule, now)
                if scheduled_time is None:
                    continue
                self.fire(schedule, scheduled_time)
                deleted = False
                one_time = schedule["ScheduleExpression"].strip().startswith("at(")
                if one_time and schedule.get("ActionAfterCompletion") == "DELETE":
                    self._client_factory("scheduler").delete_schedule(
                        GroupName=schedule["GroupName"], Name=schedule["Name"]
                    )
                    deleted = True
                else:
                    self._last_fired[self._key(schedule)] = now
                fired.append(
                    FiredSchedule(
                        group_name=schedule["GroupName"],
                        name=schedule["Name"],
                        target_arn=schedule["Target"]["Arn"],
                        scheduled_time=scheduled_time,
                        deleted=deleted,
                    )
                )
            self.fired.extend(fired)
            return fired

    def start(self, interval_seconds: float = 1.0) -> None:
        """Fire due schedules every ``interval_seconds`` in a background thread until ``stop()``."""
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be positive, got {interval_seconds!r}")
        if self._thread is not None:
            return
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._run, args=(interval_seconds,), name="stepwell-scheduler-firer", daemon=True
        )
        self._thread.start()

    def _run(self, interval_seconds: float) -> None:
        while not self._stopping.wait(interval_seconds):
            try:
                self.fire_due()
            except Exception as error:  # keep firing; the test reads the errors
                self.background_errors.append(error)

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping.set()
            self._thread.join()
            self._thread = None

    def advance_and_fire(self, delta: timedelta) -> list[FiredSchedule]:
        self.advance(delta)
        return self.fire_due()

    def fire(self, schedule: dict[str, Any], scheduled_time: datetime | None = None) -> None:
        """Deliver a schedule's target now, whatever its expression; the context attributes in its Input
        are replaced as Scheduler does (the scheduled time: ``scheduled_time``, default now)."""
        target: dict[str, Any] = schedule["Target"]
        arn: str = target["Arn"]
        payload = _with_context_attributes(
            target.get("Input") or "{}", schedule, scheduled_time or self.now()
        )
        parts = arn.split(":", 5)
        if len(parts) < 6 or parts[0] != "arn":
            raise ValueError(f"schedule {schedule['Name']!r} has a target ARN {arn!r} that is not an ARN")
        service, region, account, resource = parts[2], parts[3], parts[4], parts[5]
        if service == "sqs":
            self._send_to_queue(resource, account, payload, target.get("SqsParameters") or {})
        elif service == "events" and resource.startswith("event-bus/"):
            parameters = target.get("EventBridgeParameters") or {}
            entry = {
                "EventBusName": arn,
                "Source": parameters.get("Source", "aws.scheduler"),
                "DetailType": parameters.get("DetailType", "Scheduled Event"),
                "Detail": payload,
            }
            response = self._client_factory("events").put_events(Entries=[entry])
            if response.get("FailedEntryCount"):
                failures = response["Entries"]
                raise RuntimeError(f"PutEvents for schedule {schedule['Name']!r} failed: {failures}")
        elif service == "lambda":
            if self._lambda_invoker is None:
                self._client_factory("lambda").invoke(
                    FunctionName=arn, InvocationType="Event", Payload=payload.encode()
                )
            else:
                self._lambda_invoker(arn, payload.encode())
        elif service == "scheduler" and region == "" and account == "" and resource.startswith("aws-sdk:"):
            _, sdk_service, action = resource.split(":", 2)
            client = self._client_factory(sdk_service)
            getattr(client, _snake_case(action))(**json.loads(payload))
        else:
            raise ValueError(
                f"schedule {schedule['Name']!r} targets {arn!r}: supported targets are SQS queues, "
                "EventBridge buses, Lambda functions and aws-sdk universal targets"
            )

    def _send_to_queue(self, queue_name: str, account: str, body: str, parameters: dict[str, Any]) -> None:
        sqs = self._client_factory("sqs")
        queue_url = sqs.get_queue_url(QueueName=queue_name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        request: dict[str, Any] = {"QueueUrl": queue_url, "MessageBody": body}
        if parameters.get("MessageGroupId"):
            request["MessageGroupId"] = parameters["MessageGroupId"]
        sqs.send_message(**request)
