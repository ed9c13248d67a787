"""The contexts (the executions table) and the event records (the coordination table) on DynamoDB, as the
package's docstring lays them out. Queries, Gets and conditional writes only; listings page with
stepwell.aws.page_tokens."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from stepwell.aws.page_tokens import InvalidPageToken, decode_page_token, encode_page_token
from stepwell.features.definitions.ids import StoreError, check_id
from stepwell.features.definitions.store.records import (
    CONTEXT_RECORD,
    CONTEXT_STATUS,
    CONTEXT_WORKFLOW,
    DEDUP_TTL_SECONDS,
    ContextRecord,
    check_context_ids,
    check_limit,
    check_record_key,
    check_status,
    encode_context_data,
    event_excerpt,
    wait_entry,
)
from stepwell.model import Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
REJECTED_SHARD = "rejected"
REJECTED_TTL_SECONDS = 14 * 86400


def _first(item: Item, *names: str) -> str:
    """The first of `names` the item holds (a string attribute): a context's own name, then the one an item
    written before it holds."""
    for name in names:
        if name in item:
            return str(item[name]["S"])
    raise KeyError(f"context item without {' or '.join(names)}")


def _wait_attribute(wait: Mapping[str, str]) -> dict[str, Any]:
    """A `waiting` entry as the item's `wt` map holds it."""
    attribute: dict[str, Any] = {"e": {"S": wait["event"]}, "cb": {"S": wait["callbackId"]}}
    if wait.get("once") == "true":
        attribute["o"] = {"BOOL": True}
    return {"M": attribute}


def _json(value: Any) -> dict[str, str]:
    return {"S": json.dumps(value, separators=(",", ":"), default=str)}


def _data(value: Mapping[str, Any]) -> dict[str, str]:
    return {"S": encode_context_data(dict(value))}


def _start_key(listing: str, token: str) -> dict[str, Any]:
    """Where a listing's page starts: a token it did not return is the stores' StoreError."""
    try:
        return decode_page_token(listing, token)
    except InvalidPageToken as error:
        raise StoreError(str(error)) from error


class DynamoDbContextStore:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        subject_index: str,
        *,
        now: Callable[[], float] = time.time,
        retention_days: int = 30,
    ) -> None:
        self._db = dynamodb
        self.table = table
        self.subject_index = subject_index
        self._now = now
        # A finished context expires (TTL attribute `ttl`) with the engine's finished executions.
        self.retention_seconds = retention_days * 86400

    def _key(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> Item:
        return {"contextKey": {"S": f"{domain}#{workflow_id}#{subject_id}"}, "instanceId": {"S": instance_id}}

    def _item(self, record: ContextRecord) -> Item:
        item = self._key(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        item.update(
            {
                "recordType": {"S": CONTEXT_RECORD},
                "domain": {"S": record.domain},
                CONTEXT_WORKFLOW: {"S": record.workflow_id},
                "subjectId": {"S": record.subject_id},
                CONTEXT_STATUS: {"S": record.status},
                "createdAt": {"N": repr(float(record.created_at))},
                "updatedAt": {"N": repr(float(record.updated_at))},
                "nm": {"S": record.instance_id},
                "ver": {"N": str(record.version)},
                "eid": {"S": record.execution_id},
                "dt": _data(record.data),
                "wt": {"M": {node_id: _wait_attribute(wait) for node_id, wait in record.waiting.items()}},
            }
        )
        if record.trigger_event_id is not None:
            item["tev"] = {"S": record.trigger_event_id}
        if record.error is not None:
            item["er"] = _json(record.error)
        return item

    @staticmethod
    def _record(item: Item) -> ContextRecord:
        waits = item.get("wt", {}).get("M", {})
        error = item.get("er")
        return ContextRecord(
            domain=item["domain"]["S"],
            workflow_id=_first(item, CONTEXT_WORKFLOW, "workflowId"),
            subject_id=item["subjectId"]["S"],
            instance_id=item["instanceId"]["S"],
            version=int(item["ver"]["N"]),
            execution_id=item["eid"]["S"],
            status=_first(item, CONTEXT_STATUS, "status"),
            created_at=float(item["createdAt"]["N"]),
            updated_at=float(item["updatedAt"]["N"]),
            data=json.loads(item["dt"]["S"]) if "dt" in item else {},
            waiting={
                node_id: wait_entry(
                    wait["M"]["e"]["S"], wait["M"]["cb"]["S"], wait["M"].get("o", {}).get("BOOL", False)
                )
                for node_id, wait in waits.items()
            },
            trigger_event_id=item["tev"]["S"] if "tev" in item else None,
            error=json.loads(error["S"]) if error else None,
        )

    def create_context(self, record: ContextRecord) -> bool:
        check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        check_status(record.status)
        now = self._now()
        try:
            self._db.put_item(
                TableName=self.table,
                Item=self._item(replace(record, created_at=now, updated_at=now)),
                ConditionExpression="attribute_not_exists(contextKey)",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def save_context(self, record: ContextRecord) -> None:
        check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        check_status(record.status)
        now = self._now()
        self._db.put_item(
            TableName=self.table,
            Item=self._item(replace(record, created_at=record.created_at or now, updated_at=now)),
        )

    def get_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> ContextRecord | None:
        check_context_ids(domain, workflow_id, subject_id, instance_id)
        response = self._db.get_item(
            TableName=self.table,
            Key=self._key(domain, workflow_id, subject_id, instance_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None or item.get("recordType", {}).get("S") != CONTEXT_RECORD:
            return None
        return self._record(item)

    def get_contexts(self, domain: str, workflow_id: str, subject_id: str) -> list[ContextRecord]:
        check_context_ids(domain, workflow_id, subject_id)
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "contextKey = :k",
            "FilterExpression": "recordType = :r",
            "ExpressionAttributeValues": {
                ":k": {"S": f"{domain}#{workflow_id}#{subject_id}"},
                ":r": {"S": CONTEXT_RECORD},
            },
            "ConsistentRead": True,
        }
        records: list[ContextRecord] = []
        while True:
            response = self._db.query(**kwargs)
            records.extend(self._record(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return records
            kwargs["ExclusiveStartKey"] = last

    def delete_context(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> bool:
        check_context_ids(domain, workflow_id, subject_id, instance_id)
        try:
            self._db.delete_item(
                TableName=self.table,
                Key=self._key(domain, workflow_id, subject_id, instance_id),
                ConditionExpression="recordType = :r",
                ExpressionAttributeValues={":r": {"S": CONTEXT_RECORD}},
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _index_page(
        self, condition: str, values: Item, limit: int, next_token: str | None
    ) -> Page[ContextRecord]:
        check_limit(limit)
        values = {**values, ":r": {"S": CONTEXT_RECORD}}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.subject_index,
            "KeyConditionExpression": condition,
            "FilterExpression": "recordType = :r",
            "ExpressionAttributeNames": {"#d": "domain", **({"#s": "subjectId"} if ":s" in values else {})},
            "ExpressionAttributeValues": values,
            "Limit": limit,
        }
        listing = json.dumps(values, sort_keys=True)
        if next_token:
            kwargs["ExclusiveStartKey"] = _start_key(listing, next_token)
        records: list[ContextRecord] = []
        # The filter can leave a page short: read on until `limit` contexts or the end.
        while True:
            response = self._db.query(**kwargs)
            records.extend(self._record(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or len(records) >= limit:
                break
            kwargs["ExclusiveStartKey"] = last
            kwargs["Limit"] = limit - len(records)
        return Page(items=records, next_token=encode_page_token(listing, last) if last else None)

    def get_all_contexts_for_subject(
        self, domain: str, subject_id: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        check_id("subject id", subject_id)
        return self._index_page(
            "#d = :d AND #s = :s", {":d": {"S": domain}, ":s": {"S": subject_id}}, limit, next_token
        )

    def get_all_contexts(
        self, domain: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        return self._index_page("#d = :d", {":d": {"S": domain}}, limit, next_token)

    def _update(
        self,
        record: ContextRecord,
        expression: str,
        names: dict[str, str],
        values: Item,
        *,
        condition: str,
        remove: str = "",
    ) -> bool:
        values = {**values, ":u": {"N": repr(float(self._now()))}, ":r": {"S": CONTEXT_RECORD}}
        try:
            self._db.update_item(
                TableName=self.table,
                Key=self._key(record.domain, record.workflow_id, record.subject_id, record.instance_id),
                UpdateExpression=expression + ", updatedAt = :u" + (f" REMOVE {remove}" if remove else ""),
                ConditionExpression="recordType = :r" + (f" AND {condition}" if condition else ""),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def set_waiting(
        self,
        record: ContextRecord,
        *,
        node_id: str,
        event_name: str,
        callback_id: str,
        data: Mapping[str, Any],
        once: bool = False,
    ) -> bool:
        wait = _wait_attribute(wait_entry(event_name, callback_id, once))
        return self._update(
            record,
            "SET wt.#n = :w, dt = :dt",
            {"#n": node_id},
            {":w": wait, ":dt": _data(data)},
            condition="",
        )

    def clear_waiting(self, record: ContextRecord, node_id: str, data: Mapping[str, Any]) -> bool:
        return self._update(
            record, "REMOVE wt.#n SET dt = :dt", {"#n": node_id}, {":dt": _data(data)}, condition=""
        )

    def continue_to(self, record: ContextRecord, execution_id: str, successor_id: str) -> bool:
        return self._update(
            record,
            "SET #e = :to",
            {"#e": "eid"},
            {":from": {"S": execution_id}, ":to": {"S": successor_id}},
            condition="#e IN (:from, :to)",
        )

    def finish(
        self,
        record: ContextRecord,
        status: str,
        data: Mapping[str, Any] | None,
        error: Mapping[str, Any] | None = None,
    ) -> bool:
        check_status(status)
        values: Item = {
            ":st": {"S": status},
            ":empty": {"M": {}},
            ":running": {"S": "RUNNING"},
            ":ttl": {"N": str(int(self._now()) + self.retention_seconds)},
        }
        # An item written before the context's own attributes also leaves the engine's indexes here.
        values[":wf"] = {"S": record.workflow_id}
        expression = "SET #cs = :st, #cw = :wf, wt = :empty, #ttl = :ttl"
        if data is not None:
            expression += ", dt = :dt"
            values[":dt"] = _data(data)
        if error is not None:
            expression += ", er = :er"
            values[":er"] = _json(dict(error))
        names = {
            "#cs": CONTEXT_STATUS,
            "#cw": CONTEXT_WORKFLOW,
            "#st": "status",
            "#w": "workflowId",
            "#ttl": "ttl",
        }
        return self._update(
            record,
            expression,
            names,
            values,
            condition="(#cs = :running OR #st = :running)",
            remove="#st, #w",
        )


class DynamoDbEventLog:
    def __init__(self, dynamodb: DynamoDBClient, table: str) -> None:
        self._db = dynamodb
        self.table = table

    def claim_for(
        self, key: str, now: float, ids: list[str], ttl_seconds: int = DEDUP_TTL_SECONDS
    ) -> list[str] | None:
        check_record_key(key)
        item: dict[str, Any] = {
            "key": {"S": key},
            "at": {"N": repr(float(now))},
            "ttl": {"N": str(int(now) + ttl_seconds)},
        }
        if ids:
            item["ids"] = {"L": [{"S": value} for value in ids]}
        try:
            self._db.put_item(
                TableName=self.table,
                Item=item,
                # An expired record (TTL deletion is lazy) counts as absent.
                ConditionExpression="attribute_not_exists(#k) OR #t < :now",
                ExpressionAttributeNames={"#k": "key", "#t": "ttl"},
                ExpressionAttributeValues={":now": {"N": str(int(now))}},
                # The standing record comes back with the refusal: no read to learn what it names.
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            standing: Item = error.response.get("Item") or {}  # type: ignore[assignment]
            named = standing.get("ids", {}).get("L", [])
            return [value["S"] for value in named if "S" in value]
        return None

    def take_from_budget(self, key: str, limit: int, expires_at: int) -> bool:
        check_record_key(key)
        try:
            self._db.update_item(
                TableName=self.table,
                Key={"key": {"S": key}},
                UpdateExpression="ADD #n :one SET #t = if_not_exists(#t, :ttl)",
                ConditionExpression="attribute_not_exists(#n) OR #n < :limit",
                ExpressionAttributeNames={"#n": "used", "#t": "ttl"},
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":ttl": {"N": str(int(expires_at))},
                },
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def record_rejected(
        self, event_id: str, reason: str, event: Mapping[str, Any] | None, now: float
    ) -> None:
        self._db.put_item(
            TableName=self.table,
            Item={
                "key": {"S": f"rejected#{event_id}"[:1024]},
                "dueShard": {"S": REJECTED_SHARD},
                "dueAt": {"N": repr(float(now))},
                "eventId": {"S": event_id or "-"},
                "reason": {"S": reason[:2000] or "-"},
                "event": {"S": event_excerpt(event) or "-"},
                "ttl": {"N": str(int(now) + REJECTED_TTL_SECONDS)},
            },
        )

    def list_rejected(self, limit: int = 100) -> list[dict[str, Any]]:
        check_limit(limit)
        response = self._db.query(
            TableName=self.table,
            IndexName="due-index",
            KeyConditionExpression="dueShard = :s",
            ExpressionAttributeValues={":s": {"S": REJECTED_SHARD}},
            ScanIndexForward=False,
            Limit=limit,
        )
        return [
            {
                "eventId": item["eventId"]["S"],
                "reason": item["reason"]["S"],
                "at": float(item["dueAt"]["N"]),
                "event": item["event"]["S"],
            }
            for item in response.get("Items", [])
        ]
