"""A client's clock follows a local stack's virtual clock through the file STEPWELL_CLOCK_OFFSET_FILE names:
the harness writes its VirtualClock there (publish_clock) and stepwell.clock.OffsetFileClock reads it at
every reading, running, frozen or moved on; without the variable a client keeps the system clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from stepwell.clock import CLOCK_OFFSET_FILE_ENV, OffsetFileClock, SystemClock, default_clock
from stepwell.testing.scheduler import EngineClock, VirtualClock, publish_clock

THREE_DAYS = timedelta(days=3).total_seconds()


def test_a_client_reads_the_published_clock_at_every_reading(tmp_path: Path) -> None:
    virtual = VirtualClock()
    path = tmp_path / "clock"
    publish_clock(virtual, str(path))
    reader = OffsetFileClock(str(path))
    assert abs(reader.now() - time.time()) < 1  # published at once, before any move

    virtual.advance(timedelta(days=3))
    assert abs(reader.now() - virtual.now_epoch()) < 1
    assert reader.now() - time.time() > THREE_DAYS - 1

    virtual.freeze()
    frozen = virtual.now_epoch()
    time.sleep(0.05)
    assert reader.now() == pytest.approx(frozen, abs=1e-5)  # a frozen clock reads its instant
    virtual.advance(timedelta(hours=1))
    assert reader.now() == pytest.approx(frozen + 3600, abs=1e-5)
    virtual.thaw()
    assert abs(reader.now() - EngineClock(virtual).now()) < 1


def test_no_file_yet_reads_the_real_clock_and_a_damaged_one_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    reader = OffsetFileClock(str(path))
    assert abs(reader.now() - time.time()) < 1
    path.write_text("three days")
    with pytest.raises(ValueError, match=rf"{CLOCK_OFFSET_FILE_ENV}={path} holds 'three days'"):
        reader.now()


def test_the_real_clock_is_read_even_where_a_harness_moved_time_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler under LocalStack's runtime worker has time.time() moved by the offset and the variable
    set: a client built there must not add the offset twice."""
    path = tmp_path / "clock"
    path.write_text(f"{THREE_DAYS:.6f}")
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + THREE_DAYS)
    moved = OffsetFileClock(str(path)).now() - real()
    assert THREE_DAYS - 1 < moved < THREE_DAYS + 1


def test_a_client_follows_the_file_only_when_the_variable_names_one(tmp_path: Path) -> None:
    path = tmp_path / "clock"
    path.write_text("86400")
    chosen = default_clock({CLOCK_OFFSET_FILE_ENV: str(path)})
    assert isinstance(chosen, OffsetFileClock)
    assert datetime.fromtimestamp(chosen.now(), UTC) - datetime.now(UTC) > timedelta(hours=23)
    assert isinstance(default_clock({}), SystemClock)
    assert isinstance(default_clock({CLOCK_OFFSET_FILE_ENV: ""}), SystemClock)
