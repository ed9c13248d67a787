"""Which DynamoDB partitions a request touches, and with how many units: pure functions of the request's
parameters, the items before and after a write, and the table's key schema (read from DescribeTable, so
the model follows whatever index keys the design on HEAD declares).

A partition is named by (table, index, partition key value); the table's own partition has index "".
Units are DynamoDB's: a write costs 1 WU per KB (rounded up) of the larger of the item before and after,
a transactional one twice that; every GSI whose key attributes the item has before or after is written
too (its entry's projected size; a key change is a delete in the old partition and a put in the new); a
read costs 1 RU per 4 KB (rounded up), half when eventually consistent (GSI reads always are), twice in a
transaction.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.meter import item_size

KB = 1024
READ_BLOCK = 4 * KB


@dataclass(frozen=True)
class IndexSchema:
    """A GSI: its name, key attributes and projected attributes (None: ALL)."""

    name: str
    partition: str
    sort: str | None
    projected: frozenset[str] | None

    def entry(self, item: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """The item's entry in this index (its projected attributes), or None when the item is not in it."""
        if not item or self.partition not in item or (self.sort is not None and self.sort not in item):
            return None
        if self.projected is None:
            return item
        return {name: value for name, value in item.items() if name in self.projected}


@dataclass(frozen=True)
class TableSchema:
    partition: str
    sort: str | None
    indexes: tuple[IndexSchema, ...]

    @classmethod
    def from_description(cls, description: Mapping[str, Any]) -> TableSchema:
        """From DescribeTable's "Table"."""
        keys = {element["KeyType"]: element["AttributeName"] for element in description["KeySchema"]}
        indexes = []
        for index in description.get("GlobalSecondaryIndexes", []):
            names = {element["KeyType"]: element["AttributeName"] for element in index["KeySchema"]}
            projection = index.get("Projection", {})
            projected: frozenset[str] | None = None
            if projection.get("ProjectionType", "ALL") != "ALL":
                projected = frozenset(
                    [*keys.values(), *names.values(), *projection.get("NonKeyAttributes", [])]
                )
            indexes.append(IndexSchema(index["IndexName"], names["HASH"], names.get("RANGE"), projected))
        return cls(keys["HASH"], keys.get("RANGE"), tuple(indexes))

    def index(self, name: str) -> IndexSchema:
        for index in self.indexes:
            if index.name == name:
                return index
        raise ValueError(f"no index {name!r}; the table has {[i.name for i in self.indexes]}")


@dataclass(frozen=True)
class Touch:
    """Units a request spends in one partition."""

    table: str
    index: str
    value: str
    write_units: float = 0.0
    read_units: float = 0.0


def render(value: Mapping[str, Any]) -> str:
    """A key attribute value in wire format ({"S": "x"}) as text."""
    ((kind, content),) = value.items()
    if kind in ("S", "N"):
        return str(content)
    if kind == "B":
        return bytes(content).hex() if isinstance(content, (bytes, bytearray)) else str(content)
    raise ValueError(f"a key attribute is S, N or B, not {kind!r}")


def write_units(size: int) -> float:
    return float(max(1, math.ceil(size / KB)))


def read_units(size: int, *, consistent: bool) -> float:
    units = float(max(1, math.ceil(size / READ_BLOCK)))
    return units if consistent else units / 2


def write_touches(
    table: str,
    schema: TableSchema,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    *,
    transactional: bool = False,
) -> list[Touch]:
    """The partitions one item write touches: the table's (by the item's key) and each GSI partition whose
    entry it puts, changes or removes. `after` None: a delete (or a write that failed its condition, which
    DynamoDB bills as the attempted write: pass the attempted item as `after` with `before`)."""
    factor = 2.0 if transactional else 1.0
    item = after or before
    if not item or schema.partition not in item:
        raise ValueError(f"a write to {table} without its partition key {schema.partition!r}")
    size = max(item_size(before), item_size(after))
    touches = [Touch(table, "", render(item[schema.partition]), write_units=factor * write_units(size))]
    for index in schema.indexes:
        old, new = index.entry(before), index.entry(after)
        if old is None and new is None:
            continue
        old_key = (render(old[index.partition]), _sort_of(old, index)) if old is not None else None
        new_key = (render(new[index.partition]), _sort_of(new, index)) if new is not None else None
        if old_key == new_key and old == new:
            continue  # neither its key nor a projected attribute changed: the index is not written
        if old_key is not None and new_key is not None and old_key == new_key:
            units = write_units(max(item_size(old), item_size(new)))
            touches.append(Touch(table, index.name, old_key[0], write_units=factor * units))
            continue
        if old is not None and old_key is not None:
            touches.append(
                Touch(table, index.name, old_key[0], write_units=factor * write_units(item_size(old)))
            )
        if new is not None and new_key is not None:
            touches.append(
                Touch(table, index.name, new_key[0], write_units=factor * write_units(item_size(new)))
            )
    return touches


def _sort_of(entry: Mapping[str, Any], index: IndexSchema) -> str:
    return render(entry[index.sort]) if index.sort is not None else ""


_CLAUSE = re.compile(r"^\(*\s*(#?[A-Za-z0-9_.]+)\s*=\s*(:[A-Za-z0-9_]+)\s*\)*$")


def query_partition(params: Mapping[str, Any], schema: TableSchema) -> tuple[str, str]:
    """(index, partition key value) a Query reads: from its KeyConditionExpression's equality on the
    partition key of the table or of the index it names (or a legacy KeyConditions)."""
    index_name = str(params.get("IndexName", ""))
    attribute = schema.index(index_name).partition if index_name else schema.partition
    names: Mapping[str, str] = params.get("ExpressionAttributeNames", {})
    values: Mapping[str, Any] = params.get("ExpressionAttributeValues", {})
    expression = params.get("KeyConditionExpression")
    if expression:
        for clause in re.split(r"\s+AND\s+", str(expression), flags=re.IGNORECASE):
            match = _CLAUSE.match(clause.strip())
            if match and names.get(match.group(1), match.group(1)) == attribute:
                return index_name, render(values[match.group(2)])
    legacy = params.get("KeyConditions", {}).get(attribute)
    if legacy:
        return index_name, render(legacy["AttributeValueList"][0])
    raise ValueError(f"a Query without an equality on the partition key {attribute!r}: {expression!r}")


def read_touch(
    table: str, index: str, value: str, items: Iterable[Mapping[str, Any] | None], *, consistent: bool
) -> Touch:
    """A GetItem (one item) or Query (its items summed before rounding) in one partition."""
    size = sum(item_size(item) for item in items)
    return Touch(table, index, value, read_units=read_units(size, consistent=consistent and not index))
