"""The CLI's readable timeline: offsets that read well from milliseconds to days, and the key detail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from stepwell.core.history import format_offset, format_timeline


def test_offsets_read_well_at_every_scale() -> None:
    assert format_offset(0) == "+0.000s"
    assert format_offset(1.25) == "+1.250s"
    assert format_offset(249.123) == "+4m09.123s"
    assert format_offset(3 * 3600 + 5) == "+0d 03:00:05.000"
    assert format_offset(3 * 86400 + 49.779) == "+3d 00:00:49.779"


def test_timeline_shows_errors_retries_wait_ends_and_callback_ids() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    events = [
        {"EventId": 1, "EventType": "ExecutionStarted", "EventTimestamp": start},
        {
            "EventId": 2,
            "EventType": "StepFailed",
            "Name": "charge",
            "EventTimestamp": start + timedelta(seconds=1),
            "StepFailedDetails": {
                "Error": {"Payload": {"ErrorType": "Timeout", "ErrorMessage": "provider slow"}},
                "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 2},
            },
        },
        {
            "EventId": 3,
            "EventType": "WaitStarted",
            "Name": "cooling-off",
            "EventTimestamp": start + timedelta(seconds=2),
            "WaitStartedDetails": {"ScheduledEndTimestamp": start + timedelta(days=3)},
        },
        {
            "EventId": 4,
            "EventType": "CallbackStarted",
            "Name": "approval",
            "EventTimestamp": start + timedelta(days=3, seconds=1),
            "CallbackStartedDetails": {"CallbackId": "cb-123"},
        },
    ]
    lines = format_timeline(events).splitlines()
    assert lines[0].split() == ["+0.000s", "#1", "ExecutionStarted"]
    assert "charge  (Timeout: provider slow; retry 1 in 2s)" in lines[1]
    assert lines[2].endswith("cooling-off  (until 2026-01-04 00:00:00Z)")
    assert lines[3].lstrip().startswith("+3d 00:00:01.000") and lines[3].endswith("(callback cb-123)")
