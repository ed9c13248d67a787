"""Records every AWS request the engine's clients make, through botocore's event hooks: its service and
operation, the run's current tag (workflow kind, execution, tenant, phase), and for DynamoDB the
partitions it touches with their units (scale.keys). Items before and after a write are read from moto's
backend directly, so the reading is not itself a request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.meter import item_size

from scale.keys import (
    TableSchema,
    Touch,
    query_partition,
    read_touch,
    render,
    write_touches,
    write_units,
)

_FAILED_WRITE_CODES = ("ConditionalCheckFailed", "TransactionCanceled")


@dataclass(frozen=True)
class Tag:
    """Who a request is for: the workflow kind, the unit of work (an execution, a subject's events), the
    unit's group (its tenant; "" for plain workflows) and the phase (run, wake)."""

    kind: str
    unit: str
    group: str = ""
    phase: str = "run"


@dataclass(frozen=True)
class Request:
    tag: Tag
    service: str
    operation: str
    entries: int = 1  # messages or events in a batch request
    touches: tuple[Touch, ...] = ()
    empty: bool = False  # a Query that found nothing


@dataclass
class Recorder:
    """Attach to boto3 clients; set `tag` before the work it should be charged to."""

    raw_dynamodb: Any
    backend: Any  # moto's DynamoDB backend of the mock, for items before and after a write
    prefix: str  # the deployment's table name prefix, dropped from the names it reports
    tag: Tag | None = None
    requests: list[Request] = field(default_factory=list)
    _schemas: dict[str, TableSchema] = field(default_factory=dict)

    def attach(self, client: Any) -> None:
        event_service = client.meta.service_model.service_id.hyphenize()
        service = client.meta.service_model.service_name
        events = client.meta.events
        events.register(f"before-parameter-build.{event_service}", self._before)
        events.register(f"after-call.{event_service}", lambda **kwargs: self._after(service, **kwargs))

    # --- tables ---

    def schema(self, table: str) -> TableSchema:
        if table not in self._schemas:
            description = self.raw_dynamodb.describe_table(TableName=table)["Table"]
            self._schemas[table] = TableSchema.from_description(description)
        return self._schemas[table]

    def _short(self, table: str) -> str:
        return table[len(self.prefix) :] if table.startswith(self.prefix) else table

    def _item(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self.backend.get_item(table, dict(key))
        if found is None:
            return None
        attributes: dict[str, Any] = found.to_json()["Attributes"]
        return attributes

    def _key(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        schema = self.schema(table)
        names = [schema.partition] + ([schema.sort] if schema.sort else [])
        return {name: item[name] for name in names}

    # --- hooks ---

    def _before(self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if self.tag is None:
            return
        if "Entries" in params:  # a batch of messages or events: the quota may count entries
            context["scale_entries"] = len(params["Entries"])
        if model.service_model.service_name != "dynamodb":
            return
        # (table, key, item before, item a Put writes, transactional, update) per item the request writes
        pending: list[tuple[str, dict[str, Any], Any, Any, bool, bool]] = []
        operation = model.name
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            table = params["TableName"]
            key = self._key(table, params["Item"]) if operation == "PutItem" else dict(params["Key"])
            put = params.get("Item")
            pending.append((table, key, self._item(table, key), put, False, operation == "UpdateItem"))
        elif operation == "BatchWriteItem":
            for table, writes in params["RequestItems"].items():
                for write in writes:
                    put = write.get("PutRequest", {}).get("Item")
                    key = self._key(table, put) if put else dict(write["DeleteRequest"]["Key"])
                    pending.append((table, key, self._item(table, key), put, False, False))
        elif operation == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((action, spec),) = entry.items()
                table = spec["TableName"]
                put = spec.get("Item") if action == "Put" else None
                key = self._key(table, put) if put else dict(spec["Key"])
                before = self._item(table, key)
                if action == "ConditionCheck":
                    put = before  # reads the item under the transaction: billed, nothing changes
                pending.append((table, key, before, put, True, action == "Update"))
        context["scale_writes"] = pending
        context["scale_params"] = dict(params)

    def _after(self, service: str, parsed: Any, model: Any, context: dict[str, Any], **_: Any) -> None:
        tag = self.tag
        if tag is None:
            return
        operation = model.name
        parsed = parsed if isinstance(parsed, Mapping) else {}
        code = str(parsed.get("Error", {}).get("Code", "")) if parsed.get("Error") else ""
        params = context.pop("scale_params", {})
        writes = context.pop("scale_writes", [])
        touches: list[Touch] = []
        entries = 1
        if service == "dynamodb":
            touches = self._dynamodb_touches(operation, params, writes, parsed=parsed, code=code)
        elif operation in ("SendMessageBatch", "DeleteMessageBatch", "PutEvents"):
            entries = int(context.get("scale_entries", 1))
        empty = operation == "Query" and not code and not parsed.get("Items")
        self.requests.append(Request(tag, service, operation, entries, tuple(touches), empty))

    def _dynamodb_touches(
        self,
        operation: str,
        params: Mapping[str, Any],
        writes: list[tuple[str, dict[str, Any], Any, Any, bool, bool]],
        *,
        parsed: Mapping[str, Any],
        code: str,
    ) -> list[Touch]:
        touches: list[Touch] = []
        if writes:
            if code and not code.startswith(_FAILED_WRITE_CODES):
                return []  # refused for another reason (throttled, invalid): not billed
            for table, key, before, put, transactional, update in writes:
                short = self._short(table)
                schema = self.schema(table)
                if code:  # a failed condition bills the attempted write, in the table only
                    size = max(_size(before), _size(put))
                    value = render(key[schema.partition])
                    factor = 2.0 if transactional else 1.0
                    touches.append(Touch(short, "", value, write_units=factor * write_units(size)))
                    continue
                after = self._item(table, key) if update else put
                touches += write_touches(short, schema, before, after, transactional=transactional)
            return touches
        if code:
            return []
        if operation == "GetItem":
            table = params["TableName"]
            value = render(params["Key"][self.schema(table).partition])
            consistent = bool(params.get("ConsistentRead"))
            return [read_touch(self._short(table), "", value, [parsed.get("Item")], consistent=consistent)]
        if operation == "Query":
            table = params["TableName"]
            index, value = query_partition(params, self.schema(table))
            consistent = bool(params.get("ConsistentRead"))
            items = parsed.get("Items", [])
            return [read_touch(self._short(table), index, value, items, consistent=consistent)]
        if operation == "BatchGetItem":
            for table, items in parsed.get("Responses", {}).items():
                consistent = bool(params["RequestItems"].get(table, {}).get("ConsistentRead"))
                partition = self.schema(table).partition
                for item in items:
                    value = render(item[partition])
                    touches.append(read_touch(self._short(table), "", value, [item], consistent=consistent))
            return touches
        if operation == "TransactGetItems":
            for entry in params["TransactItems"]:
                spec = entry["Get"]
                table = spec["TableName"]
                value = render(spec["Key"][self.schema(table).partition])
                item = self._item(table, spec["Key"])
                touch = read_touch(self._short(table), "", value, [item], consistent=True)
                touches.append(Touch(touch.table, "", value, read_units=2 * touch.read_units))
            return touches
        if operation == "Scan":  # never an engine access pattern; kept visible if one appears
            return [Touch(self._short(params["TableName"]), params.get("IndexName", ""), "*scan*")]
        return []


def _size(item: Mapping[str, Any] | None) -> int:
    return item_size(item)
