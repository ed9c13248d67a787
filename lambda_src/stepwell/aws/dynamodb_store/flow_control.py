"""Flow control on DynamoDB (stepwell.ports.flow_control): concurrency keys, their tickets, rate keys and
reserved starts in the coordination table; keys whose queue waits are in its due-index, which the
reconciler's sweep queries by shard."""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.errors import InvalidArgument
from stepwell.model import FlowRate, FlowSlots
from stepwell.ports.flow_control import DUE_SHARDS

_DUE_INDEX = "due-index"
# Attempts of a flow write that lost a race creating its key's item (the next attempt finds it).
_FLOW_ATTEMPTS = 3
_FLOW_NAMES = {"#h": "holders", "#hd": "head", "#tl": "tail", "#lb": "labels", "#ttl": "ttl"}
_NAME_TOKEN = re.compile(r"#[A-Za-z0-9_]+")


def due_shard(execution_id: str) -> int:
    """A stable shard (0..DUE_SHARDS-1) for a key, the same as the memory store's (hash() is
    randomized per process, sha256 is not)."""
    return hashlib.sha256(execution_id.encode("utf-8")).digest()[0] % DUE_SHARDS


class DynamoDbFlowControl(DynamoDbTables):
    """FlowControlStore on the coordination table and its due-index."""

    def _query_due_index(self, prefix: str, shard: int, now: float, limit: int) -> list[Item]:
        if not 0 <= shard < DUE_SHARDS:
            raise InvalidArgument(f"shard must be 0..{DUE_SHARDS - 1}, got {shard}")
        response = self._db.query(
            TableName=self.coordination_table,
            IndexName=_DUE_INDEX,
            KeyConditionExpression="dueShard = :s AND dueAt <= :now",
            ExpressionAttributeValues={":s": _s(f"{prefix}#{shard}"), ":now": _n(now)},
            Limit=limit,
            ReturnConsumedCapacity=_CAPACITY,
        )
        return list(response.get("Items", []))

    def _flow_update(self, key: str, **kwargs: Any) -> Item | None:
        """A conditional UpdateItem of a flow item: its new attributes when ReturnValues asks for them, {}
        otherwise, None when the condition failed (nothing changed)."""
        # DynamoDB refuses names an expression does not use: pass the ones these expressions name.
        expressions = " ".join(
            str(kwargs.get(name, "")) for name in ("UpdateExpression", "ConditionExpression")
        )
        names = {
            token: _FLOW_NAMES[token] for token in _NAME_TOKEN.findall(expressions) if token in _FLOW_NAMES
        }
        names.update(kwargs.pop("ExpressionAttributeNames", {}))
        if names:
            kwargs["ExpressionAttributeNames"] = names
        try:
            response = self._db.update_item(
                TableName=self.coordination_table,
                Key={"key": _s(key)},
                ReturnConsumedCapacity=_CAPACITY,
                **kwargs,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        return dict(response.get("Attributes", {}))

    def _flow_put(self, item: Item, condition: str, values: Item | None = None) -> bool:
        """A conditional PutItem of a flow item; False when the condition failed."""
        kwargs: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
        if "#k" in condition:
            kwargs["ExpressionAttributeNames"] = {"#k": "key"}
        try:
            self._db.put_item(
                TableName=self.coordination_table,
                Item=item,
                ConditionExpression=condition,
                ReturnConsumedCapacity=_CAPACITY,
                **kwargs,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _flow_get(self, key: str) -> Item | None:
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s(key)},
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        return response.get("Item")

    def get_flow_slots(self, scope: str) -> FlowSlots | None:
        item = self._flow_get(scope)
        return None if item is None else _flow_slots(item)

    def hold_flow_slot(
        self, scope: str, execution_id: str, *, limit: int, expires_at: float, labels: Mapping[str, str]
    ) -> bool:
        for _ in range(_FLOW_ATTEMPTS):
            # One conditional write on the key's item: DynamoDB checks size(holders) and adds to it
            # atomically, so racing holders never pass the limit.
            taken = self._flow_update(
                scope,
                UpdateExpression="SET #h.#e = :expires, #lb = :labels REMOVE #ttl",
                ConditionExpression=(
                    "attribute_exists(#h) AND attribute_not_exists(#h.#e) AND size(#h) < :limit AND #hd = #tl"
                ),
                ExpressionAttributeNames={"#e": execution_id},
                ExpressionAttributeValues={
                    ":expires": _n(expires_at),
                    ":labels": _labels(labels),
                    ":limit": _n(limit),
                },
            )
            if taken is not None:
                return True
            state = self.get_flow_slots(scope)
            if state is not None:
                if execution_id in state.holders:
                    return True
                if len(state.holders) >= limit or state.head != state.tail:
                    return False  # full, or others wait in line before it
                continue  # a racer created the item after this call's write: write again
            first: Item = {
                "key": _s(scope),
                "holders": {"M": {execution_id: _n(expires_at)}},
                "head": _n(0),
                "tail": _n(0),
                "labels": _labels(labels),
            }
            if limit > 0 and self._flow_put(first, "attribute_not_exists(#k)"):
                return True
        return False  # the item was created and changed under this call each time: the caller waits

    def take_flow_ticket(self, scope: str, sweep_at: float, labels: Mapping[str, str]) -> int:
        # ADD on a missing item creates it: the first ticket is 0 (the new tail minus one).
        attributes = self._flow_update(
            scope,
            UpdateExpression=(
                "SET #h = if_not_exists(#h, :none), #hd = if_not_exists(#hd, :zero), #lb = :labels, "
                "dueShard = :shard, dueAt = :sweep REMOVE #ttl ADD #tl :one"
            ),
            ExpressionAttributeValues={
                ":none": {"M": {}},
                ":zero": _n(0),
                ":one": _n(1),
                ":labels": _labels(labels),
                ":shard": _s(f"flow#{due_shard(scope)}"),
                ":sweep": _n(sweep_at),
            },
            ReturnValues="UPDATED_NEW",
        )
        assert attributes is not None  # the update has no condition
        return int(attributes["tail"]["N"]) - 1

    def put_flow_ticket(self, scope: str, ticket: int, execution_id: str) -> bool:
        item = {"key": _s(_ticket_key(scope, ticket)), "eid": _s(execution_id)}
        return self._flow_put(item, "attribute_not_exists(#k)")

    def claim_flow_ticket(self, scope: str, ticket: int) -> str | None:
        key = _ticket_key(scope, ticket)
        item = self._flow_get(key)
        if item is None:
            # Not written yet: mark it skipped (its late put then fails); the marker outlives any late put.
            skipped = {
                "key": _s(key),
                "skipped": {"BOOL": True},
                "ttl": _n(int(time.time()) + self.retention_seconds),
            }
            if self._flow_put(skipped, "attribute_not_exists(#k)"):
                return None
            item = self._flow_get(key)  # the put landed first
        return None if item is None else _str(item, "eid")

    def advance_flow(
        self, scope: str, ticket: int, *, execution_id: str | None, limit: int, expires_at: float
    ) -> bool:
        values: Item = {":ticket": _n(ticket), ":next": _n(ticket + 1)}
        update, condition, names = "SET #hd = :next", "#hd = :ticket", {}
        if execution_id is not None:
            update += ", #h.#e = :expires REMOVE #ttl"
            condition += " AND size(#h) < :limit AND attribute_not_exists(#h.#e)"
            names["#e"] = execution_id
            values.update({":expires": _n(expires_at), ":limit": _n(limit)})
        served = self._flow_update(
            scope,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        if served is None:
            return False
        if execution_id is None:  # a skipped ticket (its execution ended) may have been the last one
            self._expire_flow_key_when_idle(scope, served)
        # A skipped marker stays until its ttl, so a late put of its ticket still fails.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.delete_item(
                TableName=self.coordination_table,
                Key={"key": _s(_ticket_key(scope, ticket))},
                ConditionExpression="attribute_exists(eid)",
                ReturnConsumedCapacity=_CAPACITY,
            )
        return True

    def release_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float | None = None
    ) -> FlowSlots | None:
        values: Item = {}
        condition = "attribute_exists(#h.#e)"
        if expected_expiry is not None:
            condition = "#h.#e = :expected"
            values[":expected"] = _n(expected_expiry)
        after = self._flow_update(
            scope,
            UpdateExpression="REMOVE #h.#e",
            ConditionExpression=condition,
            ExpressionAttributeNames={"#e": execution_id},
            ReturnValues="ALL_NEW",
            **({"ExpressionAttributeValues": values} if values else {}),
        )
        if after is None:
            return None
        self._expire_flow_key_when_idle(scope, after)
        return _flow_slots(after)

    def _expire_flow_key_when_idle(self, scope: str, item: Item) -> None:
        """Give a concurrency key that nobody holds or waits for a ttl: its labels name the key's value (a
        customer id, say), so a key no longer used goes after the retention period. Conditional, so a
        racing hold or ticket (each removes the ttl) keeps the key; only a write that leaves the key idle
        costs this second write. A key that is held is never given a ttl: expiring under a long-running
        holder would let the next arrival start past the limit."""
        state = _flow_slots(item)
        if state.holders or state.waiting:
            return
        self._flow_update(
            scope,
            UpdateExpression="SET #ttl = :ttl",
            ConditionExpression="attribute_exists(#h) AND size(#h) = :zero AND #hd = #tl",
            ExpressionAttributeValues={
                ":ttl": _n(int(time.time()) + self.retention_seconds),
                ":zero": _n(0),
            },
        )

    def renew_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float, expires_at: float
    ) -> bool:
        renewed = self._flow_update(
            scope,
            UpdateExpression="SET #h.#e = :expires",
            ConditionExpression="#h.#e = :expected",
            ExpressionAttributeNames={"#e": execution_id},
            ExpressionAttributeValues={":expected": _n(expected_expiry), ":expires": _n(expires_at)},
        )
        return renewed is not None

    def set_flow_sweep(self, scope: str, sweep_at: float | None) -> None:
        # Only a key that has state is swept: the condition keeps this from creating a bare item.
        if sweep_at is None:
            self._flow_update(
                scope,
                UpdateExpression="REMOVE dueShard, dueAt",
                ConditionExpression="attribute_exists(#h)",
            )
        else:
            self._flow_update(
                scope,
                UpdateExpression="SET dueShard = :shard, dueAt = :sweep",
                ConditionExpression="attribute_exists(#h)",
                ExpressionAttributeValues={":shard": _s(f"flow#{due_shard(scope)}"), ":sweep": _n(sweep_at)},
            )

    def query_flow_sweeps(self, shard: int, now: float, limit: int = 100) -> list[str]:
        return [_str(item, "key") or "" for item in self._query_due_index("flow", shard, now, limit)]

    def get_flow_rate(self, scope: str) -> FlowRate:
        item = self._flow_get(scope)
        if item is None:
            return FlowRate()
        return FlowRate(
            starts=tuple(float(start["N"]) for start in item.get("starts", {}).get("L", [])),
            version=int(_num(item, "v") or 0),
            labels=_labels_of(item),
        )

    def put_flow_rate(
        self,
        scope: str,
        *,
        expected_version: int,
        starts: Sequence[float],
        labels: Mapping[str, str],
        window_ends: float | None = None,
    ) -> bool:
        item: Item = {
            "key": _s(scope),
            "starts": {"L": [_n(start) for start in starts]},
            "v": _n(expected_version + 1),
            "labels": _labels(labels),
        }
        if window_ends is not None:
            # Its labels name the key (a customer id, say): it goes a retention period after its last use.
            item["ttl"] = _n(int(window_ends) + self.retention_seconds)
        if expected_version == 0:
            return self._flow_put(item, "attribute_not_exists(#k)")
        return self._flow_put(item, "v = :expected", {":expected": _n(expected_version)})

    def reserve_flow_start(self, execution_id: str, start_at: float) -> float:
        key = _reservation_key(execution_id)
        item: Item = {
            "key": _s(key),
            "eid": _s(execution_id),
            "startAt": _n(start_at),
            "ttl": _n(int(start_at) + self.retention_seconds),
        }
        if self._flow_put(item, "attribute_not_exists(#k)"):
            return start_at
        recorded = self.get_flow_start(execution_id)
        return start_at if recorded is None else recorded

    def get_flow_start(self, execution_id: str) -> float | None:
        item = self._flow_get(_reservation_key(execution_id))
        return None if item is None else _num(item, "startAt")

    def forget_flow_start(self, execution_id: str) -> None:
        self._db.delete_item(
            TableName=self.coordination_table,
            Key={"key": _s(_reservation_key(execution_id))},
            ReturnConsumedCapacity=_CAPACITY,
        )

    def peek_flow_tickets(self, scope: str, first: int, count: int) -> list[str]:
        if first < 0 or count < 0:
            raise InvalidArgument(f"tickets are numbered from 0: got first={first}, count={count}")
        keys = [{"key": _s(_ticket_key(scope, ticket))} for ticket in range(first, first + count)]
        items = self._batch_get(self.coordination_table, keys, lambda item: _str(item, "key"))
        return [eid for eid in (_str(item, "eid") for item in items) if eid is not None]


def _ticket_key(scope: str, ticket: int) -> str:
    return f"{scope}#t#{ticket}"


def _reservation_key(execution_id: str) -> str:
    return "fc#x#" + hashlib.sha256(execution_id.encode("utf-8")).hexdigest()[:40]


def _labels(labels: Mapping[str, str]) -> Item:
    return {"M": {name: _s(str(value)) for name, value in labels.items()}}


def _labels_of(item: Item) -> dict[str, str]:
    return {name: str(value["S"]) for name, value in item.get("labels", {}).get("M", {}).items()}


def _flow_slots(item: Item) -> FlowSlots:
    return FlowSlots(
        holders={eid: float(expiry["N"]) for eid, expiry in item.get("holders", {}).get("M", {}).items()},
        head=int(_num(item, "head") or 0),
        tail=int(_num(item, "tail") or 0),
        labels=_labels_of(item),
    )
