"""The worker: one invoke message runs (or resumes) one execution.

Per message: take the execution's lease, fold its log, absorb external inputs and due timers, run the
user's handler with the store-backed service client, then act on the handler's output: SUCCEEDED or
FAILED ends the execution (a waiting parent is resumed), PENDING schedules the next wake-up, which the
lease's release records as armed (one write), with what else the run hands on to the next (HandOff). A
message that finds nothing new to do (a duplicate, an early timer) changes nothing. What a run's steps
share is a Run (stepwell.core.run); ending an execution is stepwell.core.endings, holding a paused one
stepwell.core.pausing, deleting one stepwell.core.deletion; a remote workflow (the user's own Lambda
function) is invoked and its result acted on by stepwell.core.remote_runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aws_durable_execution_sdk_python.execution import (
    DurableExecutionInvocationInputWithClient,
    InitialExecutionState,
)
from aws_durable_execution_sdk_python.lambda_service import ErrorObject

from stepwell.core.arns import ArnContext, arn_context_of
from stepwell.core.deletion import Deletion
from stepwell.core.endings import Endings, log_start
from stepwell.core.engine import Engine, predates
from stepwell.core.invoke_targets import (
    CHAINED_INVOKE_OUTPUT_TOO_LARGE,
    CHILD_EXECUTION_OUTPUT_TOO_LARGE,
    MAX_CHAINED_INVOKE_PAYLOAD_BYTES,
)
from stepwell.core.journal import Journal, decode_body
from stepwell.core.lifecycle import execution_deadline
from stepwell.core.logs import log_context, workflow_of
from stepwell.core.metrics import Metric
from stepwell.core.pausing import Pausing
from stepwell.core.remote_functions import RemoteResult, is_remote_result, parse_remote_result
from stepwell.core.remote_runs import RemoteInvocationEnded, RemoteRuns, keeps_lease
from stepwell.core.run import Invocation, Known, Run
from stepwell.core.run_spans import (
    LEASE_SPAN,
    LOAD_SPAN,
    NO_TRACE,
    RELEASE_SPAN,
    RUN_SPAN,
    RunTrace,
    current_trace,
)
from stepwell.core.service import StoreServiceClient
from stepwell.core.status_events import iso_timestamp
from stepwell.core.tracing import trace_environment
from stepwell.core.versions import explain_replay_mismatch
from stepwell.errors import (
    InvalidArgument,
    InvalidMessage,
    LogIncomplete,
    LogOfEarlierExecution,
    PayloadMissing,
    SequenceConflict,
    WorkflowNotFound,
)
from stepwell.limits import PAYLOAD_OVER_LIMIT_TYPE
from stepwell.model import (
    ExecutionRecord,
    ExecutionStatus,
    ExternalInput,
    HandOff,
    InvokeMessage,
    KeepWake,
    Lease,
    OutcomeAction,
    WorkOutcome,
)
from stepwell.ports.spans import NoSpans, SpanRecorder

logger = logging.getLogger(__name__)

# Outcomes of a message that ran the execution (its wake-up lag is measured on those).
_RAN_THE_EXECUTION = frozenset(
    {OutcomeAction.RAN, OutcomeAction.INVOKED, OutcomeAction.FINISHED, OutcomeAction.CRASHED}
)
# Outcomes after which the execution still runs, its next wake-up the one this run armed, and its log
# holds everything the run changed (when the journal has nothing unflushed): the engine may cache its fold.
_LEFT_RUNNING = frozenset(
    {OutcomeAction.RAN, OutcomeAction.INVOKED, OutcomeAction.IDLE, OutcomeAction.CRASHED}
)
# Outcomes of a run that armed no wake-up (it never ran the execution here): whatever is recorded stands.
_ARMED_NOTHING = frozenset({OutcomeAction.FENCED, OutcomeAction.FORWARD})
# A wake-up this much later than its due time counts as overdue (Metric.OVERDUE_WAKE_UPS): EventBridge
# Scheduler's one-minute granularity plus delivery latency stay well under it.
OVERDUE_WAKE_UP_SECONDS = 120.0
# After this many invocations in a row that crashed (the handler process died), the execution fails.
MAX_CONSECUTIVE_CRASHES = 5
CRASH_RETRY_BASE_SECONDS = 1
EXECUTION_TIMED_OUT_TYPE = "Execution.TimedOut"


class InvocationContext:
    """The Lambda context the SDK reads when the worker runs outside Lambda (tests, local runner)."""

    def __init__(
        self,
        request_id: str,
        remaining_millis: int = 900_000,
        time_left: Callable[[], float] | None = None,
        *,
        trace_header: str | None = None,
    ) -> None:
        self.aws_request_id = request_id
        # The execution's X-Ray tracing header (stepwell.core.tracing), also in _X_AMZN_TRACE_ID.
        self.trace_header = trace_header
        self.log_group_name: str | None = None
        self.log_stream_name: str | None = None
        self.function_name: str | None = "stepwell-worker"
        self.memory_limit_in_mb: str | None = None
        self.function_version: str | None = "$LATEST"
        self.invoked_function_arn: str | None = None
        self.tenant_id: str | None = None
        self.client_context: Any | None = None
        self.identity: Any | None = None
        self._remaining_millis = remaining_millis
        # Seconds the invocation running this one has left (a run inside a Lambda invocation of its own).
        self._time_left = time_left

    def get_remaining_time_in_millis(self) -> int:
        if self._time_left is not None:
            return max(0, int(self._time_left() * 1000))
        return self._remaining_millis

    def log(self, msg: str) -> None:
        logger.info("%s", msg)


def parse_invoke_message(body: Mapping[str, Any]) -> InvokeMessage:
    """An invoke message, or InvalidMessage naming what is wrong."""
    if not isinstance(body, Mapping) or body.get("kind") != "invoke":
        kind = body.get("kind") if isinstance(body, Mapping) else type(body).__name__
        raise InvalidMessage(f"not an invoke message (kind {kind!r}); expected {{'kind': 'invoke', ...}}")
    execution_id = body.get("executionId")
    if not isinstance(execution_id, str) or "/" not in execution_id:
        raise InvalidMessage(f"invoke message has no valid executionId: {execution_id!r}")
    due_at = body.get("dueAt")
    latest = 253402300799  # 9999-12-31T23:59:59Z: later epoch seconds are no date (datetime refuses them)
    if due_at is not None and (
        isinstance(due_at, bool) or not isinstance(due_at, int | float) or not 0 <= due_at <= latest
    ):
        raise InvalidMessage(
            f"invoke message has a bad dueAt {due_at!r}: epoch seconds from 0 to {latest} (year 9999)"
        )
    return InvokeMessage(execution_id=execution_id, due_at=float(due_at) if due_at is not None else None)


class Worker:
    def __init__(
        self, engine: Engine, arns: ArnContext | None = None, *, spans: SpanRecorder | None = None
    ) -> None:
        """`arns`: where executions' ARNs live when a run has no Lambda context that tells it (default: the
        engine's, the deployment's). `spans`: the worker's own spans (stepwell.core.run_spans; off by
        default), sent after each run, or once at the end of `spans_per_invocation`."""
        self.engine = engine
        self.spans: SpanRecorder = spans or NoSpans()
        # Open spans_per_invocation scopes: while any is open a run leaves its spans to the scope's flush.
        self._deferring = 0
        self._deferring_lock = threading.Lock()
        self.arns = arns or engine.arns
        self.endings = Endings(engine)
        self._pausing = Pausing(engine, self.absorb, lambda run: _next_wake_at(run.record, run.journal))
        self._deletion = Deletion(engine)
        self._remote = RemoteRuns(self)

    @contextlib.contextmanager
    def spans_per_invocation(self) -> Iterator[None]:
        """Runs within send no spans of their own: the spans that ended go in one request when the scope
        ends (the entry opens one per Lambda invocation, so a batch of messages costs one request). A run
        still going when it ends (one a batch handed back at its deadline) sends its own after it."""
        with self._deferring_lock:
            self._deferring += 1
        try:
            yield
        finally:
            with self._deferring_lock:
                self._deferring -= 1
            self.spans.flush()

    def handle_message(self, body: Mapping[str, Any], lambda_context: Any | None = None) -> WorkOutcome:
        message = parse_invoke_message(body)
        arrived_at = self.engine.clock.now()
        outcome = self.run(message.execution_id, lambda_context)
        if message.due_at is not None and outcome.action in _RAN_THE_EXECUTION:
            # How late the wake-up came (the entry re-schedules one that comes early).
            lag = max(0.0, arrived_at - message.due_at)
            workflow = workflow_of(message.execution_id)
            self.engine.metrics.add(Metric.WAKE_UP_LAG, lag * 1000, workflow)
            if lag > OVERDUE_WAKE_UP_SECONDS:
                self.engine.metrics.add(Metric.OVERDUE_WAKE_UPS, 1, workflow)
        return outcome

    def finish_remote(self, body: Mapping[str, Any]) -> WorkOutcome:
        """A remote function's destination record (stepwell.core.remote_runs, phase C): its run goes on as
        the owner of the lease it kept, or the record is dropped when that run lost it."""
        if not is_remote_result(body):
            raise InvalidMessage("not a remote durable function's destination record")
        result = parse_remote_result(body)
        with log_context(result.token.execution_id):
            return self._run(result.token.execution_id, None, Known(), result)

    def run(
        self, execution_id: str, lambda_context: Any | None = None, known: Known | None = None
    ) -> WorkOutcome:
        """Run the execution once, as its message would; `known`: what its caller (in this process) knows
        already, so the run does not read it again. The lease decides who runs it."""
        with log_context(execution_id):
            return self._run(execution_id, lambda_context, known or Known())

    def _run(
        self, execution_id: str, lambda_context: Any | None, known: Known, result: RemoteResult | None = None
    ) -> WorkOutcome:
        """One run, its spans ended and sent after it (the run's own trace, once it has read the record)."""
        token = current_trace.set(NO_TRACE)
        outcome: WorkOutcome | None = None
        error: str | None = None
        try:
            outcome = self._run_once(execution_id, lambda_context, known, result)
            return outcome
        except BaseException as failure:
            error = type(failure).__name__
            raise
        finally:
            ended = str(outcome.action.value) if outcome else None
            current_trace.get().end(ended, error=error, flush=self._deferring == 0)
            current_trace.reset(token)

    def _run_once(
        self, execution_id: str, lambda_context: Any | None, known: Known, result: RemoteResult | None = None
    ) -> WorkOutcome:
        engine = self.engine
        record = known.record
        if record is None or record.execution_id != execution_id:
            record = engine.store.get_execution(execution_id)
        if record is None:
            return WorkOutcome(execution_id, OutcomeAction.IGNORED, details={"reason": "no such execution"})
        if record.status is ExecutionStatus.DELETING:
            return self._deletion.delete(record)  # under a lease of its own, which goes with the items
        if self._pinned_elsewhere(record):
            # Its own version runs it (the entry forwards the message); no lease taken here.
            return _forward(record)
        owner = uuid.uuid4().hex
        trace = RunTrace.begin(
            self.spans, record.trace_header, execution_id=execution_id, workflow=record.workflow_id
        )
        current_trace.set(trace)
        duration, now = self._remote.lease_seconds(record.workflow_id), engine.clock.now()
        with trace.phase(LEASE_SPAN):
            if result is not None:  # a remote function's result: taken over from the run that invoked it
                lease = engine.store.resume_lease(
                    execution_id, result.token.owner, successor=owner, now=now, duration=duration
                )
            else:
                lease = engine.store.acquire_lease(execution_id, owner, now, duration)
        if lease is None and result is not None:
            return self._remote.stale(record, result)
        if lease is None:
            engine.metrics.add(Metric.LEASE_BUSY, 1, record.workflow_id)
            return WorkOutcome(execution_id, OutcomeAction.BUSY, status=record.status)
        if lease.taken_over:
            # Its last worker died holding the lease (SQS delivered the message again once the lease ran out).
            engine.metrics.add(Metric.STALLED_EXECUTIONS, 1, record.workflow_id)
        if lease.never_held and record.status.is_terminal and self._deleted_meanwhile(execution_id):
            return WorkOutcome(execution_id, OutcomeAction.IGNORED, details={"reason": "deleted"})
        outcome: WorkOutcome | None = None
        try:
            if lease.moved_to is not None and lease.moved_to != record.code_version:
                # Upgraded after this worker read the record: the version it was moved to decides.
                record = engine.store.get_execution(execution_id) or record
                if self._pinned_elsewhere(record):
                    outcome = _forward(record)
                    return outcome
            outcome = self._run_leased(record, lease, lambda_context, known, result=result)
            unneeded = _unneeded_wake(lease.armed, outcome)
            if unneeded is not None:
                # While the lease is held: no other run can arm that wake-up again meanwhile.
                engine.timers.withdraw(execution_id, *unneeded)
        except SequenceConflict as conflict:
            outcome = self._fenced(record, conflict)
        finally:
            # One write drops the lease and records what the run hands on (see _hand_off); a remote
            # function's invocation keeps it (stepwell.core.remote_runs).
            if not keeps_lease(outcome):
                with trace.phase(RELEASE_SPAN):
                    engine.store.release_lease(execution_id, owner, _hand_off(outcome, engine.clock.now()))
        return outcome

    # ------------------------------------------------------------------

    def _deleted_meanwhile(self, execution_id: str) -> bool:
        """An ended execution keeps its coordination record (HandOff.ended_at), so a lease never held before
        on one means a delete may have removed it since this worker read the record: if so (the execution is
        gone or DELETING), the coordination record this lease just made goes too, lease and all (a release
        would keep it), and nothing is written."""
        current = self.engine.store.get_execution(execution_id)
        if current is not None and current.status is not ExecutionStatus.DELETING:
            return False
        self.engine.store.delete_coordination(execution_id, ())
        return True

    def _pinned_elsewhere(self, record: ExecutionRecord) -> bool:
        """A running execution pinned to another version than this worker's (an ended one is settled by
        any version; an unversioned worker runs everything)."""
        version = self.engine.code_version
        return (
            version is not None
            and record.status is ExecutionStatus.RUNNING
            and record.code_version is not None
            and record.code_version != version
        )

    def _callback_results(self, journal: Journal, known: Known) -> list[ExternalInput]:
        open_callbacks = journal.open_callbacks()
        if open_callbacks and all(callback_id in known.callback_results for callback_id in open_callbacks):
            # Every one it waits for was completed by this run's caller, whose results these are.
            return self._resolved([known.callback_results[callback_id] for callback_id in open_callbacks])
        return self._resolved(self.endings.stored_callback_results(journal))

    def _resolved(self, inputs: list[ExternalInput]) -> list[ExternalInput]:
        engine = self.engine
        return [
            dataclasses.replace(
                item, payload=engine.resolve(item.payload, True), payload_is_ref=False, offloaded=True
            )
            if item.payload_is_ref
            else item
            for item in inputs
        ]

    def _run_leased(
        self,
        record: ExecutionRecord,
        lease: Lease,
        lambda_context: Any | None,
        known: Known,
        *,
        result: RemoteResult | None = None,
    ) -> WorkOutcome:
        """Read the execution's log and run it. The engine keeps the fold of its log for the next run when
        this one leaves it whole."""
        try:
            with current_trace.get().phase(LOAD_SPAN):
                journal, pending = self._read_log(record, lease, known)
        except PayloadMissing as missing:
            return self._payloads_missing(record, missing)
        keep = False
        try:
            try:
                outcome = self._run_journal(
                    record,
                    journal,
                    pending,
                    lease=lease,
                    known=known,
                    lambda_context=lambda_context,
                    result=result,
                )
            except SequenceConflict:
                raise  # another worker runs it
            except Exception:
                self._keep_log_after_failure(journal)
                raise
            left = outcome.hand_off
            if lease.hand_off.carried is not None and journal.holds_carried and _ends(outcome):
                # The end the record carries, which this run (a late message) left as it was: the release
                # of an ended execution keeps only the batch it is given.
                left = dataclasses.replace(left, carried=lease.hand_off.carried)
            # The fold of its log serves the execution's next message only after a run that wrote all it
            # changed and still runs; a fence, a crash with unflushed changes or an end drops it.
            keep = (
                outcome.action in _LEFT_RUNNING
                and not journal.ended
                and not journal.has_unflushed
                and not journal.log_expiry.changed
            )
            # The release records the log's length, and its next seq when the fold kept is of the whole log.
            next_seq = journal.next_seq
            left = dataclasses.replace(left, log_next=next_seq if keep else None, log_length=next_seq)
            return dataclasses.replace(outcome, hand_off=left)
        finally:
            self.engine.close_journal(journal, keep)

    def _read_log(
        self, record: ExecutionRecord, lease: Lease, known: Known
    ) -> tuple[Journal, list[ExternalInput]]:
        """The fold of the execution's log (with the batch its coordination record carries) and the inputs
        pending for it; LogIncomplete or LogOfEarlierExecution when the log is not all this execution's."""
        pending: list[ExternalInput] = []  # read with the log
        # A lease taken over from a dead holder may have seen writes its last release does not tell.
        left = lease.hand_off
        trusted = left.log_next if known.no_inputs and not lease.taken_over else None
        # A running execution's first run (no run held its lease before) has an empty log: nothing read.
        empty = known.fresh or (lease.never_held and record.status is ExecutionStatus.RUNNING)
        journal = self.engine.open_journal(record.execution_id, pending, empty=empty, log_next=trusted)
        if left.log_length is not None and journal.next_seq < left.log_length:
            self.engine.close_journal(journal, keep=False)
            raise LogIncomplete(
                f"execution {record.execution_id!r}: its log has {journal.next_seq} batches but held "
                f"{left.log_length} (the last ones expired under the table's TTL)"
            )
        carried_at = left.carried.created_at if left.carried is not None else None
        earlier = _earlier_executions_log(record, journal.oldest_batch_at, carried_at)
        if earlier is not None:
            self.engine.close_journal(journal, keep=False)
            raise earlier
        if left.carried is not None:
            # The last run's InvocationCompleted, left on the lease's record: the next batch writes it.
            journal.carry(left.carried.seq, decode_body(left.carried.body))
        return journal, pending

    def _keep_log_after_failure(self, journal: Journal) -> None:
        """A run that failed leaves its execution's next run to SQS's retries, the DLQ and a redrive or an
        operator, however late: its log is kept until the execution ends (stepwell.core.log_expiry)."""
        try:
            self.engine.keep_log(journal)
        except Exception as error:  # the run's own error is the one to report
            logger.warning(
                "could not keep the log of %s after a failed run (%s)",
                journal.execution_id,
                type(error).__name__,
            )

    def _payloads_missing(self, record: ExecutionRecord, missing: PayloadMissing) -> WorkOutcome:
        if not record.status.is_terminal:
            raise missing
        return self.endings.expired(record)

    def _run_journal(
        self,
        record: ExecutionRecord,
        journal: Journal,
        pending: list[ExternalInput],
        *,
        lease: Lease,
        known: Known,
        lambda_context: Any | None,
        result: RemoteResult | None = None,
    ) -> WorkOutcome:
        """Begin the run once its log is read: settle an ended execution, forward one another version
        runs, or run it here (pinning a first run to this worker's version)."""
        engine = self.engine
        execution_id = record.execution_id
        try:
            # Offloaded payloads read back (`offloaded` keeps that they were).
            inputs = self._resolved(pending)
        except PayloadMissing as missing:
            return self._payloads_missing(record, missing)
        run = Run(
            record=record,
            journal=journal,
            lease=lease,
            known=known,
            lambda_context=lambda_context,
            inputs=inputs,
            now=engine.clock.now(),
        )
        if record.status.is_terminal:
            return self.endings.settle(run)
        if result is not None:
            return self._remote.finish(run, result)
        if record.status.is_paused:
            return self._hold_paused(run)
        version = engine.code_version
        if version is None or record.code_version is not None:
            return self._run_on(run)
        # Its first run (or its first since the worker was versioned).
        if journal.code_version is not None and journal.code_version != version:
            # A first run on that version wrote this log and died before it could pin the execution: that
            # version goes on with it.
            if engine.store.pin_version(execution_id, journal.code_version, expected=None):
                record.code_version = journal.code_version
                return _forward(record)
            current = engine.store.get_execution(execution_id) or record  # ended or moved meanwhile
            if current.status.is_terminal:
                return self.endings.settle(run.of(current))
            if self._pinned_elsewhere(current):
                return _forward(current)
            return self._run_on(run.of(current))
        # This version runs it. The pin is stored with its end (complete_execution), or once this run
        # leaves it running: one conditional write (and its index entries) fewer for every execution that
        # ends in its first run. Until then the log names the version (Journal.run_on).
        record.code_version = version
        outcome = self._run_on(run)
        if outcome.action in _LEFT_RUNNING:
            # Before the lease's release, so its next run (and the entry, which forwards) finds the pin.
            # False: stopped, or moved by an upgrade meanwhile; either way the execution item decides.
            engine.store.pin_version(execution_id, version, expected=None)
        return outcome

    def _run_on(self, run: Run) -> WorkOutcome:
        """Run the execution on this worker's version (the one it is pinned to, or none): start it, time it
        out, absorb what came for it, and call its handler when that leaves anything to run."""
        engine, record, journal = self.engine, run.record, run.journal
        journal.describe_invoke = functools.partial(engine.chained_invoke_details, record)
        journal.callback_key = record.callback_key
        flow_failure: InvalidArgument | None = None
        if journal.is_empty:
            # Flow limits hold the execution back before it starts (stepwell.core.flow_control).
            try:
                held_back = engine.flow.gate(
                    record, engine.flow_limits(record), self._start_deadline(record), run.now
                )
            except InvalidArgument as error:  # its input gives no key (started without the code)
                held_back, flow_failure = None, error
            if held_back is not None:
                return held_back
            # Before the first batch, which only one worker writes: a retry of a failed announcement finds
            # the log still empty and announces it again.
            engine.announce_status(record, ExecutionStatus.RUNNING)
            log_start(engine, record, journal, run.now)
        journal.run_on(engine.code_version, run.now)
        if journal.logged_pause is not None:  # resumed since its pause was logged
            self._pausing.log_resumed(run)
        deadline = _deadline(record, journal)
        if deadline is not None and run.now >= deadline:
            # Whatever it waits for (a wait, a callback, a child), the execution has run out of time.
            # Checked before inputs and timers: a late message must not record a wait that ended or a
            # callback that arrived after the deadline, and nothing follows ExecutionTimedOut.
            return self._time_out(run)
        if flow_failure is not None:
            return self.endings.end(run, ExecutionStatus.FAILED, at=run.now, error=_error(flow_failure))
        missing = self.absorb(run)
        if missing is not None:
            return missing
        if not journal.needs_invocation:
            return self._idle(run)
        for child in journal.waiting_children():
            # Idempotent: recovers a child whose start was lost between its batch and its start.
            engine.start_child(record, child)
        return self._invoke(run)

    def _hold_paused(self, run: Run) -> WorkOutcome:
        """A paused execution: timed out at its deadline (its timeout runs while paused unless the pause
        paused it), else held (stepwell.core.pausing)."""
        deadline = _deadline(run.record, run.journal)
        if deadline is not None and run.now >= deadline:
            return self._time_out(run)
        return self._pausing.hold(run)

    def absorb(self, run: Run) -> WorkOutcome | None:
        """Record the inputs, the results of the callbacks it waits for and the timers due by now in the
        log (not written yet); the outcome when a callback's payload has expired."""
        try:
            # Read after the deadline check: a result that came after the deadline is never recorded.
            callback_results = self._callback_results(run.journal, run.known)
        except PayloadMissing as missing:
            return self._payloads_missing(run.record, missing)
        run.journal.absorb([*run.inputs, *callback_results], run.now)
        run.journal.fire_due_timers(run.now)
        return None

    def _idle(self, run: Run) -> WorkOutcome:
        """Nothing for the handler to do: record what was absorbed and make sure its next wake-up is armed."""
        engine, record, journal = self.engine, run.record, run.journal
        wake_at = engine.keep_log_until(journal, run.now, _next_wake_at(record, journal))
        if journal.has_unflushed:  # absorbed inputs (a heartbeat, repeats): record them as absorbed
            engine.append_journal(record, journal)
        if wake_at is not None and run.lease.armed != wake_at:
            # The next wake-up is not armed: a heartbeat moved its callback's deadline past the one
            # scheduled (which then finds nothing due), or a worker died between the batch that
            # suspended the execution and releasing the lease with its wake-up (SQS delivers its
            # message again). The armed one, recorded at the release, keeps repeated messages from
            # multiplying wake-ups.
            engine.timers.schedule(record.execution_id, wake_at)
        return WorkOutcome(
            record.execution_id, OutcomeAction.IDLE, status=record.status, next_wake_at=wake_at
        )

    def _invoke(self, run: Run) -> WorkOutcome:
        """Call the workflow's handler once (an invocation) and act on what it returns."""
        engine, record = self.engine, run.record
        remote = engine.registry.remote(record.workflow_id)
        if remote is not None:
            return self._remote.invoke(run, remote)
        try:
            handler = engine.registry.get(record.workflow_id)
        except WorkflowNotFound as error:
            # Logged as an invocation that failed at once, with no request id: no handler ran.
            failed_at_once = Invocation(request_id="", started_at=run.now)
            return self.endings.end(
                run, ExecutionStatus.FAILED, at=run.now, error=_error(error), invocation=failed_at_once
            )
        # The handler knows its execution by the ARN the API answers for it (stepwell.core.arns).
        arn = arn_context_of(run.lambda_context, self.arns).execution_arn(record.execution_id)
        trace = current_trace.get()
        run_span = trace.open(RUN_SPAN)
        client = StoreServiceClient(
            engine, record, run.journal, run.lease.owner, arn=arn, trace=trace.under(run_span)
        )
        invocation = Invocation(request_id=uuid.uuid4().hex, started_at=run.now)
        invocation_input = DurableExecutionInvocationInputWithClient(
            durable_execution_arn=arn,
            checkpoint_token=client.token,
            initial_execution_state=InitialExecutionState(
                operations=client.initial_operations(), next_marker=""
            ),
            service_client=client,
            updated_operation_ids=client.updated_operation_ids(),
        )
        timer = time.monotonic()
        try:
            # In Lambda its request id names the invocation in the log lines; elsewhere the engine's.
            with (
                log_context(invocation_id=invocation.request_id, keep_invocation=True),
                trace_environment(record.trace_header),
            ):
                output = handler(
                    invocation_input,
                    run.lambda_context
                    or InvocationContext(invocation.request_id, trace_header=record.trace_header),
                )
        except BaseException as crash:
            if run_span is not None:
                run_span.end(error=type(crash).__name__)
            if isinstance(crash, KeyboardInterrupt):
                raise
            return self.crashed(run, invocation, client, crash)
        finally:
            if run_span is not None:
                run_span.end()  # the handler's invocation (ended already when it crashed)
            engine.metrics.add(Metric.INVOCATIONS, 1, record.workflow_id)
            engine.metrics.add(
                Metric.INVOCATION_DURATION, (time.monotonic() - timer) * 1000, record.workflow_id
            )
        if client.fenced:
            return self._fenced(record, client.conflict)
        return self.act_on_output(run, invocation, client, output)

    def act_on_output(
        self, run: Run, invocation: Invocation, client: StoreServiceClient, output: Any
    ) -> WorkOutcome:
        """End the execution as its handler's output says, or suspend it (PENDING); an output that is none
        of those counts as a crash."""
        journal = run.journal
        end = self.engine.clock.now()
        status = output.get("Status") if isinstance(output, Mapping) else None
        if status == "SUCCEEDED":
            result = output.get("Result")
            if not result and journal.execution_result is not None:
                result = journal.execution_result
            too_large = self._child_result_too_large(run.record, result) or self._result_over_limit(result)
            if too_large is not None:
                return self.endings.end(
                    run, ExecutionStatus.FAILED, at=end, error=too_large, invocation=invocation
                )
            return self.endings.end(
                run, ExecutionStatus.SUCCEEDED, at=end, result=result, invocation=invocation, by_handler=True
            )
        if status == "FAILED":
            failure = output.get("Error")
            if not failure and journal.execution_error is not None:
                failure = dict(journal.execution_error.to_dict())
            failure = explain_replay_mismatch(
                dict(failure or {}), journal.operations, self.engine.code_version
            )
            return self.endings.end(
                run, ExecutionStatus.FAILED, at=end, error=failure, invocation=invocation, by_handler=True
            )
        if status != "PENDING":
            unknown = InvalidMessage(
                f"handler of {run.record.workflow_id!r} returned an unknown output {output!r}"
            )
            return self.crashed(run, invocation, client, unknown)
        return self._suspend(run, invocation, client, end)

    def _suspend(
        self, run: Run, invocation: Invocation, client: StoreServiceClient, end: float
    ) -> WorkOutcome:
        """The handler returned PENDING: log the invocation's end and arm the next wake-up."""
        engine, record, journal = self.engine, run.record, run.journal
        # After crashes the batch resets their count: written, so a worker that dies before the release
        # cannot leave the log counting them (a carried batch dies with it).
        may_carry = journal.consecutive_crashes == 0
        # A pause that ended the invocation at a checkpoint leaves it due: its resume invokes it again.
        run_again = client.timers_fired > 0 or client.callbacks_resolved_before > 0 or client.paused
        journal.invocation_completed(
            invocation.started_at, end, invocation.request_id, None, run_again=run_again
        )
        if client.paused:
            current = engine.store.get_execution(record.execution_id) or record
            if current.status.is_paused:  # still paused (a resume since goes on as below)
                return self._pausing.hold(run.of(current))
        if may_carry:
            carried = engine.carry_or_append_journal(record, journal)
        else:
            carried = None
            engine.append_journal(record, journal)
        outcome = self._schedule_next(run, end)
        return dataclasses.replace(outcome, hand_off=HandOff(carried=carried))

    def _start_deadline(self, record: ExecutionRecord) -> float | None:
        """When the execution times out, before its start is logged (the log then keeps the timeout)."""
        return execution_deadline(record, self.engine.registry.options(record.workflow_id).execution_timeout)

    def _child_result_too_large(self, record: ExecutionRecord, result: str | None) -> dict[str, Any] | None:
        """The error of a chained invoke's child whose result is over AWS's cap for what reaches the parent:
        a durable child fails as AWS fails it, a plain target with the invoke's error (neither has a type)."""
        if record.parent_execution_id is None or result is None:
            return None
        if len(result.encode()) <= MAX_CHAINED_INVOKE_PAYLOAD_BYTES:
            return None
        durable = self.engine.registry.is_durable(record.workflow_id)
        return {
            "ErrorMessage": CHILD_EXECUTION_OUTPUT_TOO_LARGE if durable else CHAINED_INVOKE_OUTPUT_TOO_LARGE
        }

    def _result_over_limit(self, result: str | None) -> dict[str, Any] | None:
        """The error an execution fails with whose result is over the deployment's limit (never stored),
        as a checkpoint over a limit fails it (stepwell.limits)."""
        problem = self.engine.limits.execution_result.problem("the execution's result", result)
        if problem is None:
            return None
        return {"ErrorType": PAYLOAD_OVER_LIMIT_TYPE, "ErrorMessage": problem}

    def _time_out(self, run: Run) -> WorkOutcome:
        """End the execution TIMED_OUT at its deadline; its pending wake-up and unread inputs go with it."""
        record, journal, inputs = run.record, run.journal, run.inputs
        error = {
            "ErrorType": EXECUTION_TIMED_OUT_TYPE,
            "ErrorMessage": f"the execution ran past its execution timeout of {journal.execution_timeout} "
            "seconds from its start",
        }
        self.engine.timers.cancel_all(record.execution_id)
        journal.absorbed_input_ids.update(item.input_id for item in inputs)
        outcome = self.endings.end(run, ExecutionStatus.TIMED_OUT, at=run.now, error=error)
        if inputs:
            self.engine.store.delete_external_inputs(record.execution_id, [item.input_id for item in inputs])
        return outcome

    def _schedule_next(self, run: Run, now: float) -> WorkOutcome:
        """Arm the suspended execution's next wake-up (at `now` when it has more to run at once)."""
        engine, record, journal = self.engine, run.record, run.journal
        wake_at = engine.keep_log_until(
            journal, now, now if journal.needs_invocation else _next_wake_at(record, journal)
        )
        if wake_at is not None:
            engine.timers.schedule(record.execution_id, wake_at)
        return WorkOutcome(
            record.execution_id, OutcomeAction.RAN, status=ExecutionStatus.RUNNING, next_wake_at=wake_at
        )

    def crashed(
        self, run: Run, invocation: Invocation, client: StoreServiceClient, crash: BaseException
    ) -> WorkOutcome:
        """The handler's process died (or returned no output it could): run it again soon, or fail the
        execution after MAX_CONSECUTIVE_CRASHES in a row."""
        engine, record, journal = self.engine, run.record, run.journal
        if client.fenced:
            return self._fenced(record, client.conflict)
        engine.metrics.add(Metric.INVOCATION_CRASHES, 1, record.workflow_id)
        now = engine.clock.now()
        error_type = (
            "Runtime.ExitError" if isinstance(crash, SystemExit) else f"Runtime.{type(crash).__name__}"
        )
        error = {"ErrorType": error_type, "ErrorMessage": str(crash) or type(crash).__name__}
        if isinstance(crash, RemoteInvocationEnded):  # the remote function's own error, as reported
            error_type, error = crash.error["ErrorType"], crash.error
        # The type only: the message may quote the handler's data (it is in the execution's history).
        logger.warning("invocation of %s crashed: %s", record.execution_id, error_type)
        journal.invocation_completed(invocation.started_at, now, invocation.request_id, error)
        if journal.consecutive_crashes >= MAX_CONSECUTIVE_CRASHES:
            return self.endings.end(run, ExecutionStatus.FAILED, at=now, error=error)
        engine.append_journal(record, journal)
        delay = min(CRASH_RETRY_BASE_SECONDS * 2 ** (journal.consecutive_crashes - 1), 300)
        retry_at = min(now + delay, _deadline(record, journal) or now + delay)
        engine.keep_log_until(journal, now, retry_at)  # the retry, however soon, is the next run
        engine.timers.schedule(record.execution_id, retry_at)
        return WorkOutcome(
            record.execution_id, OutcomeAction.CRASHED, status=ExecutionStatus.RUNNING, next_wake_at=retry_at
        )

    def _fenced(self, record: ExecutionRecord, conflict: SequenceConflict | None) -> WorkOutcome:
        """A newer worker took the execution's log from this one (its lease had expired), unless the batch
        in the way is older than the execution."""
        earlier = _earlier_executions_log(record, conflict.written_at if conflict is not None else None)
        if earlier is not None:
            raise earlier from conflict
        self.engine.metrics.add(Metric.LEASE_FENCED, 1, record.workflow_id)
        return WorkOutcome(record.execution_id, OutcomeAction.FENCED, status=record.status)


def _deadline(record: ExecutionRecord, journal: Journal) -> float | None:
    """When the execution times out (its start plus its timeout, extended by pauses), if it has one."""
    return execution_deadline(record, journal.execution_timeout)


def _next_wake_at(record: ExecutionRecord, journal: Journal) -> float | None:
    """The next timer of the log or the deadline, whichever comes first."""
    candidates = [at for at in (journal.next_wake_at(), _deadline(record, journal)) if at is not None]
    return min(candidates, default=None)


def _ends(outcome: WorkOutcome) -> bool:
    """Whether the lease's release after this outcome ends the execution's coordination record."""
    return outcome.action not in _ARMED_NOTHING and outcome.status is not None and outcome.status.is_terminal


def _hand_off(outcome: WorkOutcome | None, now: float) -> HandOff:
    """What releasing the lease records after a run with this outcome: what the run left (outcome.hand_off)
    with the wake-up it armed and when the execution ended (None: it runs). A run that failed, was fenced
    or forwards the message armed nothing: the recorded wake-up stands."""
    if outcome is None:
        return HandOff()
    left = outcome.hand_off
    if outcome.action in _ARMED_NOTHING:
        return dataclasses.replace(left, wake_at=KeepWake.KEEP, ended_at=None)
    if _ends(outcome):
        ended_at = left.ended_at if left.ended_at is not None else now
        return dataclasses.replace(left, wake_at=None, ended_at=ended_at)
    return dataclasses.replace(left, wake_at=outcome.next_wake_at, ended_at=None)


def _unneeded_wake(armed: float | None, outcome: WorkOutcome) -> tuple[float, float | None] | None:
    """The wake-up the execution's last run armed (`armed`, recorded on its lease) when this run's outcome
    no longer needs it, with the one the outcome keeps: the execution ended, or its next wake-up is another
    (a callback came before its deadline). A run that armed nothing (fenced, forwarded, settling an end)
    leaves it; so does a time-out, which deleted every schedule of the execution."""
    if armed is None:
        return None
    if outcome.action is OutcomeAction.FINISHED:
        return None if outcome.status is ExecutionStatus.TIMED_OUT else (armed, None)
    if outcome.action in _LEFT_RUNNING and outcome.next_wake_at != armed:
        return armed, outcome.next_wake_at
    return None


def _forward(record: ExecutionRecord) -> WorkOutcome:
    return WorkOutcome(
        record.execution_id,
        OutcomeAction.FORWARD,
        status=record.status,
        details={"version": record.code_version},
    )


def _error(error: BaseException) -> dict[str, Any]:
    return dict(ErrorObject.from_exception(error).to_dict())


def _earlier_executions_log(record: ExecutionRecord, *written: float | None) -> LogOfEarlierExecution | None:
    """The error for the oldest of batches written at `written` (in the log, carried by the coordination
    record, in the way of a write; None: no such batch) when an earlier execution under the same name left
    it (`predates`): the run fails, its message retries and then waits in the DLQ; redriven once the
    table's TTL has removed those items, the execution runs from its start."""
    known = [written_at for written_at in written if written_at is not None]
    if not known or not predates(record, oldest := min(known)):
        return None
    return LogOfEarlierExecution(
        f"execution {record.execution_id!r}, created at {iso_timestamp(record.created_at)}: its log or "
        f"coordination record holds a batch written at {iso_timestamp(oldest)} by an earlier execution "
        "under the same name, whose record the table's TTL removed before its other items; redrive the "
        "message once the TTL has removed those too (the earlier execution's retention has passed)"
    )


__all__ = [
    "CRASH_RETRY_BASE_SECONDS",
    "EXECUTION_TIMED_OUT_TYPE",
    "MAX_CONSECUTIVE_CRASHES",
    "OVERDUE_WAKE_UP_SECONDS",
    "InvocationContext",
    "Known",
    "Worker",
    "parse_invoke_message",
]
