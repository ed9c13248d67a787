"""The due wake-ups port (stepwell.core.wake_sweep): long waits kept as items keyed by their due time, which a
recurring sweep turns into work-queue messages, instead of one EventBridge Scheduler schedule per wait.

An item lives in bucket `due_bucket(due_at)` (an hour of due times) and shard `due_shard(execution_id)` (one
of DUE_SHARDS, from a hash of the execution id), so 10,000 long waits started per second with the same
duration put about 10,000 / DUE_SHARDS items per second in one partition, and a delete of one (a withdrawn
wake-up) needs no Query: the execution id and the due time name its key. The sweep keeps per shard the
oldest bucket that may still hold items (its watermark), so a sweep that did not run for a while catches up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

# Fixed, not a setting: an item's shard is part of its key, so changing the count would strand items.
# 32 shards keep a partition near 310 writes per second at 10,000 long waits per second of one duration
# (DynamoDB's per-partition limit is 1,000), and a storm's 1,000,000 items in 31,250 per shard.
DUE_SHARDS = 32
# Due times per bucket (seconds): a sweep Queries one bucket per shard in steady state, and a watermark
# moves (one write per shard) once per bucket.
DUE_BUCKET_SECONDS = 3600


def due_shard(execution_id: str) -> int:
    """The shard of an execution's due items (stable across processes: a digest, not hash())."""
    digest = hashlib.sha256(execution_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") % DUE_SHARDS


def due_bucket(due_at: float) -> int:
    """The bucket (hours since the epoch) a wake-up due at `due_at` (epoch seconds) is kept in."""
    return int(due_at // DUE_BUCKET_SECONDS)


def check_shard(shard: int) -> int:
    if isinstance(shard, bool) or not isinstance(shard, int) or not 0 <= shard < DUE_SHARDS:
        raise ValueError(f"a due wake-up shard is a whole number 0..{DUE_SHARDS - 1}, got {shard!r}")
    return shard


@dataclass(frozen=True, order=True)
class DueWake:
    """One pending long wait: the execution to invoke and when (epoch seconds, millisecond precision)."""

    due_at: float
    execution_id: str


@dataclass(frozen=True)
class SweepLease:
    """A sweep's hold on one shard while it drains more than one page (so two sweeps of one shard do not
    send the same wake-ups twice): who holds it and until when."""

    owner: str
    expires_at: float


@dataclass(frozen=True)
class SweepState:
    """What the sweep keeps between runs: per shard its watermark (the oldest bucket that may still hold
    items; a shard never swept is missing) and the lease of a sweep draining it, if any (expired ones
    included: the reader compares with its clock)."""

    watermarks: Mapping[int, int]
    leases: Mapping[int, SweepLease]


class DueWakeUps(Protocol):
    def put_due(self, execution_id: str, due_at: float) -> None:
        """Keep a wake-up of the execution at `due_at` (idempotent: the same wake-up twice is one item)."""
        ...

    def delete_due(self, wakes: Sequence[DueWake]) -> None:
        """Drop these wake-ups' items (those already gone are skipped)."""
        ...

    def due_page(self, shard: int, bucket: int, *, until: float, limit: int) -> list[DueWake]:
        """Up to `limit` of the shard's items in `bucket` due at or before `until`, soonest first."""
        ...

    def sweep_state(self) -> SweepState | None:
        """The sweep's state (one read); None when no sweep ever ran."""
        ...

    def advance_watermark(self, shard: int, bucket: int) -> None:
        """Every item of the shard before `bucket` has been swept: move its watermark there (never back)."""
        ...

    def take_sweep_lease(self, shard: int, *, owner: str, now: float, until: float) -> bool:
        """Hold the shard's sweep until `until` if nobody else holds it unexpired (conditional). True if
        `owner` holds it now."""
        ...

    def release_sweep_lease(self, shard: int, owner: str) -> None:
        """Drop the shard's sweep lease if `owner` still holds it."""
        ...

    def armed_wake(self, execution_id: str) -> float | None:
        """The wake-up the execution's last run armed (its coordination record), if any: on a stop or a
        time-out, the one whose item is dropped."""
        ...


class WakeBatches(Protocol):
    def send_wakes(self, entries: Sequence[tuple[Mapping[str, Any], int]]) -> None:
        """Send each (message, delay seconds 0..900) to the work queue, in batches; raises if any is refused
        (the sweep then keeps the items: it deletes only what was sent)."""
        ...
