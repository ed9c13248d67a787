"""Executions on DynamoDB (stepwell.ports.executions): an execution's item in the executions table, its tag
entries, and the listings by the status, workflow and subject indexes or by tag."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ParamValidationError

from stepwell.aws.clients import error_code
from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _flag, _item_id, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.aws.page_tokens import decode_page_token, encode_page_token
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.errors import InvalidArgument
from stepwell.model import (
    LIVE_STATUSES,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    FlowLimit,
    Page,
    PauseState,
    ResumeRequest,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

_STATUS_INDEX = "status-index"
_WORKFLOW_INDEX = "workflow-index"
# Tag entries evaluated per listing call at most when a status filter leaves most out (the page is short).
_MAX_TAG_ENTRIES_PER_CALL = 1000
_NO_OLDEST_FIRST = (
    "oldest_first lists by workflow, status or tag: a domain's executions are listed by subject, not by time"
)


def _is_execution(item: Item) -> bool:
    """Whether an executions-table item is an execution: the definitions' context items share the table and
    its indexes (recordType = "context", stepwell.features.definitions.store) but are never executions."""
    return "recordType" not in item


def tag_entry_partition(domain: str, key: str, value: str) -> str:
    """The partition of a tag's entries in the executions table (one per domain, tag key and value)."""
    return f"{domain}#~tag#{key}#{value}"


def _tag_entries(record: ExecutionRecord, ttl: int | None) -> list[Item]:
    """The record's tag entries: their keys sort newest first, and they expire with the record."""
    order = f"{int(record.created_at * 1000):015d}#{record.execution_id}"
    entries: list[Item] = []
    for key, value in record.tags.items():
        entry: Item = {
            "contextKey": _s(tag_entry_partition(record.domain, key, value)),
            "instanceId": _s(order),
        }
        if ttl is not None:
            entry["ttl"] = _n(ttl)
        entries.append(entry)
    return entries


def _flow_limit_item(limit: FlowLimit) -> Item:
    return {
        "kind": _s(limit.kind),
        "domain": _s(limit.domain),
        "workflow": _s(limit.workflow),
        "key": _s(limit.key),
        "limit": _n(limit.limit),
        "period": _n(limit.period),
    }


def _flow_limit(entry: Item) -> FlowLimit:
    return FlowLimit.from_dict(
        {name: value["S"] if "S" in value else int(value["N"]) for name, value in entry.items()}
    )


def _pause_item(pause: PauseState) -> Item:
    """A pause as its record keeps it (`pa`): rt request time, tp timeout paused, rs reason, pt paused at."""
    fields: Item = {"rt": _n(pause.requested_at), "tp": {"BOOL": pause.timeout_paused}}
    if pause.reason is not None:
        fields["rs"] = _s(pause.reason)
    if pause.paused_at is not None:
        fields["pt"] = _n(pause.paused_at)
    return {"M": fields}


def _pause(item: Item) -> PauseState | None:
    fields = item.get("pa", {}).get("M")
    if fields is None:
        return None
    return PauseState(
        requested_at=_num(fields, "rt") or 0.0,
        timeout_paused=_flag(fields, "tp"),
        reason=_str(fields, "rs"),
        paused_at=_num(fields, "pt"),
    )


def _resume_item(resumed: ResumeRequest) -> Item:
    """The last resume as its record keeps it (`ra`): rt request time, rs reason."""
    fields: Item = {"rt": _n(resumed.requested_at)}
    if resumed.reason is not None:
        fields["rs"] = _s(resumed.reason)
    return {"M": fields}


def _resumed(item: Item) -> ResumeRequest | None:
    fields = item.get("ra", {}).get("M")
    if fields is None:
        return None
    return ResumeRequest(requested_at=_num(fields, "rt") or 0.0, reason=_str(fields, "rs"))


def _status_values(statuses: frozenset[ExecutionStatus] | set[ExecutionStatus], prefix: str) -> Item:
    """Expression values naming each of `statuses` (`:<prefix>0`, ...), in a fixed order."""
    return {f":{prefix}{i}": _s(status.value) for i, status in enumerate(sorted(statuses))}


_LIVE = _status_values(LIVE_STATUSES, "live")
# The condition that the record is an execution that has not ended (names "#status": "status").
_NOT_ENDED = (
    f"attribute_exists(contextKey) AND attribute_not_exists(recordType) AND #status IN ({', '.join(_LIVE)})"
)
_OUTCOMES = _status_values({status for status in ExecutionStatus if status.is_outcome}, "ended")


class DynamoDbExecutions(DynamoDbTables):
    """ExecutionRecords on the executions table."""

    def _execution_item(self, record: ExecutionRecord) -> Item:
        item: Item = self._execution_key(record.execution_id)
        item.update(
            {
                "domain": _s(record.domain),
                "workflowId": _s(record.workflow_id),
                "subjectId": _s(record.subject_id),
                "status": _s(record.status.value),
                "createdAt": _n(record.created_at),
                "updatedAt": _n(record.updated_at),
                "nm": _s(record.execution_name),
            }
        )
        self._put_text(
            item, "in", record.input_payload, is_ref=record.input_is_ref, execution_id=record.execution_id
        )
        self._put_text(
            item, "rs", record.result, is_ref=record.result_is_ref, execution_id=record.execution_id
        )
        if record.error is not None:
            self._put_text(
                item, "er", json.dumps(record.error), is_ref=False, execution_id=record.execution_id
            )
        if record.ended_at is not None:
            item["end"] = _n(record.ended_at)
            item["ttl"] = _n(self._execution_ttl(record.ended_at))
        if record.parent_execution_id is not None:
            item["pe"] = _s(record.parent_execution_id)
        if record.parent_operation_id is not None:
            item["po"] = _s(record.parent_operation_id)
        if record.code_version is not None:
            item["cv"] = _s(record.code_version)
            if not record.status.is_terminal:
                item["pinnedVersion"] = _s(record.code_version)
        if record.tags:
            item["tg"] = {"M": {key: _s(value) for key, value in record.tags.items()}}
        if record.flow:
            item["fl"] = {"L": [{"M": _flow_limit_item(limit)} for limit in record.flow]}
        if record.callback_key is not None:
            item["ck"] = _s(record.callback_key)
        if record.pause is not None:
            item["pa"] = _pause_item(record.pause)
        if record.resumed is not None:
            item["ra"] = _resume_item(record.resumed)
        if record.paused_seconds:
            item["pd"] = _n(record.paused_seconds)
        if record.trace_header is not None:
            item["tr"] = _s(record.trace_header)
        return item

    def _record(self, item: Item) -> ExecutionRecord:
        context_key = _str(item, "contextKey") or ""
        instance_id = _str(item, "instanceId") or ""
        error_text = self._text(item, "er")
        return ExecutionRecord(
            execution_id=f"{context_key}/{instance_id}",
            domain=_str(item, "domain") or "",
            workflow_id=_str(item, "workflowId") or "",
            subject_id=_str(item, "subjectId") or "",
            instance_id=instance_id,
            execution_name=_str(item, "nm") or "",
            status=ExecutionStatus(_str(item, "status") or ""),
            created_at=_num(item, "createdAt") or 0.0,
            updated_at=_num(item, "updatedAt") or 0.0,
            input_payload=_str(item, "in"),
            input_is_ref=_flag(item, "inR"),
            result=_str(item, "rs"),
            result_is_ref=_flag(item, "rsR"),
            error=json.loads(error_text) if error_text is not None else None,
            ended_at=_num(item, "end"),
            parent_execution_id=_str(item, "pe"),
            parent_operation_id=_str(item, "po"),
            code_version=_str(item, "cv"),
            tags={key: str(value["S"]) for key, value in item.get("tg", {}).get("M", {}).items()},
            flow=tuple(_flow_limit(entry["M"]) for entry in item.get("fl", {}).get("L", [])),
            callback_key=_str(item, "ck"),
            pause=_pause(item),
            resumed=_resumed(item),
            paused_seconds=_num(item, "pd") or 0.0,
            trace_header=_str(item, "tr"),
        )

    def _execution_ttl(self, ended_at: float) -> int:
        """An ended execution's own item expires last of its items
        (stepwell.core.log_expiry.NAME_HOLD_SECONDS):
        the API hides it from a retention period after its end (Engine.retention_passed)."""
        return int(ended_at) + self.retention_seconds + NAME_HOLD_SECONDS

    def create_execution(self, record: ExecutionRecord) -> bool:
        put: Item = {
            "TableName": self.executions_table,
            "Item": self._execution_item(record),
            "ConditionExpression": "attribute_not_exists(contextKey)",
        }
        if record.tags:
            # The record and its tag entries in one transaction: none is ever written without the others.
            ttl = int(record.ended_at) + self.retention_seconds if record.ended_at is not None else None
            return self._write_with_tag_entries({"Put": put}, _tag_entries(record, ttl))
        try:
            self._db.put_item(**put, ReturnConsumedCapacity=_CAPACITY)
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def get_execution(self, execution_id: str) -> ExecutionRecord | None:
        response = self._db.get_item(
            TableName=self.executions_table,
            Key=self._execution_key(execution_id),
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        return self._record(item) if item is not None and _is_execution(item) else None

    def complete_execution(
        self,
        execution_id: str,
        status: ExecutionStatus,
        now: float,
        *,
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        if not status.is_outcome:
            raise InvalidArgument(
                f"complete_execution needs a terminal status, got {status.value} (DELETING is none)"
            )
        values: Item = {}
        self._put_text(values, "rs", result, is_ref=result_is_ref, execution_id=execution_id)
        if error is not None:
            self._put_text(values, "er", json.dumps(dict(error)), is_ref=False, execution_id=execution_id)
        values.update(
            {
                "status": _s(status.value),
                "updatedAt": _n(now),
                "end": _n(now),
                "ttl": _n(self._execution_ttl(now)),
            }
        )
        names = {f"#a{i}": name for i, name in enumerate(values)}
        expression_values = {f":a{i}": value for i, value in enumerate(values.values())}
        expression_values.update(_LIVE)
        names["#status"] = "status"
        assignments = ", ".join(f"#a{i} = :a{i}" for i in range(len(values)))
        if code_version is not None:  # the version that ran it, unless one was pinned before
            assignments += ", cv = if_not_exists(cv, :cv)"
            expression_values[":cv"] = _s(code_version)
        running = _NOT_ENDED
        update: Item = {
            "TableName": self.executions_table,
            "Key": self._execution_key(execution_id),
            # An ended execution leaves the version index (its cv stays: which version ran it), and a
            # paused one stopped or timed out its pause.
            "UpdateExpression": f"SET {assignments} REMOVE pinnedVersion, pa",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": expression_values,
        }
        try:
            # Untagged (most executions): one conditional UpdateItem. A tagged one fails the condition
            # and returns its item, whose tags name the entries that must expire with it.
            self._db.update_item(
                **update,
                ConditionExpression=f"{running} AND attribute_not_exists(tg)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            current: Item | None = error.response.get("Item")  # type: ignore[assignment]
            if (
                not current
                or not _is_execution(current)
                or _str(current, "status") not in {status.value for status in LIVE_STATUSES}
                or "tg" not in current
            ):
                return False
            # Its tag entries start their retention with it, in the same transaction.
            entries = _tag_entries(self._record(current), int(now) + self.retention_seconds)
            return self._write_with_tag_entries(
                {"Update": {**update, "ConditionExpression": running}}, entries
            )
        return True

    def get_execution_status(self, execution_id: str) -> ExecutionStatus | None:
        response = self._db.get_item(
            TableName=self.executions_table,
            Key=self._execution_key(execution_id),
            ProjectionExpression="#status, recordType",
            ExpressionAttributeNames={"#status": "status"},
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        status = _str(item, "status") if item is not None and _is_execution(item) else None
        return ExecutionStatus(status) if status is not None else None

    def _change_status(self, execution_id: str, update: str, condition: str, values: Item) -> bool:
        """One conditional UpdateItem of an execution's record ("#status" names its status); False when
        the condition failed."""
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(contextKey) AND attribute_not_exists(recordType) "
                f"AND {condition}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def request_pause(self, execution_id: str, pause: PauseState) -> bool:
        return self._change_status(
            execution_id,
            "SET #status = :pausing, pa = :pa, updatedAt = :t",
            "#status = :running",
            {
                ":pausing": _s(ExecutionStatus.PAUSING.value),
                ":running": _s(ExecutionStatus.RUNNING.value),
                ":pa": _pause_item(pause),
                ":t": _n(pause.requested_at),
            },
        )

    def settle_pause(self, execution_id: str, requested_at: float, paused_at: float) -> bool:
        return self._change_status(
            execution_id,
            "SET #status = :paused, pa.pt = :pt, updatedAt = :pt",
            "#status = :pausing AND pa.rt = :rt",
            {
                ":paused": _s(ExecutionStatus.PAUSED.value),
                ":pausing": _s(ExecutionStatus.PAUSING.value),
                ":pt": _n(paused_at),
                ":rt": _n(requested_at),
            },
        )

    def end_pause(
        self, execution_id: str, requested_at: float, resumed: ResumeRequest, paused_seconds: float
    ) -> bool:
        return self._change_status(
            execution_id,
            "SET #status = :running, ra = :ra, pd = :pd, updatedAt = :t REMOVE pa",
            "#status IN (:pausing, :paused) AND pa.rt = :rt",
            {
                ":running": _s(ExecutionStatus.RUNNING.value),
                ":pausing": _s(ExecutionStatus.PAUSING.value),
                ":paused": _s(ExecutionStatus.PAUSED.value),
                ":ra": _resume_item(resumed),
                ":pd": _n(paused_seconds),
                ":t": _n(resumed.requested_at),
                ":rt": _n(requested_at),
            },
        )

    def begin_deletion(self, execution_id: str, now: float) -> bool:
        return self._change_status(
            execution_id,
            "SET #status = :deleting, updatedAt = :t",
            f"#status IN ({', '.join(_OUTCOMES)})",
            {":deleting": _s(ExecutionStatus.DELETING.value), ":t": _n(now), **_OUTCOMES},
        )

    def delete_execution(self, execution_id: str) -> bool:
        record = self.get_execution(execution_id)
        if record is None or record.status is not ExecutionStatus.DELETING:
            return False
        # Its tag entries first: a delete that dies in between leaves the record, and so a retry to finish.
        entries = _tag_entries(record, None)
        self._batch_delete(self.executions_table, [self._key_of(entry) for entry in entries])
        try:
            self._db.delete_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                ConditionExpression="#status = :deleting",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":deleting": _s(ExecutionStatus.DELETING.value)},
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _write_with_tag_entries(self, write: Item, entries: list[Item]) -> bool:
        """One transaction: `write` (a conditional Put or Update of an execution record) and puts of its
        tag entries. False when the record's condition failed (nothing is written)."""
        puts = [{"Put": {"TableName": self.executions_table, "Item": entry}} for entry in entries]
        try:
            items: list[Any] = [write, *puts]
            self._db.transact_write_items(TransactItems=items, ReturnConsumedCapacity=_CAPACITY)
        except self._db.exceptions.TransactionCanceledException as error:
            reasons = error.response.get("CancellationReasons") or [{}]
            if reasons[0].get("Code") == "ConditionalCheckFailed":
                return False
            raise
        return True

    def list_executions(
        self,
        query: ExecutionQuery,
        limit: int = 100,
        next_token: str | None = None,
        *,
        oldest_first: bool = False,
    ) -> Page[ExecutionRecord]:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"limit must be 1..1000, got {limit}")
        if oldest_first and query.tag is None and query.domain is not None:
            raise InvalidArgument(_NO_OLDEST_FIRST)
        if query.tag is not None:
            return self._list_by_tag(query, limit, next_token, oldest_first)
        kwargs: dict[str, Any] = {"TableName": self.executions_table, "Limit": limit}
        if query.status is not None:
            kwargs.update(
                IndexName=_STATUS_INDEX,
                KeyConditionExpression="#k = :k",
                ExpressionAttributeNames={"#k": "status"},
                ExpressionAttributeValues={":k": _s(query.status.value)},
                ScanIndexForward=oldest_first,
            )
        elif query.workflow_id is not None:
            kwargs.update(
                IndexName=_WORKFLOW_INDEX,
                KeyConditionExpression="#k = :k",
                ExpressionAttributeNames={"#k": "workflowId"},
                ExpressionAttributeValues={":k": _s(query.workflow_id)},
                ScanIndexForward=oldest_first,
            )
        else:
            assert query.domain is not None  # ExecutionQuery guarantees exactly one filter
            condition = "#k = :k"
            names = {"#k": "domain"}
            values: Item = {":k": _s(query.domain)}
            if query.subject_id is not None:
                condition += " AND #s = :s"
                names["#s"] = "subjectId"
                values[":s"] = _s(query.subject_id)
            kwargs.update(
                IndexName=self.subject_index,
                KeyConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        listing = f"{kwargs['IndexName']}|{json.dumps(kwargs['ExpressionAttributeValues'], sort_keys=True)}"
        if oldest_first:  # a token of one direction does not continue the other
            listing += "|oldest-first"
        if next_token:
            kwargs["ExclusiveStartKey"] = decode_page_token(listing, next_token)
        response = self._query_page(kwargs, next_token)
        items = response.get("Items", [])
        if kwargs["IndexName"] != self.subject_index:
            # The status and workflow indexes are KEYS_ONLY: read the listed executions themselves.
            items = self._get_executions([self._key_of(item) for item in items])
            if query.status is not None:  # an entry the index has not caught up on yet
                items = [item for item in items if _str(item, "status") == query.status.value]
        records = [self._record(item) for item in items if _is_execution(item)]
        last_key = response.get("LastEvaluatedKey")
        return Page(items=records, next_token=encode_page_token(listing, last_key) if last_key else None)

    def _query_page(self, kwargs: dict[str, Any], next_token: str | None) -> QueryOutputTypeDef:
        """One Query of a listing; a token DynamoDB cannot start from is the caller's InvalidArgument."""
        try:
            response = self._db.query(**kwargs, ReturnConsumedCapacity=_CAPACITY)
        except (ClientError, ParamValidationError) as error:
            code = error_code(error) if isinstance(error, ClientError) else "Param"
            if next_token and code in ("ValidationException", "Param"):
                raise InvalidArgument(f"page token {next_token!r} is not one this store returned") from error
            raise
        return response

    def _list_by_tag(
        self, query: ExecutionQuery, limit: int, next_token: str | None, oldest_first: bool
    ) -> Page[ExecutionRecord]:
        """Newest first: a consistent Query of the tag's entries (written with their records), then the
        records themselves (BatchGetItem). With a status filter, Queries follow until the page is full or
        _MAX_TAG_ENTRIES_PER_CALL entries were read (the page may then be short: follow next_token)."""
        assert query.tag is not None and query.domain is not None  # ExecutionQuery guarantees both
        partition = tag_entry_partition(query.domain, *query.tag)
        status = query.status.value if query.status is not None else None
        listing = f"tag|{partition}|{status}" + ("|oldest-first" if oldest_first else "")
        start_key = decode_page_token(listing, next_token) if next_token else None
        records: list[ExecutionRecord] = []
        evaluated = 0
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.executions_table,
                "KeyConditionExpression": "contextKey = :p",
                "ExpressionAttributeValues": {":p": _s(partition)},
                "ScanIndexForward": oldest_first,
                "ConsistentRead": True,
                "Limit": limit - len(records),
            }
            if start_key:
                kwargs["ExclusiveStartKey"] = start_key
            response = self._query_page(kwargs, next_token)
            entries = response.get("Items", [])
            evaluated += len(entries)
            # An entry's sort key ends with its execution's id; an expired record is left out.
            ids = [(_str(entry, "instanceId") or "#").split("#", 1)[1] for entry in entries]
            items = self._get_executions([self._execution_key(each) for each in ids])
            records += [r for r in map(self._record, items) if status is None or r.status.value == status]
            start_key = response.get("LastEvaluatedKey")
            if not start_key or len(records) >= limit or evaluated >= _MAX_TAG_ENTRIES_PER_CALL:
                break
        return Page(items=records, next_token=encode_page_token(listing, start_key) if start_key else None)

    @staticmethod
    def _key_of(item: Item) -> Item:
        return {"contextKey": item["contextKey"], "instanceId": item["instanceId"]}

    def _get_executions(self, keys: list[Item]) -> list[Item]:
        return self._batch_get(self.executions_table, keys, _item_id)
