"""Executions on DynamoDB (stepwell.ports.executions): an execution's item in the executions table, its tag
entries, and the listings by the status, workflow and subject indexes or by tag."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ParamValidationError

from stepwell.aws.clients import error_code
from stepwell.aws.dynamodb_store.items import _CAPACITY, Item, _flag, _item_id, _n, _num, _s, _str
from stepwell.aws.dynamodb_store.shards import (
    SHARD_SEPARATOR,
    Descending,
    Position,
    merge_shards,
    shard_value,
    unsharded,
)
from stepwell.aws.dynamodb_store.tables import DynamoDbTables
from stepwell.aws.page_tokens import (
    InvalidPageToken,
    decode_shard_token,
    encode_shard_token,
)
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


def _tag_entries(record: ExecutionRecord, ttl: int | None, shard: int) -> list[Item]:
    """The record's tag entries in its tag shard (`ts` on its item, fixed when it was created): their keys
    sort newest first, and they expire with the record."""
    order = f"{int(record.created_at * 1000):015d}#{record.execution_id}"
    entries: list[Item] = []
    for key, value in record.tags.items():
        entry: Item = {
            "contextKey": _s(shard_value(tag_entry_partition(record.domain, key, value), shard)),
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


def status_condition(
    statuses: frozenset[ExecutionStatus] | set[ExecutionStatus], prefix: str
) -> tuple[str, Item]:
    """The condition that `#status` is one of `statuses` in any index shard (the bare value in shard 0,
    the value and '#<shard>' in the others: shards.py), and its values (`:<prefix>0`, ...)."""
    terms: list[str] = []
    values: Item = {}
    for i, status in enumerate(sorted(statuses)):
        values[f":{prefix}{i}"] = _s(status.value)
        values[f":{prefix}{i}s"] = _s(status.value + SHARD_SEPARATOR)
        terms += [f"#status = :{prefix}{i}", f"begins_with(#status, :{prefix}{i}s)"]
    return f"({' OR '.join(terms)})", values


_LIVE_CONDITION, _LIVE = status_condition(LIVE_STATUSES, "live")
# The condition that the record is an execution that has not ended (names "#status": "status").
_NOT_ENDED = f"attribute_exists(contextKey) AND attribute_not_exists(recordType) AND {_LIVE_CONDITION}"


@dataclass(frozen=True)
class _Listing:
    """What an index listing Queries: the index, its (sharded) partition key and its sort key, the
    partition's value and the subject (the subject index's sort key) it is limited to, if any."""

    index: str
    partition: str
    sort: str
    value: str
    subject: str | None


@dataclass(frozen=True)
class _IndexPage:
    """A merged page of an index listing: the listing's text (its tokens'), the entries and positions."""

    listing: str
    items: list[tuple[int, Item]]
    positions: list[Position] | None


# The indexes a time-ordered listing reads: index, its (sharded) partition key and its sort key.
_TIME_INDEXES = {
    "status": (_STATUS_INDEX, "status", "updatedAt"),
    "workflow": (_WORKFLOW_INDEX, "workflowId", "createdAt"),
}


class DynamoDbExecutions(DynamoDbTables):
    """ExecutionRecords on the executions table."""

    def _execution_item(self, record: ExecutionRecord) -> Item:
        item: Item = self._execution_key(record.execution_id)
        shard = self.index_shards.shard(record.execution_id)
        item.update(
            {
                "domain": _s(shard_value(record.domain, shard)),
                "workflowId": _s(shard_value(record.workflow_id, shard)),
                "subjectId": _s(record.subject_id),
                "status": _s(shard_value(record.status.value, shard)),
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
                item["pinnedVersion"] = _s(shard_value(record.code_version, shard))
        if record.tags:
            item["tg"] = {"M": {key: _s(value) for key, value in record.tags.items()}}
            if shard:  # its tag entries' shard for good (the write count may change before it ends)
                item["ts"] = _n(shard)
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
            domain=unsharded(_str(item, "domain") or ""),
            workflow_id=unsharded(_str(item, "workflowId") or ""),
            subject_id=_str(item, "subjectId") or "",
            instance_id=instance_id,
            execution_name=_str(item, "nm") or "",
            status=ExecutionStatus(unsharded(_str(item, "status") or "")),
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
            entries = _tag_entries(record, ttl, self.index_shards.shard(record.execution_id))
            return self._write_with_tag_entries({"Put": put}, entries)
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
                "status": _s(self.index_shards.value(status.value, execution_id)),
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
                or unsharded(_str(current, "status") or "") not in {status.value for status in LIVE_STATUSES}
                or "tg" not in current
            ):
                return False
            # Its tag entries start their retention with it, in the same transaction.
            entries = _tag_entries(
                self._record(current), int(now) + self.retention_seconds, int(_num(current, "ts") or 0)
            )
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
        return ExecutionStatus(unsharded(status)) if status is not None else None

    def _change_status(
        self,
        execution_id: str,
        *,
        to: ExecutionStatus,
        when: set[ExecutionStatus],
        update: str,
        condition: str = "",
        values: Item | None = None,
    ) -> bool:
        """One conditional UpdateItem of an execution's record: its status becomes `to` (in the shard the
        write count puts it now) if it is one of `when` (in any shard) and `condition` holds; `update`
        sets the rest (",".join'ed after the status). False when the condition failed."""
        when_condition, when_values = status_condition(when, "from")
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                UpdateExpression=f"SET #status = :to, {update}",
                ConditionExpression=f"attribute_exists(contextKey) AND attribute_not_exists(recordType) "
                f"AND {when_condition}{condition}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":to": _s(self.index_shards.value(to.value, execution_id)),
                    **when_values,
                    **(values or {}),
                },
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def request_pause(self, execution_id: str, pause: PauseState) -> bool:
        return self._change_status(
            execution_id,
            to=ExecutionStatus.PAUSING,
            when={ExecutionStatus.RUNNING},
            update="pa = :pa, updatedAt = :t",
            values={":pa": _pause_item(pause), ":t": _n(pause.requested_at)},
        )

    def settle_pause(self, execution_id: str, requested_at: float, paused_at: float) -> bool:
        return self._change_status(
            execution_id,
            to=ExecutionStatus.PAUSED,
            when={ExecutionStatus.PAUSING},
            update="pa.pt = :pt, updatedAt = :pt",
            condition=" AND pa.rt = :rt",
            values={":pt": _n(paused_at), ":rt": _n(requested_at)},
        )

    def end_pause(
        self, execution_id: str, requested_at: float, resumed: ResumeRequest, paused_seconds: float
    ) -> bool:
        return self._change_status(
            execution_id,
            to=ExecutionStatus.RUNNING,
            when={ExecutionStatus.PAUSING, ExecutionStatus.PAUSED},
            update="ra = :ra, pd = :pd, updatedAt = :t REMOVE pa",
            condition=" AND pa.rt = :rt",
            values={
                ":ra": _resume_item(resumed),
                ":pd": _n(paused_seconds),
                ":t": _n(resumed.requested_at),
                ":rt": _n(requested_at),
            },
        )

    def begin_deletion(self, execution_id: str, now: float) -> bool:
        return self._change_status(
            execution_id,
            to=ExecutionStatus.DELETING,
            when={status for status in ExecutionStatus if status.is_outcome},
            update="updatedAt = :t",
            values={":t": _n(now)},
        )

    def delete_execution(self, execution_id: str) -> bool:
        item = self._db.get_item(
            TableName=self.executions_table,
            Key=self._execution_key(execution_id),
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        ).get("Item")
        if item is None or not _is_execution(item):
            return False
        record = self._record(item)
        if record.status is not ExecutionStatus.DELETING:
            return False
        # Its tag entries first: a delete that dies in between leaves the record, and so a retry to finish.
        entries = _tag_entries(record, None, int(_num(item, "ts") or 0))
        self._batch_delete(self.executions_table, [self._key_of(entry) for entry in entries])
        deleting, deleting_values = status_condition({ExecutionStatus.DELETING}, "deleting")
        try:
            self._db.delete_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                ConditionExpression=deleting,
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=deleting_values,
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
        if query.status is not None:
            return self._list_by_time(
                "status", query.status.value, limit=limit, next_token=next_token, oldest_first=oldest_first
            )
        if query.workflow_id is not None:
            return self._list_by_time(
                "workflow", query.workflow_id, limit=limit, next_token=next_token, oldest_first=oldest_first
            )
        assert query.domain is not None  # ExecutionQuery guarantees exactly one filter
        values: Item = {":k": _s(query.domain)}
        if query.subject_id is not None:
            values[":s"] = _s(query.subject_id)

        def by_subject(item: Item) -> tuple[str, str]:
            return _str(item, "subjectId") or "", "/".join(_item_id(item))

        page = self._merged_index_page(
            _Listing(self.subject_index, "domain", "subjectId", query.domain, query.subject_id),
            f"{self.subject_index}|{json.dumps(values, sort_keys=True)}",
            order=by_subject,
            limit=limit,
            next_token=next_token,
            oldest_first=False,
            forward=True,
        )
        # The subject index keeps ALL: its entries are the records.
        records = [self._record(item) for _, item in page.items if _is_execution(item)]
        token = encode_shard_token(page.listing, page.positions) if page.positions else None
        return Page(items=records, next_token=token)

    def _list_by_time(
        self, by: str, value: str, *, limit: int, next_token: str | None, oldest_first: bool
    ) -> Page[ExecutionRecord]:
        """Newest (or oldest) first by the status or workflow index: merged by the index's sort key (ties:
        the execution id, ascending newest first), then the listed records (the indexes are KEYS_ONLY:
        BatchGetItem)."""
        index, partition, sort = _TIME_INDEXES[by]

        def by_time(item: Item) -> tuple[float, str | Descending]:
            at, execution_id = _num(item, sort) or 0.0, "/".join(_item_id(item))
            return (at, Descending(execution_id)) if oldest_first else (-at, execution_id)

        page = self._merged_index_page(
            _Listing(index, partition, sort, value, None),
            f"{index}|{json.dumps({':k': _s(value)}, sort_keys=True)}",
            order=by_time,
            limit=limit,
            next_token=next_token,
            oldest_first=oldest_first,
            forward=oldest_first,
        )
        items = self._get_executions([self._key_of(item) for _, item in page.items])
        if by == "status":  # an entry the index has not caught up on yet
            items = [item for item in items if unsharded(_str(item, "status") or "") == value]
        records = [self._record(item) for item in items if _is_execution(item)]
        token = encode_shard_token(page.listing, page.positions) if page.positions else None
        return Page(items=records, next_token=token)

    def _merged_index_page(
        self,
        of: _Listing,
        listing: str,
        *,
        order: Callable[[Item], Any],
        limit: int,
        next_token: str | None,
        oldest_first: bool,
        forward: bool,
    ) -> _IndexPage:
        """A page of an index listing: one Query per read shard of its key value (and the subject, if
        any), each read `forward` (ascending sort key) or not, merged by `order` (shards.merge_shards)."""
        if oldest_first:  # a token of one direction does not continue the other
            listing += "|oldest-first"
        positions = self._positions(listing, next_token, of.partition, of.value)
        names = {"#k": of.partition}
        condition = "#k = :k"
        if of.subject is not None:
            names["#s"] = "subjectId"
            condition += " AND #s = :s"

        def fetch(shard: int, start: Item | None, count: int) -> tuple[list[Item], Item | None]:
            values = {":k": _s(shard_value(of.value, shard))}
            if of.subject is not None:
                values[":s"] = _s(of.subject)
            kwargs: dict[str, Any] = {
                "TableName": self.executions_table,
                "IndexName": of.index,
                "KeyConditionExpression": condition,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ScanIndexForward": forward,
                "Limit": count,
            }
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            response = self._query_page(kwargs, next_token)
            return response.get("Items", []), response.get("LastEvaluatedKey")

        key = ("contextKey", "instanceId", of.partition, of.sort)
        page = merge_shards(
            fetch,
            positions=positions,
            order=order,
            key_of=lambda item: {name: item[name] for name in key},
            limit=limit,
        )
        return _IndexPage(listing=listing, items=page.items, positions=page.positions)

    def _positions(self, listing: str, next_token: str | None, partition: str, value: str) -> list[Position]:
        """Where each read shard of `listing` starts: a token's positions, each checked to lie in its own
        shard's partition (a token is input from outside), or every shard from its start."""
        shards = self.index_shards.read
        if not next_token:
            return [None] * shards
        positions: list[Position] = list(decode_shard_token(listing, next_token, shards))
        for shard, position in enumerate(positions):
            if isinstance(position, dict) and position.get(partition) != _s(shard_value(value, shard)):
                raise InvalidPageToken(f"page token {next_token[:80]!r} is not one this store returned")
        return positions

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
        """Newest first: a consistent Query of the tag's entries (written with their records) per read
        shard, merged, then the records themselves (BatchGetItem). With a status filter, merged pages follow
        until the page is full or _MAX_TAG_ENTRIES_PER_CALL entries were read (the page may then be short:
        follow next_token)."""
        assert query.tag is not None and query.domain is not None  # ExecutionQuery guarantees both
        partition = tag_entry_partition(query.domain, *query.tag)
        status = query.status.value if query.status is not None else None
        listing = f"tag|{partition}|{status}" + ("|oldest-first" if oldest_first else "")
        positions: list[Position] | None = self._positions(listing, next_token, "contextKey", partition)

        def fetch(shard: int, start: Item | None, count: int) -> tuple[list[Item], Item | None]:
            kwargs: dict[str, Any] = {
                "TableName": self.executions_table,
                "KeyConditionExpression": "contextKey = :p",
                "ExpressionAttributeValues": {":p": _s(shard_value(partition, shard))},
                "ScanIndexForward": oldest_first,
                "ConsistentRead": True,
                "Limit": count,
            }
            if start is not None:
                kwargs["ExclusiveStartKey"] = start
            response = self._query_page(kwargs, next_token)
            return response.get("Items", []), response.get("LastEvaluatedKey")

        def order(entry: Item) -> str | Descending:
            # An entry's sort key is its creation in milliseconds and then its execution's id: unique.
            key = _str(entry, "instanceId") or ""
            return key if oldest_first else Descending(key)

        records: list[ExecutionRecord] = []
        evaluated = 0
        while positions is not None:
            page = merge_shards(
                fetch, positions=positions, order=order, key_of=self._key_of, limit=limit - len(records)
            )
            evaluated += len(page.items)
            # An entry's sort key ends with its execution's id; an expired record is left out.
            ids = [(_str(entry, "instanceId") or "#").split("#", 1)[1] for _, entry in page.items]
            items = self._get_executions([self._execution_key(each) for each in ids])
            records += [r for r in map(self._record, items) if status is None or r.status.value == status]
            positions = page.positions
            if len(records) >= limit or evaluated >= _MAX_TAG_ENTRIES_PER_CALL:
                break
        token = encode_shard_token(listing, positions) if positions else None
        return Page(items=records, next_token=token)

    @staticmethod
    def _key_of(item: Item) -> Item:
        return {"contextKey": item["contextKey"], "instanceId": item["instanceId"]}

    def _get_executions(self, keys: list[Item]) -> list[Item]:
        return self._batch_get(self.executions_table, keys, _item_id)
