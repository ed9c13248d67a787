"""The engine's ExecutionStore on DynamoDB (tables and indexes as docs/architecture.md describes them).

Access patterns are GetItem, BatchGetItem, PutItem, UpdateItem, DeleteItem, Query and BatchWriteItem
only: never a Scan. Listing uses the executions table's GSIs (the status and workflow indexes are
KEYS_ONLY, so a listing reads its page of items with BatchGetItem), the flow control sweep the
coordination table's due-index. Exactly-once writes are conditional; a failed condition becomes the
engine's own outcome (False, None or SequenceConflict).

Item layout (bulk data under short attribute names to keep items small and cheap):
- executions: contextKey, instanceId, domain, workflowId, subjectId, status, createdAt, updatedAt (the
  keys of the table and its indexes), and nm (execution name), in/inR (input, is-reference), rs/rsR
  (result), er (error JSON), end (ended at), pe/po (parent execution/operation), ttl (last of the
  execution's items: stepwell.core.log_expiry.NAME_HOLD_SECONDS), cv (the worker
  version it runs or ran on) and pinnedVersion (= cv while RUNNING only: the sparse version-index's key),
  tg (tags, a map), ck (the secret its callback ids are derived from). Per tag an entry item: contextKey
  "<domain>#~tag#<key>#<value>" (no workflow name has '~', tag keys and values no '#'), instanceId
  "<createdAt ms:015>#<execution id>", ttl once it ended.
  Per SKIP schedule a pointer item: contextKey "<domain>#~schedule#<schedule>", instanceId "pointer", eid
  (the last execution the schedule started), ttl (SCHEDULE_POINTER_HOLD_SECONDS past the last occurrence
  that claimed or kept it); no attribute an index keys on, so no index holds it.
- operations: executionId, sk = "b#<seq:012>" for a batch (b body, or bd the body deflated with a preset
  dictionary when it is over DEFLATE_MIN_BYTES, bz without one as engines before v18 wrote it; bR
  is-reference, t created, x terminal; ttl Batch.expires_at: see stepwell.core.log_expiry) or "in#<input id>"
  for an external input (k kind, t created, op, p/pR payload, er error JSON).
- coordination: key = "lease#<id>", one record per execution (o owner and exp expiry while leased, eid,
  w the wake-up its last run armed, n the log's next seq as that run left it, ln the log's length the
  last run that knew it recorded, mv the version an upgrade moved it to, pb (or pz, deflated as `bd`
  is)/ps/pt the body, seq and time of the batch a suspending run (or the end) carried on its release
  instead of the log; in no index,
  so taking and dropping the lease cost one write unit each; when the execution ends it keeps only eid,
  the end it may carry, and a ttl (a retention period), so a late message's lease is never its first:
  Lease.never_held), "cb#<callback id>" (eid, op, v the worker version whose run
  created it; done and ttl once completed or timed out; a completion's result: k kind, p/pR payload, er
  error JSON, read back by the worker). Flow control (scopes are FlowLimit.scope): a concurrency key
  "fc#c#<digest>" (holders: a map of execution id -> lease expiry, head, tail, labels, while its queue is
  not empty dueShard flow#N and dueAt = its sweep time, and ttl while nobody holds or waits), its tickets
  "fc#c#<digest>#t#<n>" (eid, or skipped + ttl), a rate key "fc#r#<digest>" (starts, v version, labels,
  ttl: a retention period after its last start leaves the window) and per rate-limited execution
  "fc#x#<digest of its id>" (eid, startAt, ttl).

Safety net: a string value larger than `inline_limit` bytes that the engine did not already offload is
put on S3 by this store (when it has a payload store) and read back transparently.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import json
import re
import time
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError, ParamValidationError

from stepwell.aws.clients import error_code
from stepwell.aws.payloads import S3PayloadStore
from stepwell.core.batch_codec import deflate_body, inflate_body
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.model import (
    Batch,
    CallbackRef,
    ExecutionId,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowLimit,
    FlowRate,
    FlowSlots,
    InputKind,
    KeepWake,
    Lease,
    Page,
)
from stepwell.ports import DUE_SHARDS, SCHEDULE_POINTER_HOLD_SECONDS, check_schedule_pointer

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

Item = dict[str, Any]

# Items stay under 350 KB. An item holds at most two large values (an execution's input and its result
# or error), so each value over this size is offloaded to S3 (when a payload store is configured).
DEFAULT_INLINE_LIMIT = 160 * 1024
_MAX_SEQ_KEY = "b#999999999999"
_BATCH_WRITE_SIZE = 25
_BATCH_GET_SIZE = 100
_STATUS_INDEX = "status-index"
_WORKFLOW_INDEX = "workflow-index"
_VERSION_INDEX = "version-index"
_DUE_INDEX = "due-index"
# Tag entries evaluated per listing call at most when a status filter leaves most out (the page is short).
_MAX_TAG_ENTRIES_PER_CALL = 1000
_CAPACITY: Literal["TOTAL"] = "TOTAL"
# The sort key of every schedule pointer item (its partition names the schedule).
_SCHEDULE_POINTER_SK = "pointer"
# Attempts of a flow write that lost a race creating its key's item (the next attempt finds it).
_FLOW_ATTEMPTS = 3
# expire_log and keep_log: up to this many batches one after another, more on this many threads
# (boto3's clients are thread-safe).
_EXPIRE_SEQUENTIALLY = 16
_EXPIRE_THREADS = 8
_FLOW_NAMES = {"#h": "holders", "#hd": "head", "#tl": "tail", "#lb": "labels", "#ttl": "ttl"}
_NAME_TOKEN = re.compile(r"#[A-Za-z0-9_]+")


def due_shard(execution_id: str) -> int:
    """A stable shard (0..DUE_SHARDS-1) for a key, the same as the memory store's (hash() is
    randomized per process, sha256 is not)."""
    return hashlib.sha256(execution_id.encode("utf-8")).digest()[0] % DUE_SHARDS


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


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: float) -> dict[str, str]:
    # Whole numbers without a fraction keep items short; DynamoDB compares N numerically either way.
    return {"N": str(int(value)) if float(value).is_integer() else repr(float(value))}


def _str(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["S"])


def _callback_ref(callback_id: str, item: Item) -> CallbackRef:
    return CallbackRef(
        callback_id=callback_id,
        execution_id=_str(item, "eid") or "",
        operation_id=_str(item, "op") or "",
        completed="done" in item,
        version=_str(item, "v"),
    )


def _carried_batch(item: Item) -> Batch | None:
    """The batch a coordination record carries (release_lease(carried=)), if any."""
    packed = item.get("pz")
    body = inflate_body(bytes(packed["B"])) if packed is not None else _str(item, "pb")
    seq = _num(item, "ps")
    if body is None or seq is None:
        return None
    return Batch(seq=int(seq), body=body, created_at=_num(item, "pt") or 0.0)


def _is_execution(item: Item) -> bool:
    """Whether an executions-table item is an execution: the definitions' context items share the table and
    its indexes (recordType = "context", stepwell.features.definitions.store) but are never executions."""
    return "recordType" not in item


def _num(item: Item, name: str) -> float | None:
    value = item.get(name)
    return None if value is None else float(value["N"])


def _flag(item: Item, name: str) -> bool:
    value = item.get(name)
    return bool(value and value.get("BOOL"))


def tag_entry_partition(domain: str, key: str, value: str) -> str:
    """The partition of a tag's entries in the executions table (one per domain, tag key and value)."""
    return f"{domain}#~tag#{key}#{value}"


def schedule_pointer_key(domain: str, schedule: str) -> Item:
    """The key of a schedule's pointer item in the executions table: no execution's contextKey has '~'
    (workflow names have none) and no tag entry's has '~schedule' after the domain."""
    return {"contextKey": _s(f"{domain}#~schedule#{schedule}"), "instanceId": _s(_SCHEDULE_POINTER_SK)}


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


def _item_id(item: Item) -> tuple[str, str]:
    """An execution item's (or key's) table key as a hashable pair."""
    return _str(item, "contextKey") or "", _str(item, "instanceId") or ""


def _back_off(attempt: int) -> None:
    """Wait before asking again for what a batch request left unprocessed (throttled)."""
    time.sleep(min(0.05 * 2**attempt, 2.0))


def encode_page_token(listing: str, last_key: Mapping[str, Any]) -> str:
    """An opaque token: which listing it continues and DynamoDB's LastEvaluatedKey."""
    data = json.dumps({"l": listing, "k": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_page_token(listing: str, token: str) -> dict[str, Any]:
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, RecursionError) as error:  # RecursionError: JSON nested too deeply
        raise InvalidArgument(f"page token {token!r} is not one this store returned") from error
    if not isinstance(value, dict) or not isinstance(value.get("k"), dict):
        raise InvalidArgument(f"page token {token!r} is not one this store returned")
    if value.get("l") != listing:
        raise InvalidArgument(
            f"page token {token!r} does not belong to this listing (pass the token the same query returned)"
        )
    start_key: dict[str, Any] = value["k"]
    return start_key


class DynamoDbExecutionStore:
    """ExecutionStore on the executions, operations and coordination tables."""

    def __init__(
        self,
        dynamodb: DynamoDBClient,
        executions_table: str,
        operations_table: str,
        coordination_table: str,
        subject_index: str,
        payloads: S3PayloadStore | None = None,
        retention_days: int = 30,
        inline_limit: int = DEFAULT_INLINE_LIMIT,
    ) -> None:
        self._db = dynamodb
        self.executions_table = executions_table
        self.operations_table = operations_table
        self.coordination_table = coordination_table
        self.subject_index = subject_index
        self._payloads = payloads
        self.retention_seconds = retention_days * 86400
        self.inline_limit = inline_limit

    # --- large values ---

    def _put_text(self, item: Item, name: str, text: str | None, is_ref: bool, execution_id: str) -> None:
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

    # --- executions ---

    def _execution_key(self, execution_id: str) -> Item:
        try:
            parts = ExecutionId.parse(execution_id)
        except ValueError as error:
            raise InvalidArgument(str(error)) from error
        return {"contextKey": _s(parts.context_key), "instanceId": _s(parts.instance_id)}

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
        self._put_text(item, "in", record.input_payload, record.input_is_ref, record.execution_id)
        self._put_text(item, "rs", record.result, record.result_is_ref, record.execution_id)
        if record.error is not None:
            self._put_text(item, "er", json.dumps(record.error), False, record.execution_id)
        if record.ended_at is not None:
            item["end"] = _n(record.ended_at)
            item["ttl"] = _n(self._execution_ttl(record.ended_at))
        if record.parent_execution_id is not None:
            item["pe"] = _s(record.parent_execution_id)
        if record.parent_operation_id is not None:
            item["po"] = _s(record.parent_operation_id)
        if record.code_version is not None:
            item["cv"] = _s(record.code_version)
            if record.status is ExecutionStatus.RUNNING:
                item["pinnedVersion"] = _s(record.code_version)
        if record.tags:
            item["tg"] = {"M": {key: _s(value) for key, value in record.tags.items()}}
        if record.flow:
            item["fl"] = {"L": [{"M": _flow_limit_item(limit)} for limit in record.flow]}
        if record.callback_key is not None:
            item["ck"] = _s(record.callback_key)
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
        )

    def _text(self, item: Item, name: str) -> str | None:
        """A value this store may have offloaded itself (errors): read it back."""
        text = _str(item, name)
        if text is not None and _flag(item, name + "R") and self._payloads is not None:
            return self._payloads.get(text)
        return text

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
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        if not status.is_terminal:
            raise InvalidArgument(f"complete_execution needs a terminal status, got {status.value}")
        values: Item = {}
        self._put_text(values, "rs", result, result_is_ref, execution_id)
        if error is not None:
            self._put_text(values, "er", json.dumps(dict(error)), False, execution_id)
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
        expression_values[":running"] = _s(ExecutionStatus.RUNNING.value)
        names["#status"] = "status"
        assignments = ", ".join(f"#a{i} = :a{i}" for i in range(len(values)))
        if code_version is not None:  # the version that ran it, unless one was pinned before
            assignments += ", cv = if_not_exists(cv, :cv)"
            expression_values[":cv"] = _s(code_version)
        running = "attribute_exists(contextKey) AND attribute_not_exists(recordType) AND #status = :running"
        update: Item = {
            "TableName": self.executions_table,
            "Key": self._execution_key(execution_id),
            # An ended execution leaves the version index (its cv stays: which version ran it).
            "UpdateExpression": f"SET {assignments} REMOVE pinnedVersion",
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
                or _str(current, "status") != ExecutionStatus.RUNNING.value
                or "tg" not in current
            ):
                return False
            # Its tag entries start their retention with it, in the same transaction.
            entries = _tag_entries(self._record(current), int(now) + self.retention_seconds)
            return self._write_with_tag_entries(
                {"Update": {**update, "ConditionExpression": running}}, entries
            )
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
        self, query: ExecutionQuery, limit: int = 100, next_token: str | None = None
    ) -> Page[ExecutionRecord]:
        if not 1 <= limit <= 1000:
            raise InvalidArgument(f"limit must be 1..1000, got {limit}")
        if query.tag is not None:
            return self._list_by_tag(query, limit, next_token)
        kwargs: dict[str, Any] = {"TableName": self.executions_table, "Limit": limit}
        if query.status is not None:
            kwargs.update(
                IndexName=_STATUS_INDEX,
                KeyConditionExpression="#k = :k",
                ExpressionAttributeNames={"#k": "status"},
                ExpressionAttributeValues={":k": _s(query.status.value)},
                ScanIndexForward=False,
            )
        elif query.workflow_id is not None:
            kwargs.update(
                IndexName=_WORKFLOW_INDEX,
                KeyConditionExpression="#k = :k",
                ExpressionAttributeNames={"#k": "workflowId"},
                ExpressionAttributeValues={":k": _s(query.workflow_id)},
                ScanIndexForward=False,
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
        self, query: ExecutionQuery, limit: int, next_token: str | None
    ) -> Page[ExecutionRecord]:
        """Newest first: a consistent Query of the tag's entries (written with their records), then the
        records themselves (BatchGetItem). With a status filter, Queries follow until the page is full or
        _MAX_TAG_ENTRIES_PER_CALL entries were read (the page may then be short: follow next_token)."""
        assert query.tag is not None and query.domain is not None  # ExecutionQuery guarantees both
        partition = tag_entry_partition(query.domain, *query.tag)
        status = query.status.value if query.status is not None else None
        listing = f"tag|{partition}|{status}"
        start_key = decode_page_token(listing, next_token) if next_token else None
        records: list[ExecutionRecord] = []
        evaluated = 0
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self.executions_table,
                "KeyConditionExpression": "contextKey = :p",
                "ExpressionAttributeValues": {":p": _s(partition)},
                "ScanIndexForward": False,
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

    # --- code versions ---

    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        current = "attribute_not_exists(cv)" if expected is None else "cv = :expected"
        values: Item = {":v": _s(version), ":running": _s(ExecutionStatus.RUNNING.value)}
        if expected is not None:
            values[":expected"] = _s(expected)
        try:
            self._db.update_item(
                TableName=self.executions_table,
                Key=self._execution_key(execution_id),
                UpdateExpression="SET cv = :v, pinnedVersion = :v",
                ConditionExpression=f"attribute_exists(contextKey) AND #status = :running AND {current}",
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

    # --- schedule pointers ---

    def get_schedule_pointer(self, domain: str, schedule: str) -> str | None:
        check_schedule_pointer(domain, schedule)
        response = self._db.get_item(
            TableName=self.executions_table,
            Key=schedule_pointer_key(domain, schedule),
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        return None if item is None else _str(item, "eid")

    def claim_schedule_pointer(
        self, domain: str, schedule: str, expected: str | None, execution_id: str, now: float | None = None
    ) -> bool:
        check_schedule_pointer(domain, schedule, execution_id)
        # A deleted schedule's pointer goes on its own (the claim's write carries its ttl at no cost).
        ttl = int(time.time() if now is None else now) + SCHEDULE_POINTER_HOLD_SECONDS
        put: Item = {
            "TableName": self.executions_table,
            "Item": {**schedule_pointer_key(domain, schedule), "eid": _s(execution_id), "ttl": _n(ttl)},
            "ConditionExpression": "attribute_not_exists(contextKey)",
        }
        if expected is not None:
            put["ConditionExpression"] = "eid = :expected"
            put["ExpressionAttributeValues"] = {":expected": _s(expected)}
        try:
            self._db.put_item(**put, ReturnConsumedCapacity=_CAPACITY)
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def keep_schedule_pointer(self, domain: str, schedule: str, execution_id: str, now: float) -> None:
        check_schedule_pointer(domain, schedule, execution_id)
        # One write per skipped occurrence: conditional, so a pointer moved meanwhile is left as it is.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self.executions_table,
                Key=schedule_pointer_key(domain, schedule),
                UpdateExpression="SET #ttl = :ttl",
                ConditionExpression="eid = :eid",
                ExpressionAttributeNames={"#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":ttl": _n(int(now) + SCHEDULE_POINTER_HOLD_SECONDS),
                    ":eid": _s(execution_id),
                },
                ReturnConsumedCapacity=_CAPACITY,
            )

    @staticmethod
    def _key_of(item: Item) -> Item:
        return {"contextKey": item["contextKey"], "instanceId": item["instanceId"]}

    def _get_executions(self, keys: list[Item]) -> list[Item]:
        return self._batch_get(self.executions_table, keys, _item_id)

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

    # --- the operation log ---

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
            self._put_text(item, "b", batch.body, batch.body_is_ref, execution_id)
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
        self._put_text(record, "p", item.payload, item.payload_is_ref, execution_id)
        if item.error is not None:
            self._put_text(record, "er", json.dumps(item.error), False, execution_id)
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

    def delete_external_inputs(self, execution_id: str, input_ids: list[str]) -> None:
        keys = [{"executionId": _s(execution_id), "sk": _s("in#" + input_id)} for input_id in input_ids]
        self._batch_delete(self.operations_table, keys)

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

    # --- coordination ---

    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        if duration <= 0:
            raise InvalidArgument(f"lease duration must be positive seconds, got {duration}")
        expires_at = now + duration
        try:
            response = self._db.update_item(
                TableName=self.coordination_table,
                Key={"key": _s("lease#" + execution_id)},
                UpdateExpression="SET o = :owner, #x = :expires, eid = :eid",
                # A record an earlier engine wrote keeps its expiry in dueAt (and has no #x).
                ConditionExpression="attribute_not_exists(o) OR #x < :now OR o = :owner"
                " OR (attribute_not_exists(#x) AND dueAt < :now)",
                ExpressionAttributeNames={"#x": "exp"},
                ExpressionAttributeValues={
                    ":owner": _s(owner),
                    ":expires": _n(expires_at),
                    ":eid": _s(execution_id),
                    ":now": _n(now),
                },
                ReturnValues="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return None
        before = response.get("Attributes") or {}
        held_by = _str(before, "o")
        return Lease(
            execution_id=execution_id,
            owner=owner,
            expires_at=expires_at,
            wake_at=_num(before, "w"),
            taken_over=held_by is not None and held_by != owner,
            carried=_carried_batch(before),
            log_next=int(next_seq) if (next_seq := _num(before, "n")) is not None else None,
            log_length=int(length) if (length := _num(before, "ln")) is not None else None,
            moved_to=_str(before, "mv"),
            never_held=not before,
        )

    def release_lease(
        self,
        execution_id: str,
        owner: str,
        wake: float | KeepWake | None = KeepWake.KEEP,
        ended_at: float | None = None,
        carried: Batch | None = None,
        log_next: int | None = None,
        log_length: int | None = None,
    ) -> None:
        key = {"key": _s("lease#" + execution_id)}
        # A failed condition means another owner took the expired lease meanwhile: it is theirs now.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            # dueShard/dueAt: the index entry of a record an earlier engine wrote goes with it.
            update = "REMOVE o, #x, dueShard, dueAt"
            values: Item = {":owner": _s(owner)}
            names = {"#x": "exp"}
            assignments: list[str] = []
            ended = ended_at is not None
            if ended_at is not None:
                # The record stays for the retention period (the same one write unit as deleting it), with
                # the end it carries if any: a late message for the execution then never finds its lease
                # never held (Lease.never_held) and always reads the log.
                assignments.append("#ttl = :ttl")
                names["#ttl"] = "ttl"
                values[":ttl"] = _n(int(ended_at) + self.retention_seconds)
                if carried is None:
                    update += ", pb, pz, ps, pt"
                update += ", mv"
            if ended or wake is None:
                update += ", w"
            elif not isinstance(wake, KeepWake):
                assignments.append("w = :wake")
                values[":wake"] = _n(wake)
            if log_next is None or ended:
                update += ", n"
            else:
                assignments.append("n = :next")
                values[":next"] = _n(log_next)
            if ended:
                update += ", ln"
            elif log_length is not None:
                assignments.append("ln = :length")
                values[":length"] = _n(log_length)
            if carried is not None:
                if carried.body_is_ref:
                    raise InvalidArgument("a carried batch is kept on the record: its body must be inline")
                # Deflated (pz) when that is smaller, the text (pb) otherwise; the other one goes.
                packed = deflate_body(carried.body)
                body_name, other = ("pz", "pb") if packed is not None else ("pb", "pz")
                assignments.append(f"{body_name} = :pb, ps = :ps, pt = :pt")
                update += f", {other}"
                values.update(
                    {
                        ":pb": {"B": packed} if packed is not None else _s(carried.body),
                        ":ps": _n(carried.seq),
                        ":pt": _n(carried.created_at),
                    }
                )
            if assignments:
                update = f"SET {', '.join(assignments)} {update}"
            self._db.update_item(
                TableName=self.coordination_table,
                Key=key,
                UpdateExpression=update,
                ConditionExpression="o = :owner",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnConsumedCapacity=_CAPACITY,
            )

    def note_moved_version(self, execution_id: str, version: str) -> None:
        self._db.update_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            UpdateExpression="SET mv = :v, eid = :eid",
            ExpressionAttributeValues={":v": _s(version), ":eid": _s(execution_id)},
            ReturnConsumedCapacity=_CAPACITY,
        )

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("lease#" + execution_id)},
            ProjectionExpression="pb, pz, ps, pt",
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        return _carried_batch(response.get("Item") or {})

    def put_callback(self, ref: CallbackRef) -> bool:
        item: Item = {
            "key": _s("cb#" + ref.callback_id),
            "eid": _s(ref.execution_id),
            "op": _s(ref.operation_id),
        }
        if ref.version is not None:
            item["v"] = _s(ref.version)
        try:
            self._db.put_item(
                TableName=self.coordination_table,
                Item=item,
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": "key"},
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False  # an earlier run of the operation resolved the same (derived) id: it stays
        return True

    def get_callback(self, callback_id: str) -> CallbackRef | None:
        if not callback_id:
            return None
        response = self._db.get_item(
            TableName=self.coordination_table,
            Key={"key": _s("cb#" + callback_id)},
            # The SDK hands the id to user code right after it is written: a sender may ask at once.
            ConsistentRead=True,
            ReturnConsumedCapacity=_CAPACITY,
        )
        item = response.get("Item")
        return None if item is None else _callback_ref(callback_id, item)

    def complete_callback(
        self, callback_id: str, now: float, result: ExternalInput | None = None, execution_id: str = ""
    ) -> bool:
        try:
            self._db.update_item(
                **self._callback_completion(callback_id, now, result, execution_id),
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def complete_callback_once(
        self, callback_id: str, now: float, result: ExternalInput
    ) -> CallbackRef | None:
        if not callback_id:
            return None
        try:
            response = self._db.update_item(
                **self._callback_completion(callback_id, now, result, ""),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ReturnConsumedCapacity=_CAPACITY,
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            current: Item | None = error.response.get("Item")  # type: ignore[assignment]
            return None if not current else _callback_ref(callback_id, current)
        return _callback_ref(callback_id, response.get("Attributes") or {})

    def _callback_completion(
        self, callback_id: str, now: float, result: ExternalInput | None, execution_id: str
    ) -> dict[str, Any]:
        """The conditional UpdateItem that completes a callback once, keeping `result` on its record."""
        # Once completed (or timed out) the record only refuses repeats and holds the result until the
        # worker absorbs it: it expires with the retention period, as ended executions do.
        names = {"#k": "key", "#ttl": "ttl"}
        values: Item = {":now": _n(now), ":ttl": _n(int(now) + self.retention_seconds)}
        update = "SET done = :now, #ttl = :ttl"
        if result is not None:
            fields: Item = {"k": _s(result.kind.value)}
            self._put_text(fields, "p", result.payload, result.payload_is_ref, execution_id)
            if result.error is not None:
                self._put_text(fields, "er", json.dumps(result.error), False, execution_id)
            for name, value in fields.items():
                names[f"#r_{name}"] = name
                values[f":r_{name}"] = value
                update += f", #r_{name} = :r_{name}"
        return {
            "TableName": self.coordination_table,
            "Key": {"key": _s("cb#" + callback_id)},
            "UpdateExpression": update,
            "ConditionExpression": "attribute_exists(#k) AND attribute_not_exists(done)",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }

    def reopen_callback(self, callback_id: str) -> None:
        self._db.update_item(
            TableName=self.coordination_table,
            Key={"key": _s("cb#" + callback_id)},
            UpdateExpression="REMOVE done, #ttl, k, p, pR, er, erR",
            ConditionExpression="attribute_exists(#k)",
            ExpressionAttributeNames={"#k": "key", "#ttl": "ttl"},
            ReturnConsumedCapacity=_CAPACITY,
        )

    def get_callback_results(self, callback_ids: Sequence[str]) -> list[ExternalInput]:
        keys = [{"key": _s("cb#" + callback_id)} for callback_id in callback_ids if callback_id]
        results = []
        for item in self._batch_get(self.coordination_table, keys, lambda item: _str(item, "key")):
            kind = _str(item, "k")
            if kind is None:  # open, or timed out: no result
                continue
            error_text = self._text(item, "er")
            results.append(
                ExternalInput(
                    input_id=_str(item, "key") or "",
                    kind=InputKind(kind),
                    created_at=_num(item, "done") or 0.0,
                    operation_id=_str(item, "op"),
                    payload=_str(item, "p"),
                    payload_is_ref=_flag(item, "pR"),
                    error=json.loads(error_text) if error_text is not None else None,
                    on_callback_record=True,
                )
            )
        return results

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

    # --- flow control ---

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
        self, scope: str, execution_id: str, limit: int, expires_at: float, labels: Mapping[str, str]
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
        self, scope: str, ticket: int, execution_id: str | None, limit: int, expires_at: float
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
