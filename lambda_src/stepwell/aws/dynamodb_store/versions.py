"""Code versions on DynamoDB (stepwell.ports.versions): an execution's cv and pinnedVersion (the sparse
version-index's key while it runs), and the version an upgrade moved it to on its coordination record."""

from __future__ import annotations

from typing import Any

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _item_id, _s
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.aws.page_tokens import decode_page_token, encode_page_token
from stepwell.errors import InvalidArgument
from stepwell.model import LIVE_STATUSES, Page

_VERSION_INDEX = "version-index"


class DynamoDbVersionPins(DynamoDbTables):
    """VersionPins on the executions table's version-index (and the coordination record's mv)."""

    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        current = "attribute_not_exists(cv)" if expected is None else "cv = :expected"
        live = {f":live{i}": _s(status.value) for i, status in enumerate(sorted(LIVE_STATUSES))}
        values: Item = {":v": _s(version), **live}
        if expected is not None:
            values[":expected"] = _s(expected)
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                UpdateExpression="SET cv = :v, pinnedVersion = :v",
                # Not ended: a paused execution is pinned too (it resumes on its version).
                ConditionExpression=f"attribute_exists(contextKey) AND #status IN ({', '.join(live)}) "
                f"AND {current}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _version_query(self, version: str) -> dict[str, Any]:
        return {
            "TableName": self.executions_table,
            "IndexName": _VERSION_INDEX,
            "KeyConditionExpression": "pinnedVersion = :v",
            "ExpressionAttributeValues": {":v": _s(version)},
            "ReturnConsumedCapacity": _CAPACITY,
        }

    def list_pinned(self, version: str, limit: int = 100, next_token: str | None = None) -> Page[str]:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"limit must be 1..1000, got {limit}")
        listing = f"{_VERSION_INDEX}|{version}"
        kwargs = self._version_query(version)
        if next_token:
            kwargs["ExclusiveStartKey"] = decode_page_token(listing, next_token)
        response = self._db.query(**kwargs, Limit=limit)
        ids = [f"{key[0]}/{key[1]}" for key in map(_item_id, response.get("Items", []))]
        last_key = response.get("LastEvaluatedKey")
        return Page(items=ids, next_token=encode_page_token(listing, last_key) if last_key else None)

    def count_pinned(self, version: str) -> int:
        count = 0
        kwargs = self._version_query(version)
        while True:
            response = self._db.query(**kwargs, Select="COUNT")
            count += int(response.get("Count", 0))
            last_key = response.get("LastEvaluatedKey")
            if not last_key:
                return count
            kwargs["ExclusiveStartKey"] = last_key

    def note_moved_version(self, execution_id: str, version: str) -> None:
        self._db.update_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            UpdateExpression="SET mv = :v, eid = :eid",
            ExpressionAttributeValues={":v": _s(version), ":eid": _s(execution_id)},
            ReturnConsumedCapacity=_CAPACITY,
        )
