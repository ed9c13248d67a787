"""The engine's API on its ports: start, stop, callbacks, describe, list and history. Its bases hold the
rest of its methods: the log's reading and writing, which the worker and the service client share
(stepwell.core.log_io.LogIO), inputs from outside, callback senders' among them
(stepwell.core.external_inputs.ExternalInputs), and pause, resume and delete
(stepwell.core.lifecycle.ExecutionLifecycle).

The same Engine runs on the memory backend (stepwell.testing.local) and on AWS (the adapters' store,
queue, timers and payload store).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepwell.core.arns import ArnContext
from stepwell.core.external_inputs import MAX_ERROR_BYTES as MAX_ERROR_BYTES  # re-exported
from stepwell.core.external_inputs import ExternalInputs
from stepwell.core.external_inputs import check_error_object as check_error_object  # re-exported
from stepwell.core.flow_control import FlowControl
from stepwell.core.flow_limits import MAX_FLOW_KEY_LENGTH, resolve_flow
from stepwell.core.history import events_from_bodies, history_page, page_size
from stepwell.core.invoke_targets import aws_function_name
from stepwell.core.journal import InvokeRefused, Journal, new_callback_key
from stepwell.core.journal_cache import JournalCache
from stepwell.core.journal_state import ChildStart
from stepwell.core.lifecycle import ExecutionLifecycle
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.core.log_io import predates as predates  # re-exported: callers import it from here
from stepwell.core.metrics import Metrics, NoMetrics
from stepwell.core.registry import (
    QualifierRefused,
    Registry,
    default_registry,
    validate_workflow_name,
)
from stepwell.core.status_events import NoStatusEvents, iso_timestamp, status_change_detail
from stepwell.core.tracing import caller_trace_header, execution_trace_header, parse_trace_header
from stepwell.errors import (
    ExecutionAlreadyEnded,
    ExecutionAlreadyExists,
    ExecutionNotFound,
    InvalidArgument,
    InvalidWorkflowName,
    StepwellError,
    VersionNotFound,
    WorkflowNotFound,
)
from stepwell.limits import PayloadLimits
from stepwell.model import (
    KEY_PART_PATTERN,
    KEY_PART_RULE,
    MAX_TAGS,
    ExecutionId,
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    FlowLimit,
    InputKind,
    InvokeMessage,
    Page,
    child_execution_id,
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

# Text longer than this (bytes) goes to the PayloadStore and its reference is kept in its place:
# DynamoDB items stay under 350 KB with room for the other attributes.
DEFAULT_INLINE_LIMIT = 200 * 1024
DEFAULT_LEASE_SECONDS = 900.0
# Workflows whose input the execution input limit leaves alone: the definitions' interpreter
# (stepwell.features.definitions.interpreter.INTERPRETER_NAME), whose input is a stored definition (at
# most 409,600 bytes, its validation) and one bus event (EventBridge's 256 KB, its nesting bounded by the
# router).
INPUT_BOUNDED_ELSEWHERE = frozenset({"stepwell.definition"})


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


def _input_json(name: str, input: Any) -> str:
    try:
        return json.dumps(input, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidArgument(
            f"input of workflow {name!r} is not JSON-serializable (nor are NaN and Infinity): {error}"
        ) from error


def _trace_header_of(parent: ExecutionRecord | None, given: str | None, now: float) -> str:
    """A new execution's trace header, with a Parent of its own (as Lambda gives an invocation its own
    segment): a start's from the caller's header (`given`) or fresh; a chained invoke's child's from the
    header the invoke propagated (`given`, its ChainedInvokeOptions.XAmznTraceId, which the SDK's
    OpenTelemetry plugin fills from the invoke's span), else from its parent's (AWS: "the child invocation
    inherits the parent durable execution's trace header"). The invoke's span is not the child's Parent:
    AWS's otel suites reject an SDK span as the parent of the child's Workflow span."""
    inherited = parent.trace_header if parent is not None else None
    return execution_trace_header(given or inherited, now)


@dataclass
class Engine(ExecutionLifecycle, ExternalInputs):
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
    # A run in flight reads its execution's status at a checkpoint this many seconds (or more) after it
    # began or last read it: a pause (PAUSING) then ends the invocation there (stepwell.core.service).
    pause_check_seconds: float = 1.0
    # The execution timeouts executions started with, as their logs' first batches hold them (which never
    # change), by execution id and creation time, so describe_execution reads each once per process
    # (stepwell.core.lifecycle).
    started_timeouts: dict[tuple[str, float], int | None] = field(default_factory=dict, repr=False)
    # Where the deployment's execution ARNs live (stepwell.core.arns): a worker without a Lambda context to
    # tell it (an inline run of the router or of a continuation) names executions by these.
    arns: ArnContext = field(default_factory=ArnContext.local)
    # Per-key concurrency and rate limits (stepwell.core.flow_control), on this engine's ports.
    flow: FlowControl = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.flow = FlowControl(
            self.store, self.queue, timers=self.timers, clock=self.clock, metrics=self.metrics
        )

    # ------------------------------------------------------------------ starting

    def start_execution(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        *,
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        trace_header: str | None = None,
    ) -> str:
        """Start workflow `name` with a JSON-serializable input; idempotent on `execution_name`.
        `trace_header`: the caller's X-Ray tracing header, the execution's trace (stepwell.core.tracing)."""
        return self.start_execution_json(
            name,
            _input_json(name, input),
            execution_name,
            domain,
            subject_id=subject_id,
            tags=tags,
            trace_header=trace_header,
        )

    def start_execution_to_run(
        self,
        name: str,
        input: Any = None,
        execution_name: str | None = None,
        domain: str = "default",
        *,
        subject_id: str | None = None,
        trace_header: str | None = None,
    ) -> tuple[ExecutionRecord, bool]:
        """start_execution for a caller in the worker that runs the execution itself at once (Worker.run
        with worker.Known(record, fresh=created)): no message is sent. The record as stored, and whether
        this call created it (a repeated start finds the one stored; the caller runs it again, as a first
        start may have died before its run)."""
        return self._start(
            name,
            _input_json(name, input),
            execution_name=execution_name,
            domain=domain,
            subject_id=subject_id,
            tags=None,
            wake=False,
            trace_header=trace_header,
        )

    def start_execution_json(
        self,
        name: str,
        input_payload: str | None,
        execution_name: str | None = None,
        domain: str = "default",
        *,
        subject_id: str | None = None,
        tags: Mapping[str, str] | None = None,
        trace_header: str | None = None,
    ) -> str:
        """Start workflow `name` with its input as JSON text; idempotent on `execution_name` (the first
        start's tags stay: a repeat with other tags returns the same execution, as AWS)."""
        record, _ = self._start(
            name,
            input_payload,
            execution_name=execution_name,
            domain=domain,
            subject_id=subject_id,
            tags=tags,
            wake=True,
            trace_header=trace_header,
        )
        return record.execution_id

    def _start(
        self,
        name: str,
        input_payload: str | None,
        *,
        execution_name: str | None,
        domain: str,
        subject_id: str | None,
        tags: Mapping[str, str] | None,
        wake: bool,
        trace_header: str | None = None,
    ) -> tuple[ExecutionRecord, bool]:
        validate_workflow_name(name)
        self._check_registered(name)
        _check_key_part("domain", domain)
        if execution_name is not None:
            _check_key_part("execution name", execution_name)
        if subject_id is not None:
            _check_key_part("subject id", subject_id)
        checked_tags = check_tags(tags)
        if trace_header is not None:
            parse_trace_header(trace_header)  # a bad header refuses the start, naming the format
        if name not in INPUT_BOUNDED_ELSEWHERE:
            # Before anything is read or written: a refused start leaves no trace.
            self.limits.execution_input.check(f"the input of workflow {name!r}", input_payload)
        instance_id = execution_name or uuid.uuid4().hex
        return self._create_execution(
            ExecutionId(domain, name, subject_id or instance_id, instance_id),
            input_payload,
            tags=checked_tags,
            wake=wake,
            trace_header=trace_header,
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
        *,
        parent: ExecutionRecord | None = None,
        parent_operation_id: str | None = None,
        tags: dict[str, str] | None = None,
        wake: bool = True,
        trace_header: str | None = None,
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
            trace_header=_trace_header_of(parent, trace_header, now),
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
        return resolve_flow(
            domain, workflow, concurrency=options.concurrency, rate=options.rate, source=parsed
        )

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
            self._create_execution(
                ids,
                child.payload,
                parent=parent,
                parent_operation_id=child.operation_id,
                trace_header=caller_trace_header(child.trace_header),
            )
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

    def announce_status(
        self, record: ExecutionRecord, *statuses: ExecutionStatus, occurrence: float | None = None
    ) -> None:
        """Put the status-change events of `record` reaching `statuses`, in one request (`occurrence`:
        the request that made a status an execution may reach again, stepwell.core.status_events)."""
        self.status_events.publish([status_change_detail(record, status, occurrence) for status in statuses])

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
        if record.trace_header is not None:
            description["TraceHeader"] = record.trace_header
        description.update(self.pause_description(record))
        return description

    def list_executions(
        self,
        status: ExecutionStatus | str | None = None,
        workflow: str | None = None,
        *,
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
        return self._history_page(
            execution_id,
            include_execution_data=include_execution_data,
            reverse_order=reverse_order,
            max_items=page_size(max_items),
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
        return history_page(
            events_from_bodies(list(self._batch_bodies(record))),
            include_execution_data=include_execution_data,
            reverse_order=reverse_order,
            max_items=max_items,
            marker=marker,
        )
