"""`make bench`: measure Stepwell and write BENCHMARKS.md.

    .venv/bin/python tools/bench.py --write BENCHMARKS.md          # every section
    .venv/bin/python tools/bench.py --sizes 10,100 --sections aws   # a quick look, nothing written

A benchmark, not a test: it measures and reports, it asserts nothing about time. Every figure in the file
is measured by the run that writes it; the prices are list prices (see PRICES) applied to the measured
counts.

Sections are separate functions (`SECTIONS`): each takes the run's options and returns a `SectionResult`
(markdown for the file, lines for the stdout summary). Add a section by writing such a function and
listing it in `SECTIONS`.

- aws: N sequential steps through the worker's Lambda entry handler (`stepwell.entry.EntryRuntime`, as the
  deployed worker runs it) over the DynamoDB store, the SQS queue, EventBridge Scheduler and S3 adapters,
  on moto in-process (`moto.mock_aws`). AWS requests per durable operation by API, DynamoDB units from
  item sizes, cost per million operations at us-east-1 list prices.
- operations: the same set-up, for a mixed workflow and for the marginal cost of each non-step operation.
- versions: the same set-up, for what pinning executions to worker versions costs: once per execution,
  per message outside a transition, and per message while executions run on an older version.
- long-lived: one execution of N step-and-wait cycles (a step, then a one-hour wait) through the same
  entry runtime, kept across messages as a warm Lambda container keeps it: read and write units of the
  message that runs cycle 10, 100 and N, and of the same cycles on a worker without the journal cache.
- definitions-replay: CPU per wake-up of a definition's loop (trigger, condition, wait 1 s, condition) at
  wake-up 10 and 500, on the local backend with a virtual clock: a replay reads the decided conditions
  from the log, so a wake-up costs its new work (issue 37).
- cpu: CPU time per operation (time.process_time) on the local backend (stepwell.testing.local) and in
  the SDK's own local test runner (aws_durable_execution_sdk_python_testing.DurableFunctionTestRunner),
  each size in a fresh subprocess.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
for _path in (str(TOOLS), str(ROOT), str(ROOT / "lambda_src")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import bench_workflows  # noqa: E402  (tools/ is put on the path above)

DEFAULT_SIZES = (10, 100, 1_000, 10_000)
REGION = "us-east-1"
SDK_TIMEOUT_SECONDS = 300  # one SDK-runner size in its subprocess; beyond this the size is reported skipped
LOCAL_TIMEOUT_SECONDS = 300
# The definitions bench runs in the background from the start of the run, with the 1,000 subjects its
# issue asks for. On moto in-process its time grows faster than linearly with the subjects (moto's Query
# walks the whole table, so it answers slower as the tables grow), so it gets a generous time limit.
DEFINITIONS_SUBJECTS = 1000
DEFINITIONS_TIMEOUT_SECONDS = 1500
MIN_MEASURED_OPERATIONS = 1_000  # small sizes run several executions so fixed costs are averaged

# ---------------------------------------------------------------------------------------------- prices


@dataclass(frozen=True)
class Price:
    label: str
    usd: float  # per `per` units
    per: int
    source: str

    @property
    def per_unit(self) -> float:
        return self.usd / self.per


# us-east-1 on-demand list prices, as published on the AWS pricing pages (checked 2026-11; the DynamoDB
# on-demand prices are those in force since the 50 % cut of 2024-11-01). Free tiers are ignored.
PRICES: dict[str, Price] = {
    "dynamodb_wru": Price(
        "DynamoDB on-demand write request unit", 0.625, 1_000_000, "aws.amazon.com/dynamodb/pricing/on-demand"
    ),
    "dynamodb_rru": Price(
        "DynamoDB on-demand read request unit", 0.125, 1_000_000, "aws.amazon.com/dynamodb/pricing/on-demand"
    ),
    "sqs": Price(
        "SQS standard request (per 64 KB chunk)", 0.40, 1_000_000, "aws.amazon.com/sqs/pricing (first tier)"
    ),
    "scheduler": Price(
        "EventBridge Scheduler invocation", 1.00, 1_000_000, "aws.amazon.com/eventbridge/pricing (Scheduler)"
    ),
    # The engine's status-change events (one entry per PutEvents request, as it announces them).
    "events": Price(
        "EventBridge custom event (PutEvents entry)", 1.00, 1_000_000, "aws.amazon.com/eventbridge/pricing"
    ),
    "s3_put": Price("S3 Standard PUT/LIST request", 0.005, 1_000, "aws.amazon.com/s3/pricing"),
    "s3_get": Price("S3 Standard GET request", 0.0004, 1_000, "aws.amazon.com/s3/pricing"),
    "lambda_request": Price("Lambda request (invocation)", 0.20, 1_000_000, "aws.amazon.com/lambda/pricing"),
}
DURABLE_FUNCTIONS_PER_MILLION = 8.00  # AWS Lambda durable functions, per million durable operations
STEP_FUNCTIONS_PER_MILLION = 25.00  # Step Functions Standard, per million state transitions
TARGET_WRITE_UNITS_PER_STEP = 1.5
TARGET_READ_UNITS_PER_STEP = 1.0
TARGET_USD_PER_MILLION = 1.50
# Issue 12's targets: a resume all-in, an execution's fixed part, the mixed workflow.
TARGET_RESUME_WRITE_UNITS = 4
TARGET_RESUME_SQS_REQUESTS = 2
TARGET_FIXED_WRITE_UNITS = 6
TARGET_MIXED_USD_PER_MILLION = 1.60
# Executions of `mixed` (and of the marginal parallel) per measurement: a parallel's checkpoints batch
# differently from run to run.
MIXED_EXECUTIONS = 10
TARGET_DEFINITIONS_START_REQUESTS = 12
TARGET_DEFINITIONS_RESUME_REQUESTS = 10

# ---------------------------------------------------------------------------------------------- results


@dataclass
class SectionResult:
    title: str
    markdown: str
    summary: list[str] = field(default_factory=list)
    # Rows of the summary against the targets at the top of the file: (target, measured, verdict).
    targets: list[tuple[str, str, str]] = field(default_factory=list)


def verdict(values: Mapping[int, float], ok: Callable[[float], bool]) -> str:
    """'met at every size', or which sizes meet a target and which do not."""
    good = [f"{size:,}" for size, value in sorted(values.items()) if ok(value)]
    bad = [f"{size:,}" for size, value in sorted(values.items()) if not ok(value)]
    if not bad:
        return "met at every size"
    if not good:
        return "NOT met at any size"
    return f"met at {', '.join(good)} steps; NOT met at {', '.join(bad)}"


def by_size_text(values: Mapping[int, float], render: Callable[[float], str]) -> str:
    return ", ".join(f"{size:,}: {render(value)}" for size, value in sorted(values.items()))


@dataclass
class Options:
    sizes: tuple[int, ...]
    sdk_timeout: float
    stacks: Stacks
    definitions_subjects: int = DEFINITIONS_SUBJECTS
    long_lived_cycles: int = 500
    background: dict[str, Background] = field(default_factory=dict)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(value: float, digits: int = 3) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) < 0.01:
        return f"{value:.2g}"
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{value:.{digits}f}" else f"{value}"


def usd(value: float) -> str:
    if 0 < value < 0.001:
        return f"${value:.2g}"
    return f"${value:,.3f}" if value < 10 else f"${value:,.2f}"


# ------------------------------------------------------------------------------ DynamoDB item-size meter


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
            context["bench_consistent"] = bool(params.get("ConsistentRead")) and "IndexName" not in params


# ------------------------------------------------------------------------------ moto: one deployment


@dataclass
class ModelledCharges:
    """Requests AWS makes on the deployment's behalf, which the bench plays: the Lambda event source
    mapping's SQS ReceiveMessage and DeleteMessageBatch, Lambda invocations, Scheduler invocations and the
    SQS SendMessage or Lambda Invoke (of the worker's alias) each one makes. `forwarded_invocations` are the
    Lambda invocations one worker version makes of another (a synchronous Invoke, also counted in
    `lambda_invocations`)."""

    esm_receives: int = 0
    esm_deletes: int = 0
    lambda_invocations: int = 0
    scheduler_invocations: int = 0
    scheduler_sends: int = 0
    scheduler_invokes: int = 0
    forwarded_invocations: int = 0

    def reset(self) -> None:
        self.esm_receives = self.esm_deletes = self.lambda_invocations = 0
        self.scheduler_invocations = self.scheduler_sends = self.scheduler_invokes = 0
        self.forwarded_invocations = 0


@dataclass
class Measurement:
    label: str
    executions: int
    operations: int
    operation_kinds: Counter[str]
    calls: dict[str, int]
    dynamo: dict[str, ApiTally]
    modelled: ModelledCharges
    reported_read_units: float
    reported_write_units: float
    wall_seconds: float

    # --- derived ---

    def per_op(self, value: float) -> float:
        return value / self.operations if self.operations else 0.0

    @property
    def write_units(self) -> float:
        return sum(tally.write_units for tally in self.dynamo.values())

    @property
    def read_units(self) -> float:
        return sum(tally.read_units for tally in self.dynamo.values())

    def service_calls(self, service: str) -> int:
        return sum(count for key, count in self.calls.items() if key.startswith(service + "."))

    @property
    def sqs_requests(self) -> int:
        engine = self.service_calls("sqs")
        return engine + self.modelled.esm_receives + self.modelled.esm_deletes + self.modelled.scheduler_sends

    @property
    def s3_puts(self) -> int:
        return sum(count for key, count in self.calls.items() if key in ("s3.PutObject", "s3.ListObjectsV2"))

    @property
    def s3_gets(self) -> int:
        return self.calls.get("s3.GetObject", 0)

    def costs(self) -> dict[str, float]:
        """USD for the whole measurement, by service."""
        return {
            "DynamoDB writes": self.write_units * PRICES["dynamodb_wru"].per_unit,
            "DynamoDB reads": self.read_units * PRICES["dynamodb_rru"].per_unit,
            "SQS": self.sqs_requests * PRICES["sqs"].per_unit,
            "Scheduler": self.modelled.scheduler_invocations * PRICES["scheduler"].per_unit,
            "EventBridge events": self.calls.get("events.PutEvents", 0) * PRICES["events"].per_unit,
            "S3": self.s3_puts * PRICES["s3_put"].per_unit + self.s3_gets * PRICES["s3_get"].per_unit,
            "Lambda requests": self.modelled.lambda_invocations * PRICES["lambda_request"].per_unit,
        }

    def usd_per_million_ops(self) -> float:
        return self.per_op(sum(self.costs().values())) * 1_000_000


class MotoStack:
    """One Stepwell deployment in moto's in-process mock, the worker's entry runtime and a client on a
    shared virtual clock, with every engine-side AWS request counted and metered, and a driver that plays
    SQS's event source mapping and EventBridge Scheduler with its own, uncounted clients."""

    def __init__(self) -> None:
        import boto3
        from stepwell.aws import AwsClients
        from stepwell.client import StepwellClient
        from stepwell.clock import VirtualClock
        from stepwell.entry import EntryRuntime
        from stepwell.registry import Registry
        from stepwell.testing.async_invoke import take_event_invokes
        from stepwell.testing.mock_deployment import create_deployment

        self.config = create_deployment(name="sw-bench", region=REGION)
        self.registry = Registry()
        for name, (handler, _) in bench_workflows.WORKFLOWS.items():
            self.registry.register(name, handler)
        self.clock = VirtualClock()
        self.clients = AwsClients(region=REGION)
        self.meter = DynamoMeter(boto3.client("dynamodb", region_name=REGION), prefix=self.config.name + "-")
        dynamodb = self.clients.dynamodb
        dynamodb.meta.events.register("before-parameter-build.dynamodb", self.meter.read_context_hook)
        self.meter.attach(dynamodb)
        # The client wakes executions as the module's client_config has it: by invoking the worker's
        # alias asynchronously. The bench keeps each event (one Lambda request) and runs it in `drain`.
        self.client = StepwellClient(
            dataclasses.replace(self.config, direct_wake_ups=True),
            self.clients,
            registry=self.registry,
            clock=self.clock,
        )
        self._wake_ups: list[Any] = []
        take_event_invokes(self.clients.lambda_wake, lambda _alias, payload: self._wake_ups.append(payload))
        self.runtime = EntryRuntime.from_config(
            self.config, self.clients, registry=self.registry, clock=self.clock
        )
        self.sqs: Any = boto3.client("sqs", region_name=REGION)
        self.scheduler: Any = boto3.client("scheduler", region_name=REGION)
        self.modelled = ModelledCharges()
        # SQS messages and direct invocations handed to the worker (not a charge: a per-message unit)
        self.delivered_messages = 0
        self._runs = 0

    def reset_counters(self) -> None:
        self.clients.counter.reset()
        self.meter.reset()
        self.modelled.reset()
        self.delivered_messages = 0

    # --- driving ---

    def run_workflow(
        self, workflow: str, payload: Mapping[str, Any], label: str, executions: int = 1
    ) -> Measurement:
        """Start `executions` executions of `workflow` one after the other and run each to its end, sending
        callback results when it waits for one. Counts everything from the start request on."""
        _, needs_callback = bench_workflows.WORKFLOWS[workflow]
        self.reset_counters()
        started = time.perf_counter()
        execution_ids: list[str] = []
        for _ in range(executions):
            self._runs += 1
            execution_id = self.client.start_execution(
                workflow, dict(payload), execution_name=f"run-{self._runs}"
            )
            execution_ids.append(execution_id)
            for _round in range(1_000):
                # A result is sent before any schedule fires: a callback's deadline is a schedule too.
                self.drain(fire_schedules=False)
                if bench_workflows.CALLBACKS:
                    while bench_workflows.CALLBACKS:
                        self.client.send_callback_success(
                            bench_workflows.CALLBACKS.pop(0), {"approved": True}
                        )
                    continue
                self.drain()  # long waits, and any wake-up left behind, fire
                if not bench_workflows.CALLBACKS:
                    break
            status = self.client.describe_execution(execution_id)["Status"]
            for _retry in range(3):  # a message SQS had not made visible yet: look again
                if status != "RUNNING" or bench_workflows.CALLBACKS:
                    break
                time.sleep(1.0)
                self.drain()
                status = self.client.describe_execution(execution_id)["Status"]
            if status != "SUCCEEDED":
                raise RuntimeError(f"{workflow} ended {status}, not SUCCEEDED: {execution_id}")
            if needs_callback and bench_workflows.CALLBACKS:
                raise RuntimeError(f"{workflow}: callbacks left unanswered")
        return self.measure(label, execution_ids, time.perf_counter() - started)

    def measure(self, label: str, execution_ids: Sequence[str], wall_seconds: float) -> Measurement:
        """Everything counted since `reset_counters`, over the operations of `execution_ids`. (Sections
        that drive executions their own way call `reset_counters`, start them, `drain`, then this.)"""
        snapshot = self.clients.counter.snapshot()
        dynamo = {
            key: ApiTally(t.calls, t.write_units, t.read_units, t.bytes_written)
            for key, t in self.meter.tally.items()
        }
        modelled = ModelledCharges(
            **{k: getattr(self.modelled, k) for k in ModelledCharges.__dataclass_fields__}
        )
        kinds: Counter[str] = Counter()
        for execution_id in execution_ids:  # read after the snapshot: not counted
            kinds.update(self._operation_kinds(execution_id))
        return Measurement(
            label=label,
            executions=len(execution_ids),
            operations=sum(kinds.values()),
            operation_kinds=kinds,
            calls=dict(snapshot["calls"]),
            dynamo=dynamo,
            modelled=modelled,
            reported_read_units=float(snapshot["read_units"]),
            reported_write_units=float(snapshot["write_units"]),
            wall_seconds=wall_seconds,
        )

    def _operation_kinds(self, execution_id: str) -> Counter[str]:
        """Durable operations of an execution (the execution itself not counted), by type."""
        journal = self.runtime.engine.load_journal(execution_id)
        kinds: Counter[str] = Counter()
        for operation in journal.operations.values():
            kind = operation.operation_type.value
            if kind == "EXECUTION":
                continue
            sub = operation.sub_type
            kinds[f"{kind}/{sub}" if sub and kind == "CONTEXT" else kind] += 1
        return kinds

    def drain(self, fire_schedules: bool = True) -> None:
        """Deliver messages and fire schedules until nothing is left (waiting out short SQS delays); without
        `fire_schedules`, stop when only schedules are left (executions waiting on a long wait)."""
        queue_url = self.config.work_queue_url
        for _ in range(100_000):
            if self._wake_ups:  # a client's wake-up: an asynchronous invocation of the alias
                self._invoke_async(self._wake_ups.pop(0))
                continue
            self.modelled.esm_receives += 1
            messages = self.sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if messages:
                self._deliver(messages)
                continue
            self.modelled.esm_receives -= 1  # idle polling is a fixed cost, not a per-operation one
            # Visible too: a delayed message may have become visible since the receive above.
            waiting = self.sqs.get_queue_attributes(
                QueueUrl=queue_url,
                AttributeNames=["ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages"],
            )["Attributes"]
            if int(waiting.get("ApproximateNumberOfMessages", "0")):
                continue
            if int(waiting.get("ApproximateNumberOfMessagesDelayed", "0")):
                time.sleep(0.1)
                continue
            # Not while a callback waits for its result: its sender answers first (see run_workflow), before
            # any later wake-up (its deadline, or the one its log's expiry armed) fires.
            if fire_schedules and not bench_workflows.CALLBACKS and self._fire_next_schedule():
                continue
            return
        raise RuntimeError("the work queue did not go quiet")

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
        self.modelled.lambda_invocations += 1
        self.delivered_messages += len(records)
        response = self.runtime.handle_event({"Records": records}, None)
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        if failed:
            raise RuntimeError(f"the worker failed messages {sorted(failed)}")
        self.modelled.esm_deletes += 1
        self.sqs.delete_message_batch(
            QueueUrl=self.config.work_queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )

    def _fire_next_schedule(self) -> bool:
        group = self.config.schedule_group_name
        summaries = self.scheduler.list_schedules(GroupName=group).get("Schedules", [])
        if not summaries:
            return False
        schedules = [self.scheduler.get_schedule(Name=s["Name"], GroupName=group) for s in summaries]

        def at(schedule: Mapping[str, Any]) -> float:
            stamp = str(schedule["ScheduleExpression"])[3:-1]
            return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()

        earliest = min(schedules, key=at)
        self.clock.advance_to(at(earliest))
        self.modelled.scheduler_invocations += 1
        target = earliest["Target"]
        if target["Arn"] == self.config.wake_function_arn:
            # An asynchronous invocation of the worker's alias: one Lambda invocation, no SQS request.
            self.modelled.scheduler_invokes += 1
            self._invoke_async(json.loads(target["Input"]))
        else:
            self.modelled.scheduler_sends += 1
            self.sqs.send_message(QueueUrl=self.config.work_queue_url, MessageBody=target["Input"])
        self.scheduler.delete_schedule(Name=earliest["Name"], GroupName=group)  # ActionAfterCompletion=DELETE
        return True

    def _invoke_async(self, payload: Any) -> None:
        from stepwell.testing.async_invoke import attempt_in_process, invoke_asynchronously

        attempt = attempt_in_process(self.runtime.handle_event)

        def counted(event: Any) -> dict[str, Any] | None:
            self.modelled.lambda_invocations += 1
            self.delivered_messages += 1
            return attempt(event)

        outcome = invoke_asynchronously(counted, payload, self.config.wake_function_arn)
        if outcome.error is not None:
            raise RuntimeError(f"the worker failed a direct wake-up {payload}: {outcome.error}")


@contextlib.contextmanager
def moto_stack() -> Iterator[MotoStack]:
    from moto import mock_aws

    saved = {key: os.environ.get(key) for key in _FAKE_AWS_ENV}
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        saved.setdefault(variable, os.environ.get(variable))
        os.environ.pop(variable, None)
    os.environ.update(_FAKE_AWS_ENV)
    try:
        with mock_aws():
            yield MotoStack()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}


class Stacks:
    """The sections that run on moto share one mock and one deployment, created on first use and torn
    down when the run ends."""

    def __init__(self, exits: contextlib.ExitStack) -> None:
        self._exits = exits
        self._moto: MotoStack | None = None

    def moto(self) -> MotoStack:
        if self._moto is None:
            log("creating the deployment in moto (in-process mock_aws)")
            self._moto = self._exits.enter_context(moto_stack())
        return self._moto


# ---------------------------------------------------------------------------------------------- sections


def _per_op_row(m: Measurement) -> list[str]:
    total = m.usd_per_million_ops()
    return [
        m.label,
        f"{m.operations:,}",
        f"{m.modelled.lambda_invocations:,}",
        fmt(m.per_op(m.service_calls("dynamodb"))),
        fmt(m.per_op(m.write_units)),
        fmt(m.per_op(m.read_units)),
        fmt(m.per_op(m.sqs_requests)),
        fmt(m.per_op(m.modelled.scheduler_invocations)),
        fmt(m.per_op(m.s3_puts + m.s3_gets)),
        usd(total),
        f"{total / DURABLE_FUNCTIONS_PER_MILLION:.0%}",
        f"{total / STEP_FUNCTIONS_PER_MILLION:.0%}",
        fmt(m.wall_seconds, 1),
    ]


_PER_OP_HEADER = [
    "workflow",
    "operations",
    "Lambda invocations",
    "DynamoDB requests / op",
    "write units / op",
    "read units / op",
    "SQS requests / op",
    "Scheduler invocations / op",
    "S3 requests / op",
    "Stepwell $ / million ops",
    "of durable functions ($8.00)",
    "of Step Functions ($25.00)",
    "wall s (moto)",
]


def _api_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    """Requests per operation by API (DynamoDB split by table, with units), one column per measurement."""
    keys: list[str] = []
    for m in measurements:
        for key in m.dynamo:
            if key not in keys:
                keys.append(key)
    rows: list[list[str]] = []
    for key in sorted(keys):
        cells = [f"dynamodb {key}"]
        for m in measurements:
            tally = m.dynamo.get(key, ApiTally())
            text = fmt(m.per_op(tally.calls))
            units = []
            if tally.write_units:
                units.append(f"{fmt(m.per_op(tally.write_units))} WU")
            if tally.read_units:
                units.append(f"{fmt(m.per_op(tally.read_units))} RU")
            cells.append(f"{text} ({', '.join(units)})" if units else text)
        rows.append(cells)
    others = sorted({k for m in measurements for k in m.calls if not k.startswith("dynamodb.")})
    for key in others:
        rows.append([key.replace(".", " ", 1)] + [fmt(m.per_op(m.calls.get(key, 0))) for m in measurements])
    modelled: list[tuple[str, Callable[[Measurement], int]]] = [
        ("sqs ReceiveMessage (event source mapping, modelled)", lambda m: m.modelled.esm_receives),
        ("sqs DeleteMessageBatch (event source mapping, modelled)", lambda m: m.modelled.esm_deletes),
        ("sqs SendMessage (by Scheduler, modelled)", lambda m: m.modelled.scheduler_sends),
        ("lambda Invoke (by Scheduler, modelled)", lambda m: m.modelled.scheduler_invokes),
        ("scheduler invocation (modelled)", lambda m: m.modelled.scheduler_invocations),
        ("lambda invocation (modelled)", lambda m: m.modelled.lambda_invocations),
        ("of which forwards to a pinned version (modelled)", lambda m: m.modelled.forwarded_invocations),
    ]
    for label, get in modelled:
        if any(get(m) for m in measurements):
            rows.append([label] + [fmt(m.per_op(get(m))) for m in measurements])
    return rows


def _fixed_write_units(small: Measurement, large: Measurement) -> float:
    """The fixed write units of an execution, fitted on two sizes of the same workflow."""
    per_step = (large.write_units - small.write_units) / (large.operations - small.operations)
    return small.write_units - small.operations * per_step


def _fixed_cost_text(small: Measurement, large: Measurement) -> str:
    """The per-execution and per-step write units, fitted on two sizes of the same workflow (the write
    units of an N-step execution are fixed + N x per step), and which requests make the fixed part."""
    span = large.operations - small.operations
    per_step = (large.write_units - small.write_units) / span
    fixed = _fixed_write_units(small, large)
    lines = [
        f"Write units per execution, fitted on the {small.label} and {large.label} runs: "
        f"**{fmt(fixed)} fixed + {fmt(per_step)} per step**. At N steps that is {fmt(per_step)} + "
        f"{fmt(fixed)} / N per step, so the {TARGET_WRITE_UNITS_PER_STEP} target holds from "
        f"N = {math.ceil(fixed / max(TARGET_WRITE_UNITS_PER_STEP - per_step, 1e-9)):,} steps on. "
        "The fixed part, by request (write units per execution):",
        "",
    ]
    for key in sorted(set(small.dynamo) | set(large.dynamo)):
        units_small = small.dynamo.get(key, ApiTally()).write_units
        units_large = large.dynamo.get(key, ApiTally()).write_units
        part = units_small - small.operations * (units_large - units_small) / span
        if part >= 0.5:
            lines.append(f"- {key}: {fmt(part)}")
    return "\n".join(lines)


def _cost_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    rows: list[list[str]] = []
    for service in measurements[0].costs():
        rows.append([service] + [usd(m.per_op(m.costs()[service]) * 1_000_000) for m in measurements])
    rows.append(["**total**"] + [f"**{usd(m.usd_per_million_ops())}**" for m in measurements])
    rows.append(["AWS Lambda durable functions"] + [usd(DURABLE_FUNCTIONS_PER_MILLION) for _ in measurements])
    rows.append(
        ["Step Functions Standard (1 transition / op)"]
        + [usd(STEP_FUNCTIONS_PER_MILLION) for _ in measurements]
    )
    return rows


def section_aws(options: Options) -> SectionResult:
    """N sequential steps on the moto backend, driven through the worker's Lambda entry handler."""
    stack = options.stacks.moto()
    measurements: list[Measurement] = []
    for steps in options.sizes:
        log(f"aws: {steps:,} sequential steps on moto")
        measurement = stack.run_workflow("sequential-steps", {"steps": steps}, label=f"{steps:,} steps")
        measurements.append(measurement)
        log(
            f"aws: {steps:,} steps: {measurement.per_op(measurement.write_units):.3f} WU/op, "
            f"{measurement.per_op(measurement.read_units):.3f} RU/op, "
            f"${measurement.usd_per_million_ops():.3f}/M ops, {measurement.wall_seconds:.1f}s"
        )
    by_size = {int(m.label.split(" ")[0].replace(",", "")): m for m in measurements}
    targets: list[list[str]] = []
    for m in measurements:
        wu, ru, cost = m.per_op(m.write_units), m.per_op(m.read_units), m.usd_per_million_ops()
        targets.append(
            [
                m.label,
                f"{fmt(wu)} ({'met' if wu <= TARGET_WRITE_UNITS_PER_STEP else 'NOT met'})",
                f"{fmt(ru)} ({'met' if ru <= TARGET_READ_UNITS_PER_STEP else 'NOT met'})",
                f"{usd(cost)} ({'met' if cost < TARGET_USD_PER_MILLION else 'NOT met'})",
            ]
        )
    flat = ""
    if 100 in by_size and 10_000 in by_size:
        ratio = by_size[10_000].usd_per_million_ops() / by_size[100].usd_per_million_ops()
        flat = (
            f"\nCost per operation at 10,000 steps / at 100 steps: **{ratio:.3f}** "
            f"({'the same or lower: met' if ratio <= 1.02 else 'higher: NOT met'}; "
            "the log is folded once per invocation, never replayed per step).\n"
        )
    wu_by = {size: m.per_op(m.write_units) for size, m in by_size.items()}
    ru_by = {size: m.per_op(m.read_units) for size, m in by_size.items()}
    cost_by = {size: m.usd_per_million_ops() for size, m in by_size.items()}
    target_rows = [
        (
            f"<= {TARGET_WRITE_UNITS_PER_STEP} write units per step",
            by_size_text(wu_by, fmt),
            verdict(wu_by, lambda v: v <= TARGET_WRITE_UNITS_PER_STEP),
        ),
        (
            f"<= {TARGET_READ_UNITS_PER_STEP:g} read unit per step",
            by_size_text(ru_by, fmt),
            verdict(ru_by, lambda v: v <= TARGET_READ_UNITS_PER_STEP),
        ),
        (
            f"< ${TARGET_USD_PER_MILLION:.2f} per million operations",
            by_size_text(cost_by, usd),
            verdict(cost_by, lambda v: v < TARGET_USD_PER_MILLION),
        ),
    ]
    if 100 in cost_by and 10_000 in cost_by:
        ratio = cost_by[10_000] / cost_by[100]
        target_rows.append(
            (
                "cost per operation at 10,000 steps the same as at 100",
                f"10,000 / 100 = {ratio:.3f}",
                "met" if ratio <= 1.02 else "NOT met",
            )
        )
    fixed_cost = ""
    if len(measurements) >= 2 and measurements[1].operations > measurements[0].operations:
        fixed_cost = _fixed_cost_text(measurements[0], measurements[1])
        fixed = _fixed_write_units(measurements[0], measurements[1])
        target_rows.append(
            (
                f"fixed write units per execution <= {TARGET_FIXED_WRITE_UNITS}",
                fmt(fixed),
                "met" if fixed <= TARGET_FIXED_WRITE_UNITS + 0.01 else "NOT met",
            )
        )
    markdown = "\n\n".join(
        [
            _STEPS_INTRO,
            md_table(_PER_OP_HEADER, [_per_op_row(m) for m in measurements]),
            "Requests per durable operation by API (DynamoDB by table; WU/RU = write/read units per "
            "operation from item sizes):",
            md_table(["API"] + [m.label for m in measurements], _api_rows(measurements)),
            "Estimated cost per million durable operations (us-east-1 list prices below):",
            md_table(["service"] + [m.label for m in measurements], _cost_rows(measurements)),
            "Targets (per step, on average over the workflow; computed, not asserted):",
            md_table(
                [
                    "workflow",
                    "write units / step (<= 1.5)",
                    "read units / step (<= 1)",
                    "$ / million ops (< $1.50)",
                ],
                targets,
            )
            + flat,
            *([fixed_cost] if fixed_cost else []),
            "moto's own ConsumedCapacity answers (a constant per request, whatever the item size; shown as a "
            "cross-check of the request counts only): "
            + ", ".join(
                f"{m.label}: {fmt(m.per_op(m.reported_write_units))} WU/op, "
                f"{fmt(m.per_op(m.reported_read_units))} RU/op"
                for m in measurements
            )
            + ".",
        ]
    )
    summary = ["AWS requests on moto (per durable operation):"]
    if fixed_cost:
        summary.append("  " + fixed_cost.splitlines()[0].replace("**", ""))
    summary += [
        f"  {m.label:>14}: {m.per_op(m.service_calls('dynamodb')):.3f} DynamoDB req, "
        f"{m.per_op(m.write_units):.3f} WU, {m.per_op(m.read_units):.3f} RU, "
        f"{m.per_op(m.sqs_requests):.4f} SQS, "
        f"${m.usd_per_million_ops():.3f} per million ops (durable functions $8.00, Step Functions $25.00)"
        for m in measurements
    ]
    return SectionResult("AWS requests and cost per operation (moto backend)", markdown, summary, target_rows)


# The marginal rows that are one resume of a suspended execution, and what each includes.
_RESUMES = {
    "single-short-wait": "a 2 s wait that ends",
    "single-long-wait": "a 2 h wait that ends",
    "single-callback": "a callback that arrives; its row includes the callback's three operations",
    "single-callback-timeout": "a callback with a 1-day deadline that arrives first; as the row above",
}
_MARGINAL = (
    ("single-short-wait", "wait of 2 s (SQS DelaySeconds)"),
    ("single-long-wait", "wait of 2 h (EventBridge Scheduler)"),
    ("single-callback", "wait_for_callback (result sent by the client)"),
    ("single-callback-timeout", "wait_for_callback with a 1-day timeout, result sent before it"),
    ("single-parallel", f"parallel of {bench_workflows.PARALLEL_BRANCHES} one-step branches"),
    ("single-large-step", f"step with a {bench_workflows.LARGE_RESULT_BYTES // 1024} KB result (S3)"),
)


def _totals(m: Measurement) -> dict[str, float]:
    """Per execution of the measurement."""
    totals = {
        "operations": m.operations,
        "Lambda invocations": m.modelled.lambda_invocations,
        "DynamoDB requests": m.service_calls("dynamodb"),
        "write units": m.write_units,
        "read units": m.read_units,
        "SQS requests": m.sqs_requests,
        "Scheduler invocations": m.modelled.scheduler_invocations,
        "S3 requests": m.s3_puts + m.s3_gets,
        "usd": sum(m.costs().values()),
    }
    return {key: value / max(1, m.executions) for key, value in totals.items()}


def section_operations(options: Options) -> SectionResult:
    """A mixed workflow, and the marginal cost of each kind of non-step operation."""
    stack = options.stacks.moto()
    log("operations: mixed workflow on moto")
    mixed = stack.run_workflow("mixed", {"order": 7}, label="mixed", executions=MIXED_EXECUTIONS)
    log("operations: single-operation workflows on moto")
    base = stack.run_workflow("single-step", {}, label="single step")
    base_totals = _totals(base)
    rows: list[list[str]] = [
        [
            "baseline: one step",
            ", ".join(f"{k} {v}" for k, v in sorted(base.operation_kinds.items())),
            *(fmt(base_totals[key]) for key in _MARGINAL_COLUMNS),
            usd(base_totals["usd"] * 1_000_000) + " (executions)",
            usd(base_totals["usd"] * 1_000_000 / max(1.0, base_totals["operations"])),
        ]
    ]
    summary = [
        f"Mixed workflow: {mixed.operations} operations, {mixed.per_op(mixed.write_units):.3f} WU/op, "
        f"{mixed.per_op(mixed.read_units):.3f} RU/op, ${mixed.usd_per_million_ops():.3f} per million ops",
        "Marginal cost of non-step operations (per operation of that kind, over a one-step workflow):",
    ]
    mixed_usd = mixed.usd_per_million_ops()
    targets = [
        (
            f"mixed workflow <= ${TARGET_MIXED_USD_PER_MILLION:.2f} per million operations",
            usd(mixed_usd),
            "met" if mixed_usd <= TARGET_MIXED_USD_PER_MILLION else "NOT met",
        )
    ]
    for workflow, label in _MARGINAL:
        runs = MIXED_EXECUTIONS if workflow in _THREADED else 1
        variant = stack.run_workflow(workflow, {}, label=label, executions=runs)
        totals = _totals(variant)
        diff = {key: totals[key] - base_totals[key] for key in totals}
        if workflow in _RESUMES:
            wu, sqs = diff["write units"], diff["SQS requests"]
            met = wu <= TARGET_RESUME_WRITE_UNITS and sqs <= TARGET_RESUME_SQS_REQUESTS
            targets.append(
                (
                    f"per resume, all-in: <= {TARGET_RESUME_WRITE_UNITS} write units and "
                    f"<= {TARGET_RESUME_SQS_REQUESTS} SQS requests ({_RESUMES[workflow]})",
                    f"{fmt(wu)} write units, {fmt(sqs)} SQS requests",
                    "met"
                    if met
                    else "NOT met" + (" (write units met)" if wu <= TARGET_RESUME_WRITE_UNITS else ""),
                )
            )
        per_execution = Counter({k: v // variant.executions for k, v in variant.operation_kinds.items()})
        kinds = per_execution - base.operation_kinds
        rows.append(
            [
                label,
                "+ " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
                *(fmt(diff[key]) for key in _MARGINAL_COLUMNS),
                usd(diff["usd"] * 1_000_000),
                usd(diff["usd"] * 1_000_000 / max(1.0, diff["operations"])),
            ]
        )
        summary.append(
            f"  {label:>48}: +{diff['operations']:.0f} ops, +{diff['write units']:.1f} WU, "
            f"+{diff['read units']:.1f} RU, +{diff['SQS requests']:.0f} SQS, "
            f"+{diff['Scheduler invocations']:.0f} Scheduler: ${diff['usd'] * 1e6:.2f} per million"
        )
    markdown = "\n\n".join(
        [
            _MIXED_INTRO.format(branches=bench_workflows.PARALLEL_BRANCHES, executions=MIXED_EXECUTIONS)
            + ", ".join(f"{k} {v}" for k, v in sorted(mixed.operation_kinds.items()))
            + ".",
            md_table(_PER_OP_HEADER, [_per_op_row(mixed)]),
            md_table(["API", "mixed"], _api_rows([mixed])),
            md_table(["service", "mixed"], _cost_rows([mixed])),
            _MARGINAL_INTRO.format(executions=MIXED_EXECUTIONS),
            md_table(
                [
                    "operation",
                    "operations added",
                    *_MARGINAL_COLUMNS,
                    "$ / million of these",
                    "$ / million SDK operations added",
                ],
                rows,
            ),
        ]
    )
    return SectionResult("Non-step operations (moto backend)", markdown, summary, targets)


def _prose(text: str) -> str:
    return " ".join(text.split())


_STEPS_INTRO = _prose(
    """
    Workflow: `sequential_steps` in `tools/bench_workflows.py`, N `context.step` calls in a row, run by one
    Lambda invocation (no step suspends). Operations = the durable operations the execution recorded (N
    steps; the execution itself not counted). Each size is one execution, from the client's StartExecution
    to its end.
    """
)
_MIXED_INTRO = (
    _prose(
        """
    Workflow `mixed` (`tools/bench_workflows.py`): a step, a 2 s wait (an SQS message with DelaySeconds), a
    step, a 2 h wait (a one-time EventBridge Scheduler schedule; the virtual clock skips to it), a
    `wait_for_callback` whose result the client sends (as `stepwell callback succeed` does), a `parallel` of
    {branches} one-step branches and a last step. {executions} executions one after the other, each from
    StartExecution to its end, figures per operation over all of them (the SDK runs a parallel's branches on
    threads, so how their checkpoints fall into batches varies from one execution to the next). Operations
    by kind (all executions):
    """
    )
    + " "
)
_MARGINAL_INTRO = _prose(
    """
    Marginal cost of one non-step operation: a workflow of one step plus that operation, minus the
    one-step workflow (per execution, all requests from StartExecution on; one execution each,
    {executions} for the parallel, whose branches' checkpoints fall into batches differently from run to
    run). `$ / million of these` is the added cost of a million such calls; a wait_for_callback is three
    SDK operations (its context, the callback and the submitter step), a parallel is its context, one
    context per branch and the branches' steps, hence the last column. A wait suspends the execution: its
    cost is mostly that of the extra invocation (lease, log load, wake-up message). Results are sent
    before any schedule fires, and each run goes on until no message or schedule is left, so a wake-up an
    execution leaves behind (a deadline that was not needed) is counted with it.
    """
)

# Workflows whose SDK threads (a parallel's branches) make their batches vary: run MIXED_EXECUTIONS times.
_THREADED = frozenset({"single-parallel"})

_MARGINAL_COLUMNS = (
    "Lambda invocations",
    "DynamoDB requests",
    "write units",
    "read units",
    "SQS requests",
    "Scheduler invocations",
    "S3 requests",
)


# ------------------------------------------------------------------------------ code versions

VERSIONS_WORKFLOW = "single-long-wait"
VERSIONS_QUICK = "single-step"  # ends in its first run
VERSIONS_EXECUTIONS = 25
_QUICK_UNVERSIONED = f"unversioned: {VERSIONS_QUICK}, start to the end"
_QUICK_PINNED = f"pinned to the live version: {VERSIONS_QUICK}, start to the end"


class BenchVersions:
    """The worker function's published versions for the bench (the FunctionVersions port): each version
    is an entry runtime in this process whose engine runs as that version; the live one is the runtime the
    played event source mapping reaches. A forward runs its event on the pinned version's runtime and is
    counted as one Lambda invocation (modelled): the synchronous Invoke request is that invocation."""

    def __init__(self, stack: MotoStack) -> None:
        self._stack = stack
        self._unversioned = stack.runtime
        self.runtimes: dict[str, Any] = {}
        self.live: str | None = None

    def publish(self) -> Any:
        """A new version, made live; returns its runtime."""
        from stepwell.entry import EntryRuntime

        version = str(len(self.runtimes) + 1)
        engine = dataclasses.replace(self._unversioned.engine, code_version=version, functions=self)
        self.runtimes[version] = EntryRuntime(engine)
        self.live = version
        return self.runtimes[version]

    def current_version(self) -> str | None:
        return self.live

    def list_versions(self) -> list[Any]:
        from stepwell.model import FunctionVersion

        return [FunctionVersion(v, ("live",) if v == self.live else ()) for v in self.runtimes]

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        self._stack.modelled.lambda_invocations += 1
        self._stack.modelled.forwarded_invocations += 1
        answer: dict[str, Any] = self.runtimes[version].handle_event(dict(event), None)
        return answer

    def delete_version(self, version: str) -> None:
        del self.runtimes[version]


@dataclass
class PerMessage:
    """One phase of a set of executions, per message the worker received (an SQS message, or a direct
    invocation: the wake-up Scheduler invoked)."""

    label: str
    measurement: Measurement
    messages: int

    def per(self, value: float) -> float:
        return value / self.messages if self.messages else 0.0

    @property
    def requests(self) -> int:
        """Every AWS request: the engine's, and those made on its behalf (the mapping's SQS requests,
        Scheduler's SendMessage or Invoke, the forwarding Invoke)."""
        m = self.measurement
        modelled = m.modelled
        return (
            sum(m.calls.values())
            + modelled.esm_receives
            + modelled.esm_deletes
            + modelled.scheduler_sends
            + modelled.scheduler_invokes
            + modelled.forwarded_invocations
        )

    def row(self) -> list[str]:
        m = self.measurement
        return [
            self.label,
            f"{m.executions:,}",
            f"{self.messages:,}",
            fmt(self.per(m.modelled.lambda_invocations)),
            fmt(self.per(m.modelled.forwarded_invocations)),
            fmt(self.per(self.requests)),
            fmt(self.per(m.service_calls("dynamodb"))),
            fmt(self.per(m.write_units)),
            fmt(self.per(m.read_units)),
            usd(self.per(sum(m.costs().values())) * 1_000_000),
        ]


def _start_phase(
    stack: MotoStack, label: str, prefix: str, workflow: str = VERSIONS_WORKFLOW
) -> tuple[PerMessage, list[str]]:
    """Start the executions and run them to their wait (or their end, for a workflow that ends in its
    first run), counting from the StartExecution requests on."""
    stack.reset_counters()
    started = time.perf_counter()
    execution_ids = [
        stack.client.start_execution(workflow, {}, execution_name=f"{prefix}-{index}")
        for index in range(VERSIONS_EXECUTIONS)
    ]
    stack.drain(fire_schedules=False)
    return _per_message(stack, label, execution_ids, started), execution_ids


def _end_phase(stack: MotoStack, label: str, execution_ids: Sequence[str]) -> PerMessage:
    """Fire the waiting executions' wake-ups and run them to their end, counting from the first wake-up."""
    stack.reset_counters()
    started = time.perf_counter()
    stack.drain()
    return _per_message(stack, label, execution_ids, started)


def _per_message(stack: MotoStack, label: str, execution_ids: Sequence[str], started: float) -> PerMessage:
    measurement = stack.measure(label, execution_ids, time.perf_counter() - started)
    return PerMessage(label, measurement, stack.delivered_messages)


def _write_units_by_request(*phases: PerMessage) -> dict[str, float]:
    units: dict[str, float] = {}
    for phase in phases:
        for key, tally in phase.measurement.dynamo.items():
            units[key] = units.get(key, 0.0) + tally.write_units
    return units


def _check_ended_on(stack: MotoStack, execution_ids: Sequence[str], version: str | None) -> None:
    for execution_id in execution_ids:
        description = stack.client.describe_execution(execution_id)
        if description["Status"] != "SUCCEEDED" or description.get("Version") != version:
            raise RuntimeError(
                f"{execution_id} ended {description['Status']} on version {description.get('Version')}, "
                f"not SUCCEEDED on {version}"
            )


def section_versions(options: Options) -> SectionResult:
    """What pinning executions to code versions costs: per execution, and per message outside and during a
    transition (a deploy while executions wait)."""
    stack = options.stacks.moto()
    versions = BenchVersions(stack)
    unversioned_runtime = stack.runtime
    phases: dict[str, PerMessage] = {}
    try:
        log(f"versions: {VERSIONS_EXECUTIONS} executions of {VERSIONS_WORKFLOW} per row on moto")
        phases["u1"], ids = _start_phase(stack, "unversioned: start to the wait", "unversioned")
        phases["u2"] = _end_phase(stack, "unversioned: wake-up to the end", ids)
        _check_ended_on(stack, ids, None)
        phases["uq"], ids = _start_phase(stack, _QUICK_UNVERSIONED, "unversioned-quick", VERSIONS_QUICK)
        _check_ended_on(stack, ids, None)

        stack.runtime = versions.publish()  # version 1 is live
        phases["p1"], ids = _start_phase(stack, "pinned to the live version: start to the wait", "pinned")
        phases["p2"] = _end_phase(stack, "pinned to the live version: wake-up to the end", ids)
        _check_ended_on(stack, ids, "1")
        phases["pq"], ids = _start_phase(stack, _QUICK_PINNED, "pinned-quick", VERSIONS_QUICK)
        _check_ended_on(stack, ids, "1")
        # The headline workflows as the module deploys them: every execution runs on a published version.
        log("versions: 10 steps and mixed, pinned to the live version")
        deployed = [
            stack.run_workflow("sequential-steps", {"steps": 10}, label="10 steps, pinned"),
            stack.run_workflow("mixed", {"order": 7}, label="mixed, pinned", executions=MIXED_EXECUTIONS),
        ]

        _, ids = _start_phase(stack, "", "transition")  # they wait, pinned to version 1
        stack.runtime = versions.publish()  # the deploy: version 2 is live, the mapping reaches it
        phases["t2"] = _end_phase(stack, "pinned to an older version (a transition): wake-up to the end", ids)
        _check_ended_on(stack, ids, "1")
    finally:
        stack.runtime = unversioned_runtime
    u1, u2, p1, p2, t2 = (phases[key] for key in ("u1", "u2", "p1", "p2", "t2"))
    uq, pq = phases["uq"], phases["pq"]
    executions = VERSIONS_EXECUTIONS

    def per_execution(first: PerMessage, second: PerMessage, value: Callable[[PerMessage], float]) -> float:
        return (value(first) + value(second)) / executions

    pin_units = per_execution(p1, p2, lambda p: p.measurement.write_units) - per_execution(
        u1, u2, lambda p: p.measurement.write_units
    )
    pin_requests = per_execution(p1, p2, lambda p: p.requests) - per_execution(u1, u2, lambda p: p.requests)
    pin_usd = per_execution(p1, p2, lambda p: sum(p.measurement.costs().values())) - per_execution(
        u1, u2, lambda p: sum(p.measurement.costs().values())
    )
    steady_invocations = p2.per(p2.measurement.modelled.lambda_invocations) - u2.per(
        u2.measurement.modelled.lambda_invocations
    )
    steady_requests = p2.per(p2.requests) - u2.per(u2.requests)
    extra_invocations = t2.per(t2.measurement.modelled.lambda_invocations) - p2.per(
        p2.measurement.modelled.lambda_invocations
    )
    extra_requests = t2.per(t2.requests) - p2.per(p2.requests)
    extra_dynamodb = t2.per(t2.measurement.service_calls("dynamodb")) - p2.per(
        p2.measurement.service_calls("dynamodb")
    )
    extra_reads = t2.per(t2.measurement.read_units) - p2.per(p2.measurement.read_units)
    extra_usd = (
        t2.per(sum(t2.measurement.costs().values())) - p2.per(sum(p2.measurement.costs().values()))
    ) * 1_000_000
    by_request = _write_units_by_request(p1, p2)
    for key, units in _write_units_by_request(u1, u2).items():
        by_request[key] = by_request.get(key, 0.0) - units
    pin_parts = ", ".join(
        f"{key} {fmt(units / executions)}" for key, units in sorted(by_request.items()) if units
    )
    quick_units = (pq.measurement.write_units - uq.measurement.write_units) / executions
    quick_requests = (pq.requests - uq.requests) / executions
    findings = [
        f"**Pinning an execution that ends in its first run: {fmt(quick_units)} write units, "
        f"{fmt(quick_requests)} requests** ({VERSIONS_QUICK}, pinned minus unversioned): its end's "
        "UpdateItem names the version, and it never enters the `version-index`.",
        f"**Pinning an execution that goes on past its first run: {fmt(pin_units)} write units, "
        f"{fmt(pin_requests)} request(s)** ({usd(pin_usd * 1_000_000)} per million executions): the "
        "conditional UpdateItem that pins it as its first run ends (the item, its new `version-index` entry "
        "and its entry in the subject index, which projects every attribute) and the `version-index` "
        "entry's removal when it ends "
        f"(write units per execution by request, pinned minus unversioned: {pin_parts}).",
        f"**Outside a transition: {fmt(steady_invocations)} extra Lambda invocations and "
        f"{fmt(steady_requests)} extra requests per message** (a wake-up of an execution pinned to the live "
        "version against the same wake-up unversioned).",
        f"**During a transition: {fmt(extra_invocations)} extra Lambda invocation and {fmt(extra_requests)} "
        f"extra requests per message** ({fmt(extra_dynamodb)} DynamoDB, {fmt(extra_reads)} read units; "
        f"{usd(extra_usd)} per million messages) for an execution pinned to an older version: the live "
        "version reads the execution, finds it pinned elsewhere and forwards the message with one "
        "synchronous Invoke of that version, which then runs it as usual.",
    ]
    ten_steps_usd, mixed_usd = (measurement.usd_per_million_ops() for measurement in deployed)
    findings.append(
        f"**As the module deploys them** (the worker runs as a published version, so every execution is "
        f"pinned): 10 steps {usd(ten_steps_usd)}, `mixed` {usd(mixed_usd)} per million operations. The "
        "sections above run an unversioned worker; `mixed` waits, so its pin is the difference."
    )
    targets = [
        (
            f"10 steps < ${TARGET_USD_PER_MILLION:.2f} per million operations, pinned (as deployed)",
            usd(ten_steps_usd),
            "met" if ten_steps_usd < TARGET_USD_PER_MILLION else "NOT met",
        ),
        (
            f"mixed workflow <= ${TARGET_MIXED_USD_PER_MILLION:.2f} per million operations, pinned (as "
            "deployed)",
            usd(mixed_usd),
            "met" if mixed_usd <= TARGET_MIXED_USD_PER_MILLION else "NOT met",
        ),
        (
            "versions: nothing extra per message outside a transition",
            f"+{fmt(steady_invocations)} invocations, +{fmt(steady_requests)} requests per message",
            "met" if steady_invocations == 0 and steady_requests == 0 else "NOT met",
        ),
        (
            "versions: one extra invocation per message during a transition",
            f"+{fmt(extra_invocations)} invocations per message",
            "met" if extra_invocations <= 1.0 else "NOT met",
        ),
    ]
    markdown = "\n\n".join(
        [
            _VERSIONS_INTRO.format(executions=executions, workflow=VERSIONS_WORKFLOW, quick=VERSIONS_QUICK),
            md_table(
                [
                    "phase",
                    "executions",
                    "messages",
                    "Lambda invocations / message",
                    "of which forwards",
                    "AWS requests / message",
                    "DynamoDB requests / message",
                    "write units / message",
                    "read units / message",
                    "$ / million messages",
                ],
                [phase.row() for phase in (u1, u2, uq, p1, p2, pq, t2)],
            ),
            "\n".join(f"- {finding}" for finding in findings),
            _VERSIONS_NOTES,
        ]
    )
    summary = ["Code versions (per message; per execution for the pin):"] + [
        "  " + finding.replace("**", "") for finding in findings
    ]
    return SectionResult("Code versions: pinning and forwarding (moto backend)", markdown, summary, targets)


_VERSIONS_INTRO = _prose(
    """
    Workflow `{workflow}` (`tools/bench_workflows.py`: a 2 h wait, then a step), {executions} executions per
    row, driven as in the sections above, in two phases each: from the start to the wait (the first message:
    the execution's first run, which pins it) and from the wake-up (a fired schedule's direct invocation of
    the worker's alias, counted as a message) to the end. The `{quick}` rows (one step) end in their first
    run.
    Unversioned: the worker without a version (`AWS_LAMBDA_FUNCTION_VERSION` unset or `$LATEST`), which never
    pins nor forwards. Pinned to the live version: the worker runs as version 1, the version the queue's
    alias reaches. A transition: executions started on version 1 wait; version 2 is published and made
    live (a deploy); each wake-up reaches version 2, which forwards it to version 1. The worker's versions
    are entry runtimes in this process (`BenchVersions` in `tools/bench.py`); a forward runs the event on the
    pinned version's runtime and counts as one Lambda invocation.
    """
)
_VERSIONS_NOTES = _prose(
    """
    Here each wake-up comes alone (one fired schedule, one direct invocation), as Scheduler's wake-ups always
    do; a batch of up to 10 SQS messages pinned to one version is forwarded with one invoke, so a busy
    transition's messages cost less than one extra invocation each. Not included (as everywhere in this
    file): Lambda duration; the forwarding invocation waits for the invoke it makes, so a forwarded message
    is billed about twice the handler's duration, during a transition only.
    """
)


# ------------------------------------------------------------------------------ long-lived executions

LONG_LIVED_WORKFLOW = "long-lived"
LONG_LIVED_MEASURED = (10, 100)  # and the last cycle
TARGET_LONG_LIVED_READ_RATIO = 1.5


def _cold_runtime(stack: MotoStack) -> Any:
    """The stack's entry runtime without the journal cache: every message folds the whole log."""
    from stepwell.entry import EntryRuntime
    from stepwell.journal_cache import JournalCache, JournalCacheOptions

    cold = JournalCache(JournalCacheOptions(enabled=False))
    return EntryRuntime(dataclasses.replace(stack.runtime.engine, journals=cold))


def _run_cycles(
    stack: MotoStack, cycles: int, name: str, measured_on: Mapping[int, Any], reader: Any
) -> dict[int, PerMessage]:
    """Run one long-lived execution to its end, one wake-up at a time; the message of each cycle in
    `measured_on` (cycle -> the runtime that handles it) is measured alone. Cycle 1 is the start.
    `reader` (a runtime without the cache) counts the operations after a measurement, so that reading
    leaves the warm runtime's cache as the messages left it."""
    warm = stack.runtime
    results: dict[int, PerMessage] = {}
    execution_id = stack.client.start_execution(LONG_LIVED_WORKFLOW, {"cycles": cycles}, execution_name=name)
    stack.drain(fire_schedules=False)
    try:
        for cycle in range(2, cycles + 2):  # the message after the last cycle's wait ends it
            runtime = measured_on.get(cycle)
            if runtime is not None:
                stack.runtime = runtime
                stack.reset_counters()
            started = time.perf_counter()
            if not stack._fire_next_schedule():
                raise RuntimeError(f"{execution_id}: no wake-up scheduled after cycle {cycle - 1}")
            stack.drain(fire_schedules=False)
            if runtime is not None:
                stack.runtime = reader
                results[cycle] = _per_message(stack, f"cycle {cycle:,}", [execution_id], started)
                stack.runtime = warm
            if cycle % 100 == 0:
                log(f"long-lived: {name} at cycle {cycle:,} of {cycles:,}")
    finally:
        stack.runtime = warm
    status = stack.client.describe_execution(execution_id)["Status"]
    if status != "SUCCEEDED":
        raise RuntimeError(f"{execution_id} ended {status}, not SUCCEEDED")
    return results


def section_long_lived(options: Options) -> SectionResult:
    """Read and write units per wake-up of one execution as its log grows, warm and cold."""
    stack = options.stacks.moto()
    cycles = options.long_lived_cycles
    measured = sorted({c for c in LONG_LIVED_MEASURED if c < cycles} | {cycles})
    warm_runtime, cold_runtime = stack.runtime, _cold_runtime(stack)
    log(f"long-lived: {cycles:,} step-and-wait cycles on a warm worker, measured at {measured}")
    warm = _run_cycles(stack, cycles, "long-lived-warm", dict.fromkeys(measured, warm_runtime), cold_runtime)
    log(f"long-lived: the same cycles on a worker without the journal cache at {measured}")
    cold = _run_cycles(stack, cycles, "long-lived-cold", dict.fromkeys(measured, cold_runtime), cold_runtime)

    def units(phase: PerMessage) -> tuple[float, float, float]:
        m = phase.measurement
        # The operations table holds the log and the pending inputs: one Query each per message.
        log_reads = sum(t.read_units for key, t in m.dynamo.items() if key == "Query (operations)")
        return phase.per(m.read_units), phase.per(m.write_units), phase.per(log_reads)

    rows = []
    for cycle in measured:
        warm_read, warm_write, warm_log = units(warm[cycle])
        cold_read, cold_write, cold_log = units(cold[cycle])
        rows.append(
            [
                f"{cycle:,}",
                fmt(warm_read),
                fmt(warm_log),
                fmt(warm_write),
                fmt(cold_read),
                fmt(cold_log),
                fmt(cold_write),
            ]
        )
    first, last = measured[0], measured[-1]
    first_reads, last_reads = units(warm[first])[0], units(warm[last])[0]
    ratio = last_reads / first_reads if first_reads else math.inf
    met = ratio <= TARGET_LONG_LIVED_READ_RATIO
    finding = (
        f"Read units per cycle on a warm worker: {fmt(first_reads)} at cycle {first:,}, {fmt(last_reads)} at "
        f"cycle {last:,} ({ratio:.2f}x); without the journal cache {fmt(units(cold[last])[0])} at cycle "
        f"{last:,}."
    )
    targets = [
        (
            f"read units per cycle at cycle {last:,} <= {TARGET_LONG_LIVED_READ_RATIO}x cycle {first:,} "
            "(long-lived, warm worker)",
            f"{fmt(first_reads)} -> {fmt(last_reads)} ({ratio:.2f}x)",
            "met" if met else "NOT met",
        )
    ]
    markdown = "\n\n".join(
        [
            _LONG_LIVED_INTRO.format(cycles=cycles, workflow=LONG_LIVED_WORKFLOW),
            md_table(
                [
                    "cycle",
                    "warm: read units",
                    "of which operations-table Queries (log, inputs)",
                    "warm: write units",
                    "cold: read units",
                    "of which operations-table Queries (log, inputs)",
                    "cold: write units",
                ],
                rows,
            ),
            f"**{finding}**",
        ]
    )
    return SectionResult(
        "Long-lived executions: reads per wake-up as the log grows (moto backend)",
        markdown,
        ["Long-lived executions:", "  " + finding],
        targets,
    )


_LONG_LIVED_INTRO = _prose(
    """
    Workflow `{workflow}` (`tools/bench_workflows.py`): {cycles} cycles of a step then a one-hour wait, one
    execution, driven as in the sections above one wake-up at a time (each a fired schedule, one message).
    Warm: every message goes to the same entry runtime, as a warm Lambda container keeps its process, so
    the engine's journal cache (`stepwell.journal_cache`) holds the fold of the execution's log from the
    previous message and the load reads only the last batch it folded and any written since. Cold: a
    second execution runs the same way, but the measured cycles go to a runtime whose cache is disabled,
    which reads the whole log, as a new container does. Units are per message (per cycle), all DynamoDB
    requests of the message included (the execution's item, lease, inputs, the log, checkpoints, the
    wake-up's bookkeeping).
    """
)


def cpu_probe(runner: str, steps: int) -> dict[str, Any]:
    """Run in a fresh process: CPU seconds (time.process_time, all threads) per operation for executions
    of `steps` sequential steps, after one unmeasured warm-up execution."""
    handler = bench_workflows.sequential_steps
    executions = max(1, math.ceil(MIN_MEASURED_OPERATIONS / steps))
    run_one: Callable[[int, int], None]
    if runner == "local":
        from stepwell.testing.local import LocalStepwell

        local = LocalStepwell()
        local.register("sequential-steps", handler)

        def run_local(index: int, count: int) -> None:
            execution_id = local.start("sequential-steps", {"steps": count}, execution_name=f"e-{index}")
            status = local.run_to_completion(execution_id).status.value
            if status != "SUCCEEDED":
                raise RuntimeError(f"local run ended {status}")

        run_one = run_local
    elif runner == "sdk":
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        sdk = DurableFunctionTestRunner(handler=handler)

        def run_sdk(index: int, count: int) -> None:
            result = sdk.run(
                input=json.dumps({"steps": count}), execution_timeout=3_600, execution_name=f"e-{index}"
            )
            if str(getattr(result.status, "value", result.status)) != "SUCCEEDED":
                raise RuntimeError(f"SDK runner ended {result.status}")

        run_one = run_sdk
    else:
        raise ValueError(f"unknown runner {runner!r}")
    run_one(0, 10)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for index in range(1, executions + 1):
        run_one(index, steps)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    if runner == "sdk":
        sdk.close()  # type: ignore[no-untyped-call]
    operations = executions * steps
    return {
        "runner": runner,
        "steps": steps,
        "executions": executions,
        "operations": operations,
        "cpu_ms_per_op": cpu * 1000 / operations,
        "wall_seconds": wall,
    }


def _probe(runner: str, steps: int, timeout: float) -> dict[str, Any] | None:
    command = [sys.executable, str(Path(__file__).resolve()), "--cpu-probe", runner, "--steps", str(steps)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        log(f"cpu: {runner} at {steps:,} steps exceeded {timeout:.0f}s: skipped")
        return None
    if done.returncode != 0:
        raise RuntimeError(f"cpu probe {runner} {steps} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def section_cpu(options: Options) -> SectionResult:
    """CPU per operation in-process: Stepwell's local backend against the SDK's own local test runner."""
    rows: list[list[str]] = []
    summary = ["CPU per operation in-process (time.process_time, ms per step):"]
    measured: dict[str, dict[int, dict[str, Any]]] = {"local": {}, "sdk": {}}
    skipped: list[str] = []
    for steps in options.sizes:
        log(f"cpu: {steps:,} steps, local backend")
        local = _probe("local", steps, LOCAL_TIMEOUT_SECONDS)
        log(f"cpu: {steps:,} steps, SDK runner")
        sdk = _probe("sdk", steps, options.sdk_timeout)
        for name, result in (("local", local), ("sdk", sdk)):
            if result is not None:
                measured[name][steps] = result
        if sdk is None:
            skipped.append(f"{steps:,}")

        def cpu(result: dict[str, Any] | None) -> str:
            return f"{result['cpu_ms_per_op']:.3f}" if result else "skipped"

        def wall(result: dict[str, Any] | None) -> str:
            if not result:
                return ""
            return f"{result['wall_seconds'] * 1000 / result['operations']:.3f}"

        ratio = sdk["cpu_ms_per_op"] / local["cpu_ms_per_op"] if sdk and local else None
        rows.append(
            [
                f"{steps:,}",
                cpu(local),
                wall(local),
                cpu(sdk) if sdk else f"skipped (over {options.sdk_timeout:.0f} s)",
                wall(sdk),
                f"{ratio:.2f}x" if ratio else "",
                ("yes" if ratio > 1 else "NO") if ratio else "n/a",
                f"{local['executions'] if local else '-'} / {sdk['executions'] if sdk else '-'}",
            ]
        )
        summary.append(
            f"  {steps:>6,} steps: Stepwell local {cpu(local)}, SDK runner {cpu(sdk)}"
            + (f" (SDK / Stepwell {ratio:.2f}x)" if ratio else "")
        )
    notes: list[str] = []
    local_values = {steps: r["cpu_ms_per_op"] for steps, r in measured["local"].items()}
    if len(local_values) > 1:
        spread = max(local_values.values()) / min(local_values.values())
        notes.append(
            f"Stepwell local, largest / smallest CPU per operation across sizes: **{spread:.2f}**"
            + (
                f"; at 10,000 steps / at 100 steps: **{local_values[10_000] / local_values[100]:.2f}**"
                if 100 in local_values and 10_000 in local_values
                else ""
            )
            + "."
        )
    target_rows: list[tuple[str, str, str]] = []
    if len(local_values) > 1:
        largest = max(local_values)
        reference = local_values[largest]
        target_rows.append(
            (
                f"CPU per step flat across sizes (Stepwell local; within 25 % of {largest:,} steps)",
                by_size_text(local_values, lambda v: f"{v:.3f} ms"),
                verdict(local_values, lambda v: 0.8 * reference <= v <= 1.25 * reference),
            )
        )
    ratios = {
        steps: measured["sdk"][steps]["cpu_ms_per_op"] / measured["local"][steps]["cpu_ms_per_op"]
        for steps in options.sizes
        if steps in measured["sdk"] and steps in measured["local"]
    }
    if ratios:
        target_rows.append(
            (
                "CPU per step below the SDK's test runner at every size",
                "SDK / Stepwell " + by_size_text(ratios, lambda v: f"{v:.2f}x"),
                verdict(ratios, lambda v: v > 1.0)
                + (f" (SDK runner skipped at {', '.join(skipped)})" if skipped else ""),
            )
        )
    notes.append(
        "At 10 steps the fixed costs of an execution (its start, the invocation, the SDK's set-up of its "
        "checkpoint thread) are shared by 10 operations only, in both columns. CPU figures move from run to "
        "run when other work shares the machine."
    )
    if skipped:
        notes.append(
            f"The SDK runner was skipped at {', '.join(skipped)} steps: the size did not finish within "
            f"{options.sdk_timeout:.0f} s of wall time in its subprocess."
        )
    markdown = "\n\n".join(
        [
            _CPU_INTRO.format(minimum=f"{MIN_MEASURED_OPERATIONS:,}"),
            md_table(
                [
                    "steps",
                    "Stepwell local: ms CPU / op",
                    "wall ms / op",
                    "SDK runner: ms CPU / op",
                    "wall ms / op",
                    "SDK / Stepwell (CPU)",
                    "Stepwell below the SDK runner",
                    "executions measured (Stepwell / SDK)",
                ],
                rows,
            ),
            *notes,
        ]
    )
    summary += ["  " + note.replace("**", "") for note in notes]
    return SectionResult(
        "CPU per operation in-process (local backend vs the SDK's test runner)",
        markdown,
        summary,
        target_rows,
    )


_CPU_INTRO = _prose(
    """
    Workflow: the same `sequential_steps` handler, run by `stepwell.testing.local.LocalStepwell` (the
    engine over the memory store, a local queue and a virtual clock) and by the SDK's own
    `DurableFunctionTestRunner` (aws-durable-execution-sdk-python-testing, in-process, time skipping on).
    Each cell is one fresh Python process: one unmeasured 10-step warm-up execution, then enough
    executions to make at least {minimum} operations; CPU is `time.process_time()` over those executions
    (all threads of the process, so the SDK's checkpoint thread and the runner's scheduler count), divided
    by the operations. Wall time is shown for information: both run the SDK's background checkpointing,
    whose waits are not CPU.
    """
)


DEFINITIONS_BENCH = ROOT / "examples" / "definitions" / "bench.py"


class Background:
    """A measurement that runs in its own process while other sections run (one that counts requests, so
    sharing the machine does not change its figures), collected by its section."""

    def __init__(self, command: Sequence[str], timeout: float) -> None:
        self.command = list(command)
        self.timeout = timeout
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def result(self) -> tuple[int | None, str, str]:
        """(return code or None on timeout, stdout, stderr)."""
        remaining = max(1.0, self.timeout - (time.perf_counter() - self.started))
        try:
            out, err = self.process.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, err = self.process.communicate()
            return None, out, err
        return self.process.returncode, out, err


def start_definitions(options: Options) -> None:
    if DEFINITIONS_BENCH.exists():
        log(f"definitions: starting {DEFINITIONS_BENCH.relative_to(ROOT)} in the background")
        options.background["definitions"] = Background(
            [sys.executable, str(DEFINITIONS_BENCH), "--subjects", str(options.definitions_subjects)],
            DEFINITIONS_TIMEOUT_SECONDS,
        )


def section_definitions(options: Options) -> SectionResult:
    """The definitions engineer's bench (`examples/definitions/bench.py`): N subjects each receiving an
    event on the AWS adapters in moto, in its own process (started with the run, see `start_definitions`).
    Its markdown is embedded as it prints it."""
    subjects = options.definitions_subjects
    title = f"Definitions: {subjects:,} subjects each receiving two events (moto backend)"
    script = DEFINITIONS_BENCH.relative_to(ROOT)
    background = options.background.get("definitions")
    if background is None:
        return SectionResult(
            title, f"Not run: `{script}` does not exist.", [f"Definitions: {script} missing"]
        )
    log(f"definitions: waiting for {script}")
    code, out, err = background.result()
    if code is None:
        text = (
            f"Not measured: `{script} --subjects {subjects}` did not finish within "
            f"{background.timeout:.0f} s."
        )
        return SectionResult(title, text, [f"Definitions: {text}"])
    if code != 0:
        tail = "\n".join(err.strip().splitlines()[-5:])
        text = f"Not measured: `{script} --subjects {subjects}` failed:\n\n```\n{tail}\n```"
        return SectionResult(title, text, [f"Definitions: failed ({tail.splitlines()[-1] if tail else ''})"])
    lines = out.strip().splitlines()
    if lines and lines[0].startswith("## "):
        title, lines = lines[0][3:].strip(), lines[1:]
    intro = (
        f"Measured by `{script} --subjects {subjects}` (its own deployment in moto, in its own process, "
        "running beside the moto sections above), embedded as it reports."
    )
    if subjects != 1_000:
        intro += (
            f" {subjects:,} subjects, not 1,000: on moto in-process the time of this bench grows faster than "
            "the subjects (moto answers slower as its tables grow), and 1,000 do not fit `make bench`'s "
            "ten-minute budget; `tools/bench.py --sections definitions --definitions-subjects 1000` runs "
            "them."
        )
    summary = [f"Definitions ({subjects:,} subjects):"] + [
        "  " + line[2:] for line in lines if line.startswith("- ")
    ]
    targets: list[tuple[str, str, str]] = []
    wanted = {  # the bench's line -> (target, what the target row says)
        "- AWS requests per event that starts a context:": (
            TARGET_DEFINITIONS_START_REQUESTS,
            "AWS requests per event that starts a context (and its first run)",
        ),
        "- AWS requests per event that resumes a waiting context:": (
            TARGET_DEFINITIONS_RESUME_REQUESTS,
            "AWS requests per event that resumes a waiting context (and the run it causes)",
        ),
    }
    for line in lines:  # "- AWS requests per event that starts a context: 18.00"
        for prefix, (target, label) in wanted.items():
            if line.startswith(prefix):
                requests = float(line.split(":", 1)[1])
                verdict = "met" if requests <= target else "NOT met"
                targets.append((f"definitions: <= {target} {label}", fmt(requests), verdict))
    return SectionResult(title, intro + "\n\n" + "\n".join(lines).strip(), summary, targets)


# ------------------------------------------------------------------------------ definitions: replay cost

REPLAY_WAKE_UPS = (10, 500)
REPLAY_SAMPLES = 3  # wake-ups measured from each of REPLAY_WAKE_UPS on, averaged


def _replay_loop(expression: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": "loop",
        "nodes": [
            {"id": "t", "type": "trigger", "event": "start"},
            {"id": "c1", "type": "condition", "expression": expression},
            {"id": "w", "type": "wait", "duration": 1},
            {"id": "c2", "type": "condition", "expression": expression},
            {"id": "e", "type": "end"},
        ],
        "edges": [
            {"from": "t", "to": "c1"},
            {"from": "c1", "to": "w", "branch": "true"},
            {"from": "c1", "to": "e", "branch": "false"},
            {"from": "w", "to": "c2"},
            {"from": "c2", "to": "c1", "branch": "true"},
            {"from": "c2", "to": "e", "branch": "false"},
        ],
    }


def _replay_cpu(expression: str, data: Mapping[str, Any]) -> dict[int, float]:
    """CPU seconds (time.process_time: every thread, the SDK's checkpointing too) of the wake-ups from each
    of REPLAY_WAKE_UPS on, averaged, for one context of the loop on the local backend."""
    from stepwell.definitions.actions import ActionRegistry
    from stepwell.definitions.interpreter import register_interpreter
    from stepwell.definitions.router import EventSources, PathExtractor, Router
    from stepwell.definitions.runtime import DefinitionsRuntime
    from stepwell.registry import Registry
    from stepwell.testing.local import LocalStepwell

    local = LocalStepwell(registry=Registry())
    runtime = DefinitionsRuntime.in_memory(clock=local.clock, actions=ActionRegistry(builtins=False))
    register_interpreter(local.registry, runtime)
    router = Router(local.engine, runtime, extractor=PathExtractor(), sources=EventSources({"bench": ["*"]}))
    runtime.definitions.set_workflow("bench", _replay_loop(expression))
    detail = {"domain": "bench", "subjectId": "s1", "data": dict(data)}
    router.process_event(
        {"version": "0", "id": "e1", "detail-type": "start", "source": "bench", "detail": detail}
    )
    local.run_until_idle()
    spent: dict[int, list[float]] = {wake_up: [] for wake_up in REPLAY_WAKE_UPS}
    for wake_up in range(1, max(REPLAY_WAKE_UPS) + REPLAY_SAMPLES):
        due = local.queue.next_due_at()
        if due is None:
            raise RuntimeError(f"definitions-replay: the loop ended at wake-up {wake_up}")
        local.clock.advance_to(due)
        started = time.process_time()
        local.run_until_idle()
        took = time.process_time() - started
        for first in REPLAY_WAKE_UPS:
            if first <= wake_up < first + REPLAY_SAMPLES:
                spent[first].append(took)
    return {wake_up: sum(values) / len(values) for wake_up, values in spent.items()}


def section_definitions_replay(options: Options) -> SectionResult:
    """CPU per wake-up of a definition's loop, early and late in its life."""
    from stepwell.definitions.budgets import EXPRESSION_COST_LIMIT, ROOT_BYTES
    from stepwell.definitions.expressions import compile_expression, estimate_cost

    heavy = " and ".join(f'"needle{n}" not in event.data.tags' for n in range(8))
    tags = [f"t{n:05d}" for n in range(26_000)]  # about 230 KB as JSON: within the event's 256 KiB
    loops = [
        (
            "conditions reading the whole event (8 list walks each, the most validation allows is 16)",
            heavy,
            tags,
        ),
        (
            "cheap conditions (a comparison with a constant: evaluated in place, no step)",
            "event.data.go == true",
            [],
        ),
    ]
    rows: list[list[str]] = []
    summary = ["Definitions: CPU per wake-up of a trigger/condition/wait 1 s/condition loop:"]
    targets: list[tuple[str, str, str]] = []
    for label, expression, values in loops:
        log(f"definitions-replay: {label}")
        cost = estimate_cost(compile_expression(expression), ROOT_BYTES)
        measured = _replay_cpu(expression, {"tags": values, "go": True})
        early, late = (measured[wake_up] for wake_up in REPLAY_WAKE_UPS)
        ratio = late / early
        rows.append(
            [
                label,
                f"{cost:,} / {EXPRESSION_COST_LIMIT:,}",
                f"{early * 1000:.1f}",
                f"{late * 1000:.1f}",
                f"{ratio:.2f}x",
            ]
        )
        summary.append(f"  {label}: {early * 1000:.1f} ms at 10, {late * 1000:.1f} ms at 500 ({ratio:.2f}x)")
        targets.append(
            (
                f"definitions: CPU per wake-up at 500 within 1.5x of wake-up 10 ({label.split(' (')[0]})",
                f"{ratio:.2f}x",
                "met" if ratio <= 1.5 else "NOT met",
            )
        )
    markdown = "\n\n".join(
        [
            _prose(
                """
                One context of a loop (trigger, condition, wait 1 s, condition, back to the first condition)
                on `stepwell.testing.local.LocalStepwell` (memory stores, a virtual clock), one wake-up per
                second. CPU is `time.process_time()` (every thread: the SDK's checkpointing too) of each
                wake-up's run, averaged over three wake-ups from wake-up 10 and from wake-up 500. A costly
                condition is decided in a step whose result the log keeps, so a replay reads it rather than
                evaluating it again (before, wake-up k evaluated 2k conditions). What still grows with the log
                is the replay of its operations by the SDK and the engine (each wait, each decision step),
                tens of microseconds each: small beside conditions that read the event, the whole cost of a
                loop whose conditions cost nothing.
                """
            ),
            md_table(
                [
                    "conditions",
                    "estimated cost / limit (bytes read)",
                    "ms CPU at wake-up 10",
                    "ms CPU at wake-up 500",
                    "500 / 10",
                ],
                rows,
            ),
        ]
    )
    return SectionResult(
        "Definitions: CPU per wake-up of a long loop (local backend)", markdown, summary, targets
    )


# `make chaos` writes a section per backend between markers such as these (tools/chaos.py): a bench run
# keeps them.
CHAOS_SECTION = re.compile(r"<!-- (chaos[a-z-]*):start -->.*?<!-- \1:end -->", re.DOTALL)


def _kept_chaos_section(path: Path) -> str:
    """The chaos runs' sections of the file being replaced, with their markers ("" when it has none)."""
    text = path.read_text() if path.exists() else ""
    return "".join("\n" + match.group(0) + "\n" for match in CHAOS_SECTION.finditer(text))


# Sections in the order they appear in BENCHMARKS.md: (name for --sections, function).
SECTIONS: list[tuple[str, Callable[[Options], SectionResult]]] = [
    ("aws", section_aws),
    ("operations", section_operations),
    ("versions", section_versions),
    ("long-lived", section_long_lived),
    ("definitions", section_definitions),
    ("definitions-replay", section_definitions_replay),
    ("cpu", section_cpu),
]
# Started before the sections run (in the background), for the sections selected: name -> starter.
STARTERS: dict[str, Callable[[Options], None]] = {"definitions": start_definitions}


# ---------------------------------------------------------------------------------------------- the file


def _versions() -> str:
    names = ("aws-durable-execution-sdk-python", "aws-durable-execution-sdk-python-testing", "moto", "boto3")
    parts = []
    for name in names:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


HOW_MEASURED = """\
- **Backend.** moto in-process (`moto.mock_aws`, no server): the module's tables and indexes
  (`stepwell.testing.mock_deployment`, as docs/architecture.md describes them), the work queue and its
  DLQ, the payload bucket, the schedule group. The engine runs as deployed: every message goes through
  `stepwell.entry.EntryRuntime.handle_event` as an SQS batch event or as the asynchronous invocation of the
  worker's alias it is (the runtime `stepwell.entry.handler`
  builds from the Lambda's environment; here built from the same `StepwellConfig` with a virtual clock, so
  a 2-hour wait takes no real time) over `DynamoDbExecutionStore`, `SqsWorkQueue`, `WakeScheduler` (SQS
  delays up to 900 s, EventBridge Scheduler beyond) and `S3PayloadStore`, wired by
  `stepwell.client.build_engine`. Executions are started and callbacks sent with `StepwellClient`, on the
  same counted clients, with `direct_wake_ups` as the module's client_config has it: the client wakes an
  execution by invoking the worker's alias asynchronously (its Invoke request is counted; the bench keeps
  the event, `stepwell.testing.async_invoke.take_event_invokes`, and runs it next).
- **What plays AWS.** The bench plays the SQS event source mapping (receive up to 10 messages, hand them to
  the entry handler as an SQS batch event, delete them in one batch) and EventBridge Scheduler (fire the
  earliest one-time schedule: skip the virtual clock to it, hand its input to the entry handler as the
  asynchronous invocation of the worker's alias it is, or send it to the queue when it targets the queue,
  delete it) and Lambda's asynchronous invocations (the client's and Scheduler's) with its own boto3
  clients, which are not counted. The requests AWS makes on your behalf there are counted as *modelled*:
  one ReceiveMessage per non-empty receive, one DeleteMessageBatch per batch, one Lambda invocation per
  batch and per direct invocation, one Scheduler invocation per fired schedule and one SQS SendMessage per
  schedule fired to the queue. The event source mapping's empty long
  polls are a fixed cost of an idle queue, not a per-operation one, and are left out.
- **Workflows.** `tools/bench_workflows.py`: unmodified `@durable_execution` handlers, the same objects on
  every backend and in the SDK's runner.
- **Counting.** Every request the engine and the client make goes through `stepwell.aws.AwsClients`, whose
  `RequestCounter` counts calls by API. DynamoDB read and write units are computed from item sizes (moto's
  ConsumedCapacity is a constant per request): see `DynamoMeter` in `tools/bench.py` (1 write unit per KB of
  the larger of the item before and after, plus each GSI entry written, changed or removed, sized by its
  projection, so a KEYS_ONLY index costs only when its key changes; 1 read unit per
  4 KB, a Query summing its items, half for eventually consistent reads; a failed conditional write costs
  its units).
- **Operations.** The durable operations the execution recorded (steps, waits, callbacks, contexts), the
  execution itself not counted: the unit AWS Lambda durable functions bills ($8.00 per million). Step
  Functions Standard is taken as one state transition per operation ($25.00 per million).
- **Cost.** Counts times the list prices below. Not included, on any side: Lambda compute (GB-seconds) of
  the handler, storage, data transfer, free tiers.
- **CPU.** `time.process_time()` in a fresh process per size and runner; see that section.
"""


def _targets_summary(results: Sequence[SectionResult]) -> list[str]:
    rows = [list(row) for result in results for row in result.targets]
    if not rows:
        return []
    return [
        "## Against the targets",
        "Computed from the measurements below (a report, not a test: nothing here fails the build).",
        md_table(["target", "measured", "verdict"], rows),
    ]


def _price_text(value: float) -> str:
    text = f"{value:.4f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"${whole}.{fraction.ljust(2, '0')}"


def render(results: Sequence[SectionResult], started: float, selected: Sequence[str]) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    price_rows = [[p.label, f"{_price_text(p.usd)} per {p.per:,}", p.source] for p in PRICES.values()]
    price_rows.append(
        [
            "AWS Lambda durable functions",
            f"${DURABLE_FUNCTIONS_PER_MILLION:.2f} per 1,000,000 operations",
            "aws.amazon.com/lambda/pricing",
        ]
    )
    price_rows.append(
        [
            "Step Functions Standard",
            f"${STEP_FUNCTIONS_PER_MILLION:.2f} per 1,000,000 state transitions",
            "aws.amazon.com/step-functions/pricing",
        ]
    )
    parts = [
        "# Stepwell benchmarks",
        "Generated by `make bench` (`tools/bench.py --write BENCHMARKS.md`); do not edit by hand. "
        "Every figure below was measured by the run that wrote this file.",
        f"- run: {now}, {time.perf_counter() - started:.0f} s, commit {_commit()}, "
        f"sections: {', '.join(selected)}\n"
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n"
        f"- packages: {_versions()}",
        *_targets_summary(results),
        "## How measured",
        HOW_MEASURED,
        "## Prices used (us-east-1, on-demand list prices)",
        "Published prices as of 2026-11 (DynamoDB on-demand: the prices in force since the cut of "
        "2024-11-01). Free tiers ignored.",
        md_table(["item", "price", "source"], price_rows),
    ]
    for result in results:
        parts += [f"## {result.title}", result.markdown]
    return "\n\n".join(parts).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--write", type=Path, help="write the results to this markdown file")
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="step counts")
    parser.add_argument(
        "--sections", default=",".join(name for name, _ in SECTIONS), help="sections to run, comma-separated"
    )
    parser.add_argument("--sdk-timeout", type=float, default=SDK_TIMEOUT_SECONDS, help="seconds per SDK size")
    parser.add_argument(
        "--definitions-subjects",
        type=int,
        default=DEFINITIONS_SUBJECTS,
        help="subjects in the definitions bench",
    )
    parser.add_argument(
        "--long-lived-cycles",
        type=int,
        default=Options.long_lived_cycles,
        help="step-and-wait cycles of the long-lived execution (at least 10)",
    )
    parser.add_argument("--cpu-probe", choices=("local", "sdk"), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu_probe:
        print(json.dumps(cpu_probe(args.cpu_probe, args.steps)))
        return 0
    if args.long_lived_cycles < 10:
        parser.error(
            f"--long-lived-cycles must be at least 10 (cycle 10 is the baseline), got "
            f"{args.long_lived_cycles}"
        )
    sizes = tuple(int(size) for size in args.sizes.split(",") if size.strip())
    wanted = [name.strip() for name in args.sections.split(",") if name.strip()]
    unknown = set(wanted) - {name for name, _ in SECTIONS}
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; known: {[name for name, _ in SECTIONS]}")
    started = time.perf_counter()
    results: list[SectionResult] = []
    with contextlib.ExitStack() as exits:
        options = Options(
            sizes=sizes,
            sdk_timeout=args.sdk_timeout,
            stacks=Stacks(exits),
            definitions_subjects=args.definitions_subjects,
            long_lived_cycles=args.long_lived_cycles,
        )
        for name, starter in STARTERS.items():
            if name in wanted:
                starter(options)
        for name, section in SECTIONS:
            if name in wanted:
                results.append(section(options))
    print()
    for result in results:
        print(f"== {result.title}")
        for line in result.summary:
            print(line)
        print()
    if args.write:
        text = render(results, started, [name for name, _ in SECTIONS if name in wanted])
        args.write.write_text(text + _kept_chaos_section(args.write))
        print(f"wrote {args.write} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
