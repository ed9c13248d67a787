"""The tables the DynamoDB store's concerns share: the client, the table names, the retention, the
offloading of values too large for an item and the batched reads and deletes."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _back_off, _flag, _s, _str
from stepwell.aws.dynamodb_store.shards import IndexShards
from stepwell.aws.payloads import S3PayloadStore
from stepwell.errors import InvalidArgument
from stepwell.model import ExecutionId

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Items stay under 350 KB. An item holds at most two large values (an execution's input and its result
# or error), so each value over this size is offloaded to S3 (when a payload store is configured).
DEFAULT_INLINE_LIMIT = 160 * 1024
_BATCH_WRITE_SIZE = 25
_BATCH_GET_SIZE = 100


class DynamoDbTables:
    """The executions, operations and coordination tables, as each concern of the store uses them."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        *,
        executions_table: str,
        operations_table: str,
        coordination_table: str,
        subject_index: str,
        payloads: S3PayloadStore | None = None,
        retention_days: int = 30,
        inline_limit: int = DEFAULT_INLINE_LIMIT,
        index_shards: IndexShards | None = None,
    ) -> None:
        self._db = dynamodb
        self.executions_table = executions_table
        self.operations_table = operations_table
        self.coordination_table = coordination_table
        self.subject_index = subject_index
        self._payloads = payloads
        self.retention_seconds = retention_days * 86400
        self.inline_limit = inline_limit
        # The status, workflow and version indexes' key values and tags' entries are sharded (shards.py).
        self.index_shards = index_shards or IndexShards()

    def _put_text(self, item: Item, name: str, text: str | None, *, is_ref: bool, execution_id: str) -> None:
        """Set `name` (and `name`R when it holds a reference), offloading text too large for an item."""
        if text is None:
            return
        if not is_ref and len(text.encode("utf-8")) > self.inline_limit:
            if self._payloads is None:
                raise InvalidArgument(
                    f"{name!r} of {execution_id!r} is {len(text.encode('utf-8'))} bytes, over the item limit "
                    f"{self.inline_limit}, and no payload bucket is configured"
                )
            text = self._payloads.put(execution_id, f"{name}-item", text)
            is_ref = True
        item[name] = _s(text)
        if is_ref:
            item[name + "R"] = {"BOOL": True}

    def _text(self, item: Item, name: str) -> str | None:
        """A value this store may have offloaded itself (errors): read it back."""
        text = _str(item, name)
        if text is not None and _flag(item, name + "R") and self._payloads is not None:
            return self._payloads.get(text)
        return text

    def _execution_key(self, execution_id: str) -> Item:
        try:
            parts = ExecutionId.parse(execution_id)
        except ValueError as error:
            raise InvalidArgument(str(error)) from error
        return {"contextKey": _s(parts.context_key), "instanceId": _s(parts.instance_id)}

    def _batch_get(self, table: str, keys: list[Item], identify: Callable[[Item], Hashable]) -> list[Item]:
        """The items of `keys` in their order (BatchGetItem, consistent reads); missing items are skipped.
        `identify` gives an item's (or key's) table key as a hashable value."""
        found: dict[Hashable, Item] = {}
        for start in range(0, len(keys), _BATCH_GET_SIZE):
            pending: dict[str, Any] = {
                table: {"Keys": keys[start : start + _BATCH_GET_SIZE], "ConsistentRead": True}
            }
            attempt = 0
            while pending:
                response = self._db.batch_get_item(RequestItems=pending, ReturnConsumedCapacity=_CAPACITY)
                for item in response.get("Responses", {}).get(table, []):
                    found[identify(item)] = item
                pending = dict(response.get("UnprocessedKeys") or {})
                if pending:  # throttled keys come back unprocessed: back off and ask again
                    attempt += 1
                    _back_off(attempt)
        return [found[identify(key)] for key in keys if identify(key) in found]

    def _batch_delete(self, table: str, keys: Sequence[Item]) -> None:
        for start in range(0, len(keys), _BATCH_WRITE_SIZE):
            pending: list[Any] = [
                {"DeleteRequest": {"Key": key}} for key in keys[start : start + _BATCH_WRITE_SIZE]
            ]
            attempt = 0
            while pending:
                response = self._db.batch_write_item(
                    RequestItems={table: pending}, ReturnConsumedCapacity=_CAPACITY
                )
                pending = list(response.get("UnprocessedItems", {}).get(table, []))
                if pending:
                    # Throttled items come back unprocessed rather than as an error: back off and retry.
                    attempt += 1
                    _back_off(attempt)
