"""The worker Lambda's entry: `stepwell.wiring.entry.handler(event, context)`.

An SQS batch (the work queue's event source mapping) is handled message by message and answered with
{"batchItemFailures": [...]}: a message that is not an engine message, or whose handling failed, is
reported alone, so SQS retries it (and in the end moves it to the DLQ) while the rest of the batch
succeeds. With a Lambda context the batch answers before its invocation's deadline, the messages it has
not finished then among the failures (handle_sqs_batch). Message bodies (docs/architecture.md):

- {"kind": "invoke", "executionId": ..., "dueAt"?: ..., "busyRetries"?: n}: run or resume an execution.
  One arriving before its `dueAt` is re-scheduled, not run; one finding the execution busy (leased by
  another worker) is re-sent later with `busyRetries` counting up and the delay doubling.
- {"kind": "reconcile"}: sweep flow control keys and prune old worker versions (stepwell.features.reconciler);
  it also sweeps due wake-ups left from a time with long_wait_wakeups = "sweep".
- {"kind": "wake-sweep", "shard"?: k, "owner"?: ...}: send the long waits now due (stepwell.core.wake_sweep).
- {"kind": "scheduled-start", ...}: one occurrence of a schedule starts its workflow
(stepwell.features.schedules);
  one that cannot start anything is logged and dropped, not retried.
- an EventBridge envelope from the bus rule. Callback commands are events whose `detail-type` is
  "stepwell.callback.success" (detail {"callbackId": ..., "result": text, or any JSON value which is
  sent as its JSON text}),
  "stepwell.callback.failure" (detail {"callbackId": ..., "error": {"ErrorType", "ErrorMessage",
  "ErrorData", "StackTrace"}}) or "stepwell.callback.heartbeat" (detail {"callbackId": ...}), and whose
  source is "stepwell.client" (one with such a detail-type from any other source is logged as rejected
  and never applied). Other events are domain events: the definitions router (stepwell.features.definitions)
  takes them when the deployment has a definitions table; without one, each is logged as rejected.

A direct invocation with {"kind": "reconcile"} (or an invoke body) is handled the same way. One-time
wake-up schedules invoke the worker's alias so (stepwell.aws.timers); a direct invocation that raises is
retried by Lambda and then sent to the work queue as an on-failure destination record ({"version":
"1.0", "requestContext": {...}, "requestPayload": BODY, ...}): the queue's record is handled as BODY.

Code versions (docs/engine.md): a message for an execution pinned to another version of the worker is
run by that version. The records of a batch pinned elsewhere are grouped by version and sent with one
synchronous invoke per version, as the SQS event {"Records": [...], "stepwellForwardedFrom": "<this
version>"}; that answer's batchItemFailures become this batch's. A forwarded event is never forwarded
again (a record pinned elsewhere there is an item failure: SQS delivers it again through the alias). A
direct invocation pinned elsewhere is forwarded the same way, as its body plus "stepwellForwardedFrom";
when that invoke fails (or the body was forwarded already) it goes to the work queue, which reaches it
through the alias.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import threading
import traceback
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from stepwell.aws.clients import AwsClients
from stepwell.aws.timers import is_early
from stepwell.aws.work_queue import MAX_DELAY_SECONDS
from stepwell.clock import SystemClock
from stepwell.config import DEFAULT_KEEP_VERSIONS, StepwellConfig
from stepwell.core.engine import Engine
from stepwell.core.logs import install_json_logging, log_context, workflow_of
from stepwell.core.metrics import EmfMetrics, Metric, Metrics
from stepwell.core.registry import Registry, default_registry, import_workflow_modules
from stepwell.core.remote_functions import is_remote_result
from stepwell.core.status_events import STATUS_EVENT_SOURCE
from stepwell.core.versions import PRUNE_GRACE_SECONDS, prune_grace_seconds
from stepwell.core.wake_sweep import WAKE_SWEEP_KIND, SweepRequest, WakeSweep
from stepwell.core.worker import Worker, parse_invoke_message
from stepwell.errors import (
    CallbackNotFound,
    ExecutionAlreadyEnded,
    ForwardFailed,
    InvalidArgument,
    InvalidMessage,
)
from stepwell.features.definitions.router import Router
from stepwell.features.definitions.service import install
from stepwell.features.reconciler import Reconciler
from stepwell.features.schedules import SCHEDULED_START, start_scheduled
from stepwell.model import InvokeMessage, OutcomeAction
from stepwell.ports import Clock
from stepwell.ports.spans import SpanRecorder
from stepwell.wiring.build import (
    allow_deployment_targets,
    build_engine,
    span_recorder,
    with_durable_functions_parameter,
)
from stepwell.wiring.events import (
    CALLBACK_DETAIL_TYPES,
    CALLBACK_EVENT_SOURCE,
    CALLBACK_FAILURE,
    CALLBACK_SUCCESS,
    callback_result_text,
    reject_json_constant,
)
from stepwell.wiring.long_waits import build_wake_sweep

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

_ENVELOPE_KEYS = ("version", "id", "detail-type", "source", "detail")
# A message that finds its execution leased by another worker comes back after this delay, doubling
# each time it finds it busy again (up to SQS's 900 s).
BUSY_RETRY_SECONDS = 5
# Marks an SQS event one worker version forwarded to another (its value: the forwarding version).
FORWARDED_FROM = "stepwellForwardedFrom"
# What a batch keeps back from its invocation's deadline: with less left, it answers, handing back what it
# has not finished, before Lambda times the invocation out (which redelivers the whole batch, finished
# messages of other tenants included). Answering takes milliseconds: this is slack for a loaded container.
BATCH_RESERVE_SECONDS = 2.0
# ...but at most this share of the time the batch began with, so a short timeout still runs its messages.
BATCH_RESERVE_FRACTION = 0.1


@dataclass
class MessageResult:
    """What happened to one message (logged; tests read it)."""

    kind: str
    action: str
    execution_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def error_kind(error: BaseException) -> str:
    """An error's type, and for an AWS error its code (AWS's codes name no data)."""
    response = getattr(error, "response", None)
    details = response.get("Error") if isinstance(response, Mapping) else None
    code = details.get("Code") if isinstance(details, Mapping) else None
    return f"{type(error).__name__} {code}" if isinstance(code, str) and code else type(error).__name__


def decode_body(text: object) -> dict[str, Any]:
    """The JSON object in a message body, or InvalidMessage saying what is wrong."""
    if not isinstance(text, str):
        raise InvalidMessage(f"message body must be a JSON string, got {type(text).__name__}")
    try:
        body = json.loads(text, parse_constant=reject_json_constant)
    except ValueError as error:  # json.JSONDecodeError, or NaN / Infinity
        raise InvalidMessage(f"message body is not JSON ({error}): {text[:200]!r}") from error
    except RecursionError:
        raise InvalidMessage(f"message body is JSON nested too deeply: {text[:200]!r}") from None
    if not isinstance(body, dict):
        raise InvalidMessage(f"message body must be a JSON object, got {text[:200]!r}")
    return body


def is_destination_record(body: Mapping[str, Any]) -> bool:
    """Lambda's on-failure destination record: requestContext and requestPayload always (responseContext
    and responsePayload only when the function ran: an event that aged out under throttling never did)."""
    return "kind" not in body and isinstance(body.get("requestContext"), Mapping) and "requestPayload" in body


def unwrap_destination_record(body: dict[str, Any]) -> dict[str, Any]:
    """The invocation payload in an on-failure destination record (a direct wake-up whose runs all
    failed, handed to the work queue to be retried there), or `body` itself when it is no such record."""
    if not is_destination_record(body) or is_remote_result(body):
        return body  # a remote durable function's result is read as it is (Worker.finish_remote)
    payload = body["requestPayload"]
    condition = body["requestContext"].get("condition")
    if not isinstance(payload, dict) or is_destination_record(payload):
        raise InvalidMessage(
            "an on-failure destination record must carry the invocation's payload object (an engine "
            f"message) as requestPayload, got {type(payload).__name__}"
        )
    logger.warning(
        "a direct invocation (%s) reached the work queue after %s",
        payload.get("kind"),
        condition if isinstance(condition, str) else "its retries",
    )
    return payload


def _message_id(record: object) -> str:
    return str(record.get("messageId", "")) if isinstance(record, Mapping) else ""


def is_bus_envelope(body: Mapping[str, Any]) -> bool:
    return all(key in body for key in _ENVELOPE_KEYS)


class _Deadline:
    """When a batch must answer: its invocation's remaining time less the reserve."""

    def __init__(self, time_left: Callable[[], float]) -> None:
        self._time_left = time_left
        self.reserve = min(BATCH_RESERVE_SECONDS, BATCH_RESERVE_FRACTION * max(0.0, time_left()))

    def seconds_left(self) -> float:
        return self._time_left() - self.reserve


def _deadline_of(context: Any) -> _Deadline | None:
    """The batch's deadline from its Lambda context (None outside Lambda: nothing bounds it)."""
    time_left = _time_left(context)
    return _Deadline(time_left) if time_left is not None else None


def _handed_back(records: list[Any]) -> list[dict[str, str]]:
    return [{"itemIdentifier": _message_id(record)} for record in records]


class EntryRuntime:
    """The worker, reconciler and engine of one Lambda container."""

    def __init__(
        self,
        engine: Engine,
        reconciler: Reconciler | None = None,
        *,
        event_router: Router | None = None,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
        prune_grace: float = PRUNE_GRACE_SECONDS,
        wake_sweep: WakeSweep | None = None,
        spans: SpanRecorder | None = None,
    ) -> None:
        self.engine = engine
        # Due wake-ups of long waits (None: the deployment has no sweep, as in memory).
        self.wake_sweep = wake_sweep
        # The worker's own spans (off unless the deployment's traces ask: wiring.build.span_recorder).
        self.worker = Worker(engine, spans=spans)
        self.reconciler = reconciler or Reconciler(
            engine.store,
            engine.queue,
            engine.clock,
            versions=engine.functions,
            keep_versions=keep_versions,
            prune_grace=prune_grace,
        )
        # Domain events (bus events that are not stepwell.* commands) go to the definitions router.
        self.event_router = event_router
        # A run a batch handed back at its deadline that was still going (see handle_sqs_batch).
        self._overrun: threading.Thread | None = None

    @classmethod
    def from_config(
        cls,
        config: StepwellConfig,
        clients: AwsClients | None = None,
        *,
        registry: Registry | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
    ) -> EntryRuntime:
        aws = clients or AwsClients(region=config.region or None)
        chosen = allow_deployment_targets(registry if registry is not None else default_registry, config, aws)
        engine = build_engine(config, aws, chosen, clock or SystemClock(), metrics=metrics)
        grace = prune_grace_seconds(config.work_queue_visibility_seconds)
        sweep = build_wake_sweep(config, aws, engine)
        return cls(
            engine,
            keep_versions=config.keep_versions,
            prune_grace=grace,
            wake_sweep=sweep,
            spans=span_recorder(os.environ, aws),
        )

    # --- events ---

    def handle_event(self, event: Any, context: Any = None) -> dict[str, Any]:
        # Lambda's request id on every line this invocation writes.
        request_id = getattr(context, "aws_request_id", None)
        invocation_id = request_id if isinstance(request_id, str) else None
        # The worker's spans (when on) go in one request per invocation, however many runs it made.
        with log_context(invocation_id=invocation_id), self.worker.spans_per_invocation():
            return self._handle_event(event, context)

    def _handle_event(self, event: Any, context: Any) -> dict[str, Any]:
        if isinstance(event, Mapping) and isinstance(event.get("Records"), list):
            forwarded_from = event.get(FORWARDED_FROM)
            return self.handle_sqs_batch(
                event["Records"], context, forwarded_from=str(forwarded_from) if forwarded_from else None
            )
        if isinstance(event, Mapping):
            forwarded_from = event.get(FORWARDED_FROM)
            body = {key: value for key, value in event.items() if key != FORWARDED_FROM}
            # One run at a time here too (see handle_sqs_batch); past the wait it runs anyway: a direct
            # invocation has no batch to hand back, and the engine's lease keeps the two runs apart.
            self._overrun_ended(_deadline_of(context))
            try:
                result = self.handle_body(body, context)
            finally:
                self.engine.metrics.flush()
            if result.action == OutcomeAction.FORWARD:
                result = self._forward_body(body, result, forwarded_from is None)
            return {"kind": result.kind, "action": result.action, "executionId": result.execution_id}
        raise InvalidMessage(f"unsupported event: expected an SQS batch or an engine message, got {event!r}")

    def handle_sqs_batch(
        self, records: list[Any], context: Any = None, forwarded_from: str | None = None
    ) -> dict[str, Any]:
        """`forwarded_from`: the version that forwarded these records (they are never forwarded again).

        With a Lambda context the batch answers before its invocation's deadline (less the reserve): the
        messages it has not finished by then, the one running included, are batch item failures, so SQS
        delivers those alone again and the finished ones are never retried. A run cannot be interrupted:
        each runs in a thread of its own, which is left running when its time is up (the engine's lease
        keeps a run of it elsewhere out until it ends or its lease expires, and its writes are fenced)."""
        deadline = _deadline_of(context)
        if not self._overrun_ended(deadline):
            logger.warning(
                "a run handed back by an earlier invocation is still going: handing back all %d message(s)",
                len(records),
            )
            return {"batchItemFailures": _handed_back(records)}
        with self.event_router.batch() if self.event_router is not None else nullcontext():
            failures, pinned_elsewhere, finished = self._handle_records(
                records, context, forwarded_from, deadline
            )
        # After this version's own records: one synchronous invoke per pinned version (a batch spans at
        # most the versions of one transition, so running them one after another costs little).
        for version, group in pinned_elsewhere.items():
            if not finished or (deadline is not None and deadline.seconds_left() <= 0):
                # Out of time: not forwarded, SQS delivers them again.
                failures.extend(_handed_back(group))
                finished = False
                continue
            done, failed_ids = self._bounded(partial(self._forward, version, group), deadline)
            if not done:
                logger.warning(
                    "forwarding to version %s did not answer before the deadline: handing back %d message(s)",
                    version,
                    len(group),
                )
                failed_ids, finished = [_message_id(record) for record in group], False
            failures.extend({"itemIdentifier": message_id} for message_id in failed_ids or [])
        return {"batchItemFailures": failures}

    def _overrun_ended(self, deadline: _Deadline | None) -> bool:
        """Wait (within `deadline`) for a run an earlier invocation left going: True once it has ended. One
        run at a time in a container, as Lambda's own model is; the earlier one resumed when this
        invocation thawed the container."""
        overrun = self._overrun
        if overrun is None:
            return True
        overrun.join(None if deadline is None else max(0.0, deadline.seconds_left()))
        if overrun.is_alive():
            return False
        self._overrun = None
        return True

    def _bounded(self, work: Callable[[], _T], deadline: _Deadline | None) -> tuple[bool, _T | None]:
        """(True, what `work` returned), or (False, None) when the deadline came first: `work` then goes on
        in its thread (a Python thread cannot be stopped safely) and the next invocation waits for it."""
        if deadline is None:
            return True, work()
        box: list[_T] = []
        raised: list[BaseException] = []

        def run() -> None:
            try:
                box.append(work())
            except BaseException as error:  # handed to the handler's thread, which raises it
                raised.append(error)

        # The invocation's log context goes with the run into its thread.
        thread = threading.Thread(
            target=contextvars.copy_context().run, args=(run,), name="stepwell-message", daemon=True
        )
        thread.start()
        thread.join(max(0.0, deadline.seconds_left()))
        if thread.is_alive():
            self._overrun = thread
            return False, None
        if raised:
            raise raised[0]
        return True, box[0]

    def _handle_records(
        self, records: list[Any], context: Any, forwarded_from: str | None, deadline: _Deadline | None = None
    ) -> tuple[list[dict[str, str]], dict[str, list[Mapping[str, Any]]], bool]:
        """Handle each record of the batch: the failures SQS must deliver again, the records another
        version must run, by version, and whether the batch got through before its deadline (if not, the
        record running then and those after it are among the failures)."""
        failures: list[dict[str, str]] = []
        pinned_elsewhere: dict[str, list[Mapping[str, Any]]] = {}
        for index, record in enumerate(records):
            if deadline is not None and deadline.seconds_left() <= 0:
                logger.warning(
                    "the invocation's deadline is near: handing back %d message(s) not started: %s",
                    len(records) - index,
                    " ".join(_message_id(left) for left in records[index:]),
                )
                failures.extend(_handed_back(records[index:]))
                return failures, pinned_elsewhere, False
            done, outcome = self._bounded(
                partial(self._handle_record, record, context, forwarded_from), deadline
            )
            if not done:
                logger.warning(
                    "message %s is still running near the invocation's deadline: handing it back, and %d "
                    "message(s) not started",
                    _message_id(record),
                    len(records) - index - 1,
                )
                failures.extend(_handed_back(records[index:]))
                return failures, pinned_elsewhere, False
            if outcome is None:
                continue
            if isinstance(outcome, str):
                failures.append({"itemIdentifier": outcome})
            else:
                version, pinned = outcome
                pinned_elsewhere.setdefault(version, []).append(pinned)
        return failures, pinned_elsewhere, True

    def _handle_record(
        self, record: Any, context: Any, forwarded_from: str | None
    ) -> str | tuple[str, Mapping[str, Any]] | None:
        """Handle one record: None when done, its message id when SQS must deliver it again, or (version,
        record) when another version must run it."""
        message_id = _message_id(record)
        try:
            if not isinstance(record, Mapping):
                raise InvalidMessage(f"SQS record must be an object, got {record!r}")
            received = decode_body(record.get("body"))
            body = unwrap_destination_record(received)
            result = self.handle_body(body, context)
            if result.action == OutcomeAction.FORWARD:
                if body is not received:
                    # The pinned version gets the payload itself, whether or not it knows the wrapper.
                    record = {**record, "body": json.dumps(body)}
                version = str(result.details.get("version"))
                if forwarded_from is None and self.engine.functions is not None:
                    self.engine.metrics.add(
                        Metric.FORWARDED_MESSAGES, 1, workflow_of(result.execution_id or "")
                    )
                    return version, record
                logger.error(
                    "message %s: %s is pinned to version %s and this one (%s, forwarded from %s) does "
                    "not forward; SQS will deliver it again",
                    message_id,
                    result.execution_id,
                    version,
                    self.engine.code_version,
                    forwarded_from,
                )
                return message_id
            with log_context(result.execution_id):
                logger.info(
                    "message %s: %s %s %s",
                    message_id,
                    result.kind,
                    result.action,
                    result.execution_id or "",
                )
        except (InvalidMessage, InvalidArgument) as error:
            # Not the error's text: it may quote the message's payload (the DLQ keeps the message).
            logger.error(
                "message %s is not an engine message, leaving it to the DLQ (%s)",
                message_id,
                type(error).__name__,
            )
            return message_id
        except Exception as error:
            # A transient failure (throttling beyond the retries, a timeout): SQS delivers it again.
            # The error's kind and where it was raised, not its text: that may quote a payload.
            logger.error(
                "message %s failed (%s); SQS will deliver it again\n%s",
                message_id,
                error_kind(error),
                "".join(traceback.format_tb(error.__traceback__)),
            )
            return message_id
        finally:
            # One EMF record per message (and workflow), whatever became of it.
            self.engine.metrics.flush()
        return None

    def _forward(self, version: str, records: list[Mapping[str, Any]]) -> list[str]:
        """Have `version` run `records`; returns the ids of those that failed there (or all, if the invoke
        did), so SQS delivers them again."""
        functions = self.engine.functions
        assert functions is not None  # only a worker with functions groups records to forward
        message_ids = [_message_id(record) for record in records]
        logger.info(
            "forwarding %d message(s) to version %s: %s", len(records), version, " ".join(message_ids)
        )
        event = {"Records": list(records), FORWARDED_FROM: self.engine.code_version}
        try:
            answer = functions.invoke(version, event)
        except ForwardFailed as error:
            if error.version_missing:
                logger.error(
                    "version %s no longer exists: message(s) %s for executions pinned to it stay in the "
                    "queue until the DLQ; move those executions to published code with `stepwell "
                    "executions upgrade ID --to-version live` (or `--workflow W --from-version %s`)",
                    version,
                    " ".join(message_ids),
                    version,
                )
                self._keep_logs(records)
            else:
                logger.error("%s; SQS will deliver %s again", error, " ".join(message_ids))
            return message_ids
        except Exception as error:
            logger.error(
                "forwarding to version %s failed (%s); SQS will deliver %s again",
                version,
                error_kind(error),
                " ".join(message_ids),
            )
            return message_ids
        reported = answer.get("batchItemFailures")
        if not isinstance(reported, list):
            logger.error(
                "version %s answered without batchItemFailures; SQS will deliver them again", version
            )
            return message_ids
        failed = {item.get("itemIdentifier") for item in reported if isinstance(item, Mapping)}
        return [message_id for message_id in message_ids if message_id in failed]

    def _forward_body(self, body: dict[str, Any], result: MessageResult, may_forward: bool) -> MessageResult:
        """A direct invocation (a wake-up Scheduler invoked) for an execution pinned to another version: that
        version runs it, by one synchronous invoke; if it cannot (or this one was forwarded already), the
        work queue brings it back through the alias, whose worker forwards it as a message."""
        version = str(result.details.get("version"))
        functions = self.engine.functions
        if may_forward and functions is not None:
            self.engine.metrics.add(Metric.FORWARDED_MESSAGES, 1, workflow_of(result.execution_id or ""))
            try:
                answer = functions.invoke(version, {**body, FORWARDED_FROM: self.engine.code_version})
            except Exception as error:
                logger.warning(
                    "forwarding a direct invocation to version %s failed (%s); it goes to the work queue",
                    version,
                    error_kind(error),
                )
            else:
                details = {"version": version, "answer": answer.get("action")}
                return MessageResult("invoke", "forwarded", result.execution_id, details)
        # Not run here: the queue brings it back through the alias, whose worker forwards it.
        self.engine.queue.enqueue(body)
        return MessageResult(
            "invoke", "requeued", result.execution_id, {**result.details, "reason": "pinned elsewhere"}
        )

    def _keep_logs(self, records: list[Mapping[str, Any]]) -> None:
        """Keep the logs of the executions `records` wake: they wait for an operator, however late
        (stepwell.core.log_expiry)."""
        for record in records:
            try:
                self.engine.keep_log_of(parse_invoke_message(decode_body(record.get("body"))).execution_id)
            except Exception as error:  # the forward's failure is the one reported
                logger.warning(
                    "could not keep the log for message %s (%s)", _message_id(record), error_kind(error)
                )

    def handle_body(self, body: Mapping[str, Any], context: Any = None) -> MessageResult:
        kind = body.get("kind")
        if kind == "invoke":
            return self._invoke(body, context)
        if kind == "reconcile":
            report = self.reconciler.run()
            # The catch-up of due wake-ups a deployment left when it switched back to schedules (one read
            # when it never swept).
            swept = self.wake_sweep.run(SweepRequest(), only_if_started=True) if self.wake_sweep else None
            return MessageResult(
                "reconcile",
                "ran",
                details={
                    "sweptFlowKeys": report.swept_flow_keys,
                    "deletedVersions": report.deleted_versions,
                    "sentWakeUps": swept.sent if swept else 0,
                },
            )
        if kind == WAKE_SWEEP_KIND:
            if self.wake_sweep is None:
                raise InvalidMessage("a wake-sweep message reached a worker without due wake-ups (no sweep)")
            try:
                request = SweepRequest.parse(body)
            except ValueError as error:
                raise InvalidMessage(str(error)) from None
            sweep = self.wake_sweep.run(request, time_left=_time_left(context))
            return MessageResult(WAKE_SWEEP_KIND, "ran", details=sweep.to_details())
        if kind == SCHEDULED_START:
            started = start_scheduled(self.engine, body)
            details = {"reason": started.reason} if started.reason else {}
            return MessageResult(SCHEDULED_START, started.action, started.execution_id, details)
        if kind is None and is_remote_result(body):
            outcome = self.worker.finish_remote(body)
            result = {"status": outcome.status.value if outcome.status else None, **outcome.details}
            return MessageResult("result", outcome.action, outcome.execution_id, result)
        if kind is None and is_bus_envelope(body):
            return self._bus_event(body, context)
        raise InvalidMessage(
            f"unknown message (kind {kind!r}); expected kind 'invoke', 'reconcile', "
            f"'{WAKE_SWEEP_KIND}' or '{SCHEDULED_START}', "
            "or an EventBridge event"
        )

    def _invoke(self, body: Mapping[str, Any], context: Any) -> MessageResult:
        message = parse_invoke_message(body)
        with log_context(message.execution_id):
            return self._invoke_message(message, body, context)

    def _invoke_message(self, message: InvokeMessage, body: Mapping[str, Any], context: Any) -> MessageResult:
        now = self.engine.clock.now()
        if message.due_at is not None and is_early(body, now):
            # Woken before its time (a clock or scheduler quirk): wake again at the due time, run nothing.
            self.engine.timers.schedule(message.execution_id, message.due_at)
            return MessageResult("invoke", "rescheduled", message.execution_id, {"dueAt": message.due_at})
        outcome = self.worker.handle_message(body, context)
        if outcome.action is OutcomeAction.BUSY:
            # Back off while the lease holder runs (or until its lease expires, if it died).
            retries = body.get("busyRetries")
            attempt = min(retries, 10) if isinstance(retries, int) and retries >= 0 else 0
            delay = min(BUSY_RETRY_SECONDS * 2**attempt, MAX_DELAY_SECONDS)
            retry = {**InvokeMessage(message.execution_id).to_body(), "busyRetries": attempt + 1}
            self.engine.queue.enqueue(retry, delay)
        details = {"status": outcome.status.value if outcome.status else None, **outcome.details}
        return MessageResult("invoke", outcome.action, message.execution_id, details)

    def _bus_event(self, envelope: Mapping[str, Any], context: Any = None) -> MessageResult:
        if envelope.get("source") == STATUS_EVENT_SOURCE:
            # The worker's own announcements, sent back by a rule whose pattern lets them through: they
            # are for users' rules, nothing here acts on them (not routed, not left to the DLQ).
            logger.info("ignored bus event %s: a status-change event", envelope.get("id"))
            return MessageResult("event", "ignored", details={"reason": "status-change event"})
        detail_type = envelope.get("detail-type")
        detail = envelope.get("detail")
        if detail_type not in CALLBACK_DETAIL_TYPES.values() and self.event_router is not None:
            outcome = self.event_router.process_event(envelope, time_left=_time_left(context))
            return MessageResult("event", outcome.status, details=outcome.to_dict())
        if detail_type not in CALLBACK_DETAIL_TYPES.values():
            logger.warning(
                "rejected bus event %s (source %r, detail-type %r): no route for domain events",
                envelope.get("id"),
                envelope.get("source"),
                detail_type,
            )
            return MessageResult(
                "event",
                "rejected",
                details={"reason": "no route for domain events", "detail-type": detail_type},
            )
        if envelope.get("source") != CALLBACK_EVENT_SOURCE:
            # Only callback senders may put stepwell.client (docs/security.md): an event producer granted
            # its own source, or a definition's put_event, must not complete anyone's callback.
            logger.warning(
                "rejected bus event %s (source %r, detail-type %r): callback commands come from %r only",
                envelope.get("id"),
                envelope.get("source"),
                detail_type,
                CALLBACK_EVENT_SOURCE,
            )
            return MessageResult(
                "event",
                "rejected",
                details={"reason": "callback command from another source", "detail-type": detail_type},
            )
        if not isinstance(detail, Mapping):
            raise InvalidMessage(f"{detail_type} event {envelope.get('id')!r} has no detail object")
        callback_id = detail.get("callbackId")
        if not isinstance(callback_id, str) or not callback_id:
            raise InvalidMessage(
                f"{detail_type} event {envelope.get('id')!r} needs a detail.callbackId string"
            )
        try:
            if detail_type == CALLBACK_SUCCESS:
                self.engine.send_callback_success(callback_id, callback_result_text(detail.get("result")))
            elif detail_type == CALLBACK_FAILURE:
                # The engine checks the error object (an InvalidArgument below, like any bad detail).
                self.engine.send_callback_failure(callback_id, detail.get("error") or {})
            else:
                self.engine.send_callback_heartbeat(callback_id)
        except (CallbackNotFound, ExecutionAlreadyEnded) as error:
            # Late or unknown callbacks are normal (a timeout won the race): nothing to retry.
            logger.warning("rejected %s for callback %r: %s", detail_type, callback_id, error)
            return MessageResult("callback", "rejected", details={"reason": str(error)})
        except InvalidArgument as error:
            raise InvalidMessage(f"{detail_type} event {envelope.get('id')!r}: {error}") from error
        return MessageResult("callback", "delivered", details={"detail-type": detail_type})


_runtime: EntryRuntime | None = None
_runtime_lock = threading.Lock()


def load_runtime(environ: Mapping[str, str] | None = None) -> EntryRuntime:
    """Build the container's runtime once: config from the environment, the user's workflows imported."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            config = StepwellConfig.from_env(environ)
            install_json_logging(config.log_level)
            import_workflow_modules(config.workflow_modules)
            clients = AwsClients(region=config.region or None)
            # The durable functions' registrations, from their parameter (the function's roles are the API's).
            config, _ = with_durable_functions_parameter(
                config, os.environ if environ is None else environ, clients
            )
            runtime = EntryRuntime.from_config(config, clients, metrics=EmfMetrics(config.name))
            if config.definitions_table:
                runtime.event_router = install(runtime.engine, config, clients, default_registry)
            _runtime = runtime
        return _runtime


def handler(event: Any, context: Any) -> dict[str, Any]:
    """The Lambda handler."""
    return load_runtime().handle_event(event, context)


def _time_left(context: Any) -> Callable[[], float] | None:
    """Seconds the Lambda invocation has left, from its context (None outside Lambda)."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    return lambda: float(remaining()) / 1000.0
