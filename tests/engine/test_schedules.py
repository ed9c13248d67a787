"""Scheduled starts (stepwell.features.schedules): one execution per occurrence whatever the deliveries, the
overlap policies, and messages that cannot start anything dropped with a clear reason."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import workflows
from stepwell.errors import InvalidArgument
from stepwell.features.schedules import (
    check_schedule_expression,
    check_schedule_name,
    check_timezone,
    parse_scheduled_start,
    scheduled_start_message,
)
from stepwell.model import ExecutionStatus
from stepwell.ports import SCHEDULE_POINTER_HOLD_SECONDS
from stepwell.testing.local import LocalStepwell
from stepwell.testing.scheduler import SchedulerFirer
from stepwell.wiring.entry import EntryRuntime


def fired(schedule: str, workflow: str, at: str, overlap: str = "ALLOW", input: Any = None) -> dict[str, Any]:
    """The message Scheduler delivers: the target input with the occurrence's time put in."""
    message = scheduled_start_message(schedule, workflow, input if input is not None else {}, overlap)
    return {**message, "firedAt": at}


def deliver(local: LocalStepwell, body: dict[str, Any]) -> tuple[str, str | None, dict[str, Any]]:
    """One SQS record through the entry (as the worker gets it); the batch must not fail it."""
    runtime = EntryRuntime(local.engine)
    result = runtime.handle_body(body)
    answer = runtime.handle_sqs_batch([{"messageId": "m-1", "body": json.dumps(body)}])
    assert answer == {"batchItemFailures": []}
    return result.action, result.execution_id, result.details


def executions_of(local: LocalStepwell, schedule: str) -> list[str]:
    page = local.engine.list_executions(domain="default", subject_id=schedule)
    return sorted(record.execution_id for record in page.items)


def test_an_occurrence_starts_once_even_when_delivered_twice(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    body = fired("nightly", "greet", "2026-11-23T06:00:00Z", input={"name": "Ada"})

    first = EntryRuntime(stepwell_local.engine).handle_body(body)
    stepwell_local.run_until_idle()
    second = EntryRuntime(stepwell_local.engine).handle_body(body)
    stepwell_local.run_until_idle()

    expected = "default#greet#nightly/nightly-20261123T060000Z"
    assert (first.action, first.execution_id) == ("started", expected)
    assert (second.action, second.execution_id) == ("duplicate", expected)
    assert executions_of(stepwell_local, "nightly") == [expected]
    record = stepwell_local.record(expected)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == "Hello, Ada!"
    assert stepwell_local.history(expected)[0]["EventType"] == "ExecutionStarted"


def test_skip_starts_nothing_while_one_runs_and_starts_after_it_ended(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    first_id = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))[1]
    stepwell_local.run_until_idle()
    assert stepwell_local.record(str(first_id)).status is ExecutionStatus.RUNNING  # waits three days

    action, running, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T07:00:00Z", "SKIP"))
    assert (action, running) == ("skipped", first_id)
    # The first occurrence delivered again is that one, not a skip.
    assert deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))[0] == "duplicate"
    assert executions_of(stepwell_local, "hourly") == [first_id]

    stepwell_local.run_to_completion(str(first_id))
    action, later_id, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-26T08:00:00Z", "SKIP"))

    assert action == "started"
    assert later_id == "default#slow#hourly/hourly-20261126T080000Z"
    assert executions_of(stepwell_local, "hourly") == sorted([str(first_id), later_id])


def test_skip_starts_nothing_while_the_last_one_is_paused_and_a_deleting_one_does_not_block(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    first_id = str(deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))[1])
    stepwell_local.run_until_idle()
    assert stepwell_local.engine.pause_execution(first_id)
    stepwell_local.run_until_idle()
    assert stepwell_local.record(first_id).status is ExecutionStatus.PAUSED

    # Paused, it has not ended: it resumes later, so the next occurrence would overlap it.
    action, blocking, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T07:00:00Z", "SKIP"))
    assert (action, blocking) == ("skipped", first_id)
    assert executions_of(stepwell_local, "hourly") == [first_id]

    stepwell_local.engine.stop_execution(first_id)
    stepwell_local.run_until_idle()
    stepwell_local.engine.delete_execution(first_id)
    assert stepwell_local.record(first_id).status is ExecutionStatus.DELETING
    action, later_id, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T08:00:00Z", "SKIP"))
    assert (action, later_id) == ("started", "default#slow#hourly/hourly-20261123T080000Z")


def test_skip_looks_only_at_the_schedules_own_workflow(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.start("slow", {}, execution_name="other", subject_id="report")
    stepwell_local.run_until_idle()

    action, _, _ = deliver(
        stepwell_local, fired("report", "greet", "2026-11-23T06:00:00Z", "SKIP", {"name": "B"})
    )

    assert action == "started"


def test_allow_overlaps(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    first = deliver(stepwell_local, fired("often", "slow", "2026-11-23T06:00:00Z"))[1]
    stepwell_local.run_until_idle()
    second = deliver(stepwell_local, fired("often", "slow", "2026-11-23T06:01:00Z"))[1]
    stepwell_local.run_until_idle()

    assert first != second
    assert [stepwell_local.record(str(each)).status for each in (first, second)] == [
        ExecutionStatus.RUNNING
    ] * 2


def test_skip_starts_an_occurrence_once_however_often_it_is_delivered(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    body = fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP")
    expected = "default#slow#hourly/hourly-20261123T060000Z"

    outcomes = [EntryRuntime(stepwell_local.engine).handle_body(body) for _ in range(3)]
    stepwell_local.run_until_idle()
    stepwell_local.run_to_completion(expected)
    again = EntryRuntime(stepwell_local.engine).handle_body(body)  # after it ended: still that one

    assert [(each.action, each.execution_id) for each in outcomes] == [
        ("started", expected),
        ("duplicate", expected),
        ("duplicate", expected),
    ]
    assert (again.action, again.execution_id) == ("duplicate", expected)
    assert executions_of(stepwell_local, "hourly") == [expected]
    assert stepwell_local.record(expected).status is ExecutionStatus.SUCCEEDED
    assert stepwell_local.store.get_schedule_pointer("default", "hourly") == expected


def test_a_claim_whose_start_never_happened_is_started_by_the_redelivery(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    crashed = "default#slow#hourly/hourly-20261123T060000Z"
    # A worker claimed the pointer for the 06:00 occurrence and died before it started the execution.
    assert stepwell_local.store.claim_schedule_pointer(
        "default", "hourly", expected=None, execution_id=crashed
    )

    action, execution_id, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))
    stepwell_local.run_until_idle()

    assert (action, execution_id) == ("started", crashed)
    assert stepwell_local.record(crashed).status is ExecutionStatus.RUNNING
    assert executions_of(stepwell_local, "hourly") == [crashed]


def test_the_next_occurrence_starts_when_the_pointer_names_a_missing_execution(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    # The last occurrence's claim was never followed by its start (or its record has expired).
    missing = "default#slow#hourly/hourly-20261123T060000Z"
    stepwell_local.store.claim_schedule_pointer("default", "hourly", expected=None, execution_id=missing)

    action, execution_id, _ = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T07:00:00Z", "SKIP"))

    assert (action, execution_id) == ("started", "default#slow#hourly/hourly-20261123T070000Z")
    assert stepwell_local.store.get_schedule_pointer("default", "hourly") == execution_id
    assert executions_of(stepwell_local, "hourly") == [execution_id]
    # The late redelivery of the missing one now finds the 07:00 one running: it starts nothing.
    late = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))
    assert late[:2] == ("skipped", execution_id)
    assert executions_of(stepwell_local, "hourly") == [execution_id]


def _deliver_between_read_and_claim(
    local: LocalStepwell, monkeypatch: pytest.MonkeyPatch, other: dict[str, Any]
) -> list[str]:
    """Make the next pointer read of the store return what it read, then deliver `other` in full before the
    reader goes on (so the reader's claim finds the pointer moved). Returns the other's outcome."""
    store = local.store
    read = store.get_schedule_pointer
    other_outcome: list[str] = []

    def read_then_race(domain: str, schedule: str) -> str | None:
        value = read(domain, schedule)
        if not other_outcome:
            other_outcome.append("pending")
            result = EntryRuntime(local.engine).handle_body(other)
            other_outcome[:] = [result.action, str(result.execution_id)]
        return value

    monkeypatch.setattr(store, "get_schedule_pointer", read_then_race)
    return other_outcome


def test_of_two_occurrences_racing_exactly_one_starts(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    first = deliver(stepwell_local, fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP"))[1]
    stepwell_local.run_to_completion(str(first))
    # 07:00 and 08:00 (a late one) both read the pointer naming the ended 06:00 execution.
    other = _deliver_between_read_and_claim(
        stepwell_local, monkeypatch, fired("hourly", "slow", "2026-11-23T08:00:00Z", "SKIP")
    )

    racer = EntryRuntime(stepwell_local.engine).handle_body(
        fired("hourly", "slow", "2026-11-23T07:00:00Z", "SKIP")
    )

    winner = "default#slow#hourly/hourly-20261123T080000Z"
    assert other == ["started", winner]
    assert (racer.action, racer.execution_id) == ("skipped", winner)
    assert executions_of(stepwell_local, "hourly") == sorted([str(first), winner])
    assert stepwell_local.store.get_schedule_pointer("default", "hourly") == winner


def test_two_deliveries_of_one_occurrence_racing_start_it_once(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    body = fired("hourly", "slow", "2026-11-23T06:00:00Z", "SKIP")
    other = _deliver_between_read_and_claim(stepwell_local, monkeypatch, body)

    racer = EntryRuntime(stepwell_local.engine).handle_body(body)

    expected = "default#slow#hourly/hourly-20261123T060000Z"
    assert other == ["started", expected]
    # Its claim lost to its own duplicate: it goes on to the idempotent start.
    assert (racer.action, racer.execution_id) == ("duplicate", expected)
    assert executions_of(stepwell_local, "hourly") == [expected]


def test_a_skip_occurrence_costs_the_same_whatever_the_schedules_history(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    for minute in range(120):
        deliver(
            stepwell_local,
            fired(
                "often",
                "greet",
                f"2026-11-23T{6 + minute // 60:02d}:{minute % 60:02d}:00Z",
                "SKIP",
                {"name": "A"},
            ),
        )
        stepwell_local.run_until_idle()
    kept = stepwell_local.engine.list_executions(domain="default", subject_id="often", limit=1000).items
    assert len(kept) == 120 and all(each.status is ExecutionStatus.SUCCEEDED for each in kept)
    counters = stepwell_local.store.counters
    before = dict(counters)

    result = EntryRuntime(stepwell_local.engine).handle_body(
        fired("often", "greet", "2026-11-23T09:00:00Z", "SKIP", {"name": "A"})
    )

    assert result.action == "started"
    spent = {
        name: counters[name] - before.get(name, 0)
        for name in counters
        if counters[name] != before.get(name, 0)
    }
    # The pointer, the last execution, the claim; then the start (whether it exists, the create).
    assert spent == {
        "get_schedule_pointer": 1,
        "claim_schedule_pointer": 1,
        "get_execution": 2,
        "create_execution": 1,
    }


def test_allow_leaves_the_pointer_alone(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    deliver(stepwell_local, fired("often", "greet", "2026-11-23T06:00:00Z", input={"name": "A"}))

    assert stepwell_local.store.get_schedule_pointer("default", "often") is None
    assert "claim_schedule_pointer" not in stepwell_local.store.counters


def test_skip_does_not_wait_for_a_running_execution_of_the_schedules_former_workflow(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("slow", workflows.three_day_wait)
    stepwell_local.register("greet", workflows.greet)
    old = deliver(stepwell_local, fired("report", "slow", "2026-11-23T06:00:00Z", "SKIP"))[1]
    stepwell_local.run_until_idle()
    assert stepwell_local.record(str(old)).status is ExecutionStatus.RUNNING

    # The schedule now starts greet: the slow one still running does not hold it back.
    action, new, _ = deliver(
        stepwell_local, fired("report", "greet", "2026-11-23T07:00:00Z", "SKIP", {"name": "B"})
    )

    assert (action, new) == ("started", "default#greet#report/report-20261123T070000Z")
    assert stepwell_local.store.get_schedule_pointer("default", "report") == new


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"workflow": "nobody"}, "WorkflowNotFound"),
        ({"workflow": "9bad name"}, "invalid workflow name"),
        ({"firedAt": "<aws.scheduler.scheduled-time>"}, "was not sent by a schedule"),
        ({"firedAt": "yesterday"}, "is not a UTC time"),
        ({"firedAt": "2026-13-45T06:00:00Z"}, "is not a valid time"),
        ({"firedAt": 1795399422}, "is not a UTC time"),
        ({"schedule": "has space"}, "invalid schedule name"),
        ({"schedule": None}, "invalid schedule name"),
        ({"overlap": "NEVER"}, "invalid overlap policy 'NEVER'"),
        ({"extra": 1}, "unknown fields ['extra']"),
        ({"input": float("nan")}, "not JSON-serializable"),
    ],
)
def test_a_message_that_cannot_start_anything_is_dropped_with_its_reason(
    stepwell_local: LocalStepwell, change: dict[str, Any], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    stepwell_local.register("greet", workflows.greet)
    body = {**fired("nightly", "greet", "2026-11-23T06:00:00Z", input={"secret": "s3cr3t"}), **change}
    runtime = EntryRuntime(stepwell_local.engine)

    with caplog.at_level(logging.INFO):
        result = runtime.handle_body(body)
        if "nan" not in repr(change):  # NaN is not JSON: no SQS body carries it
            answer = runtime.handle_sqs_batch([{"messageId": "m-1", "body": json.dumps(body)}])
            assert answer == {"batchItemFailures": []}  # dropped, not retried

    assert result.action == "rejected"
    assert reason in result.details["reason"]
    assert executions_of(stepwell_local, "nightly") == []
    assert "dropped scheduled-start" in caplog.text
    assert "s3cr3t" not in caplog.text  # the input is a payload: never logged


def test_an_occurrence_whose_name_holds_another_input_is_dropped(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    deliver(stepwell_local, fired("nightly", "greet", "2026-11-23T06:00:00Z", input={"name": "A"}))

    action, _, details = deliver(
        stepwell_local, fired("nightly", "greet", "2026-11-23T06:00:00Z", input={"name": "B"})
    )

    assert action == "rejected"
    assert "ExecutionAlreadyExists" in details["reason"]


@pytest.mark.parametrize(
    "expression",
    [
        "at(2030-03-01T09:30:00)",
        "rate(1 minute)",
        "rate(5 minutes)",
        "cron(0 6 * * ? *)",
        "cron(0 12 L * ? *)",
    ],
)
def test_expression_shapes_scheduler_takes(expression: str) -> None:
    assert check_schedule_expression(expression) == expression


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "every day",
        "rate(0 minutes)",
        "rate(5 weeks)",
        "cron(0 6 * * ?)",
        "at(2030-03-01)",
        None,
        "rate(5\nminutes)",
        "at(\uff12\uff10\uff13\uff10-03-01T09:30:00)",  # fullwidth digits, which `\d` let through
    ],
)
def test_bad_expressions_are_refused_with_the_allowed_forms(expression: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"invalid schedule expression .*use at\(yyyy-mm-ddThh:mm:ss\)"):
        check_schedule_expression(expression)


def test_names_and_time_zones() -> None:
    assert check_schedule_name("nightly-report_2") == "nightly-report_2"
    assert check_timezone("America/Argentina/Buenos_Aires") == "America/Argentina/Buenos_Aires"
    for bad_name in ("-x", "a.b", "x" * 59, "", "nightly\n"):
        with pytest.raises(InvalidArgument, match="invalid schedule name"):
            check_schedule_name(bad_name)
    for bad_zone in ("", "Europe/", "UTC 1", "../etc", "Europe/Paris\n"):
        with pytest.raises(InvalidArgument, match="invalid schedule time zone"):
            check_timezone(bad_zone)


class RecordingQueues:
    """The SQS calls the harness's firer makes, kept."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def __call__(self, service: str) -> RecordingQueues:
        return self

    def get_queue_url(self, **_: Any) -> dict[str, str]:
        return {"QueueUrl": "https://sqs.local/123456789012/work"}

    def send_message(self, QueueUrl: str, MessageBody: str) -> None:
        self.bodies.append(MessageBody)


def test_the_harness_firer_puts_the_scheduled_time_in_as_scheduler_does() -> None:
    queues = RecordingQueues()
    firer = SchedulerFirer(queues)
    arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule/g/start.nightly"
    message = scheduled_start_message("nightly", "greet", {"arn": "<aws.scheduler.schedule-arn>"}, "SKIP")
    schedule = {
        "Arn": arn,
        "Name": "start.nightly",
        "Target": {"Arn": "arn:aws:sqs:eu-west-1:123456789012:work", "Input": json.dumps(message)},
    }

    firer.fire(schedule, datetime(2026, 11, 23, 7, 0, tzinfo=ZoneInfo("Europe/Dublin")))

    delivered = json.loads(queues.bodies[0])
    assert delivered["firedAt"] == "2026-11-23T07:00:00Z"
    assert delivered["input"] == {"arn": arn}
    assert parse_scheduled_start(delivered).execution_name == "nightly-20261123T070000Z"


def test_the_pointer_expires_a_hold_past_its_last_occurrence_and_a_skip_keeps_it(
    stepwell_local: LocalStepwell,
) -> None:
    """Nothing left behind (issue 37): a deleted schedule's pointer has an expiry (DynamoDB's `ttl`), and
    an occurrence skipped for a running execution keeps the pointer that long again (one write), so it never
    expires under a running execution whatever the schedule's period."""
    stepwell_local.register("slow", workflows.three_day_wait)
    store, clock = stepwell_local.store, stepwell_local.engine.clock
    claimed_at = clock.now()
    action, first, _ = deliver(stepwell_local, fired("daily", "slow", "2026-11-23T06:00:00Z", "SKIP"))
    assert action == "started"
    assert (
        store.schedule_pointer_expiries[("default", "daily")]
        == int(claimed_at) + SCHEDULE_POINTER_HOLD_SECONDS
    )

    clock.advance_to(claimed_at + 86400)
    skipped_at = clock.now()
    assert deliver(stepwell_local, fired("daily", "slow", "2026-11-24T06:00:00Z", "SKIP"))[:2] == (
        "skipped",
        first,
    )
    assert (
        store.schedule_pointer_expiries[("default", "daily")]
        == int(skipped_at) + SCHEDULE_POINTER_HOLD_SECONDS
    )
    assert store.counters["keep_schedule_pointer"] == 2  # one per delivery (`deliver` makes two)
