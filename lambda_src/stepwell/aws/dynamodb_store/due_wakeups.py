"""Due wake-ups on DynamoDB (stepwell.ports.due_wakeups): base-table items of the executions table, in no
index (they carry none of the indexed attributes), keyed apart from every execution, tag entry and schedule
pointer (those keys start with a domain, a letter or digit; these with '~').

- a wake-up: contextKey `~due#<bucket>#<shard>`, instanceId `<due epoch ms, 14 digits>#<execution id>`, so a
  bucket's Query reads what is due by a time in due order, and a withdrawal deletes by key;
- the sweep state: contextKey `~due#sweep`, instanceId `state`, with per shard `w<k>` (its watermark) and
  `lo<k>`/`lx<k>` (its sweep lease's owner and expiry): one read per sweep, each shard's update atomic.

The armed wake-up a stop or time-out drops is read from the execution's coordination record (`w` of
`lease#<execution id>`, stepwell.aws.dynamodb_store.coordination).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.ports.due_wakeups import (
    DUE_SHARDS,
    DueWake,
    SweepLease,
    SweepState,
    check_shard,
    due_bucket,
    due_shard,
)

_PREFIX = "~due#"
_STATE_KEY: Item = {"contextKey": _s(_PREFIX + "sweep"), "instanceId": _s("state")}


def _due_ms(due_at: float) -> int:
    return round(due_at * 1000)


def due_item_key(execution_id: str, due_at: float) -> Item:
    """The key of the execution's wake-up at `due_at` (milliseconds kept)."""
    ms = _due_ms(due_at)
    partition = f"{_PREFIX}{due_bucket(ms / 1000)}#{due_shard(execution_id)}"
    return {"contextKey": _s(partition), "instanceId": _s(f"{ms:014d}#{execution_id}")}


class DynamoDbDueWakeUps(DynamoDbTables):
    """DueWakeUps on the executions table (and the coordination table's armed wake-ups)."""

    def put_due(self, execution_id: str, due_at: float) -> None:
        # Unconditional: the same wake-up twice is the same item.
        self._db.put_item(
            TableName=self.executions_table,
            Item={
                **due_item_key(execution_id, due_at),
                "eid": _s(execution_id),
                "due": _n(_due_ms(due_at) / 1000),
            },
            ReturnConsumedCapacity=_CAPACITY,
        )

    def delete_due(self, wakes: Sequence[DueWake]) -> None:
        keys = list(
            {_key_text(key): key for key in (due_item_key(w.execution_id, w.due_at) for w in wakes)}.values()
        )
        self._batch_delete(self.executions_table, keys)

    def withdraw_due(self, execution_id: str, due_at: float) -> bool:
        """Drop one wake-up's item; True if it was there (the wake-up was a due item, never a schedule)."""
        response = self._db.delete_item(
            TableName=self.executions_table,
            Key=due_item_key(execution_id, due_at),
            ReturnValues="ALL_OLD",
            ReturnConsumedCapacity=_CAPACITY,
        )
        return bool(response.get("Attributes"))

    def due_page(self, shard: int, bucket: int, *, until: float, limit: int) -> list[DueWake]:
        check_shard(shard)
        # Strongly consistent: the next page of a bucket is read right after this one's items are deleted,
        # and an eventually consistent read could return some of them again (a wake-up sent twice costs a
        # worker run; the read costs half a unit more per 4 KB).
        response = self._db.query(
            TableName=self.executions_table,
            KeyConditionExpression="contextKey = :pk AND instanceId < :next",
            ExpressionAttributeValues={
                ":pk": _s(f"{_PREFIX}{bucket}#{shard}"),
                ":next": _s(f"{_due_ms(until) + 1:014d}"),
            },
            Limit=limit,
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        wakes = []
        for item in response.get("Items", []):
            execution_id, due = _str(item, "eid"), _num(item, "due")
            if execution_id is not None and due is not None:
                wakes.append(DueWake(due_at=due, execution_id=execution_id))
        return wakes

    def sweep_state(self) -> SweepState | None:
        response = self._db.get_item(
            TableName=self.executions_table,
            Key=_STATE_KEY,
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        if item is None:
            return None
        watermarks: dict[int, int] = {}
        leases: dict[int, SweepLease] = {}
        for shard in range(DUE_SHARDS):
            mark = _num(item, f"w{shard}")
            if mark is not None:
                watermarks[shard] = int(mark)
            owner, expires = _str(item, f"lo{shard}"), _num(item, f"lx{shard}")
            if owner is not None and expires is not None:
                leases[shard] = SweepLease(owner=owner, expires_at=expires)
        return SweepState(watermarks=watermarks, leases=leases)

    def advance_watermark(self, shard: int, bucket: int) -> None:
        check_shard(shard)
        # Never back: a slower sweep of the same shard cannot undo a faster one's progress.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self.executions_table,
                Key=_STATE_KEY,
                UpdateExpression="SET #w = :b",
                ConditionExpression="attribute_not_exists(#w) OR #w < :b",
                ExpressionAttributeNames={"#w": f"w{shard}"},
                ExpressionAttributeValues={":b": _n(bucket)},
                ReturnConsumedCapacity=_CAPACITY,
            )

    def take_sweep_lease(self, shard: int, *, owner: str, now: float, until: float) -> bool:
        check_shard(shard)
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=_STATE_KEY,
                UpdateExpression="SET #o = :owner, #x = :until",
                ConditionExpression="attribute_not_exists(#o) OR #o = :owner OR #x < :now",
                ExpressionAttributeNames={"#o": f"lo{shard}", "#x": f"lx{shard}"},
                ExpressionAttributeValues={":owner": _s(owner), ":until": _n(until), ":now": _n(now)},
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def release_sweep_lease(self, shard: int, owner: str) -> None:
        check_shard(shard)
        # A lease taken over after it expired stays with its new holder.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self.executions_table,
                Key=_STATE_KEY,
                UpdateExpression="REMOVE #o, #x",
                ConditionExpression="#o = :owner",
                ExpressionAttributeNames={"#o": f"lo{shard}", "#x": f"lx{shard}"},
                ExpressionAttributeValues={":owner": _s(owner)},
                ReturnConsumedCapacity=_CAPACITY,
            )

    def armed_wake(self, execution_id: str) -> float | None:
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            ProjectionExpression="w",
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        return _num(response.get("Item") or {}, "w")


def _key_text(key: Item) -> tuple[str, str]:
    return (_str(key, "contextKey") or "", _str(key, "instanceId") or "")
