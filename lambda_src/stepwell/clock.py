"""Clocks: the system clock for Lambda, and a virtual clock that local runs skip forward."""

from __future__ import annotations

import threading
import time


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
