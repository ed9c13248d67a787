"""The run's folder, which the parent and the worker processes share: JSON-lines files each appends to
(a ledger, the invocations, the callbacks handed out), the virtual clock's file, the settings."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

# The file that names the queue of Lambda's asynchronous invocations (the run creates it).
ASYNC_QUEUE_FILE = "async_queue_url"


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an append-only file (a line cut short by a kill is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict):
                records.append(value)
    return records


class OffsetFileClock:
    """The engine's clock in a worker process: real time plus the offset the parent writes (in
    stepwell.testing.scheduler.write_clock_file's format), re-read when the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp = -1
        self._offset = 0.0

    def now(self) -> float:
        with contextlib.suppress(FileNotFoundError):
            stamp = os.stat(self._path).st_mtime_ns
            if stamp != self._stamp:
                self._offset = float(self._path.read_text().strip() or 0.0)
                self._stamp = stamp
        return time.time() + self._offset
