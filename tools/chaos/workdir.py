"""The run's folder, which the parent and the worker processes share: JSON-lines files each appends to
(a ledger, the invocations, the callbacks handed out), the virtual clock's file, the settings."""

from __future__ import annotations

import contextlib
import json
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
