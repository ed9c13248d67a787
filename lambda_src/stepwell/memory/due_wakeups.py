"""Due wake-ups in memory (stepwell.ports.due_wakeups), with the DynamoDB adapter's semantics: items per
(shard, bucket) sorted by due time, the sweep state with conditional leases, and the armed wake-ups a test
sets (the coordination record's, on DynamoDB)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from stepwell.ports.due_wakeups import (
    DueWake,
    SweepLease,
    SweepState,
    check_shard,
    due_bucket,
    due_shard,
)


def _due_ms(due_at: float) -> int:
    # As on DynamoDB: the sort key keeps milliseconds.
    return round(due_at * 1000)


class MemoryDueWakeUps:
    """DueWakeUps in dicts behind one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[tuple[int, int], dict[tuple[int, str], DueWake]] = {}
        self._watermarks: dict[int, int] | None = None
        self._leases: dict[int, SweepLease] = {}
        # execution id -> the wake-up its last run armed (the coordination record's, on DynamoDB).
        self.armed: dict[str, float] = {}

    def put_due(self, execution_id: str, due_at: float) -> None:
        wake = DueWake(due_at=_due_ms(due_at) / 1000, execution_id=execution_id)
        with self._lock:
            bucket = self._items.setdefault((due_shard(execution_id), due_bucket(wake.due_at)), {})
            bucket[(_due_ms(due_at), execution_id)] = wake

    def delete_due(self, wakes: Sequence[DueWake]) -> None:
        with self._lock:
            for wake in wakes:
                items = self._items.get((due_shard(wake.execution_id), due_bucket(wake.due_at)), {})
                items.pop((_due_ms(wake.due_at), wake.execution_id), None)

    def due_page(self, shard: int, bucket: int, *, until: float, limit: int) -> list[DueWake]:
        check_shard(shard)
        with self._lock:
            items = self._items.get((shard, bucket), {})
            due = sorted(key for key in items if key[0] <= _due_ms(until))
            return [items[key] for key in due[:limit]]

    def sweep_state(self) -> SweepState | None:
        with self._lock:
            if self._watermarks is None:
                return None
            return SweepState(watermarks=dict(self._watermarks), leases=dict(self._leases))

    def advance_watermark(self, shard: int, bucket: int) -> None:
        check_shard(shard)
        with self._lock:
            marks = self._watermarks if self._watermarks is not None else {}
            if marks.get(shard, bucket - 1) < bucket:
                marks[shard] = bucket
            self._watermarks = marks

    def take_sweep_lease(self, shard: int, *, owner: str, now: float, until: float) -> bool:
        check_shard(shard)
        with self._lock:
            held = self._leases.get(shard)
            if held is not None and held.owner != owner and held.expires_at >= now:
                return False
            self._leases[shard] = SweepLease(owner=owner, expires_at=until)
            if self._watermarks is None:
                self._watermarks = {}
            return True

    def release_sweep_lease(self, shard: int, owner: str) -> None:
        with self._lock:
            held = self._leases.get(shard)
            if held is not None and held.owner == owner:
                del self._leases[shard]

    def armed_wake(self, execution_id: str) -> float | None:
        return self.armed.get(execution_id)

    def pending(self) -> list[DueWake]:
        """Every item kept, soonest first (for tests)."""
        with self._lock:
            return sorted(wake for items in self._items.values() for wake in items.values())


class MemoryWakeBatches:
    """WakeBatches that keeps what it was sent, as (message, delay seconds), in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], int]] = []
        self.batches = 0

    def send_wakes(self, entries: Sequence[tuple[Mapping[str, Any], int]]) -> None:
        for start in range(0, len(entries), 10):
            self.batches += 1
            for message, delay in entries[start : start + 10]:
                if not 0 <= delay <= 900:
                    raise ValueError(f"SQS delay must be 0..900 seconds, got {delay}")
                self.sent.append((dict(message), delay))
