"""The local backend: the engine over the memory store, run in-process on a virtual clock.

`LocalStepwell` plays the work queue and the timers itself (a heap of messages ordered by due time) and
drives the real Worker. `run_until_idle` processes every message due now; `run_to_completion` also skips
the virtual clock to the next wake-up whenever nothing is due, so a three-day wait takes no real time.

Code versions, as the deployed worker has them (docs/engine.md): until `deploy` is called the code is
unversioned (nothing is pinned). Each `deploy(workflows)` publishes a version ("1", "2", ...) with its own
registry, engine and worker over the same store, queue and clock, and makes it the live one (the alias the
queue's messages reach). An execution is pinned to the version that first runs it; a message for one
pinned to an older version gets a "forward" outcome from the live worker and is handed to that version's
worker, as the deployed worker forwards it with a Lambda invoke (`forwarded` counts them). `functions` is
the in-memory `FunctionVersions`, so `engine.upgrade_execution` and `stepwell.core.versions.prune_versions`
work here too:

    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    first = local.start("orders", {"id": 1})
    local.run_until_idle()                     # first waits, pinned to "1"
    local.deploy({"orders": orders_v2})        # "2" is live: new executions run v2
    second = local.start("orders", {"id": 2})
    local.run_to_completion(first)             # on v1 (forwarded), v1's result
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Unpack

from stepwell.aws.work_queue import MAX_DELAY_SECONDS
from stepwell.clock import VirtualClock
from stepwell.config import DEFAULT_WORKER_ALIAS
from stepwell.core.engine import Engine
from stepwell.core.invoke_targets import MemoryLambdaInvoker
from stepwell.core.logs import workflow_of
from stepwell.core.metrics import NAMESPACE, UNITS, EmfMetrics, Metric
from stepwell.core.registry import Handler, PlainFunction, Registry, WorkflowSettings
from stepwell.core.status_events import MemoryStatusEvents
from stepwell.core.worker import Worker, parse_invoke_message
from stepwell.errors import ForwardFailed, InvalidArgument, VersionNotFound
from stepwell.limits import PayloadLimits
from stepwell.memory.payloads import MemoryPayloadStore
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import (
    ExecutionRecord,
    ExecutionStatus,
    FunctionVersion,
    InvokeMessage,
    OutcomeAction,
    WorkOutcome,
)

# A message whose execution is busy (leased) is retried this much later, as SQS would after a visibility
# timeout.
BUSY_RETRY_SECONDS = 1.0


# CloudWatch's units (PutMetricData's MetricDatum.Unit) the engine uses.
_CLOUDWATCH_UNITS = {"Milliseconds", "Bytes", "Count"}


def check_emf_record(record: dict[str, Any]) -> None:
    """AssertionError unless `record` keeps the rules of CloudWatch's embedded metric format specification
    (and the contract's units): epoch-millisecond timestamp, one directive in namespace "Stepwell", 1..100
    metrics of 1..100 numbers each, every dimension a non-empty string of the record, valid JSON."""
    metadata = record["_aws"]
    assert isinstance(metadata["Timestamp"], int) and metadata["Timestamp"] > 1_600_000_000_000, metadata
    (directive,) = metadata["CloudWatchMetrics"]
    assert directive["Namespace"] == NAMESPACE, directive
    assert 1 <= len(directive["Metrics"]) <= 100, directive
    for dimension_set in directive["Dimensions"]:
        assert 1 <= len(dimension_set) <= 30, dimension_set
        for dimension in dimension_set:
            assert isinstance(record.get(dimension), str) and record[dimension], (dimension, record)
    for metric in directive["Metrics"]:
        assert metric["Unit"] in _CLOUDWATCH_UNITS and metric["Unit"] == UNITS[Metric(metric["Name"])], metric
        value = record[metric["Name"]]
        values = value if isinstance(value, list) else [value]
        assert 1 <= len(values) <= 100 and all(isinstance(v, int | float) for v in values), (metric, value)
    json.dumps(record, allow_nan=False)


def metric_totals(records: list[dict[str, Any]], workflow: str | None = None) -> dict[str, Any]:
    """The metrics of EMF `records` for one workflow (None: the records of no workflow, the
    reconciler's), summed over the records; timings (lists of values) are concatenated."""
    totals: dict[str, Any] = {}
    for record in records:
        if record.get("Workflow") != workflow:
            continue
        for directive in record["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                name, value = metric["Name"], record[metric["Name"]]
                if isinstance(value, list):
                    totals[name] = [*totals.get(name, []), *value]
                else:
                    totals[name] = totals.get(name, 0) + value
    return totals


class MemoryMetrics(EmfMetrics):
    """The worker's EMF records kept in `records` (the harness flushes after each message, as the
    entry does), so a test asserts the metrics of a run: `metric_totals(local.metrics.records, "orders")`."""

    def __init__(self, deployment: str = "local") -> None:
        self.records: list[dict[str, Any]] = []
        super().__init__(deployment, write=self.records.append)


class ExecutionStuck(RuntimeError):
    """The execution waits for something no timer will bring (a callback nobody sends)."""


class LocalQueue:
    """WorkQueue and Timers on the virtual clock."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, dict[str, Any]]] = []
        self._counter = itertools.count()
        self.sent = 0
        self.scheduled = 0

    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        if not 0 <= delay_seconds <= 900:
            raise ValueError(f"delay_seconds must be 0..900 (SQS), got {delay_seconds}")
        self.sent += 1
        heapq.heappush(self._heap, (self._clock.now() + delay_seconds, next(self._counter), dict(body)))

    def schedule(self, execution_id: str, due_at: float) -> None:
        self.scheduled += 1
        body = InvokeMessage(execution_id, due_at=due_at).to_body()
        heapq.heappush(self._heap, (due_at, next(self._counter), body))

    def cancel_all(self, execution_id: str) -> None:
        self._heap = [entry for entry in self._heap if entry[2].get("executionId") != execution_id]
        heapq.heapify(self._heap)

    def withdraw(self, execution_id: str, due_at: float, keep: float | None = None) -> None:
        """As on AWS: only a wake-up more than 900 s ahead (there a schedule) is withdrawn."""
        if due_at - self._clock.now() <= MAX_DELAY_SECONDS or keep == due_at:
            return
        kept = [
            entry
            for entry in self._heap
            if not (entry[0] == due_at and entry[2].get("executionId") == execution_id)
        ]
        if len(kept) != len(self._heap):
            self._heap = kept
            heapq.heapify(self._heap)

    def pop_due(self, now: float) -> dict[str, Any] | None:
        if self._heap and self._heap[0][0] <= now:
            return heapq.heappop(self._heap)[2]
        return None

    def next_due_at(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


@dataclass(kw_only=True)
class CodeVersion:
    """One version of the workflow code: its registry and the engine and worker that run it."""

    version: str | None  # None: unversioned (before the first deploy)
    registry: Registry
    engine: Engine
    worker: Worker
    published_at: float


class LocalFunctionVersions:
    """The in-memory worker function's versions (the FunctionVersions port): what `deploy` published,
    the live alias pointing at the newest."""

    def __init__(self, local: LocalStepwell, alias: str = DEFAULT_WORKER_ALIAS) -> None:
        self._local = local
        self.alias = alias

    def current_version(self) -> str | None:
        return self._local.live_version

    def list_versions(self) -> list[FunctionVersion]:
        live = self._local.live_version
        return [
            FunctionVersion(
                version=version,
                aliases=(self.alias,) if version == live else (),
                last_modified=datetime.fromtimestamp(code.published_at, tz=UTC).isoformat(),
            )
            for version, code in sorted(self._local.versions.items(), key=lambda item: int(item[0]))
        ]

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        """Run an SQS batch event on `version`, as a synchronous invoke of the qualified function does."""
        failures: list[dict[str, str]] = []
        for record in event.get("Records", []):
            outcome = self._local.forward(version, json.loads(record["body"]))
            # Pinned elsewhere: SQS delivers it again through the alias.
            if outcome.action is OutcomeAction.FORWARD:
                failures.append({"itemIdentifier": str(record.get("messageId", ""))})
        return {"batchItemFailures": failures}

    def delete_version(self, version: str) -> None:
        if version == self._local.live_version:
            raise InvalidArgument(f"version {version} is the {self.alias!r} alias's version: not deleted")
        self._local.code_version(version)
        del self._local.versions[version]


class LocalStepwell:
    """An in-process Stepwell: register workflows, start executions, send callbacks, read history."""

    def __init__(
        self,
        registry: Registry | None = None,
        inline_limit: int | None = None,
        limits: PayloadLimits | None = None,
    ) -> None:
        self.clock = VirtualClock()
        self.store = MemoryExecutionStore()
        self.payloads = MemoryPayloadStore()
        self.queue = LocalQueue(self.clock)
        # Every version's worker announces status changes here (`status_events.published`, in order).
        self.status_events = MemoryStatusEvents()
        # Every version's worker adds its metrics here, one EMF record per message (and workflow).
        self.metrics = MemoryMetrics()
        self.inline_limit = inline_limit
        # Every version's engine's payload limits (stepwell.limits; the defaults when None).
        self.limits = limits
        self.functions = LocalFunctionVersions(self)
        self.versions: dict[str, CodeVersion] = {}
        self.live_version: str | None = None
        self._unversioned = self._code(None, registry if registry is not None else Registry())
        self._published = 0
        self.outcomes: list[WorkOutcome] = []
        self.forwarded = 0  # messages the live version handed to the version their execution is pinned to

    def _code(self, version: str | None, registry: Registry) -> CodeVersion:
        engine = Engine(
            store=self.store,
            queue=self.queue,
            timers=self.queue,
            payloads=self.payloads,
            clock=self.clock,
            registry=registry,
            code_version=version,
            functions=self.functions if version is not None else None,
            status_events=self.status_events,
            metrics=self.metrics,
        )
        if self.inline_limit is not None:
            engine.inline_limit = self.inline_limit
        if self.limits is not None:
            engine.limits = self.limits
        return CodeVersion(
            version=version,
            registry=registry,
            engine=engine,
            worker=Worker(engine),
            published_at=self.clock.now(),
        )

    # --- code versions ---
    @property
    def live(self) -> CodeVersion:
        """The code the queue's messages reach first: the live version, or the unversioned code."""
        return self.versions[self.live_version] if self.live_version is not None else self._unversioned

    @property
    def registry(self) -> Registry:
        return self.live.registry

    @property
    def engine(self) -> Engine:
        return self.live.engine

    @property
    def worker(self) -> Worker:
        return self.live.worker

    def deploy(self, workflows: Registry | Mapping[str, Handler] | None = None) -> str:
        """Publish a new version of the code (a registry, or workflow names to handlers; by default the live
        code's workflows and functions) and make it the live one. Returns its version ("1", "2", ...)."""
        if isinstance(workflows, Registry):
            registry = workflows
        elif workflows is None:
            registry = self.live.registry.copy()
        else:
            # The allowed Lambda functions are the deployment's, not the code's: a new version keeps them.
            registry = self.live.registry.copy(registrations=False)
            for name, handler in workflows.items():
                registry.register(name, handler)
        self._published += 1  # Lambda never reuses a version number, even after a delete
        version = str(self._published)
        self.versions[version] = self._code(version, registry)
        self.live_version = version
        return version

    def code_version(self, version: str) -> CodeVersion:
        code = self.versions.get(version)
        if code is None:
            published = ", ".join(self.versions) or "none"
            raise VersionNotFound(f"no published version {version!r} (published: {published})")
        return code

    # --- the engine's API, forwarded ---
    def register(self, name: str, handler: Handler, **settings: Unpack[WorkflowSettings]) -> Handler:
        """Register a durable workflow with the settings of stepwell.core.registry.Registry.register
        (execution_timeout, concurrency, rate, flow_resolver)."""
        return self.registry.register(name, handler, **settings)

    def register_function(self, name: str, fn: PlainFunction) -> PlainFunction:
        """Register a plain function that `context.invoke(name, ...)` calls (stepwell.core.registry)."""
        return self.registry.register_function(name, fn)

    def allow_lambda_functions(self, functions: Mapping[str, PlainFunction]) -> MemoryLambdaInvoker:
        """Let `context.invoke` call these in-process functions as Lambda functions (unqualified function
        ARN -> fn(event, lambda_context)), as STEPWELL_INVOKE_FUNCTIONS allows deployed ones; the returned
        invoker records the invokes (`calls`)."""
        invoker = MemoryLambdaInvoker(functions)
        self.registry.allow_lambda_targets(functions, invoker)
        return invoker

    def start(self, name: str, input: Any = None, **options: Any) -> str:
        return self.engine.start_execution(name, input, **options)

    def describe(self, execution_id: str) -> dict[str, Any]:
        return self.engine.describe_execution(execution_id)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        return self.engine.get_execution_history(execution_id)

    def record(self, execution_id: str) -> ExecutionRecord:
        record = self.store.get_execution(execution_id)
        if record is None:
            raise KeyError(f"no execution {execution_id!r}")
        return record

    def callback_id(self, execution_id: str, name: str | None = None) -> str:
        """The id of the execution's latest callback that is still open (named `name`, if given)."""
        events = self.history(execution_id)
        closed = {
            event.get("Id")
            for event in events
            if event["EventType"] in ("CallbackSucceeded", "CallbackFailed", "CallbackTimedOut")
        }
        names = {event.get("Id"): event.get("Name") for event in events if event.get("Id")}
        for event in reversed(events):
            if event["EventType"] != "CallbackStarted" or event.get("Id") in closed:
                continue
            # A wait_for_callback's callback is named after its parent operation.
            labels = {event.get("Name"), names.get(event.get("ParentId"))}
            if name is None or name in labels:
                callback_id: str = event["CallbackStartedDetails"]["CallbackId"]
                return callback_id
        wanted = f" named {name!r}" if name is not None else ""
        raise LookupError(f"execution {execution_id!r} has no open callback{wanted}")

    # --- driving ---
    def process_one(self, body: Mapping[str, Any]) -> WorkOutcome:
        """Deliver one message to the live code; one for an execution pinned to another version is
        handed to that version, as the deployed worker forwards it. Its metrics are flushed after it."""
        try:
            outcome = self.run_on(self.live, body)
            if outcome.action is OutcomeAction.FORWARD:
                self.forwarded += 1
                self.metrics.add(Metric.FORWARDED_MESSAGES, 1, workflow_of(outcome.execution_id))
                try:
                    outcome = self.forward(str(outcome.details["version"]), body)
                except ForwardFailed as failed:
                    if failed.version_missing:  # as the entry does: it waits for an operator's upgrade
                        self.engine.keep_log_of(outcome.execution_id)
                    raise
                # Upgraded meanwhile: SQS delivers it again via the alias.
                if outcome.action is OutcomeAction.FORWARD:
                    self.queue.schedule(outcome.execution_id, self.clock.now() + BUSY_RETRY_SECONDS)
        finally:
            self.metrics.flush()
        self.outcomes.append(outcome)
        return outcome

    def forward(self, version: str, body: Mapping[str, Any]) -> WorkOutcome:
        """One message on `version`'s worker, as a forwarded invoke runs it; ForwardFailed when that
        version was deleted."""
        try:
            code = self.code_version(version)
        except VersionNotFound as error:
            message = f"cannot forward to the local worker's version: {error}"
            raise ForwardFailed(message, version, version_missing=True) from error
        return self.run_on(code, body)

    def run_on(self, code: CodeVersion, body: Mapping[str, Any]) -> WorkOutcome:
        """One message on one version's worker (a busy execution's message comes back later)."""
        message = parse_invoke_message(body)
        outcome = code.worker.handle_message(body)
        if outcome.action is OutcomeAction.BUSY:
            self.queue.schedule(message.execution_id, self.clock.now() + BUSY_RETRY_SECONDS)
        return outcome

    def run_until_idle(self) -> int:
        """Process every message due now on the virtual clock, and those they cause that are due now too;
        the clock does not move. Returns how many were processed.

        Idle means nothing is due now, not that the execution waits for its callback: a step whose retry is
        30 s away, a `context.wait` or any other timer also leaves it idle, before the callback is created.
        To get to a callback past those, use `run_to_completion(execution_id, on_idle=...)`, which moves the
        clock from one wake-up to the next and calls `on_idle` whenever nothing is due."""
        processed = 0
        while (body := self.queue.pop_due(self.clock.now())) is not None:
            self.process_one(body)
            processed += 1
        return processed

    def advance_to_next_wakeup(self) -> bool:
        """Skip the virtual clock to the next queued message. False when nothing is queued."""
        due_at = self.queue.next_due_at()
        if due_at is None:
            return False
        self.clock.advance_to(due_at)
        return True

    def run_to_completion(
        self,
        execution_id: str,
        on_idle: Callable[[LocalStepwell], bool] | None = None,
        max_steps: int = 100_000,
    ) -> ExecutionRecord:
        """Run until the execution ends and return its record: process what is due (`run_until_idle`),
        then skip the virtual clock to the next wake-up, so a three-day wait takes no real time.

        `on_idle(local)` runs whenever nothing is due, before the clock moves: it may act (send a callback,
        stop the execution) and returns True if it did, so that the run goes on at the same time, or False
        to let the clock move. It answers a callback whatever comes first (retry delays, waits):

            def warehouse_answers(local: LocalStepwell) -> bool:
                try:
                    callback_id = local.callback_id(execution_id, "warehouse-pick")
                except LookupError:  # not waiting for it yet
                    return False
                local.engine.send_callback_success(callback_id, json.dumps({"picked_by": "bay-7"}))
                return True

            record = local.run_to_completion(execution_id, on_idle=warehouse_answers)

        A callback nobody answers times out when its timeout comes (the clock skips to it). Raises
        ExecutionStuck when the execution runs with nothing scheduled (a callback without a timeout that
        nobody answers), or has not ended after `max_steps` rounds."""
        for _ in range(max_steps):
            self.run_until_idle()
            record = self.record(execution_id)
            if record.status is not ExecutionStatus.RUNNING and not len(self.queue):
                return record
            if on_idle is not None and on_idle(self):
                continue
            if record.status is not ExecutionStatus.RUNNING:
                self.advance_to_next_wakeup()
                continue
            if not self.advance_to_next_wakeup():
                raise ExecutionStuck(
                    f"execution {execution_id!r} is RUNNING but nothing is scheduled: it waits for a "
                    "callback or an external event that nobody sends"
                )
        raise ExecutionStuck(f"execution {execution_id!r} did not end within {max_steps} scheduling rounds")
