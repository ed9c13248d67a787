"""Sharded index keys (issue 42): the executions table's GSIs key an execution by its status, workflow and
pinned version, and a tag's entries share one partition; at thousands of starts per second of one workflow
one such partition key value would pass DynamoDB's 1,000 write units per second per partition. So each of
those key values carries a shard suffix derived from the execution id: `RUNNING#3`, and shard 0 is the bare
value (`RUNNING`), which is what every item written before sharding (and every item of a deployment with
one shard) holds, so no table or index changes and nothing needs a backfill.

An item's shard is hash(execution id) % the write count in force when its key attribute was written; a
listing Queries shards 0..read count - 1, a count that only grows, and merges them (merge_shards). Raising
the count: first the read count, then the write count (docs/reference/tables.md, "Index shards").
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stepwell.aws.dynamodb_store.items import Item
from stepwell.config import MAX_INDEX_SHARDS

SHARD_SEPARATOR = "#"
# A shard's position in a page token: not started (None), done (DONE) or the key of the last item taken.
DONE = "-"
Position = Item | str | None


@dataclass(frozen=True)
class IndexShards:
    """How many shards writers spread an index key value over (`write`) and how many readers read
    (`read`: at least `write`, and at least every write count used before while its items live)."""

    write: int = 1
    read: int = 1

    def __post_init__(self) -> None:
        for name, count in (("write", self.write), ("read", self.read)):
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_INDEX_SHARDS:
                raise ValueError(
                    f"index shards ({name}) must be a whole number 1..{MAX_INDEX_SHARDS}, got {count!r}"
                )
        if self.read < self.write:
            raise ValueError(
                f"index shards: readers must read at least the shards writers write, got read {self.read} < "
                f"write {self.write}"
            )

    def shard(self, execution_id: str) -> int:
        """The shard an execution's key values are written to now."""
        return shard_of(execution_id, self.write)

    def value(self, value: str, execution_id: str) -> str:
        """`value` (a status, workflow name, version or tag partition) as the execution's index key now."""
        return shard_value(value, self.shard(execution_id))


def shard_of(execution_id: str, shards: int) -> int:
    """A stable hash of the id (the same in every process and release), modulo `shards`."""
    digest = hashlib.sha256(execution_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def shard_value(value: str, shard: int) -> str:
    """The key value of `value` in `shard`: the bare value in shard 0, `value#shard` in the others."""
    return value if shard == 0 else f"{value}{SHARD_SEPARATOR}{shard}"


def unsharded(value: str) -> str:
    """The value a sharded key value names (statuses and workflow names never hold '#')."""
    base, separator, suffix = value.rpartition(SHARD_SEPARATOR)
    return base if separator and suffix.isdigit() else value


# One Query of a shard (its index, from after a start key, None: its first item; at most a count of items):
# its items and LastEvaluatedKey.
Fetch = Callable[[int, Item | None, int], tuple[list[Item], Item | None]]


@dataclass
class _Cursor:
    shard: int
    position: Position
    buffer: deque[Item] = field(default_factory=deque)
    start: Item | None = None  # where the next Query of this shard starts
    more: bool = True  # whether a Query of this shard may return more

    @property
    def done(self) -> bool:
        return not self.buffer and not self.more


@dataclass(frozen=True)
class MergedPage:
    """Items in the listing's order, each with its shard, and where each shard stopped (None when every
    shard is done: the listing ended)."""

    items: list[tuple[int, Item]]
    positions: list[Position] | None


def merge_shards(
    fetch: Fetch,
    *,
    positions: Sequence[Position],
    order: Callable[[Item], Any],
    key_of: Callable[[Item], Item],
    limit: int,
) -> MergedPage:
    """Up to `limit` items of the shards' Queries, merged by `order` (ascending: the listing's order; each
    shard's Query returns its items in that order). Lazy: each shard is read a share of the page at a time
    and only when the merge needs its next item. `positions`: per shard, as a previous page left it."""
    shards = len(positions)
    # A shard's first read: its share of the page and a little more; one shard reads the page itself.
    share = limit if shards == 1 else min(limit, math.ceil(limit / shards) + 2)
    cursors = [
        _Cursor(shard=k, position=p, start=p if isinstance(p, dict) else None)
        for k, p in enumerate(positions)
    ]
    for cursor in cursors:
        if cursor.position == DONE:
            cursor.more = False

    def read(cursor: _Cursor, count: int) -> None:
        while cursor.more and not cursor.buffer:  # a Query may return nothing yet a LastEvaluatedKey
            items, last = fetch(cursor.shard, cursor.start, count)
            cursor.buffer.extend(items)
            cursor.start = last
            cursor.more = last is not None

    heap: list[tuple[Any, int]] = []
    for cursor in cursors:
        read(cursor, share)
        if cursor.buffer:
            heap.append((order(cursor.buffer[0]), cursor.shard))
    heapq.heapify(heap)
    taken: list[tuple[int, Item]] = []
    while heap and len(taken) < limit:
        _, shard = heapq.heappop(heap)
        cursor = cursors[shard]
        item = cursor.buffer.popleft()
        cursor.position = key_of(item)
        taken.append((shard, item))
        if len(taken) == limit:
            break
        if not cursor.buffer:
            read(cursor, max(share, limit - len(taken)) if shards > 1 else limit - len(taken))
        if cursor.buffer:
            heapq.heappush(heap, (order(cursor.buffer[0]), shard))
    if all(cursor.done for cursor in cursors):
        return MergedPage(items=taken, positions=None)
    return MergedPage(items=taken, positions=[DONE if c.done else c.position for c in cursors])


class Descending:
    """A value that sorts the other way (a merge key's tie-breaker in the listing's direction)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: Descending) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)
