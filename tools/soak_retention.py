"""The soak's retention (tools/soak.py): what AWS does to a deployment's data while time passes, applied on
moto, which does neither (DynamoDB's TTL, the payload bucket's lifecycle rule), and what is left, counted per
table and item kind (by key prefix) and per tag state."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.deployment import Deployment
from adapters.leftovers import all_items
from stepwell.aws.payloads import RETENTION_TAG_ENDED, RETENTION_TAG_KEY, execution_folder

DAY = 86_400
# DynamoDB's TTL skips an item whose `ttl` is more than five years in the past (a mistaken value).
TTL_IGNORED_BEFORE_SECONDS = 5 * 365 * DAY
PAYLOADS_MODULE = Path(__file__).resolve().parents[1] / "modules" / "payloads" / "main.tf"

# The kinds a listing shows even at 0: every kind the engine writes (docs/architecture.md's item table).
KNOWN_KINDS: tuple[tuple[str, str], ...] = (
    ("executions", "execution"),
    ("executions", "tag entry"),
    ("executions", "schedule pointer"),
    ("executions", "definitions context"),
    ("operations", "b#"),
    ("operations", "in#"),
    ("coordination", "lease#"),
    ("coordination", "cb#"),
    ("coordination", "fc#c# (concurrency key)"),
    ("coordination", "fc#c#…#t# (ticket)"),
    ("coordination", "fc#r# (rate key)"),
    ("coordination", "fc#x# (reserved start)"),
    ("coordination", "evt#"),
    ("coordination", "chain#"),
    ("coordination", "rejected#"),
    ("definitions", "definition"),
    ("definitions", "definition version"),
    ("definitions", "~waits"),
    ("bucket", f"object tagged {RETENTION_TAG_KEY}={RETENTION_TAG_ENDED}"),
    ("bucket", "object untagged"),
)


@dataclass(frozen=True)
class LifecycleRule:
    """The payload bucket's expiry rule as the module declares it."""

    tag_key: str
    tag_value: str
    days_variable: str

    @property
    def state(self) -> str:
        """The tag state (as counted) of the objects the rule expires."""
        return f"object tagged {self.tag_key}={self.tag_value}"


def read_lifecycle_rule(path: Path = PAYLOADS_MODULE) -> LifecycleRule:
    """The expiry rule of the bucket's lifecycle configuration: its tag filter and its days' variable."""
    text = path.read_text()
    rule = re.search(
        r'tag\s*\{\s*key\s*=\s*"([^"]+)"\s*value\s*=\s*"([^"]+)"\s*\}\s*\}\s*'
        r"expiration\s*\{\s*days\s*=\s*var\.(\w+)",
        text,
    )
    if rule is None:
        raise SystemExit(f"{path}: no expiration rule with a tag filter found")
    return LifecycleRule(rule.group(1), rule.group(2), rule.group(3))


def item_kind(table: str, item: dict[str, Any]) -> str:
    """An item's kind, by its key's prefix (docs/architecture.md lists them)."""
    if table == "executions":
        key = item["contextKey"]["S"]
        if "#~schedule#" in key:
            return "schedule pointer"
        if "#~tag#" in key:
            return "tag entry"
        return "definitions context" if item.get("recordType", {}).get("S") == "context" else "execution"
    if table == "operations":
        return str(item["sk"]["S"]).split("#")[0] + "#"
    if table == "definitions":
        if item["domain"]["S"].endswith("#versions"):
            return "definition version"
        return "~waits" if item["workflowId"]["S"] == "~waits" else "definition"
    key = str(item["key"]["S"])
    if key.startswith("fc#c#"):
        return "fc#c#…#t# (ticket)" if "#t#" in key else "fc#c# (concurrency key)"
    if key.startswith("fc#r#"):
        return "fc#r# (rate key)"
    if key.startswith("fc#x#"):
        return "fc#x# (reserved start)"
    return key.split("#")[0] + "#"


def _owner(table: str, item: dict[str, Any]) -> str | None:
    """The execution an item belongs to, where it names one."""
    for attribute in ("eid", "executionId"):
        if attribute in item:
            return str(item[attribute]["S"])
    if table == "executions":
        return f"{item['contextKey']['S']}/{item['instanceId']['S']}"
    return None


def _tables(deployment: Deployment) -> dict[str, str]:
    config = deployment.config
    return {
        "executions": config.executions_table,
        "operations": config.operations_table,
        "coordination": config.coordination_table,
        "definitions": config.definitions_table,
    }


def running_executions(deployment: Deployment) -> set[str]:
    """Executions and definitions contexts still running: their items are what they need."""
    return {
        f"{item['contextKey']['S']}/{item['instanceId']['S']}"
        for item in all_items(deployment, deployment.config.executions_table)
        if item.get("status", {}).get("S") == "RUNNING"
    }


def apply_ttl(deployment: Deployment, now: float) -> Counter[tuple[str, str]]:
    """DynamoDB's TTL at `now`: every item whose `ttl` (epoch seconds) has passed, but by no more than five
    years, is deleted. Returns the counts deleted per (table, kind)."""
    expired: Counter[tuple[str, str]] = Counter()
    dynamodb = deployment.clients.dynamodb
    for table, name in _tables(deployment).items():
        keys = [k["AttributeName"] for k in dynamodb.describe_table(TableName=name)["Table"]["KeySchema"]]
        for item in all_items(deployment, name):
            ttl = item.get("ttl", {}).get("N")
            if ttl is None or not now - TTL_IGNORED_BEFORE_SECONDS <= float(ttl) <= now:
                continue
            dynamodb.delete_item(TableName=name, Key={key: item[key] for key in keys})
            expired[(table, item_kind(table, item))] += 1
    return expired


def _tag_state(tags: list[dict[str, str]], rule: LifecycleRule) -> str:
    if {"Key": rule.tag_key, "Value": rule.tag_value} in tags:
        return rule.state
    return "object untagged" if not tags else "object tagged otherwise"


def _objects(deployment: Deployment) -> Iterator[dict[str, Any]]:
    pages = deployment.clients.s3.get_paginator("list_objects_v2").paginate(
        Bucket=deployment.config.payload_bucket
    )
    for page in pages:
        yield from page.get("Contents", [])


def apply_lifecycle(
    deployment: Deployment, rule: LifecycleRule, days: int, written_by: float, elapsed: float
) -> Counter[tuple[str, str]]:
    """The bucket's expiry rule: an object carrying the rule's tag, last written by `written_by` (real time,
    as moto stamps LastModified) when `elapsed` seconds of the virtual clock have passed since, is deleted
    if that is at least the rule's days. Returns the counts deleted per tag state."""
    expired: Counter[tuple[str, str]] = Counter()
    s3, bucket = deployment.clients.s3, deployment.config.payload_bucket
    for listed in list(_objects(deployment)):
        tags = s3.get_object_tagging(Bucket=bucket, Key=listed["Key"])["TagSet"]
        state = _tag_state(tags, rule)
        written = listed["LastModified"].timestamp()
        if state == rule.state and written <= written_by and elapsed >= days * DAY:
            s3.delete_object(Bucket=bucket, Key=listed["Key"])
            expired[("bucket", state)] += 1
    return expired


@dataclass
class Tally:
    """What the tables and the bucket hold: counts per (store, kind), less the items of running executions
    (`running_kept`), with the first few items counted, named by their keys (`examples`)."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    running_kept: int = 0
    examples: list[str] = field(default_factory=list)

    def note(self, store: str, kind: str, what: str) -> None:
        self.counts[(store, kind)] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{store} {kind}: {what}")


# The attributes that name an item in the examples (its keys and its ttl).
_NAMING = ("contextKey", "instanceId", "executionId", "sk", "key", "domain", "workflowId", "ttl")


def count_items(deployment: Deployment, rule: LifecycleRule) -> Tally:
    """What every table and the bucket hold per (store, kind), less what running executions need."""
    running = running_executions(deployment)
    folders = {execution_folder(execution_id) for execution_id in running}
    tally = Tally()
    for table, name in _tables(deployment).items():
        for item in all_items(deployment, name):
            if _owner(table, item) in running:
                tally.running_kept += 1
                continue
            keys = {k: v.get("S", v.get("N")) for k, v in item.items() if k in _NAMING}
            tally.note(table, item_kind(table, item), json.dumps(keys))
    s3, bucket = deployment.clients.s3, deployment.config.payload_bucket
    for listed in _objects(deployment):
        key = listed["Key"]
        if any(key.startswith(folder) for folder in folders):
            tally.running_kept += 1
            continue
        tally.note("bucket", _tag_state(s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"], rule), key)
    return tally
