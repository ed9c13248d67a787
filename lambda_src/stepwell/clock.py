"""Clocks: the system clock for Lambda, a virtual clock that local runs skip forward, and the clock a
client follows when a local stack publishes its virtual clock in a file (``STEPWELL_CLOCK_OFFSET_FILE``)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

# Names a file holding a local stack's virtual clock (`stepwell local` and the harness's LocalStack write it):
# an offset in seconds from the real clock, or ``at <epoch seconds>`` while the clock is frozen.
CLOCK_OFFSET_FILE_ENV = "STEPWELL_CLOCK_OFFSET_FILE"
_FROZEN_PREFIX = "at "


class SystemClock:
    def now(self) -> float:
        return time.time()


class VirtualClock:
    """Real time plus an offset that only grows: `advance_to` skips to the next wake-up, so a three-day
    wait takes no real time, and time inside an invocation still moves as the handler runs."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.time() + self._offset

    def advance_to(self, when: float) -> None:
        with self._lock:
            gap = when - self.now()
            if gap > 0:
                self._offset += gap

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock only moves forward: advance({seconds}) is negative")
        with self._lock:
            self._offset += seconds

    @property
    def skipped_seconds(self) -> float:
        return self._offset


def clock_file_text(offset_seconds: float, frozen_at: float | None = None) -> str:
    """What a clock file holds: ``at <epoch>`` while frozen at that instant, else the offset in seconds."""
    return f"{_FROZEN_PREFIX}{frozen_at:.6f}" if frozen_at is not None else f"{offset_seconds:.6f}"


def _real_time() -> float:
    """The real wall clock, even in a handler whose time.time() a harness moved by the same offset."""
    if hasattr(time, "clock_gettime"):
        return time.clock_gettime(time.CLOCK_REALTIME)
    return time.time()  # no clock_gettime (Windows): no harness moves time.time there either


class OffsetFileClock:
    """Real time plus the offset a local stack keeps in ``path`` (``clock_file_text``'s format), so a client
    follows each `stepwell local advance`; no file (yet): no offset. The file is read again only when its
    stat changes (a worker process asks for the time at every checkpoint; a stat is cheaper than a read)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._seen: tuple[int, int, int] | None = None
        self._frozen_at: float | None = None
        self._offset = 0.0

    def now(self) -> float:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._seen = None
            return _real_time()
        seen = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if seen != self._seen:
            self._read()
            self._seen = seen
        return self._frozen_at if self._frozen_at is not None else _real_time() + self._offset

    def _read(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as handle:
                text = handle.read().strip()
        except FileNotFoundError:
            text = ""
        try:
            if text.startswith(_FROZEN_PREFIX):
                self._frozen_at, self._offset = float(text[len(_FROZEN_PREFIX) :]), 0.0
            else:
                self._frozen_at, self._offset = None, float(text or 0.0)
        except ValueError:
            raise ValueError(
                f"{CLOCK_OFFSET_FILE_ENV}={self.path} holds {text!r}, not a clock: seconds, or 'at <epoch>'"
            ) from None


def default_clock(environ: Mapping[str, str] | None = None) -> SystemClock | OffsetFileClock:
    """A client's clock: the local stack's virtual clock when ``STEPWELL_CLOCK_OFFSET_FILE`` names its file
    (`stepwell local env` sets it), so its starts, stops and callbacks are stamped on the clock the
    handlers run by; else the system clock."""
    path = (os.environ if environ is None else environ).get(CLOCK_OFFSET_FILE_ENV, "")
    return OffsetFileClock(path) if path else SystemClock()
