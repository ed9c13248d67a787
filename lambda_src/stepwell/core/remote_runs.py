"""Runs of remote durable functions (issue 41) in the worker: phase A invokes the function, phase C acts
on its result (phase B, its checkpoints, is stepwell.core.remote_checkpoints in the API).

Phase A: where the worker would call an in-process handler, it writes what the journal has unflushed (the
function reads the stored log), makes the checkpoint token, arms a wake-up at the lease's expiry (the lease
was taken for the function's timeout plus a margin: RemoteFunction.lease_seconds) and invokes the function
asynchronously with AWS's durable invocation input. Its run then ends without releasing the lease
(`keeps_lease`): the function's checkpoints are that owner's. A refusal of the invoke (no such function,
access denied, a bad qualifier) ends the execution FAILED naming the function and the cause.

Phase C: Lambda's destination record of the invocation comes on the work queue. If the token's owner still
holds the lease, the run goes on as that owner (Worker.finish_remote): the log is read again and the
output acted on as an in-process handler's; a function error counts as a crash of that invocation. A
record whose owner lost the lease (it expired: the wake-up counted the invocation as lost and retried it)
is dropped. The worker never waits for the function: its cost is the two short runs.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from aws_durable_execution_sdk_python.lambda_service import Operation

from stepwell.core.arns import as_handed, execution_arn_of_function, ids_as_handed
from stepwell.core.endings import Endings
from stepwell.core.external_inputs import check_error_object
from stepwell.core.invoke_targets import LambdaInvokeRefused
from stepwell.core.metrics import Metric
from stepwell.core.remote_checkpoints import page_of
from stepwell.core.remote_functions import CheckpointToken, RemoteFunction, RemoteResult
from stepwell.core.run import Invocation, Run
from stepwell.core.service import StoreServiceClient
from stepwell.core.tracing import trace_environment
from stepwell.errors import InvalidArgument, StepwellError
from stepwell.model import ExecutionRecord, ExecutionStatus, OutcomeAction, WorkOutcome

if TYPE_CHECKING:
    from stepwell.core.engine import Engine

logger = logging.getLogger(__name__)

# The invocation input's first page of operations at most (the rest is read with GetDurableExecutionState):
# the input comes back inside the destination record, which must fit the work queue's 256 KB messages
# beside the function's output.
MAX_INITIAL_STATE_BYTES = 32 * 1024
INVOCATION_LOST_TYPE = "Stepwell.RemoteInvocationLost"
INVALID_OUTPUT_TYPE = "Stepwell.RemoteInvalidOutput"
_MAX_SHOWN = 300


class RemoteInvocationEnded(StepwellError):
    """A remote function's invocation ended without a usable output (it failed, was lost, or answered
    something that is no durable invocation output): a crash of that invocation, with this error."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error = {"ErrorType": error_type, "ErrorMessage": message}


def keeps_lease(outcome: WorkOutcome | None) -> bool:
    """Whether the run that had this outcome invoked a remote function: its lease stays for the function."""
    return outcome is not None and outcome.action is OutcomeAction.INVOKED


def invocation_input(
    execution_id: str, arn: str, *, token: str, operations: Iterable[Operation], updated: list[str]
) -> dict[str, Any]:
    """AWS's durable invocation input for the function `arn` is handed to (the operations as it is handed
    them: stepwell.core.arns.as_handed), paged past MAX_INITIAL_STATE_BYTES."""
    listed = as_handed(operations, execution_id=execution_id, arn=arn)
    page = page_of(listed, 0, len(listed) or 1, MAX_INITIAL_STATE_BYTES)
    if page.operations and operations_size(page.operations) > MAX_INITIAL_STATE_BYTES:
        page = dataclasses.replace(page, operations=[], next_marker="0")  # one operation over the budget
    return {
        "DurableExecutionArn": arn,
        "CheckpointToken": token,
        "InitialExecutionState": {
            "Operations": [op.to_json_dict() for op in page.operations],
            "NextMarker": page.next_marker or "",
        },
        "UpdatedOperationIds": ids_as_handed(updated, execution_id=execution_id, arn=arn),
    }


def operations_size(operations: list[Operation]) -> int:
    return len(json.dumps([op.to_json_dict() for op in operations], separators=(",", ":")).encode())


class RunSteps(Protocol):
    """The worker's steps a remote run takes as an in-process one does (stepwell.core.worker.Worker)."""

    engine: Engine
    endings: Endings

    def crashed(
        self, run: Run, invocation: Invocation, client: StoreServiceClient, crash: BaseException
    ) -> WorkOutcome: ...

    def absorb(self, run: Run) -> WorkOutcome | None: ...

    def act_on_output(
        self, run: Run, invocation: Invocation, client: StoreServiceClient, output: Any
    ) -> WorkOutcome: ...


class RemoteRuns:
    """Phase A and phase C of remote functions' runs, for one worker."""

    def __init__(self, worker: RunSteps) -> None:
        self._worker = worker
        self.engine = worker.engine

    def lease_seconds(self, workflow_id: str) -> float:
        """How long a run of this workflow takes the lease: for a remote one, the function's timeout plus a
        margin for its result (never less than the engine's lease)."""
        remote = self.engine.registry.remote(workflow_id)
        seconds = self.engine.lease_seconds
        return seconds if remote is None else max(seconds, remote.lease_seconds)

    # ------------------------------------------------------------------ phase A

    def invoke(self, run: Run, remote: RemoteFunction) -> WorkOutcome:
        engine, record, journal = self.engine, run.record, run.journal
        worker = self._worker
        client = StoreServiceClient(engine, record, journal, run.lease.owner)
        if run.lease.taken_over:
            # The run before held the lease for an invocation and no result came before it expired (or
            # that run died before invoking): a lost invocation, counted as a crash and retried.
            lost = RemoteInvocationEnded(
                INVOCATION_LOST_TYPE,
                f"no result came from {remote.qualified_arn} before the run that invoked it lost its lease "
                f"(the function's timeout, {remote.timeout_seconds} s, and a margin)",
            )
            return worker.crashed(run, Invocation("", run.now), client, lost)
        invoker = engine.registry.remote_invoker()
        updated = journal.unflushed_operation_ids()
        if journal.has_unflushed or journal.holds_carried:
            engine.append_journal(record, journal)  # the function reads the stored log
        request_id = uuid.uuid4().hex
        # Past the expiry (that run takes the lease over), with the log kept at least as long.
        wake_at = float(int(run.lease.expires_at) + 1)
        wake_at = engine.keep_log_until(journal, run.now, wake_at) or wake_at
        token = CheckpointToken(
            execution_id=record.execution_id,
            owner=run.lease.owner,
            seq=journal.next_seq,
            request_id=request_id,
            started_ms=int(run.now * 1000),
            wake_ms=int(wake_at * 1000),
        )
        invocation = Invocation(request_id, run.now)
        try:
            arn = execution_arn_of_function(record.execution_id, remote.function_arn)
            payload = invocation_input(
                record.execution_id,
                arn,
                token=token.encode(),
                operations=journal.operations.values(),
                updated=updated,
            )
        except (InvalidArgument, ValueError) as error:
            failed = _error("Stepwell.InvalidInvocation", error)
            return worker.endings.end(
                run, ExecutionStatus.FAILED, at=run.now, error=failed, invocation=invocation
            )
        # Armed first: a lost result still wakes the execution.
        engine.timers.schedule(record.execution_id, wake_at)
        try:
            # botocore sends _X_AMZN_TRACE_ID as the Invoke's X-Amzn-Trace-Id from inside Lambda, and Lambda
            # hands it to the function's invocation: the execution's trace (docs/reference/traces.md).
            with trace_environment(record.trace_header):
                invoker.invoke_event(remote.function_arn, remote.qualifier, json.dumps(payload).encode())
        except LambdaInvokeRefused as refused:
            engine.timers.withdraw(record.execution_id, wake_at)
            message = f"Lambda refused to invoke {remote.qualified_arn}: {refused.message}"
            refusal = {"ErrorType": refused.error_type, "ErrorMessage": message}
            return worker.endings.end(
                run, ExecutionStatus.FAILED, at=engine.clock.now(), error=refusal, invocation=invocation
            )
        except Exception:
            engine.timers.withdraw(record.execution_id, wake_at)  # the message is delivered again
            raise
        finally:
            engine.metrics.add(Metric.INVOCATIONS, 1, record.workflow_id)
        logger.info("invoked %s (request %s)", remote.qualified_arn, request_id)
        return WorkOutcome(
            record.execution_id,
            OutcomeAction.INVOKED,
            status=ExecutionStatus.RUNNING,
            next_wake_at=wake_at,
            details={"requestId": request_id, "function": remote.qualified_arn},
        )

    # ------------------------------------------------------------------ phase C

    def stale(self, record: ExecutionRecord, result: RemoteResult) -> WorkOutcome:
        """A result whose run no longer holds the lease: dropped (the wake-up at its expiry retried it)."""
        logger.warning(
            "dropped the result of invocation %s of %s: its run no longer holds the execution's lease",
            result.token.request_id,
            record.execution_id,
        )
        return WorkOutcome(
            record.execution_id,
            OutcomeAction.IGNORED,
            status=record.status,
            details={"reason": "stale result"},
        )

    def finish(self, run: Run, result: RemoteResult) -> WorkOutcome:
        """Act on the invocation's end as the run that invoked it (the lease's owner)."""
        engine, record, journal = self.engine, run.record, run.journal
        worker = self._worker
        token = result.token
        engine.timers.withdraw(record.execution_id, token.wake_ms / 1000)
        invocation = Invocation(token.request_id, token.started_ms / 1000)
        engine.metrics.add(
            Metric.INVOCATION_DURATION, max(0.0, run.now - invocation.started_at) * 1000, record.workflow_id
        )
        journal.describe_invoke = functools.partial(engine.chained_invoke_details, record)
        journal.callback_key = record.callback_key
        client = StoreServiceClient(engine, record, journal, run.lease.owner)
        output, problem = _checked_output(result)
        if problem is not None:
            return worker.crashed(run, invocation, client, problem)
        missing = worker.absorb(run)  # what came while it ran: its next run sees it
        if missing is not None:
            return missing
        if journal.has_unflushed:
            client.timers_fired += 1  # something became ready: a PENDING output runs it again
        client.paused = engine.store.get_execution_status(record.execution_id) in (
            ExecutionStatus.PAUSING,
            ExecutionStatus.PAUSED,
        )
        if output["Status"] == "PENDING" and not client.paused and not _waits(run):
            # Nothing would ever wake it: a crash of that invocation (retried, bounded), not a hang.
            idle = RemoteInvocationEnded(
                INVALID_OUTPUT_TYPE,
                "the function returned PENDING, but the execution waits for nothing (no wait, retry, "
                "callback or chained invoke is pending)",
            )
            return worker.crashed(run, invocation, client, idle)
        return worker.act_on_output(run, invocation, client, output)


def _waits(run: Run) -> bool:
    """Whether the execution waits for anything that wakes it: something ready now (absorbed), a timer (a
    wait, a step's retry, a callback's timeout), a callback, or a chained invoke's child."""
    journal = run.journal
    return bool(
        journal.has_unflushed
        or journal.next_wake_at() is not None
        or journal.open_callbacks()
        or journal.waiting_children()
    )


def _checked_output(result: RemoteResult) -> tuple[Mapping[str, Any], RemoteInvocationEnded | None]:
    """The function's output if it is a durable invocation output (hostile input: checked), else the
    crash it counts as."""
    if result.failure is not None:
        return {}, RemoteInvocationEnded(*result.failure)
    output = result.output
    status = output.get("Status") if isinstance(output, Mapping) else None
    shown = json.dumps(output, default=str)[:_MAX_SHOWN]
    problem = None
    if status not in ("SUCCEEDED", "FAILED", "PENDING"):
        problem = "no Status of SUCCEEDED, FAILED or PENDING"
    elif not isinstance(output.get("Result"), str | None):
        problem = "a Result that is not a string"
    else:
        try:
            check_error_object(output.get("Error"), "the output's")
        except StepwellError as error:
            problem = str(error)[:_MAX_SHOWN]
    if problem is not None:
        message = f"the function's output has {problem}: {shown}"
        return {}, RemoteInvocationEnded(INVALID_OUTPUT_TYPE, message)
    assert isinstance(output, Mapping)
    return output, None


def _error(error_type: str, error: Exception) -> dict[str, Any]:
    return {"ErrorType": error_type, "ErrorMessage": str(error)}


__all__ = [
    "INVOCATION_LOST_TYPE",
    "RemoteInvocationEnded",
    "RemoteRuns",
    "invocation_input",
    "keeps_lease",
]
