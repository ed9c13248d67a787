"""The split of the chaos run's due-to-run delays into their parts (tools/chaos/delays.py), on records
written here: no run, no backend."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from chaos.delays import PARTS, DelayParts, percentile, split_delays, summarise  # noqa: E402
from chaos.record import Jump  # noqa: E402
from chaos.worker import wake_up_of  # noqa: E402


def _run(message: str, due: float, received: float, started: float, **extra: Any) -> dict[str, Any]:
    record = {"message": message, "execution": "e/1", "due": due, "received": received}
    return {**record, "started": started, "action": "ran", "via": "work", **extra}


def _receipt(message: str, received: float, sent: float | None = None, **extra: Any) -> dict[str, Any]:
    return {"message": message, "queue": "work", "received": received, "sent": sent, **extra}


def test_a_delay_splits_into_queue_wait_redelivery_and_batch() -> None:
    # Due at 100, sent at 90 (an SQS delay), first received at 103, killed, received again at 111 and
    # handled at 112.5 after the earlier messages of its batch.
    receipts = [_receipt("m", 103.0, sent=90.0), _receipt("m", 111.0, sent=90.0)]
    [delay] = split_delays([_run("m", 100.0, 111.0, 112.5)], receipts, [])
    assert delay.total == pytest.approx(12.5)
    assert delay.part("scheduling") == 0.0
    assert delay.part("in the queue") == pytest.approx(3.0)
    assert delay.part("redelivery") == pytest.approx(8.0)
    assert delay.part("in the batch") == pytest.approx(1.5)
    assert delay.part("duplicate") == delay.part("other") == 0.0
    assert sum(delay.parts) == pytest.approx(delay.total)


def test_a_message_sent_after_its_due_time_counts_its_scheduling() -> None:
    [delay] = split_delays([_run("m", 100.0, 106.0, 106.0)], [_receipt("m", 106.0, sent=104.0)], [])
    assert delay.part("scheduling") == pytest.approx(4.0)
    assert delay.part("in the queue") == pytest.approx(2.0)
    assert sum(delay.parts) == pytest.approx(6.0)


def test_a_second_copy_of_a_wake_up_that_ran_is_all_duplicate() -> None:
    runs = [_run("a", 100.0, 101.0, 101.0), _run("b", 100.0, 103.0, 104.0)]
    first, second = split_delays(runs, [_receipt("a", 101.0), _receipt("b", 103.0)], [])
    assert first.part("in the queue") == pytest.approx(1.0)
    assert second.part("duplicate") == pytest.approx(4.0)
    assert sum(second.parts) == pytest.approx(4.0)


def test_only_runs_count_and_clock_skips_are_left_out() -> None:
    # The due time 5,000 fell in a skip of the virtual clock from 1,000 to 9,000: in real time it came due
    # when the skip was made (1,000), and the run began at 1,002 real seconds.
    busy = {**_run("b", 5000.0, 1001.0, 1001.0), "action": "busy"}
    delays = split_delays(
        [busy, _run("m", 5000.0, 1001.5, 1002.0)], [_receipt("m", 1001.5)], [Jump(1000, 9000)]
    )
    assert [delay.total for delay in delays] == [pytest.approx(2.0)]


def test_a_destination_record_counts_its_asynchronous_attempts_as_redelivery() -> None:
    receipts = [
        _receipt("async", 101.0, sent=100.5, queue="async", execution="e/1", due=100.0),
        _receipt("dest", 125.0, sent=124.0),
    ]
    [delay] = split_delays([_run("dest", 100.0, 125.0, 125.0, destination=True)], receipts, [])
    assert delay.part("scheduling") == pytest.approx(0.5)
    assert delay.part("in the queue") == pytest.approx(0.5)
    assert delay.part("redelivery") == pytest.approx(24.0)


def test_the_worker_reads_the_wake_up_a_message_carries() -> None:
    body = '{"kind": "invoke", "executionId": "d#w#e/1", "dueAt": 12}'
    assert wake_up_of(body, "work") == (("d#w#e/1", 12.0), False)
    assert wake_up_of('{"functionArn": "f", "payload": ' + body + "}", "async") == (("d#w#e/1", 12.0), False)
    record = '{"requestContext": {}, "requestPayload": ' + body + "}"
    assert wake_up_of(record, "work") == (("d#w#e/1", 12.0), True)
    assert wake_up_of('{"kind": "invoke", "executionId": "d#w#e/1"}', "work") == (None, False)
    assert wake_up_of("not json", "work") == (None, False)


def test_percentiles_and_the_share_of_the_slowest() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile(list(range(101)), 0.99) == 99
    with pytest.raises(ValueError, match="from 0 to 1"):
        percentile([1.0], 99)
    fast = [DelayParts(1.0, (0.0, 1.0, 0.0, 0.0, 0.0, 0.0))] * 99
    slow = DelayParts(100.0, (0.0, 10.0, 90.0, 0.0, 0.0, 0.0))
    rows = {row.name: row for row in summarise([*fast, slow])}
    assert list(rows) == list(PARTS)
    assert rows["redelivery"].p50 == 0.0 and rows["redelivery"].p99 == 0.0
    assert rows["in the queue"].p50 == 1.0
    # The slowest run (the p99 of the totals is 1.0 here: every run at or above it is in the tail).
    assert sum(row.tail_share for row in rows.values()) == pytest.approx(1.0)
    assert rows["redelivery"].tail_share == pytest.approx(90 / 199)
