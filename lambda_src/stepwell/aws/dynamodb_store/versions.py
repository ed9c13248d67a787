"""Code versions on DynamoDB (stepwell.ports.versions): an execution's cv and pinnedVersion (the sparse
version-index's key while it runs, sharded as shards.py says), and the version an upgrade moved it to on
its coordination record."""

from __future__ import annotations

from typing import Any

from stepwell.aws.dynamodb_store.executions import status_condition
from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _item_id, _num, _s
from stepwell.aws.dynamodb_store.shards import Position, merge_shards, shard_value
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.aws.page_tokens import InvalidPageToken, decode_shard_token, encode_shard_token
from stepwell.errors import InvalidArgument
from stepwell.model import LIVE_STATUSES, Page

_VERSION_INDEX = "version-index"


class DynamoDbVersionPins(DynamoDbTables):
    """VersionPins on the executions table's version-index (and the coordination record's mv)."""

    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        current = "attribute_not_exists(cv)" if expected is None else "cv = :expected"
        live, live_values = status_condition(LIVE_STATUSES, "live")
        values: Item = {
            ":v": _s(version),
            ":pv": _s(self.index_shards.value(version, execution_id)),
            **live_values,
        }
        if expected is not None:
            values[":expected"] = _s(expected)
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                UpdateExpression="SET cv = :v, pinnedVersion = :pv",
                # Not ended: a paused execution is pinned too (it resumes on its version).
                ConditionExpression=f"attribute_exists(contextKey) AND {live} AND {current}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _version_query(self, version: str, shard: int) -> dict[str, Any]:
        return {
            "TableName": self.executions_table,
            "IndexName": _VERSION_INDEX,
            "KeyConditionExpression": "pinnedVersion = :v",
            "ExpressionAttributeValues": {":v": _s(shard_value(version, shard))},
            "ReturnConsumedCapacity": _CAPACITY,
        }

    def list_pinned(self, version: str, limit: int = 100, next_token: str | None = None) -> Page[str]:
        """Oldest first (createdAt, then the id): one Query per read shard, merged."""
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"limit must be 1..1000, got {limit}")
        listing = f"{_VERSION_INDEX}|{version}"
        shards = self.index_shards.read
        positions: list[Position] = [None] * shards
        if next_token:
            positions = list(decode_shard_token(listing, next_token, shards))
            for shard, position in enumerate(positions):
                if isinstance(position, dict) and position.get("pinnedVersion") != _s(
                    shard_value(version, shard)
                ):
                    raise InvalidPageToken(f"page token {next_token[:80]!r} is not one this store returned")

        def fetch(shard: int, start: Item | None, count: int) -> tuple[list[Item], Item | None]:
            kwargs = self._version_query(version, shard)
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            response = self._db.query(**kwargs, Limit=count)
            return response.get("Items", []), response.get("LastEvaluatedKey")

        page = merge_shards(
            fetch,
            positions=positions,
            order=lambda item: (_num(item, "createdAt") or 0.0, "/".join(_item_id(item))),
            key_of=lambda item: {
                name: item[name] for name in ("contextKey", "instanceId", "pinnedVersion", "createdAt")
            },
            limit=limit,
        )
        ids = [f"{key[0]}/{key[1]}" for key in (_item_id(item) for _, item in page.items)]
        token = encode_shard_token(listing, page.positions) if page.positions else None
        return Page(items=ids, next_token=token)

    def count_pinned(self, version: str) -> int:
        count = 0
        for shard in range(self.index_shards.read):
            kwargs = self._version_query(version, shard)
            while True:
                response = self._db.query(**kwargs, Select="COUNT")
                count += int(response.get("Count", 0))
                last_key = response.get("LastEvaluatedKey")
                if not last_key:
                    break
                kwargs["ExclusiveStartKey"] = last_key
        return count

    def note_moved_version(self, execution_id: str, version: str) -> None:
        self._db.update_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            UpdateExpression="SET mv = :v, eid = :eid",
            ExpressionAttributeValues={":v": _s(version), ":eid": _s(execution_id)},
            ReturnConsumedCapacity=_CAPACITY,
        )
