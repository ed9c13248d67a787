"""DynamoDB's read and write units of every request, computed from item sizes as DynamoDB bills them
(moto answers ReturnConsumedCapacity with a constant per request)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench.section import REGION


def number_size(text: str) -> int:
    """DynamoDB's size of a number: about one byte per two significant digits, plus one."""
    digits = text.lstrip("-+").lower().split("e")[0].replace(".", "").strip("0")
    return max(1, math.ceil(len(digits) / 2)) + 1


def attribute_size(value: Mapping[str, Any]) -> int:
    """The size DynamoDB bills for one attribute value in wire format ({"S": ...}, {"N": ...}, ...)."""
    ((kind, content),) = value.items()
    if kind == "S":
        return len(str(content).encode("utf-8"))
    if kind == "N":
        return number_size(str(content))
    if kind == "B":
        return len(content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(item).encode("utf-8")) for item in content)
    if kind == "NS":
        return sum(number_size(str(item)) for item in content)
    if kind == "BS":
        return sum(len(item) for item in content)
    if kind == "L":
        return 3 + sum(1 + attribute_size(item) for item in content)
    if kind == "M":
        return 3 + sum(len(name.encode("utf-8")) + 1 + attribute_size(item) for name, item in content.items())
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_size(item: Mapping[str, Any] | None) -> int:
    if not item:
        return 0
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def _index_key(item: Mapping[str, Any] | None, partition: str, sort: str | None) -> tuple[str, str] | None:
    """An item's key in a GSI, or None when the item is not in the index (a key attribute missing)."""
    if not item or partition not in item or (sort is not None and sort not in item):
        return None
    return json.dumps(item[partition]), json.dumps(item[sort]) if sort else ""


@dataclass(frozen=True)
class _IndexSpec:
    """A GSI as the meter needs it: its key and the attributes it projects (None: ALL)."""

    partition: str
    sort: str | None
    projected: frozenset[str] | None

    def entry(self, item: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if item is None or self.projected is None:
            return item
        return {name: value for name, value in item.items() if name in self.projected}


def write_units(size: int) -> int:
    return max(1, math.ceil(size / 1024))


def read_units(size: int, consistent: bool) -> float:
    units = max(1, math.ceil(size / 4096))
    return float(units) if consistent else units / 2


@dataclass
class ApiTally:
    calls: int = 0
    write_units: float = 0.0
    read_units: float = 0.0
    bytes_written: int = 0

    def add(self, other: ApiTally) -> None:
        self.calls += other.calls
        self.write_units += other.write_units
        self.read_units += other.read_units
        self.bytes_written += other.bytes_written


_WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"})
_READ_OPERATIONS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem"})


class DynamoMeter:
    """Turns every DynamoDB request of the counted client into read and write units from item sizes.

    moto answers ReturnConsumedCapacity with a constant per request, whatever the item size, so the units
    are computed here as DynamoDB bills them: a write costs 1 unit per KB (rounded up) of the larger of the
    item before and after, plus the same for every global secondary index entry it puts, changes or removes
    (a change of an index key is a delete and a put; an entry is the projected attributes, so a KEYS_ONLY
    index is written only when its key changes); a failed conditional write costs the units of the
    write it attempted; a read costs 1 unit per 4 KB (rounded up; a Query sums its items first), half that
    when eventually consistent (GSI queries always are). The item before and after a write is read from
    moto's backend directly, not through the API, so the reading is not counted as a request.
    """

    def __init__(self, raw_dynamodb: Any, prefix: str) -> None:
        self._raw = raw_dynamodb
        self._prefix = prefix
        self._schemas: dict[str, tuple[list[str], list[_IndexSpec]]] = {}
        self.tally: dict[str, ApiTally] = {}
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        self._backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION]

    def reset(self) -> None:
        self.tally = {}

    def attach(self, client: Any) -> None:
        events = client.meta.events
        events.register("before-parameter-build.dynamodb", self._before)
        events.register("after-call.dynamodb", self._after)

    # --- schema and items ---

    def _schema(self, table: str) -> tuple[list[str], list[_IndexSpec]]:
        if table not in self._schemas:
            description = self._raw.describe_table(TableName=table)["Table"]
            keys = [element["AttributeName"] for element in description["KeySchema"]]
            indexes: list[_IndexSpec] = []
            for index in description.get("GlobalSecondaryIndexes", []):
                names = [element["AttributeName"] for element in index["KeySchema"]]
                projection = index.get("Projection", {})
                projected: frozenset[str] | None = None  # None: ALL
                if projection.get("ProjectionType", "ALL") != "ALL":
                    projected = frozenset([*keys, *names, *projection.get("NonKeyAttributes", [])])
                indexes.append(_IndexSpec(names[0], names[1] if len(names) > 1 else None, projected))
            self._schemas[table] = (keys, indexes)
        return self._schemas[table]

    def _lookup(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        found = self._backend.get_item(table, dict(key))
        if found is None:
            return None
        attributes: dict[str, Any] = found.to_json()["Attributes"]
        return attributes

    def _key_of(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        keys, _ = self._schema(table)
        return {name: item[name] for name in keys}

    # --- hooks ---

    def _before(self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        operation = model.name
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            table = params["TableName"]
            key = self._key_of(table, params["Item"]) if operation == "PutItem" else dict(params["Key"])
            context["bench_writes"] = [(table, key, self._lookup(table, key), params.get("Item"))]
        elif operation == "BatchWriteItem":
            pending: list[tuple[str, dict[str, Any], dict[str, Any] | None, Any]] = []
            for table, requests in params["RequestItems"].items():
                for request in requests:
                    if "PutRequest" in request:
                        item = request["PutRequest"]["Item"]
                        key = self._key_of(table, item)
                        pending.append((table, key, self._lookup(table, key), item))
                    else:
                        key = dict(request["DeleteRequest"]["Key"])
                        pending.append((table, key, self._lookup(table, key), None))
            context["bench_writes"] = pending

    def _after(self, parsed: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        operation = model.name
        error = parsed.get("Error", {}) if isinstance(parsed, Mapping) else {}
        code = str(error.get("Code", "")) if error else ""
        writes = context.pop("bench_writes", None)
        if operation in _WRITE_OPERATIONS and writes is not None:
            for table, key, before, put_item in writes:
                tally = self._tally(operation, table)
                if code and "ConditionalCheckFailed" not in code:
                    continue  # refused for another reason: not billed
                if code:  # a failed condition still costs the units of the attempted write
                    tally.write_units += write_units(max(item_size(before), item_size(put_item)))
                    continue
                after = put_item if operation in ("PutItem", "BatchWriteItem") else None
                if operation == "UpdateItem":
                    after = self._lookup(table, key)
                size = max(item_size(before), item_size(after))
                tally.write_units += write_units(size)
                tally.bytes_written += item_size(after)
                tally.write_units += self._index_units(table, before, after)
            if writes:
                self._tally(operation, writes[0][0]).calls += 1
            return
        if operation in _READ_OPERATIONS and not code and isinstance(parsed, Mapping):
            table = context.get("bench_table", "")
            consistent = bool(context.get("bench_consistent", False))
            if operation == "BatchGetItem":
                # Billed per item returned, each rounded up on its own, per table as its ConsistentRead says.
                per_table: dict[str, bool] = context.get("bench_batch_consistent", {})
                for batch_table, items in parsed.get("Responses", {}).items():
                    batch_tally = self._tally(operation, batch_table)
                    batch_tally.calls += 1
                    batch_tally.read_units += sum(
                        read_units(item_size(item), per_table.get(batch_table, False)) for item in items
                    )
                return
            if operation == "GetItem":
                units = read_units(item_size(parsed.get("Item")), consistent)
            else:
                units = read_units(sum(item_size(item) for item in parsed.get("Items", [])), consistent)
            tally = self._tally(operation, table)
            tally.calls += 1
            tally.read_units += units

    def _index_units(
        self, table: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
    ) -> int:
        _, indexes = self._schema(table)
        units = 0
        for index in indexes:
            old, new = (
                _index_key(before, index.partition, index.sort),
                _index_key(after, index.partition, index.sort),
            )
            if old is None and new is None:
                continue
            # An index entry holds the projected attributes only (KEYS_ONLY, INCLUDE), or the whole item.
            entry_before, entry_after = index.entry(before), index.entry(after)
            if old is None:
                units += write_units(item_size(entry_after))
            elif new is None:
                units += write_units(item_size(entry_before))
            elif old != new:
                units += write_units(item_size(entry_before)) + write_units(item_size(entry_after))
            elif entry_before != entry_after:
                units += write_units(max(item_size(entry_before), item_size(entry_after)))
        return units

    def _tally(self, operation: str, table: str) -> ApiTally:
        short = table[len(self._prefix) :] if table.startswith(self._prefix) else table
        return self.tally.setdefault(f"{operation} ({short})", ApiTally())

    def read_context_hook(
        self, params: Mapping[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if model.name in _READ_OPERATIONS:
            context["bench_table"] = params.get("TableName", "")
            requested = params.get("RequestItems", {})
            context["bench_batch_consistent"] = {
                table: bool(spec.get("ConsistentRead")) for table, spec in requested.items()
            }
            context["bench_consistent"] = bool(params.get("ConsistentRead")) and "IndexName" not in params
