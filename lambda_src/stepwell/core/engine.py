"""The engine's API on its ports: start, stop, callbacks, describe, list and history, plus the log
writing shared by the worker and the service client.

The same Engine runs on the memory backend (stepwell.testing.local) and on AWS (the adapters' store,
queue, timers and payload store).
"""

from __future__ import annotations

import json
import logging
import secrets
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from stepwell.core.batch_body import decode_body, encode_body, restore_execution_input
from stepwell.core.batch_codec import packed_size
from stepwell.core.batch_keys import INPUT_REF
from stepwell.core.flow_control import FlowControl
from stepwell.core.flow_limits import MAX_FLOW_KEY_LENGTH, resolve_flow
from stepwell.core.history import events_from_bodies, without_execution_data
from stepwell.core.invoke_targets import aws_function_name
from stepwell.core.journal import InvokeRefused, Journal, new_callback_key
from stepwell.core.journal_cache import FoldedLog, JournalCache, copy_journal
from stepwell.core.journal_state import ChildStart, FlushedBatch
from stepwell.core.log_expiry import LOG_DECISION_SLACK_SECONDS, NAME_HOLD_SECONDS
from stepwell.core.metrics import Metric, Metrics, NoMetrics
from stepwell.core.registry import (
    QualifierRefused,
    Registry,
    default_registry,
    validate_workflow_name,
)
from stepwell.core.status_events import NoStatusEvents, iso_timestamp, status_change_detail
from stepwell.errors import (
    CallbackNotFound,
    ExecutionAlreadyEnded,
    ExecutionAlreadyExists,
    ExecutionNotFound,
    InvalidArgument,
    InvalidWorkflowName,
    LogIncomplete,
    PayloadTooLarge,
    StepwellError,
    VersionNotFound,
    WorkflowNotFound,
)
from stepwell.limits import PayloadLimits
from stepwell.model import (
    KEY_PART_PATTERN,
    KEY_PART_RULE,
    MAX_TAGS,
    Batch,
    CallbackRef,
    ExecutionId,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    FlowLimit,
    InputKind,
    InvokeMessage,
    Page,
    child_execution_id,
    kept_on_callback,
    lone_surrogate_at,
    tag_key_problem,
    tag_value_problem,
)
from stepwell.ports import (
    Clock,
    ExecutionStore,
    FunctionVersions,
    PayloadStore,
    StatusEvents,
    Timers,
    WorkQueue,
)

logger = logging.getLogger(__name__)

# What a parent's invoke reports for a child that timed out (the testing library's child_dispatcher.py:
# "the service reports a fixed error type and the child's execution timeout").
CHAINED_INVOKE_TIMEOUT_TYPE = "ChainedInvoke.Timeout"

# GetDurableExecutionHistory's MaxItems when none (or 0) is given (botocore's Lambda model).
DEFAULT_HISTORY_PAGE_ITEMS = 100

# Text longer than this (bytes) goes to the PayloadStore and its reference is kept in its place:
# DynamoDB items stay under 350 KB with room for the other attributes.
DEFAULT_INLINE_LIMIT = 200 * 1024
DEFAULT_LEASE_SECONDS = 900.0
# A suspending run's last batch rides on the lease's release only while the coordination record stays
# within one write unit (1 KB): the record holds the execution id twice (its key and eid) and up to this
# many bytes of other attribute names and values besides the batch (packed: stepwell.core.batch_codec).
CARRIED_RECORD_OVERHEAD_BYTES = 128
# An end rides on the release up to this size, packed (the record's own attributes take the rest of 3 KB): the
# release then costs at most 3 write units, never more than writing the batch to the log and deleting the
# record would.
CARRIED_END_MAX_BYTES = 3 * 1024 - 512
# A callback result up to this size (payload and error) is completed without reading the callback's record
# first (Engine._completed_callback); a larger one may need an object under the execution's prefix.
SMALL_CALLBACK_RESULT_BYTES = 16 * 1024
# The starters' and the workers' clocks differ by far less than this, and a name is free again only days
# after its execution ended (its retention period and NAME_HOLD_SECONDS).
CLOCK_SKEW_SECONDS = 3600.0
# Workflows whose input the execution input limit leaves alone: the definitions' interpreter
# (stepwell.features.definitions.interpreter.INTERPRETER_NAME), whose input is a stored definition (at
# most 409,600
# bytes, its validation) and one bus event (EventBridge's 256 KB, its nesting bounded by the router).
INPUT_BOUNDED_ELSEWHERE = frozenset({"stepwell.definition"})


def predates(record: ExecutionRecord, written_at: float) -> bool:
    """Whether a batch written at `written_at` is older than the execution `record`: an earlier execution
    under its name left it, whose record the table's TTL removed before the rest of its items. A time the
    store does not know (0, for an item without one) never predates."""
    return 0 < written_at < record.created_at - CLOCK_SKEW_SECONDS


def carried_batch_max_bytes(execution_id: str) -> int:
    """The largest batch a suspending run carries on its lease's release (a record of one write unit)."""
    return 1024 - 2 * len(execution_id.encode()) - CARRIED_RECORD_OVERHEAD_BYTES


def _check_key_part(label: str, value: object) -> str:
    if not isinstance(value, str) or not KEY_PART_PATTERN.match(value):
        raise InvalidArgument(f"invalid {label} {value!r}: {KEY_PART_RULE}")
    return value


def check_tags(tags: object) -> dict[str, str]:
    """An execution's tags as start_execution takes them: a mapping of at most MAX_TAGS keys to values
    (model.TAG_KEY_RULE, model.TAG_VALUE_RULE); InvalidArgument names the first bad one."""
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise InvalidArgument(f"tags must be a mapping of tag keys to values, got {tags!r}")
    if len(tags) > MAX_TAGS:
        raise InvalidArgument(f"{len(tags)} tags given ({', '.join(map(repr, tags))}); at most {MAX_TAGS}")
    for key, value in tags.items():
        _check_tag(key, value)
    return dict(tags)


def check_tag_filter(tag: object) -> tuple[str, str]:
    """A list_executions tag filter: a (key, value) pair of a valid tag."""
    if not isinstance(tag, tuple | list) or len(tag) != 2:
        raise InvalidArgument(f"a tag filter is a (key, value) pair, got {tag!r}")
    key, value = tag
    _check_tag(key, value)
    return key, value


def _check_tag(key: object, value: object) -> None:
    problem = tag_key_problem(key) or tag_value_problem(str(key), value)
    if problem is not None:
        raise InvalidArgument(problem)


ERROR_TEXT_FIELDS = ("ErrorType", "ErrorMessage", "ErrorData")
# An error object is kept in an item (the execution record, an external input): bound it well below 400 KB.
MAX_ERROR_BYTES = 64 * 1024


def check_error_object(error: object, what: str) -> dict[str, Any] | None:
    """An ErrorObject as Lambda's callback-failure and stop APIs take it: ErrorType, ErrorMessage and
    ErrorData strings and StackTrace a list of strings, all optional, at most MAX_ERROR_BYTES as JSON."""
    if error is None:
        return None
    allowed = [*ERROR_TEXT_FIELDS, "StackTrace"]
    if not isinstance(error, Mapping):
        raise InvalidArgument(f"{what} error must be an object with fields {allowed}, got {error!r}")
    unknown = set(error) - set(allowed)
    if unknown:
        raise InvalidArgument(f"unknown {what} error fields {sorted(map(str, unknown))}; allowed: {allowed}")
    for key in ERROR_TEXT_FIELDS:
        if key in error and not isinstance(error[key], str):
            raise InvalidArgument(f"{what} error field {key} must be a string, got {error[key]!r}")
    trace = error.get("StackTrace")
    if trace is not None and not (isinstance(trace, list) and all(isinstance(line, str) for line in trace)):
        raise InvalidArgument(f"{what} error field StackTrace must be a list of strings, got {trace!r}")
    size = len(json.dumps(dict(error)).encode("utf-8"))
    if size > MAX_ERROR_BYTES:
        raise PayloadTooLarge(f"{what} error is {size} bytes as JSON; the limit is {MAX_ERROR_BYTES}")
    return dict(error)


@dataclass(frozen=True)
class CallbackSent:
    """A completed callback: its execution as read after the completion, and the result as the callback's
    record keeps it (None when it may hold an object's reference), for a run the sender makes itself."""

    record: ExecutionRecord
    result: ExternalInput | None


def _input_json(name: str, input: Any) -> str:
    try:
        return json.dumps(input, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidArgument(
            f"input of workflow {name!r} is not JSON-serializable (nor are NaN and Infinity): {error}"
        ) from error


def _input_id(now: float) -> str:
    # Zero-padded milliseconds first: inputs sort (and are absorbed) in arrival order.
    return f"{int(now * 1000):015d}#{secrets.token_hex(6)}"


@dataclass
class Engine:
    store: ExecutionStore
    queue: WorkQueue
    timers: Timers
    payloads: PayloadStore
    clock: Clock
    registry: Registry = field(default_factory=lambda: default_registry)
    inline_limit: int = DEFAULT_INLINE_LIMIT
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    # The worker function version this engine runs as (None: unversioned, it never pins nor forwards)
    # and the function's published versions (for forwarding, upgrades and pruning).
    code_version: str | None = None
    functions: FunctionVersions | None = None
    # Where the worker announces executions' status changes (stepwell.core.status_events).
    status_events: StatusEvents = field(default_factory=NoStatusEvents)
    # Where the facts of each message handled go (stepwell.core.metrics; the entry and harness flush them).
    metrics: Metrics = field(default_factory=NoMetrics)
    # Folded journals of the executions this process ran (stepwell.core.journal_cache): a warm worker reads
    # only the log items written since.
    journals: JournalCache = field(default_factory=JournalCache, repr=False)
    # How large inputs, results and payloads may be (stepwell.limits; the deployment's max_*_bytes).
    limits: PayloadLimits = field(default_factory=PayloadLimits)
    # Per-key concurrency and rate limits (stepwell.core.flow_control), on this engine's ports.
    flow: FlowControl = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.flow = FlowControl(self.store, self.queue, self.timers, self.clock, self.metrics)

    # ------------------------------------------------------------------ payloads

    def offload(self, execution_id: str, label: str, text: str | None) -> tuple[str | None, bool]:
        stored, is_ref = self.offload_reference(execution_id, label, text)
        if is_ref:
            self.put_offloaded(execution_id, label, text)
        return stored, is_ref

    def offload_reference(self, execution_id: str, label: str, text: str | None) -> tuple[str | None, bool]:
        """What `offload` stores in an item for `text` (its reference when offloaded), writing nothing."""
        if text is None or len(text.encode("utf-8")) <= self.inline_limit:
            return text, False
        return self.payloads.reference(execution_id, label, text), True

    def put_offloaded(self, execution_id: str, label: str, text: str | None) -> None:
        """Put the object `offload_reference` named (the same object again, when it exists)."""
        assert text is not None
        self.payloads.put(execution_id, label, text)
        size = len(text.encode("utf-8"))
        self.metrics.add(Metric.PAYLOAD_BYTES_OFFLOADED, size, ExecutionId.parse(execution_id).workflow_id)

    def resolve(self, text: str | None, is_ref: bool) -> str | None:
        if text is None or not is_ref:
            return text
        return self.payloads.get(text)

    # ------------------------------------------------------------------ the log

    def load_journal(self, execution_id: str) -> Journal:
        """The execution's journal, the whole log folded: from the cache's fold when it has one (taken out
        of it: the caller owns the journal), reading only the batches from its last one on."""
        return self._load(execution_id).journal

    def open_journal(
        self,
        execution_id: str,
        pending: list[ExternalInput] | None = None,
        empty: bool = False,
        log_next: int | None = None,
    ) -> Journal:
        """load_journal for a worker's run, which ends it with close_journal: the run works on a copy, and
        the batches it writes are noted for the fold close_journal may cache. With `pending`, the
        execution's pending inputs (payloads as stored) are appended to it, read with the log. Nothing is
        read when the caller knows the log is `empty` (it created the execution this moment), nor when it
        knows the log's next seq (`log_next`, HandOff.log_next: no input is pending) and the cache holds the
        fold of exactly that much of it."""
        if empty:
            folded = FoldedLog(Journal(execution_id))
            folded.journal.finish_loading()
        else:
            folded = self._load(execution_id, pending, log_next)
        if not self.journals.enabled:
            return folded.journal
        live = copy_journal(folded.journal)
        self.journals.open(live, folded)
        return live

    def close_journal(self, journal: Journal, keep: bool) -> None:
        """With `keep` (the run flushed everything and was not fenced), cache the fold of the execution's
        log with the batches the run wrote, for its next message; otherwise the next load reads the whole
        log. Each written batch is folded from a fresh decode of its text, as a load would fold it."""
        run = self.journals.close(journal)
        if run is None or not keep:
            return
        for batch, text in run.written:
            body = decode_body(text)
            if INPUT_REF in body:  # folding it as a load does reads the input back: left to the next load
                return
            self._fold(run.folded, batch, body, len(text))
        if run.folded.journal.next_seq == journal.next_seq:  # it holds every batch the run wrote
            self.journals.put(journal.execution_id, run.folded)

    def _load(
        self, execution_id: str, pending: list[ExternalInput] | None = None, log_next: int | None = None
    ) -> FoldedLog:
        inputs: dict[str, str] = {}
        cached = self.journals.take(execution_id) if self.journals.enabled else None
        if cached is not None and log_next is not None and cached.journal.next_seq == log_next:
            folded: FoldedLog | None = cached  # the log has nothing the fold lacks
        else:
            folded = self._fold_after(cached, inputs, pending) if cached is not None else None
        if folded is None:
            if pending is not None:
                pending.clear()  # read again with the whole log
            folded = FoldedLog(Journal(execution_id))
            for batch in self._batches(execution_id, after_seq=-1, pending=pending):
                self._fold_read(folded, batch, inputs)
        folded.journal.finish_loading()
        return folded

    def _fold_after(
        self, cached: FoldedLog, inputs: dict[str, str], pending: list[ExternalInput] | None
    ) -> FoldedLog | None:
        """`cached` with the batches written after it folded on top; None when its last batch is not in
        the log as it was (the execution was created again after its items expired)."""
        last = cached.last_batch
        if last is None:
            return None
        batches = self._batches(cached.journal.execution_id, after_seq=last.seq - 1, pending=pending)
        first = next(batches, None)
        if first is None or not _same_batch(first, last):
            return None
        for batch in batches:
            self._fold_read(cached, batch, inputs)
        return cached

    def _fold(self, folded: FoldedLog, batch: Batch, body: dict[str, Any], size: int) -> None:
        """Fold one batch as the store holds it (`body`: its body as written, `size`: its stored text)."""
        if batch.seq != folded.journal.next_seq:
            raise LogIncomplete(
                f"execution {folded.journal.execution_id!r}: its log has batch {batch.seq} but not batch "
                f"{folded.journal.next_seq} (expired under the table's TTL)"
            )
        folded.journal.fold(batch.seq, body)
        folded.journal.offloaded_batches |= batch.body_is_ref
        folded.journal.log_expiry.note(batch.expires_at)
        oldest = folded.journal.oldest_batch_at
        if oldest is None or batch.created_at < oldest:
            folded.journal.oldest_batch_at = batch.created_at
        folded.last_batch = batch
        folded.size += size

    def _fold_read(self, folded: FoldedLog, batch: Batch, inputs: dict[str, str]) -> None:
        text = self._batch_text(batch)
        self._fold(folded, batch, self._stored_body(text, inputs), len(text))

    def _batches(
        self, execution_id: str, after_seq: int, pending: list[ExternalInput] | None = None
    ) -> Iterator[Batch]:
        """The execution's batches with seq > after_seq in order (one paginated Query), and with
        `pending` its pending inputs appended to it by the same Query."""
        after = after_seq
        while True:
            batches, last = self.store.load_batches(execution_id, after_seq=after, inputs=pending)
            yield from batches
            if last is None:
                return
            after = last

    def _batch_bodies(self, record: ExecutionRecord) -> Iterator[dict[str, Any]]:
        """The bodies of the execution's batches in order, as written, and last the batch its
        coordination record carries while the log has not taken it in (see carry_or_append_journal).
        Batches an earlier execution under its name left (`predates`) are not its own: left out."""
        execution_id = record.execution_id
        # Read before the log: a run that writes the carried batch meanwhile makes the log longer, so the
        # carried one is then not the log's next and is left out (the log holds it).
        carried = self.store.get_carried_batch(execution_id)
        inputs: dict[str, str] = {}
        count = 0
        for batch in self._batches(execution_id, after_seq=-1):
            if predates(record, batch.created_at):
                continue
            count += 1
            yield self._stored_body(self._batch_text(batch), inputs)
        if carried is not None and carried.seq == count and not predates(record, carried.created_at):
            yield self._stored_body(carried.body, inputs)

    def _batch_text(self, batch: Batch) -> str:
        return self.payloads.get(batch.body) if batch.body_is_ref else batch.body

    def _stored_body(self, text: str, inputs: dict[str, str]) -> dict[str, Any]:
        """A batch body as written: an offloaded execution input is read back once per load however many
        batches refer to it (`inputs`: those this load has read so far, by reference)."""
        body = decode_body(text)
        input_ref = body.get(INPUT_REF)
        if isinstance(input_ref, str):
            if input_ref not in inputs:
                inputs[input_ref] = self.payloads.get(input_ref)
            restore_execution_input(body, inputs[input_ref])
        return body

    def expire_log(self, journal: Journal, ended_at: float) -> None:
        """The execution ended at `ended_at`: its log expires a retention period after (before the end is
        logged, see Endings.end). No write when every batch already expires late enough
        (stepwell.core.log_expiry)."""
        if not journal.log_expiry.lasts_past(ended_at, self.store.retention_seconds):
            self.store.expire_log(journal.execution_id, journal.next_seq, ended_at)

    def keep_log_until(self, journal: Journal, now: float, wake_at: float | None) -> float | None:
        """The execution suspends until `wake_at` (None: until an input comes): the wake-up to arm, so that
        its next run still finds the whole log with a retention period to spare (stepwell.core.log_expiry). A
        wake-up later than that keeps the log now, a write per batch. None at all gets one at the last
        safe moment, which keeps the log if the execution still waits then."""
        safe_until = journal.log_expiry.safe_until(self.store.retention_seconds)
        if safe_until is None or (wake_at is not None and wake_at <= safe_until):
            return wake_at
        if wake_at is None and now < safe_until - LOG_DECISION_SLACK_SECONDS:
            return safe_until
        self.keep_log(journal)
        return wake_at

    def keep_log(self, journal: Journal) -> None:
        """Keep the execution's log until it ends (no batch expires): for a next run that may come at any
        time. A write per batch, none when no batch of it expires."""
        if journal.log_expiry.earliest is not None:
            self.store.keep_log(journal.execution_id, journal.next_seq)
            journal.log_expiry.made_kept()

    def keep_log_of(self, execution_id: str) -> None:
        """keep_log for an execution this process has not loaded (reads its log)."""
        self.keep_log(self.load_journal(execution_id))

    def append_journal(
        self, record: ExecutionRecord, journal: Journal, terminal: bool = False
    ) -> FlushedBatch:
        """Write the journal's unflushed changes as its next batch. Raises SequenceConflict when fenced."""
        return self._append_flushed(record, journal, journal.flush(), terminal)

    def carry_or_append_journal(
        self, record: ExecutionRecord, journal: Journal, terminal: bool = False
    ) -> Batch | None:
        """The last batch of a run, to carry on the lease's release instead of writing it when it is small
        and nothing waits for it to be stored, saving a write; otherwise written as append_journal does,
        and None. A run that suspends the execution: its InvocationCompleted and what a replay would
        record again (FlushedBatch.carriable: the wait it suspends on), which the execution's next batch
        takes in (Journal.carry). `terminal`: the execution's end (not its first batch), which the record
        keeps for the retention period."""
        flushed = journal.flush()
        if terminal:
            may_carry, limit = flushed.carriable_at_end, CARRIED_END_MAX_BYTES
        else:
            may_carry, limit = flushed.carriable, carried_batch_max_bytes(record.execution_id)
        if may_carry:
            text = encode_body(flushed.body)
            if packed_size(text) <= limit:  # as the record keeps it
                if journal.next_seq == 0 and not flushed.took_carried:
                    # A first run that suspended at once: it started now. A later run that carries again
                    # (it suspended at once too) holds the start the first one counted.
                    self.metrics.add(Metric.EXECUTIONS_STARTED, 1, record.workflow_id)
                self._count_recorded(record, flushed)
                return Batch(seq=journal.next_seq, body=text, created_at=self.clock.now(), terminal=terminal)
        self._append_flushed(record, journal, flushed, terminal)
        return None

    def resolve_callbacks(self, record: ExecutionRecord, callbacks: list[tuple[str, str]]) -> int:
        """Write the records that resolve new callback ids (callback id, operation id) to their execution
        and operation. A record that exists already (an earlier run made the same derived id) is kept,
        with the completion it may hold: returns how many did, whose run must go again to read them."""
        found = 0
        for callback_id, operation_id in callbacks:
            ref = CallbackRef(callback_id, record.execution_id, operation_id, version=self.code_version)
            found += not self.store.put_callback(ref)
        return found

    def _append_flushed(
        self, record: ExecutionRecord, journal: Journal, flushed: FlushedBatch, terminal: bool
    ) -> FlushedBatch:
        seq = journal.next_seq
        # Callback ids must resolve before the SDK hands them to user code (right after this returns).
        self.resolve_callbacks(record, flushed.new_callbacks)
        text = encode_body(flushed.body)
        body, is_ref = self.offload(record.execution_id, f"batch-{seq}", text)
        journal.offloaded_batches |= is_ref
        now = self.clock.now()
        retention = self.store.retention_seconds
        # The end's batch expires a retention period after the end (an ended record's own time when a late
        # run settles it: never after the execution's item); the others as stepwell.core.log_expiry says.
        if terminal:
            expires_at: float | None = (now if record.ended_at is None else record.ended_at) + retention
        else:
            expires_at = journal.log_expiry.expiry_for(now, retention)
        stored = Batch(
            seq=seq,
            body=body or "",
            created_at=now,
            body_is_ref=is_ref,
            terminal=terminal,
            expires_at=None if expires_at is None else float(int(expires_at)),
        )
        self.store.append_batch(record.execution_id, stored)
        journal.next_seq = seq + 1
        journal.log_expiry.note(stored.expires_at)
        self.journals.written(journal, stored, text)
        # Counted once written: a fenced worker's batch is not, and seq 0 (only one worker writes it)
        # holds the execution's start, unless the run that carried it counted it.
        if seq == 0 and not flushed.took_carried:
            self.metrics.add(Metric.EXECUTIONS_STARTED, 1, record.workflow_id)
        self._count_recorded(record, flushed)
        if flushed.absorbed_input_ids:
            self.store.delete_external_inputs(record.execution_id, flushed.absorbed_input_ids)
        # Callbacks the end closes are done at the end, so a stop settled days late (a redrive) leaves no
        # record that outlives the execution's own item (their ttl counts from this time).
        closed_at = record.ended_at if terminal and record.ended_at is not None else self.clock.now()
        for callback_id in flushed.timed_out_callbacks:
            self.store.complete_callback(callback_id, closed_at)
        for child in flushed.child_starts:
            self.start_child(record, child)
        return flushed

    def _count_recorded(self, record: ExecutionRecord, flushed: FlushedBatch) -> None:
        if flushed.operations:
            self.metrics.add(Metric.OPERATIONS_RECORDED, len(flushed.operations), record.workflow_id)

    # ------------------------------------------------------------------ starting

    def start_execution(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Start workflow `name` with a JSON-serializable input; idempotent on `execution_name`."""
        return self.start_execution_json(
            name, _input_json(name, input), execution_name, domain, subject_id, tags
        )

    def start_execution_to_run(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
    ) -> tuple[ExecutionRecord, bool]:
        """start_execution for a caller in the worker that runs the execution itself at once (Worker.run
        with worker.Known(record, fresh=created)): no message is sent. The record as stored, and whether
        this call created it (a repeated start finds the one stored; the caller runs it again, as a first
        start may have died before its run)."""
        return self._start(name, _input_json(name, input), execution_name, domain, subject_id, None, False)

    def start_execution_json(
        self,
        name: str,
        input_payload: str | None,
        execution_name: str | None = None,
        domain: str = "default",
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> str:
        """Start workflow `name` with its input as JSON text; idempotent on `execution_name` (the first
        start's tags stay: a repeat with other tags returns the same execution, as AWS)."""
        record, _ = self._start(name, input_payload, execution_name, domain, subject_id, tags, True)
        return record.execution_id

    def _start(
        self,
        name: str,
        input_payload: str | None,
        execution_name: str | None,
        domain: str,
        subject_id: str | None,
        tags: Mapping[str, str] | None,
        wake: bool,
    ) -> tuple[ExecutionRecord, bool]:
        validate_workflow_name(name)
        self._check_registered(name)
        _check_key_part("domain", domain)
        if execution_name is not None:
            _check_key_part("execution name", execution_name)
        if subject_id is not None:
            _check_key_part("subject id", subject_id)
        checked_tags = check_tags(tags)
        if name not in INPUT_BOUNDED_ELSEWHERE:
            # Before anything is read or written: a refused start leaves no trace.
            self.limits.execution_input.check(f"the input of workflow {name!r}", input_payload)
        instance_id = execution_name or uuid.uuid4().hex
        return self._create_execution(
            ExecutionId(domain, name, subject_id or instance_id, instance_id),
            input_payload,
            tags=checked_tags,
            wake=wake,
        )

    def _check_registered(self, name: str) -> None:
        if name not in self.registry:
            self.registry.get(name)  # raises WorkflowNotFound naming what is registered and allowed
            raise WorkflowNotFound(
                f"no workflow registered as {name!r} "
                f"(registered: {', '.join(self.registry.names()) or 'none'})"
            )

    def _create_execution(
        self,
        ids: ExecutionId,
        input_payload: str | None,
        parent: ExecutionRecord | None = None,
        parent_operation_id: str | None = None,
        tags: dict[str, str] | None = None,
        wake: bool = True,
    ) -> tuple[ExecutionRecord, bool]:
        """Create the execution (a child of `parent`'s chained invoke: pinned to the parent's version) and
        enqueue its first run (unless not `wake`); the same id again is the same start only with the same
        input. The record as stored and whether this call created it."""
        execution_id = str(ids)
        now = self.clock.now()
        # Before anything is stored: a key the input cannot give refuses the start.
        flow = self.resolve_flow_limits(ids.workflow_id, ids.domain, input_payload)
        # A large input's object is put only once the record is this start's own (or repeats a running
        # one): a refused start writes nothing, so it can never restart the retention of an ended
        # execution's payloads (a put is a new object; before, a retire then copied every object again).
        # The record names the object before it exists (its key is the content's digest); a start that
        # dies in between left no message either, and its caller's retry puts it (below).
        stored_input, input_is_ref = self.offload_reference(execution_id, "input", input_payload)
        record = ExecutionRecord(
            execution_id=execution_id,
            domain=ids.domain,
            workflow_id=ids.workflow_id,
            subject_id=ids.subject_id,
            instance_id=ids.instance_id,
            execution_name=ids.instance_id,
            status=ExecutionStatus.RUNNING,
            created_at=now,
            updated_at=now,
            input_payload=stored_input,
            input_is_ref=input_is_ref,
            parent_execution_id=parent.execution_id if parent is not None else None,
            parent_operation_id=parent_operation_id,
            code_version=parent.code_version if parent is not None else None,
            tags=tags or {},
            flow=flow,
            callback_key=new_callback_key(),
        )
        if self.store.create_execution(record):
            if input_is_ref:
                self.put_offloaded(execution_id, "input", input_payload)
            if wake:
                self.queue.enqueue(InvokeMessage(execution_id).to_body())
            return record, True
        existing = self.store.get_execution(execution_id)
        if existing is None:
            raise ExecutionNotFound(f"no execution with id {execution_id!r}")
        if self.retention_passed(existing.ended_at):
            # Its items wait for the table's TTL, and so does the name (the log's keys are the id's): its
            # record expires last, so that a new execution under the name meets none of the old one's items.
            raise ExecutionAlreadyExists(
                f"execution name {ids.instance_id!r} of workflow {ids.workflow_id!r} (id {execution_id!r}) "
                f"belonged to an execution that ended at {iso_timestamp(existing.ended_at)} and whose "
                f"retention ({self.store.retention_seconds // 86400} days) has passed; its record stays "
                f"{NAME_HOLD_SECONDS // 86400} days more, until the table's TTL has removed its other "
                "items, and the name is free once the TTL has removed the record too: choose another "
                "execution name"
            )
        # As AWS: the same name and input is the same start; another input under that name is refused.
        # The same reference names the same content (its digest): no read of the object, which a first
        # start that died before its put never wrote.
        same_reference = input_is_ref and existing.input_is_ref and existing.input_payload == stored_input
        if (
            not same_reference
            and self.resolve(existing.input_payload, existing.input_is_ref) != input_payload
        ):
            raise ExecutionAlreadyExists(
                f"execution {ids.instance_id!r} of workflow {ids.workflow_id!r} (id {execution_id!r}) "
                "already exists with a different input; start it with its original input or choose "
                "another execution name"
            )
        if (
            (wake or input_is_ref)
            and existing.status is ExecutionStatus.RUNNING
            and self._never_ran(execution_id)
        ):
            # The first start may have died between its record and its input's object or its message (its
            # caller saw it fail and tries again): both again (the same object; one that ran has both, and an
            # ended execution's objects are left alone). A repeated one finds it running or done.
            if input_is_ref:
                self.put_offloaded(execution_id, "input", input_payload)
            if wake:
                self.queue.enqueue(InvokeMessage(execution_id).to_body())
        return existing, False

    def _never_ran(self, execution_id: str) -> bool:
        """Whether the execution's log is still empty (one Query of at most one item)."""
        return not self.store.load_batches(execution_id, limit=1)[0]

    def resolve_flow_limits(
        self, workflow: str, domain: str, input_payload: str | None
    ) -> tuple[FlowLimit, ...]:
        """The flow limits this engine's registration of `workflow` gives an execution with this input
        (none when it declares none, or this engine does not have the workflow's code, e.g. a client)."""
        options = self.registry.options(workflow)
        if not options.has_flow_limits:
            return ()
        try:
            parsed = json.loads(input_payload) if input_payload is not None else None
        except ValueError as error:
            raise InvalidArgument(
                f"the input of workflow {workflow!r} is not JSON, so the keys of its flow limits cannot "
                f"be read: {error}"
            ) from None
        if options.flow_resolver is not None:
            return options.flow_resolver(domain, parsed)
        return resolve_flow(domain, workflow, options.concurrency, options.rate, parsed)

    def flow_limits(self, record: ExecutionRecord) -> tuple[FlowLimit, ...]:
        """The execution's flow limits: those resolved at its creation or, for one created without the
        workflow's code (a client's start), those the worker's code gives its input."""
        if record.flow or not self.registry.options(record.workflow_id).has_flow_limits:
            return record.flow
        return self.resolve_flow_limits(
            record.workflow_id, record.domain, self.resolve(record.input_payload, record.input_is_ref)
        )

    def chained_invoke_details(
        self, parent: ExecutionRecord, operation_id: str, target: str, tenant_id: str | None
    ) -> dict[str, Any]:
        """What ChainedInvokeStarted says about the target beyond the code's options: the version that
        runs (ExecutedVersion) and, for a durable workflow, the child's id (DurableExecutionArn; omitted
        when the child cannot be started, e.g. a bad tenant id). InvokeRefused when the target cannot be
        started, which fails the invoke in the checkpoint of its START, as AWS resolves the target there."""
        try:
            name = self.registry.invoke_name(target, parent.code_version)
        except WorkflowNotFound as error:
            raise InvokeRefused(self._target_not_found(parent, target, error)) from None
        if tenant_id is not None:
            try:
                _check_key_part("tenant id", tenant_id)
            except InvalidArgument as error:
                # AWS refuses such a checkpoint (InvalidParameterValueException); Stepwell fails the invoke.
                raise InvokeRefused({"ErrorType": "InvalidArgument", "ErrorMessage": str(error)}) from None
        details: dict[str, Any] = {}
        version = self.registry.executed_version(name, parent.code_version)
        if version is not None:
            details["ExecutedVersion"] = version
        if self.registry.is_durable(name):
            details["DurableExecutionArn"] = child_execution_id(
                parent.execution_id, operation_id, name, tenant_id
            )
        return details

    def _target_not_found(
        self, parent: ExecutionRecord, target: str, error: WorkflowNotFound
    ) -> dict[str, Any]:
        """The error of an invoke whose target cannot be started, as AWS reports an unknown function
        (ResourceNotFoundException, "Function not found: <name>."; a target that is no function name at all
        "Invalid function ARN '<target>'", without a type). What is registered and allowed goes to the log,
        not into the tenant's history; a refused qualifier adds what that target accepts."""
        logger.warning(
            "execution %s: invoke target %r cannot be started: %s", parent.execution_id, target, error
        )
        name = aws_function_name(target)
        if name is None:
            return {"ErrorMessage": f"Invalid function ARN '{target}'"}
        if isinstance(error, QualifierRefused):
            return {
                "ErrorType": "ResourceNotFoundException",
                "ErrorMessage": f"Function not found: {target}. {error}",
            }
        return {"ErrorType": "ResourceNotFoundException", "ErrorMessage": f"Function not found: {name}."}

    def _child_name(self, parent: ExecutionRecord, target: str) -> str:
        """The name the child of an invoke of `target` runs under (the bare name of a registered one
        the code qualified); `target` itself when it names nothing this engine runs."""
        try:
            return self.registry.invoke_name(target, parent.code_version)
        except WorkflowNotFound:
            return target

    def start_child(self, parent: ExecutionRecord, child: ChildStart) -> None:
        """Start the child of a chained invoke (idempotent: its id derives from the parent's operation);
        a target that cannot start fails the invoke with the reason."""
        try:
            name = self.registry.invoke_name(child.workflow_name, parent.code_version)
            if child.tenant_id is not None:
                _check_key_part("tenant id", child.tenant_id)
            ids = ExecutionId.parse(
                child_execution_id(parent.execution_id, child.operation_id, name, child.tenant_id)
            )
            self._create_execution(ids, child.payload, parent=parent, parent_operation_id=child.operation_id)
        except WorkflowNotFound as error:  # a child its parent's log waits for since before InvokeRefused
            error_object = self._target_not_found(parent, child.workflow_name, error)
            self.deliver(parent.execution_id, InputKind.CHILD_FAILED, child.operation_id, error=error_object)
        except (InvalidArgument, ValueError) as error:
            self.deliver(
                parent.execution_id,
                InputKind.CHILD_FAILED,
                child.operation_id,
                error={"ErrorType": type(error).__name__, "ErrorMessage": str(error)},
            )

    def stop_children(self, record: ExecutionRecord, journal: Journal, error_type: str) -> None:
        """Stop the children of the ended `record`'s chained invokes that are still waiting (a stopped or
        timed-out parent stops its children); idempotent, so any message for the parent may repeat it."""
        for child in journal.waiting_children():
            name = self._child_name(record, child.workflow_name)
            child_id = child_execution_id(record.execution_id, child.operation_id, name, child.tenant_id)
            message = f"parent execution {record.execution_id!r} ended {record.status.value}"
            try:
                self.stop_execution(child_id, {"ErrorType": error_type, "ErrorMessage": message})
            except ExecutionNotFound:
                continue  # never started (its target could not start): nothing runs

    # ------------------------------------------------------------------ inputs from outside

    def deliver(
        self,
        execution_id: str,
        kind: InputKind,
        operation_id: str | None,
        payload: str | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> None:
        """Write an external input for the execution and wake it."""
        self.store.put_external_input(
            execution_id, self._external_input(execution_id, kind, operation_id, payload, error)
        )
        self.queue.enqueue(InvokeMessage(execution_id).to_body())

    def _external_input(
        self,
        execution_id: str,
        kind: InputKind,
        operation_id: str | None,
        payload: str | None,
        error: Mapping[str, Any] | None,
    ) -> ExternalInput:
        """An input for the execution as of now, its payload offloaded when too large for an item."""
        now = self.clock.now()
        # An object's key carries its content's digest: of two racing senders, neither replaces the
        # other's object. One that loses its race leaves its object to expire with the execution's
        # others, unless the execution ends with none (see docs/security.md).
        stored, is_ref = self.offload(execution_id, f"in-{operation_id}", payload)
        return ExternalInput(
            input_id=_input_id(now),
            kind=kind,
            created_at=now,
            operation_id=operation_id,
            payload=stored,
            payload_is_ref=is_ref,
            error=dict(error) if error is not None else None,
        )

    def _callback(self, callback_id: str) -> tuple[CallbackRef, ExecutionRecord]:
        """The callback's mapping and its (running) execution's record."""
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        ref = self.store.get_callback(callback_id)
        record = self.store.get_execution(ref.execution_id) if ref is not None else None
        return _open_callback(callback_id, ref, record)

    def send_callback_success(
        self, callback_id: str, result: str | bytes | None = None, wake: bool = True
    ) -> CallbackSent:
        """Complete a callback with `result` (JSON text, as Lambda's SendDurableExecutionCallbackSuccess).
        `wake` False: no message wakes the execution, whose run the caller makes itself (Worker.run, with
        what this returns) and, should that fail, sends."""
        if isinstance(result, bytes):
            try:
                text: str | None = result.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidArgument(f"callback result must be UTF-8 text: {error}") from None
        elif result is None or isinstance(result, str):
            text = result
        else:
            raise InvalidArgument(
                f"callback result must be JSON text (str or UTF-8 bytes) or None, got {type(result).__name__}"
                " (serialize it first, e.g. json.dumps)"
            )
        self.limits.callback_result.check("the callback result", text)
        return self._complete_callback(callback_id, InputKind.CALLBACK_SUCCEEDED, payload=text, wake=wake)

    def send_callback_failure(self, callback_id: str, error: Mapping[str, Any] | None = None) -> None:
        """Fail a callback; `error` has ErrorType, ErrorMessage, ErrorData, StackTrace (all optional)."""
        checked = check_error_object(error, "callback") or {}
        self._complete_callback(callback_id, InputKind.CALLBACK_FAILED, error=checked)

    def _complete_callback(
        self,
        callback_id: str,
        kind: InputKind,
        payload: str | None = None,
        error: Mapping[str, Any] | None = None,
        wake: bool = True,
    ) -> CallbackSent:
        """The first completion wins: one conditional write marks the callback completed and keeps its
        result on its record, where the execution's next run reads it; a later one is CallbackNotFound."""
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidArgument(f"invalid callback id {callback_id!r}: a non-empty string")
        text = json.dumps(dict(error), ensure_ascii=False) if error else payload or ""
        at = lone_surrogate_at(text)
        if at is not None:
            raise InvalidArgument(
                f"callback {'error' if error else 'result'} must be UTF-8 text, got a lone surrogate at "
                f"character {at}: {text[max(0, at - 20) : at + 21]!r}"
            )
        size = len((payload or "").encode()) + (len(json.dumps(dict(error)).encode()) if error else 0)
        if size <= min(SMALL_CALLBACK_RESULT_BYTES, self.inline_limit):
            # A small result needs no object, so it is written without reading the record first: the
            # write answers with the record, then the execution is read as before.
            result = self._external_input("", kind, None, payload, error)
            ref, record = self._completed_callback(callback_id, result)
            result = replace(result, operation_id=ref.operation_id)
            kept = kept_on_callback(result, callback_id, ref.operation_id, result.created_at)
        else:
            ref, record = self._callback(callback_id)
            # Built (and offloaded) before the write that may lose the race.
            result = self._external_input(ref.execution_id, kind, ref.operation_id, payload, error)
            if not self.store.complete_callback(callback_id, result.created_at, result, ref.execution_id):
                raise _already_completed(callback_id)
            kept = None  # its record may keep an object's reference: the run reads it
        try:
            if (
                record.code_version is not None
                and record.code_version != self.code_version
                and ref.version != record.code_version
            ):
                # Pinned to a worker version this sender is not, whose run did not create the callback (an
                # engine before results on callback records, or the execution moved version since): its
                # code may read results only from inputs. Both are written; whichever the worker reads
                # first ends the operation and the other is a no-op.
                self.store.put_external_input(ref.execution_id, result)
            if wake:
                self.queue.enqueue(InvokeMessage(ref.execution_id).to_body())
        except Exception:
            # The execution was not woken: the sender may try again.
            self.store.reopen_callback(callback_id)
            raise
        return CallbackSent(record, kept)

    def _completed_callback(
        self, callback_id: str, result: ExternalInput
    ) -> tuple[CallbackRef, ExecutionRecord]:
        """Complete the callback with `result` (small: kept inline) in one conditional write, then check
        its execution still runs (else the completion is undone): the errors of `_callback`, in its order."""
        before = self.store.complete_callback_once(callback_id, result.created_at, result)
        record = self.store.get_execution(before.execution_id) if before is not None else None
        ended = record is None or record.status.is_terminal
        if before is not None and not before.completed and ended:
            self.store.reopen_callback(callback_id)  # this call completed it, but the execution ended
        return _open_callback(callback_id, before, record)

    def send_callback_heartbeat(self, callback_id: str) -> None:
        ref, _ = self._callback(callback_id)
        self.deliver(ref.execution_id, InputKind.CALLBACK_HEARTBEAT, ref.operation_id)

    # ------------------------------------------------------------------ stopping and ending

    def stop_execution(self, execution_id: str, error: Mapping[str, Any] | None = None) -> bool:
        """End a running execution as STOPPED. False if it had already ended."""
        record = self._record(execution_id)
        now = self.clock.now()
        stop_error = check_error_object(error, "stop") or {
            "ErrorType": "Stopped",
            "ErrorMessage": "execution stopped",
        }
        if not self.store.complete_execution(execution_id, ExecutionStatus.STOPPED, now, error=stop_error):
            return False
        self.timers.cancel_all(execution_id)
        # A worker records ExecutionStopped in the log (it owns the log's sequence).
        self.queue.enqueue(InvokeMessage(execution_id).to_body())
        self.notify_parent(record, ExecutionStatus.STOPPED, None, stop_error)
        return True

    def announce_status(self, record: ExecutionRecord, *statuses: ExecutionStatus) -> None:
        """Put the status-change events of `record` reaching `statuses`, in one request."""
        self.status_events.publish([status_change_detail(record, status) for status in statuses])

    def notify_parent(
        self,
        record: ExecutionRecord,
        status: ExecutionStatus,
        result: str | None,
        error: Mapping[str, Any] | None,
        *,
        execution_timeout: int | None = None,
    ) -> None:
        """Resume the parent waiting for the ended child `record`. A child that timed out reaches it as
        AWS reports one: ErrorType ChainedInvoke.Timeout naming the child's execution timeout
        (`execution_timeout`, as the child started; else its workflow's), not the child's own error."""
        if record.parent_execution_id is None or record.parent_operation_id is None:
            return
        kind = {
            ExecutionStatus.SUCCEEDED: InputKind.CHILD_SUCCEEDED,
            ExecutionStatus.STOPPED: InputKind.CHILD_STOPPED,
            ExecutionStatus.TIMED_OUT: InputKind.CHILD_TIMED_OUT,
        }.get(status, InputKind.CHILD_FAILED)
        if kind is InputKind.CHILD_TIMED_OUT:
            seconds = execution_timeout or self.registry.options(record.workflow_id).execution_timeout
            if seconds is not None:
                error = {
                    "ErrorType": CHAINED_INVOKE_TIMEOUT_TYPE,
                    "ErrorMessage": f"CHAINED_INVOKE timed out after {seconds} seconds.",
                }
        self.deliver(
            record.parent_execution_id,
            kind,
            record.parent_operation_id,
            payload=result if kind is InputKind.CHILD_SUCCEEDED else None,
            error=error if kind is not InputKind.CHILD_SUCCEEDED else None,
        )

    # ------------------------------------------------------------------ code versions

    def _versions(self) -> FunctionVersions:
        if self.functions is None:
            raise InvalidArgument(
                "this deployment has no worker function versions configured (worker_function_name)"
            )
        return self.functions

    def resolve_version(self, version: str) -> str:
        """A published version number: `version` itself or, for an alias name, the version it points to.
        VersionNotFound names the published versions otherwise."""
        functions = self._versions()
        published = functions.list_versions()
        for candidate in published:
            if candidate.version == version:
                return version
        for candidate in published:
            if version in candidate.aliases:
                return candidate.version
        listed = ", ".join(
            f"{v.version} ({', '.join(v.aliases)})" if v.aliases else v.version for v in published
        )
        raise VersionNotFound(
            f"worker version {version!r} is not published; published: {listed or 'none'} "
            "(give a version number or an alias name such as 'live')"
        )

    def upgrade_execution(self, execution_id: str, to_version: str) -> bool:
        """Move a running execution to `to_version` (a version number or an alias, e.g. "live") on
        purpose: it replays on that code now and its history records ExecutionUpgraded. False when it
        already runs on that version."""
        if not isinstance(to_version, str) or not to_version:
            raise InvalidArgument(f"invalid version {to_version!r}: a version number or an alias name")
        target = self.resolve_version(to_version)
        for _ in range(3):  # a concurrent first run or upgrade may move it between read and write
            record = self._record(execution_id)
            if record.status.is_terminal:
                raise ExecutionAlreadyEnded(
                    f"execution {execution_id!r} has ended ({record.status.value}); only a running "
                    "execution can be upgraded"
                )
            if record.code_version == target:
                return False
            if self.move_execution(execution_id, target, expected=record.code_version):
                return True
        raise StepwellError(
            f"execution {execution_id!r} kept changing version while it was upgraded to {target!r}; try again"
        )

    def move_execution(self, execution_id: str, target: str, expected: str | None) -> bool:
        """Pin a running execution to the published version `target` if it is still on `expected`, and
        have it replay there now. False when it has ended or moved meanwhile."""
        if not self.store.pin_version(execution_id, target, expected=expected):
            return False
        # A worker of the old version that read the record before the pin may take the lease after it:
        # the lease tells it (Worker._run). One that holds it now finishes its run, as before the upgrade.
        self.store.note_moved_version(execution_id, target)
        self.queue.enqueue(InvokeMessage(execution_id).to_body())
        return True

    # ------------------------------------------------------------------ reading

    def _record(self, execution_id: str) -> ExecutionRecord:
        """The execution as the API shows it: one whose retention ran out is gone (see `retention_passed`)."""
        record = self.store.get_execution(execution_id)
        if record is None or self.retention_passed(record.ended_at):
            raise ExecutionNotFound(f"no execution with id {execution_id!r}")
        return record

    def retention_passed(self, ended_at: float | None, now: float | None = None) -> bool:
        """Whether what ended at `ended_at` (an execution, a definitions context) ended a retention period
        ago or more: its items' `ttl`, as the stores set it. DynamoDB's TTL deletes such items lazily,
        days later at times; until then the API leaves them out, as AWS does once an execution's
        retention has passed. Never for what has not ended."""
        if ended_at is None:
            return False
        expires_at = int(ended_at) + self.store.retention_seconds
        return (self.clock.now() if now is None else now) >= expires_at

    def flow_status(self, workflow: str, key: str = "", domain: str = "default") -> dict[str, Any]:
        """The state of one key of `workflow`'s flow limits (domain `domain`; key "" when the limit has
        no key): {"workflow", "domain", "key", "concurrency": None | {"limit", "running", "waiting",
        "holders" (oldest lease first), "next" (up to 10 waiting execution ids, in order)}, "rate": None |
        {"limit", "period", "recentStarts", "delayed", "nextStartAt"}}; None where the key has no state."""
        if not isinstance(workflow, str) or not KEY_PART_PATTERN.match(workflow):
            raise InvalidArgument(
                f"invalid workflow {workflow!r}: a workflow name or a definition's id, {KEY_PART_RULE}"
            )
        _check_key_part("domain", domain)
        if not isinstance(key, str) or len(key) > MAX_FLOW_KEY_LENGTH or not key.isprintable():
            raise InvalidArgument(
                f"invalid key {key!r}: the key's value, a string of at most {MAX_FLOW_KEY_LENGTH} printable "
                "characters ('' for a limit without a key)"
            )
        return self.flow.status(workflow, key, domain)

    def describe_execution(self, execution_id: str) -> dict[str, Any]:
        record = self._record(execution_id)
        description: dict[str, Any] = {
            "ExecutionId": record.execution_id,
            "ExecutionName": record.execution_name,
            "WorkflowName": record.workflow_id,
            "Domain": record.domain,
            "SubjectId": record.subject_id,
            "Status": record.status.value,
            "StartTimestamp": record.created_at,
            "InputPayload": self.resolve(record.input_payload, record.input_is_ref),
        }
        if record.ended_at is not None:
            description["EndTimestamp"] = record.ended_at
        if record.status is ExecutionStatus.SUCCEEDED:
            description["Result"] = self.resolve(record.result, record.result_is_ref)
        if record.error is not None:
            description["Error"] = record.error
        if record.parent_execution_id is not None:
            description["ParentExecutionId"] = record.parent_execution_id
        if record.code_version is not None:
            description["Version"] = record.code_version
        description["Tags"] = dict(record.tags)
        return description

    def list_executions(
        self,
        status: ExecutionStatus | str | None = None,
        workflow: str | None = None,
        domain: str | None = None,
        subject_id: str | None = None,
        limit: int = 100,
        next_token: str | None = None,
        tag: tuple[str, str] | None = None,
    ) -> Page[ExecutionRecord]:
        """One page of executions by status, by workflow, by domain (and subject), or by tag: newest
        first within a domain (`domain`, default "default"), optionally of one status."""
        if status is not None and not isinstance(status, ExecutionStatus):
            known = {s.value: s for s in ExecutionStatus}
            if not isinstance(status, str) or status not in known:
                raise InvalidArgument(f"invalid status {status!r}; allowed: {', '.join(known)}")
            status = known[status]
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise InvalidArgument(f"limit must be a whole number 1..1000, got {limit!r}")
        if next_token is not None and not isinstance(next_token, str):
            raise InvalidArgument(f"page token {next_token!r} is not one this store returned")
        if workflow is not None:
            try:
                validate_workflow_name(workflow)  # start_execution's rule: no other name has executions
            except InvalidWorkflowName as error:
                raise InvalidArgument(str(error)) from None
        if subject_id is not None:
            subject_id = _check_key_part("subject id", subject_id)
        if tag is not None:
            tag = check_tag_filter(tag)
            domain = "default" if domain is None else domain
        if domain is not None:
            domain = _check_key_part("domain", domain)
        try:
            query = ExecutionQuery(
                status=status, workflow_id=workflow, domain=domain, subject_id=subject_id, tag=tag
            )
        except ValueError as error:
            raise InvalidArgument(str(error)) from None
        page = self.store.list_executions(query, limit=limit, next_token=next_token)
        now = self.clock.now()
        # A page may come out shorter than `limit` (as DynamoDB's filtered pages do): its token goes on.
        kept = [record for record in page.items if not self.retention_passed(record.ended_at, now)]
        return Page(kept, page.next_token)

    def get_execution_history(self, execution_id: str, **options: Any) -> list[dict[str, Any]]:
        """Events in EventId order, in the vocabulary of GetDurableExecutionHistory: all of them (what the
        console, CLI and tests read), or the page `options` choose (get_execution_history_page's:
        include_execution_data, reverse_order, max_items, marker)."""
        if options.get("max_items") is not None or options.get("marker") is not None:
            page = self.get_execution_history_page(execution_id, **options)
        else:
            options.pop("max_items", None)
            page = self._history_page(execution_id, max_items=None, **options)
        events: list[dict[str, Any]] = page["Events"]
        return events

    def get_execution_history_page(
        self,
        execution_id: str,
        *,
        include_execution_data: bool = True,
        reverse_order: bool = False,
        max_items: int | None = None,
        marker: str | None = None,
    ) -> dict[str, Any]:
        """{"Events": [...], "NextMarker": ...}: up to `max_items` events from `marker` (a previous page's
        NextMarker, for the same order), newest first with `reverse_order`. As GetDurableExecutionHistory's
        MaxItems: 1..1000, and None or 0 the default, 100. Without `include_execution_data` every payload is
        left out and marked Truncated, as AWS does."""
        if max_items is not None and (
            isinstance(max_items, bool) or not isinstance(max_items, int) or not 0 <= max_items <= 1000
        ):
            raise InvalidArgument(
                f"invalid max_items {max_items!r}: an integer from 1 to 1000 (0 or None: the default, "
                f"{DEFAULT_HISTORY_PAGE_ITEMS})"
            )
        return self._history_page(
            execution_id,
            include_execution_data=include_execution_data,
            reverse_order=reverse_order,
            max_items=max_items or DEFAULT_HISTORY_PAGE_ITEMS,
            marker=marker,
        )

    def _history_page(
        self,
        execution_id: str,
        *,
        include_execution_data: bool = True,
        reverse_order: bool = False,
        max_items: int | None,
        marker: str | None = None,
    ) -> dict[str, Any]:
        """A page of the history as get_execution_history_page's; `max_items` None: every event."""
        record = self._record(execution_id)
        events = events_from_bodies(list(self._batch_bodies(record)))
        if reverse_order:
            events.reverse()
        start = _history_marker_position(marker, len(events))
        end = len(events) if max_items is None else min(len(events), start + max_items)
        page = events[start:end]
        answer: dict[str, Any] = {"Events": page if include_execution_data else without_execution_data(page)}
        if end < len(events):
            answer["NextMarker"] = f"{_HISTORY_MARKER_PREFIX}{end}"
        return answer


def _open_callback(
    callback_id: str, ref: CallbackRef | None, record: ExecutionRecord | None
) -> tuple[CallbackRef, ExecutionRecord]:
    """`ref` and its execution's `record` as read for a sender, or the sender's error, in this order: no
    such callback, its execution has ended, it has already completed."""
    if ref is None:
        raise CallbackNotFound(f"no callback with id {callback_id!r}")
    if record is None or record.status.is_terminal:
        raise ExecutionAlreadyEnded(
            f"callback {callback_id!r} belongs to execution {ref.execution_id!r}, which has ended"
        )
    if ref.completed:
        raise _already_completed(callback_id)
    return ref, record


def _already_completed(callback_id: str) -> CallbackNotFound:
    return CallbackNotFound(f"callback {callback_id!r} has already completed (or timed out)")


def _same_batch(found: Batch, kept: Batch) -> bool:
    """Whether the store still holds the batch a fold ended with (its time compared to the millisecond:
    a store may write the number in another form)."""
    return (
        found.seq == kept.seq
        and found.body == kept.body
        and found.body_is_ref == kept.body_is_ref
        and abs(found.created_at - kept.created_at) < 0.001
        # Not when the log was kept since (ExecutionStore.keep_log): the fold's expiries are out of date.
        and found.expires_at == kept.expires_at
    )


_HISTORY_MARKER_PREFIX = "events-from-"


def _history_marker_position(marker: str | None, count: int) -> int:
    """The position a NextMarker names; a marker this engine did not hand out is refused."""
    if marker is None:
        return 0
    text = marker.removeprefix(_HISTORY_MARKER_PREFIX) if isinstance(marker, str) else ""
    # 1-9 ASCII digits: isdigit() alone holds for superscript and fullwidth digits too.
    digits = text.isascii() and text.isdigit() and len(text) <= 9
    if not isinstance(marker, str) or text == marker or not digits or int(text) > count:
        raise InvalidArgument(
            f"invalid history marker {marker!r}: pass the NextMarker of a previous page of this "
            f"execution's history (of the form '{_HISTORY_MARKER_PREFIX}<position>', at most {count})"
        )
    return int(text)
