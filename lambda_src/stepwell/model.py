"""The engine's records: what the store keeps and what travels between the parts.

Everything here is plain data (str, int, float, dict) so a store adapter maps it 1:1 onto items.
Times are epoch seconds (float) unless a name says otherwise.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from enum import Enum, StrEnum
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class ExecutionStatus(StrEnum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    TIMED_OUT = "TIMED_OUT"
    # Paused (stepwell.core.lifecycle): PAUSING while a run in flight goes on to its next checkpoint (or its
    # end), then PAUSED: nothing is invoked, but waits and callbacks still complete. Both have not ended.
    PAUSING = "PAUSING"
    PAUSED = "PAUSED"
    # An ended execution being deleted (DeleteDurableExecution): gone once its items and payloads are.
    DELETING = "DELETING"

    @property
    def is_terminal(self) -> bool:
        """Whether the execution has ended (DELETING too: only an ended one is deleted)."""
        return self not in _LIVE_STATUSES

    @property
    def is_paused(self) -> bool:
        """PAUSING or PAUSED: nothing invokes its handler until it is resumed."""
        return self is ExecutionStatus.PAUSING or self is ExecutionStatus.PAUSED

    @property
    def is_outcome(self) -> bool:
        """How an execution ended (what complete_execution records): terminal, and not DELETING."""
        return self.is_terminal and self is not ExecutionStatus.DELETING


# The statuses of an execution that has not ended: it runs, or is paused.
_LIVE_STATUSES = frozenset({ExecutionStatus.RUNNING, ExecutionStatus.PAUSING, ExecutionStatus.PAUSED})
LIVE_STATUSES: frozenset[ExecutionStatus] = _LIVE_STATUSES
# The longest an execution with a paused timeout runs (AWS: it still times out 366 days after it started).
MAX_PAUSED_TIMEOUT_SECONDS = 366 * 86_400


@dataclass(frozen=True)
class PauseState:
    """A pause of an execution (PauseDurableExecution), kept on its record while it is PAUSING or PAUSED."""

    requested_at: float  # when the pause was requested (PauseRequestTimestamp; it names the pause)
    timeout_paused: bool = True  # the execution timeout is extended by the time spent paused
    reason: str | None = None
    # When the execution reached PAUSED (its ExecutionPaused event); None while PAUSING.
    paused_at: float | None = None


@dataclass(frozen=True)
class ResumeRequest:
    """The last resume of an execution (ResumeDurableExecution), kept on its record: the run that resumes
    it logs ExecutionResumed with these."""

    requested_at: float
    reason: str | None = None


# Parts of an execution id: contextKey = domain#workflowId#subjectId, id = contextKey/instanceId.
KEY_PART_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}\Z")
KEY_PART_RULE = "1-128 characters: letters, digits and _ . : @ + = , - (not starting with a symbol)"


# Execution tags: AWS's tag rules (keys without spaces; the prefix `aws:` is reserved, as on AWS).
MAX_TAGS = 10
MAX_TAG_KEY_LENGTH = 128
MAX_TAG_VALUE_LENGTH = 256
TAG_SYMBOLS = "_.:/=+-@"
TAG_KEY_RULE = (
    f"1-{MAX_TAG_KEY_LENGTH} characters: letters, digits and _ . : / = + - @, not starting with 'aws:'"
)
TAG_VALUE_RULE = f"0-{MAX_TAG_VALUE_LENGTH} characters: letters, digits, spaces and _ . : / = + - @"


def tag_key_problem(key: object) -> str | None:
    """Why `key` is not a valid tag key (None: it is)."""
    if (
        not isinstance(key, str)
        or not 1 <= len(key) <= MAX_TAG_KEY_LENGTH
        or not all(char.isalnum() or char in TAG_SYMBOLS for char in key)
    ):
        return f"invalid tag key {key!r}: {TAG_KEY_RULE}"
    if key.lower().startswith("aws:"):
        return f"invalid tag key {key!r}: the prefix 'aws:' is reserved"
    return None


def tag_value_problem(key: str, value: object) -> str | None:
    """Why `value` is not a valid value of tag `key` (None: it is)."""
    if (
        not isinstance(value, str)
        or len(value) > MAX_TAG_VALUE_LENGTH
        or not all(char.isalnum() or char in TAG_SYMBOLS or char == " " for char in value)
    ):
        return f"invalid value {value!r} of tag {key!r}: {TAG_VALUE_RULE}"
    return None


def context_key(domain: str, workflow_id: str, subject_id: str) -> str:
    return f"{domain}#{workflow_id}#{subject_id}"


def lone_surrogate_at(text: str) -> int | None:
    """Where `text` holds a lone surrogate (JSON's "\\ud800", which UTF-8 and so no store can encode), or
    None."""
    try:
        text.encode()
    except UnicodeEncodeError as error:
        return error.start
    return None


def make_execution_id(domain: str, workflow_id: str, subject_id: str, instance_id: str) -> str:
    return f"{context_key(domain, workflow_id, subject_id)}/{instance_id}"


def child_execution_id(
    parent_execution_id: str, operation_id: str, target: str, tenant_id: str | None = None
) -> str:
    """The id of the execution a chained invoke starts: derived from the parent's operation, so starting
    it again is the same start, and in the tenant's domain when the invoke names one (else the parent's)."""
    parent = ExecutionId.parse(parent_execution_id)
    digest = hashlib.sha256(f"{parent_execution_id}|{operation_id}".encode()).hexdigest()[:20]
    name = f"{parent.instance_id[:100]}-{digest}"
    return make_execution_id(tenant_id if tenant_id is not None else parent.domain, target, name, name)


@dataclass(frozen=True)
class ExecutionId:
    """An execution id split into its key parts (the executions table's PK and SK)."""

    domain: str
    workflow_id: str
    subject_id: str
    instance_id: str

    @property
    def context_key(self) -> str:
        return context_key(self.domain, self.workflow_id, self.subject_id)

    def __str__(self) -> str:
        return f"{self.context_key}/{self.instance_id}"

    @classmethod
    def parse(cls, execution_id: str) -> ExecutionId:
        if not isinstance(execution_id, str):
            raise ValueError(
                f"not an execution id: {execution_id!r}; expected a string "
                "'domain#workflowId#subjectId/instanceId'"
            )
        key, sep, instance_id = execution_id.rpartition("/")
        parts = key.split("#")
        if not sep or len(parts) != 3 or not all(parts) or not instance_id:
            raise ValueError(
                f"not an execution id: {execution_id!r}; expected 'domain#workflowId#subjectId/instanceId'"
            )
        return cls(parts[0], parts[1], parts[2], instance_id)


@dataclass(frozen=True, kw_only=True)
class FlowLimit:
    """One limit of one execution, resolved at its creation. `workflow` is the name the limit is counted
    under (the registered workflow, or a definition's workflow id), `key` the key's value ("" when the
    workflow has no key), `period` seconds (rate limits; 0 for concurrency)."""

    kind: str  # "concurrency" | "rate"
    domain: str
    workflow: str
    key: str
    limit: int
    period: int = 0

    @property
    def scope(self) -> str:
        """The coordination table key of this limit's state (a digest: key values may hold any text)."""
        text = "\x1f".join((self.domain, self.workflow, self.key))
        kind = "c" if self.kind == "concurrency" else "r"
        return f"fc#{kind}#{hashlib.sha256(text.encode()).hexdigest()[:40]}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "domain": self.domain,
            "workflow": self.workflow,
            "key": self.key,
            "limit": self.limit,
            "period": self.period,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FlowLimit:
        return cls(
            kind=str(data["kind"]),
            domain=str(data["domain"]),
            workflow=str(data["workflow"]),
            key=str(data["key"]),
            limit=int(data["limit"]),
            period=int(data.get("period", 0)),
        )


@dataclass(frozen=True)
class FlowSlots:
    """The state of one concurrency key: who holds its slots and its queue of waiting executions, a run
    of tickets `head` (the next to serve) to `tail` (the next to issue)."""

    holders: dict[str, float]  # execution id -> its lease's expiry (epoch seconds)
    head: int = 0
    tail: int = 0
    labels: dict[str, str] = field(default_factory=dict)  # domain, workflow, key, limit (as shown)

    @property
    def waiting(self) -> int:
        """Tickets not served yet (a ticket of an execution that ended meanwhile counts until served)."""
        return max(0, self.tail - self.head)


@dataclass(frozen=True)
class FlowRate:
    """The state of one rate key: the start times of its most recent starts (at most its limit), oldest
    first, and a version that every change increments (the conditional write's guard)."""

    starts: tuple[float, ...] = ()
    version: int = 0
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class ExecutionRecord:
    """One item of the executions table."""

    execution_id: str
    domain: str
    workflow_id: str  # the registered workflow name
    subject_id: str
    instance_id: str
    execution_name: str
    status: ExecutionStatus
    created_at: float
    updated_at: float
    input_payload: str | None = None  # JSON text, or a PayloadStore reference when input_ref is set
    input_is_ref: bool = False
    result: str | None = None  # JSON text (or reference, see result_is_ref)
    result_is_ref: bool = False
    error: dict[str, Any] | None = None  # ErrorObject dict: ErrorType, ErrorMessage, ErrorData, StackTrace
    ended_at: float | None = None
    # Set on a child started by context.invoke: the parent is resumed when this one ends.
    parent_execution_id: str | None = None
    parent_operation_id: str | None = None
    # The worker function version the execution runs on (None: not pinned, e.g. an unversioned worker).
    # Kept after the end, so it tells which version ran it; only a RUNNING one counts as pinned.
    code_version: str | None = None
    # The caller's labels (key -> value, at most MAX_TAGS), listed by tag; fixed at the start.
    tags: dict[str, str] = field(default_factory=dict)
    # Its flow control limits (stepwell.core.flow_limits), resolved at its creation and fixed from then on.
    flow: tuple[FlowLimit, ...] = ()
    # The secret its callback ids are derived from (stepwell.core.journal.derived_callback_id), made at its
    # creation and never shown; None for an execution created before it (its callback ids are random).
    callback_key: str | None = None
    # Its pause while PAUSING or PAUSED (None otherwise), the last resume, and how many seconds earlier
    # pauses with a paused timeout extend its execution timeout by (stepwell.core.lifecycle).
    pause: PauseState | None = None
    resumed: ResumeRequest | None = None
    paused_seconds: float = 0.0
    # Its X-Ray tracing header (stepwell.core.tracing), made at its start and handed to every invocation;
    # None for an execution created before traces.
    trace_header: str | None = None


@dataclass(frozen=True)
class FunctionVersion:
    """A published version of the worker function and the aliases that point at it."""

    version: str
    aliases: tuple[str, ...] = ()
    last_modified: str = ""
    description: str = ""


@dataclass(frozen=True)
class Batch:
    """One append-only log entry of an execution: the operations it changed and the events it produced.

    `body` is compact JSON, opaque to stores (its keys: stepwell.core.batch_keys): {"o": [operation states],
    "e": [history events, compact], "i": [absorbed external input ids], "d": {operation id: private
    state}, plus flags}. When the body is too big for an item, the engine stores it with the
    PayloadStore and `body` holds the reference (`body_is_ref`).
    """

    seq: int
    body: str
    created_at: float
    body_is_ref: bool = False
    # Set on the batch that ends the execution (for a store that wants to mark it).
    terminal: bool = False
    # When the store may remove it (epoch seconds; None: never before ExecutionStore.expire_log gives it
    # an expiry). See stepwell.core.log_expiry.
    expires_at: float | None = None


class InputKind(StrEnum):
    CALLBACK_SUCCEEDED = "callback_succeeded"
    CALLBACK_FAILED = "callback_failed"
    CALLBACK_HEARTBEAT = "callback_heartbeat"
    CHILD_SUCCEEDED = "child_succeeded"
    CHILD_FAILED = "child_failed"
    CHILD_STOPPED = "child_stopped"
    CHILD_TIMED_OUT = "child_timed_out"
    STOP = "stop"


@dataclass(frozen=True)
class ExternalInput:
    """Something sent to an execution from outside its invocations; the next lease holder absorbs it.

    `input_id` sorts by arrival (zero-padded milliseconds first), so inputs are absorbed in order.
    """

    input_id: str
    kind: InputKind
    created_at: float
    operation_id: str | None = None
    _: KW_ONLY  # the rest by name (issue 38): payload, error and the flags are never swapped
    payload: str | None = None
    error: dict[str, Any] | None = None
    payload_is_ref: bool = False  # payload holds a PayloadStore reference
    offloaded: bool = False  # the payload was read back from the PayloadStore (its object still exists)
    # A callback's result kept on its callback record (ExecutionStore.complete_callback), not an `in#`
    # item: nothing to delete once absorbed, and its operation's end makes a repeat a no-op.
    on_callback_record: bool = False


def kept_on_callback(
    result: ExternalInput, callback_id: str, operation_id: str, completed_at: float
) -> ExternalInput:
    """A completion's `result` as the callback's record keeps it (ExecutionStore.complete_callback) and
    get_callback_results returns it."""
    return replace(
        result,
        input_id="cb#" + callback_id,
        created_at=completed_at,
        operation_id=operation_id,
        on_callback_record=True,
    )


@dataclass(frozen=True)
class CallbackRef:
    """Where an (unguessable) callback id points."""

    callback_id: str
    execution_id: str
    operation_id: str
    completed: bool = False  # a success or failure was accepted, or it timed out
    # The worker version whose run created it, recorded by code that reads callback results from their
    # records; None: an unversioned run, or an engine that read them only from inputs (before ports v5).
    version: str | None = None


class KeepWake(Enum):
    """HandOff.wake_at on a release: the run armed no wake-up, the one recorded stands."""

    KEEP = "keep"


@dataclass(frozen=True)
class HandOff:
    """What one run of an execution leaves the next on the execution's coordination record: releasing the
    lease writes it (ExecutionStore.release_lease, one write with the release), taking the lease returns
    it (Lease.hand_off). HandOff() is a run that hands on nothing new (a failed run): what is recorded
    stands, but for the log's next seq, which only a run that knows it records."""

    # The wake-up the run armed (None: none is armed): a message that finds nothing to do arms another
    # only when its own next wake-up differs. KeepWake.KEEP on a release only: the recorded one stands.
    wake_at: float | KeepWake | None = KeepWake.KEEP
    # The last batch of a run, when small (a suspension's events of no operation, or the execution's end),
    # kept on the record instead of the log (also ExecutionStore.get_carried_batch): the log's next batch
    # while its seq is still the log's next seq, which the next batch written takes (Journal.carry in
    # stepwell.core.journal). A release without one leaves a batch carried before while the execution runs
    # (its seq tells whether the log has taken it since); an end keeps only the one it is given.
    carried: Batch | None = None
    # The log's next seq as the run left it (None: not known for sure; a release of None clears it). Only
    # lease holders write the log, and a run keeps its fold of the log only when it wrote all it changed:
    # a worker holding that fold of this length need not read the log (when no input is pending).
    log_next: int | None = None
    # How many batches the log held as the run left it (None: none recorded; a release of None leaves the
    # recorded one). The log only grows while the execution runs, so a log read shorter than this lost
    # batches (to the table's TTL, if its expiry ever went wrong): the run fails with LogIncomplete.
    log_length: int | None = None
    # On a release only: when the execution ended (its record's ended_at, however late the run that
    # settles it). The record then keeps the end it carries, if any, and stays for the retention period
    # from that end, as the execution's other items do: so Lease.never_held is never true for it again and
    # it never outlives the execution's own item. Its wake-up, moved version, log length and next seq go.
    ended_at: float | None = None


@dataclass(frozen=True)
class Lease:
    """An execution's lease, as `ExecutionStore.acquire_lease` took it."""

    execution_id: str
    owner: str
    expires_at: float
    # What the run that last released the lease left this one (its wake_at is never KEEP).
    hand_off: HandOff
    # The lease taken had expired in another worker's hands: that worker died (or overran its lease).
    taken_over: bool = False
    # The version an upgrade moved the execution to (ExecutionStore.note_moved_version), if one did: a
    # worker of another version that read the record before the upgrade leaves the run to that version.
    moved_to: str | None = None
    # No run ever held this lease: the execution's coordination record did not exist. Only lease holders
    # write the log, and every input answers something a run began (a callback it created, a child it
    # invoked), so a running execution's log is then empty and need not be read. An ended execution keeps
    # its record (HandOff.ended_at), so a late message never takes its lease for a first one.
    never_held: bool = False

    @property
    def armed(self) -> float | None:
        """The wake-up the last run armed (hand_off.wake_at: a lease never hands on KEEP)."""
        wake = self.hand_off.wake_at
        return None if isinstance(wake, KeepWake) else wake


@dataclass(frozen=True)
class ExecutionQuery:
    """A list_executions filter: exactly one of status, workflow_id, or domain (+ optional subject_id);
    or a tag (key, value) within a domain, optionally with a status."""

    status: ExecutionStatus | None = None
    workflow_id: str | None = None
    domain: str | None = None
    subject_id: str | None = None
    tag: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        if self.tag is not None:
            if self.domain is None or self.workflow_id is not None or self.subject_id is not None:
                raise ValueError(
                    "tag= lists within one domain, optionally by status=: pass domain= and neither "
                    f"workflow_id= nor subject_id= (got domain={self.domain!r}, "
                    f"workflow_id={self.workflow_id!r}, subject_id={self.subject_id!r})"
                )
            return
        chosen = [self.status is not None, self.workflow_id is not None, self.domain is not None]
        if sum(chosen) != 1:
            raise ValueError(
                "list_executions needs exactly one of status=, workflow_id= or domain= (with optional "
                f"subject_id=); got status={self.status!r}, workflow_id={self.workflow_id!r}, "
                f"domain={self.domain!r}"
            )
        if self.subject_id is not None and self.domain is None:
            raise ValueError("subject_id= filters within a domain: pass domain= too")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_token: str | None = None


@dataclass(frozen=True)
class InvokeMessage:
    """The work-queue message that runs or resumes an execution: {"kind": "invoke", "executionId": ...}."""

    execution_id: str
    due_at: float | None = None

    def to_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"kind": "invoke", "executionId": self.execution_id}
        if self.due_at is not None:
            body["dueAt"] = self.due_at
        return body


class OutcomeAction(StrEnum):
    """What the worker did with one message (WorkOutcome.action). A string: the entry logs it and answers a
    direct invocation with it."""

    RAN = "ran"  # the handler ran and the execution still runs (next_wake_at: its next wake-up)
    # A remote durable function was invoked (details["function"]): the lease stays with it until its result
    # record comes back (stepwell.core.remote_runs); next_wake_at: the wake-up at the lease's expiry.
    INVOKED = "invoked"
    CRASHED = "crashed"  # the handler's process died; it runs again at next_wake_at
    IDLE = "idle"  # nothing to run (a duplicate, an early timer, inputs only absorbed)
    FINISHED = "finished"  # this run ended the execution
    IGNORED = "ignored"  # no such execution, or it had ended (details["reason"])
    BUSY = "busy"  # another worker holds its lease: the message comes again later
    FENCED = "fenced"  # a newer worker took its log from this one, whose lease had expired
    FORWARD = "forward"  # pinned to another version (details["version"]), which runs it
    # Held back by a flow limit before its first run:
    DELAYED = "delayed"  # by a rate limit, woken at its start time
    WAITING = "waiting"  # in a concurrency limit's queue, started when a slot frees
    # Deleting an ended execution (DeleteDurableExecution): this message removed its items and payloads.
    DELETED = "deleted"


@dataclass(frozen=True)
class WorkOutcome:
    """What the worker did with one message (for logs, tests and the entry's batch response)."""

    execution_id: str
    action: OutcomeAction
    status: ExecutionStatus | None = None
    next_wake_at: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # What the run leaves the next one, for the lease's release to write: the batch it carried, the log's
    # length, when the execution ended. The worker adds the wake-up (next_wake_at) before the release.
    hand_off: HandOff = field(default_factory=HandOff, repr=False, compare=False)
