"""The operation log on DynamoDB (stepwell.ports.log): an execution's batches ("b#<seq>") and external
inputs ("in#<input id>") in its partition of the operations table, so one Query reads the log and then the
inputs."""

from __future__ import annotations

import contextlib
import json
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _flag, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.core.batch_codec import deflate_body, inflate_body
from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.model import Batch, ExternalInput, InputKind

_MAX_SEQ_KEY = "b#999999999999"
# expire_log and keep_log: up to this many batches one after another, more on this many threads
# (boto3's clients are thread-safe).
_EXPIRE_SEQUENTIALLY = 16
_EXPIRE_THREADS = 8


def batch_key(seq: int) -> str:
    if not 0 <= seq <= 999_999_999_999:
        raise InvalidArgument(f"batch seq must be 0..999999999999, got {seq}")
    return f"b#{seq:012d}"


def _body(item: Item) -> str:
    """A batch item's body: `b` as written, or `bd` (or an older engine's `bz`) inflated."""
    if "bd" in item:
        return inflate_body(bytes(item["bd"]["B"]))
    if "bz" in item:
        return zlib.decompress(bytes(item["bz"]["B"])).decode("utf-8")
    return _str(item, "b") or ""


class DynamoDbOperationLog(DynamoDbTables):
    """OperationLog on the operations table."""

    def append_batch(self, execution_id: str, batch: Batch) -> None:
        item: Item = {
            "executionId": _s(execution_id),
            "sk": _s(batch_key(batch.seq)),
            "t": _n(batch.created_at),
        }
        packed = None if batch.body_is_ref else deflate_body(batch.body, self.inline_limit)
        if packed is not None:
            item["bd"] = {"B": packed}
        else:
            self._put_text(item, "b", batch.body, is_ref=batch.body_is_ref, execution_id=execution_id)
        if batch.terminal:
            item["x"] = {"BOOL": True}
        if batch.expires_at is not None:
            item["ttl"] = _n(int(batch.expires_at))
        try:
            self._db.put_item(
                TableName=self.operations_table,
                Item=item,
                ConditionExpression="attribute_not_exists(sk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            taken: Item = error.response.get("Item") or {}  # type: ignore[assignment]
            raise SequenceConflict(
                f"batch {batch.seq} of {execution_id!r} already exists: another worker holds the execution",
                written_at=_num(taken, "t"),
            ) from error

    def load_batches(
        self,
        execution_id: str,
        after_seq: int = -1,
        limit: int = 1000,
        inputs: list[ExternalInput] | None = None,
    ) -> tuple[list[Batch], int | None]:
        if limit < 1:
            raise InvalidArgument(f"limit must be at least 1, got {limit}")
        # The log's "b#" keys sort before the inputs' "in#" keys in the execution's partition: with
        # `inputs`, one Query reads the rest of the log and then the inputs.
        condition = "executionId = :e AND sk >= :lo"
        values: Item = {":e": _s(execution_id), ":lo": _s(batch_key(after_seq + 1))}
        if inputs is None:
            condition = "executionId = :e AND sk BETWEEN :lo AND :hi"
            values[":hi"] = _s(_MAX_SEQ_KEY)
        kwargs: dict[str, Any] = {}
        batches: list[Batch] = []
        while True:
            response = self._db.query(
                TableName=self.operations_table,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                ConsistentRead=True,
                Limit=limit,
                ReturnConsumedCapacity=_CAPACITY,
                **kwargs,
            )
            items = response.get("Items", [])
            for item in items:
                key = _str(item, "sk") or ""
                if key.startswith("in#"):
                    assert inputs is not None
                    inputs.append(self._external_input(item))
                else:
                    batches.append(
                        Batch(
                            seq=int(key[2:]),
                            body=_body(item),
                            created_at=_num(item, "t") or 0.0,
                            body_is_ref=_flag(item, "bR"),
                            terminal=_flag(item, "x"),
                            expires_at=_num(item, "ttl"),
                        )
                    )
            last_key = response.get("LastEvaluatedKey")
            if last_key and items and (_str(items[-1], "sk") or "").startswith("in#"):
                kwargs["ExclusiveStartKey"] = last_key  # the log is read: read on through the inputs
                continue
            more = last_key is not None and batches
            return batches, batches[-1].seq if more else None

    def put_external_input(self, execution_id: str, item: ExternalInput) -> None:
        if not item.input_id:
            raise InvalidArgument("an external input needs a non-empty input_id")
        record: Item = {
            "executionId": _s(execution_id),
            "sk": _s("in#" + item.input_id),
            "k": _s(item.kind.value),
            "t": _n(item.created_at),
        }
        if item.operation_id is not None:
            record["op"] = _s(item.operation_id)
        self._put_text(record, "p", item.payload, is_ref=item.payload_is_ref, execution_id=execution_id)
        if item.error is not None:
            self._put_text(record, "er", json.dumps(item.error), is_ref=False, execution_id=execution_id)
        self._db.put_item(TableName=self.operations_table, Item=record, ReturnConsumedCapacity=_CAPACITY)

    def list_external_inputs(self, execution_id: str) -> list[ExternalInput]:
        inputs: list[ExternalInput] = []
        start_key: Item | None = None
        while True:
            kwargs: dict[str, Any] = {}
            if start_key:
                kwargs["ExclusiveStartKey"] = start_key
            response = self._db.query(
                TableName=self.operations_table,
                KeyConditionExpression="executionId = :e AND begins_with(sk, :p)",
                ExpressionAttributeValues={":e": _s(execution_id), ":p": _s("in#")},
                ConsistentRead=True,
                ReturnConsumedCapacity=_CAPACITY,
                **kwargs,
            )
            inputs.extend(self._external_input(record) for record in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                return inputs

    def _external_input(self, record: Item) -> ExternalInput:
        error_text = self._text(record, "er")
        return ExternalInput(
            input_id=(_str(record, "sk") or "in#")[3:],
            kind=InputKind(_str(record, "k") or ""),
            created_at=_num(record, "t") or 0.0,
            operation_id=_str(record, "op"),
            payload=_str(record, "p"),
            payload_is_ref=_flag(record, "pR"),
            error=json.loads(error_text) if error_text is not None else None,
        )

    def expire_log(self, execution_id: str, count: int, ended_at: float) -> None:
        self._update_batches(
            execution_id, count, "SET #ttl = :ttl", {":ttl": _n(int(ended_at) + self.retention_seconds)}
        )

    def keep_log(self, execution_id: str, count: int) -> None:
        self._update_batches(execution_id, count, "REMOVE #ttl", None)

    def _update_batches(self, execution_id: str, count: int, update: str, values: Item | None) -> None:
        """Set or remove the ttl of batches seq 0..count-1: one UpdateItem each (DynamoDB has no batch
        update; TTL's own deletes are free), a few at a time so a long log does not hold the run up; a
        batch already gone is skipped by the condition."""
        extra: dict[str, Any] = {} if values is None else {"ExpressionAttributeValues": values}

        def update_one(seq: int) -> None:
            with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
                self._db.update_item(
                    TableName=self.operations_table,
                    Key={"executionId": _s(execution_id), "sk": _s(batch_key(seq))},
                    UpdateExpression=update,
                    ConditionExpression="attribute_exists(sk)",
                    ExpressionAttributeNames={"#ttl": "ttl"},
                    ReturnConsumedCapacity=_CAPACITY,
                    **extra,
                )

        if count <= _EXPIRE_SEQUENTIALLY:
            for seq in range(count):
                update_one(seq)
            return
        with ThreadPoolExecutor(max_workers=_EXPIRE_THREADS) as pool:
            list(pool.map(update_one, range(count)))

    def delete_log(self, execution_id: str) -> int:
        # The execution's partition, keys only, a page at a time: its batches, then its inputs.
        kwargs: dict[str, Any] = {
            "TableName": self.operations_table,
            "KeyConditionExpression": "executionId = :e",
            "ExpressionAttributeValues": {":e": _s(execution_id)},
            "ProjectionExpression": "executionId, sk",
            "ConsistentRead": True,
            "ReturnConsumedCapacity": _CAPACITY,
        }
        removed = 0
        while True:
            page = self._db.query(**kwargs)
            keys = [{"executionId": item["executionId"], "sk": item["sk"]} for item in page.get("Items", [])]
            self._batch_delete(self.operations_table, keys)
            removed += len(keys)
            last = page.get("LastEvaluatedKey")
            if not last:
                return removed
            kwargs["ExclusiveStartKey"] = last

    def delete_external_inputs(self, execution_id: str, input_ids: list[str]) -> None:
        keys = [{"executionId": _s(execution_id), "sk": _s("in#" + input_id)} for input_id in input_ids]
        self._batch_delete(self.operations_table, keys)
