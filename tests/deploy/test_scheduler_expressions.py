"""Parsing EventBridge Scheduler expressions and finding their next occurrences."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from stepwell.testing.scheduler import (
    AtExpression,
    CronExpression,
    RateExpression,
    ScheduleExpressionError,
    VirtualClock,
    parse_schedule_expression,
)


def test_at_is_read_in_the_schedule_time_zone() -> None:
    expression = parse_schedule_expression("at(2030-03-01T09:30:00)", "Europe/Berlin")
    assert isinstance(expression, AtExpression)
    assert expression.when == datetime(2030, 3, 1, 8, 30, tzinfo=UTC)
    assert expression.next_after(datetime(2030, 3, 1, 8, 0, tzinfo=UTC)) == expression.when
    assert expression.next_after(datetime(2030, 3, 1, 9, 0, tzinfo=UTC)) is None


@pytest.mark.parametrize(
    ("text", "period"),
    [
        ("rate(1 minute)", timedelta(minutes=1)),
        ("rate(5 minutes)", timedelta(minutes=5)),
        ("rate(2 hours)", timedelta(hours=2)),
        ("rate(1 day)", timedelta(days=1)),
    ],
)
def test_rate_periods(text: str, period: timedelta) -> None:
    expression = parse_schedule_expression(text)
    assert isinstance(expression, RateExpression)
    assert expression.period == period


def test_rate_occurrences_follow_the_anchor() -> None:
    expression = parse_schedule_expression("rate(5 minutes)")
    assert isinstance(expression, RateExpression)
    anchor = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    assert expression.next_after(anchor, anchor) == anchor + timedelta(minutes=5)
    assert expression.next_after(anchor + timedelta(minutes=7), anchor) == anchor + timedelta(minutes=10)
    assert expression.next_after(anchor - timedelta(hours=1), anchor) == anchor + timedelta(minutes=5)


def test_cron_every_weekday_morning() -> None:
    expression = parse_schedule_expression("cron(0 9 ? * MON-FRI *)")
    assert isinstance(expression, CronExpression)
    friday_evening = datetime(2030, 3, 1, 18, 0, tzinfo=UTC)  # 2030-03-01 is a Friday
    assert expression.next_after(friday_evening) == datetime(2030, 3, 4, 9, 0, tzinfo=UTC)  # Monday


def test_cron_steps_lists_and_day_of_month() -> None:
    expression = parse_schedule_expression("cron(0/15 8,20 1 JAN,JUL ? 2030-2031)")
    assert isinstance(expression, CronExpression)

    def at(*parts: int) -> datetime:
        return datetime(*parts, tzinfo=UTC)

    assert expression.next_after(at(2030, 1, 1, 8, 0)) == at(2030, 1, 1, 8, 15)
    assert expression.next_after(at(2030, 1, 1, 8, 45)) == at(2030, 1, 1, 20, 0)
    assert expression.next_after(at(2030, 1, 1, 20, 45)) == at(2030, 7, 1, 8, 0)
    assert expression.next_after(datetime(2031, 7, 1, 21, 0, tzinfo=UTC)) is None  # past the last year


def test_cron_in_a_time_zone() -> None:
    zone = ZoneInfo("America/New_York")
    expression = parse_schedule_expression("cron(30 6 * * ? *)", "America/New_York")
    assert isinstance(expression, CronExpression)
    start = datetime(2030, 6, 1, 7, 0, tzinfo=zone)
    assert expression.next_after(start) == datetime(2030, 6, 2, 6, 30, tzinfo=zone)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("every 5 minutes", "not an at"),
        ("rate(0 minutes)", "at least 1"),
        ("rate(5 weeks)", "not an at"),
        ("cron(0 9 * * *)", "6 fields"),
        ("cron(0 9 1 * MON *)", "must be '?'"),
        ("cron(61 9 * * ? *)", "outside 0-59"),
        ("cron(0 9 L * ? *)", "not supported"),
        ("at(2030-13-01T00:00:00)", "month must be in 1..12"),
    ],
)
def test_bad_expressions_are_named_with_the_allowed_forms(text: str, why: str) -> None:
    with pytest.raises((ScheduleExpressionError, ValueError), match=why):
        parse_schedule_expression(text)


def test_unknown_time_zone() -> None:
    with pytest.raises(ScheduleExpressionError, match="unknown schedule time zone 'Mars/Olympus'"):
        parse_schedule_expression("rate(1 day)", "Mars/Olympus")


def test_the_virtual_clock_only_moves_forward() -> None:
    clock = VirtualClock()
    before = clock.now()
    clock.advance(timedelta(days=3))
    assert clock.now() - before >= timedelta(days=3)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(timedelta(seconds=-1))
