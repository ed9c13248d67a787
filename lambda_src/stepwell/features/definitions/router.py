"""Domain events to contexts: start contexts whose trigger matches, resume contexts waiting for the event.

An extractor maps an event to (domain, subject id, event name, data, event id): paths into the event
(JSON in STEPWELL_EVENT_EXTRACTOR) or a Python callable registered with `register_extractor` in the user's
workflow code (definitions/extractors.py).

A domain is an authenticated fact, not a claim: a bus event is accepted only when `EventSources`
(definitions/event_sources.py: the module's `event_sources`, JSON in STEPWELL_EVENT_SOURCES) lets its
`source` (and, for a key "<account>:<source>", its `account`) speak for the domain it maps to; none
configured = no bus event is accepted. An event processed for an operator (`process_event(event,
domain=...)`, the client and CLI) is for that domain only: the payload may omit the domain, and one
claiming another is rejected.

For each event (`Router.process_event`):
0. an event nested deeper than MAX_EVENT_NESTING levels (objects and arrays) is recorded as rejected with
   its depth and the limit, before anything reads it: nothing is started, resumed or written for it.
1. extract; an event that fails the extractor, maps to no domain, subject or name, or whose domain its
   source may not speak for is recorded as rejected with the reason (EventLog.record_rejected) and the
   call returns; nothing is raised.
2. starts: the domain's definitions (one Query; one for all the events of an SQS batch, Router.batch,
   which the worker's entry opens per batch) whose trigger node has this event name and whose filter
   holds. The context's instance id derives from (definition, event id), so a start is at most once per
   event id: the context item and the engine execution are both conditional creates. Policy "single"
   skips the start while the subject has a running context of that definition. A filter that fails
   (any exception; also one over the runtime's `expression_cpu_seconds` of CPU) fails that context (item
   FAILED with the error, no execution), as does a start the engine refuses (InvalidArgument: e.g. a
   `flowControl` key with no usable value); a stored definition that no longer parses is skipped. Neither
   stops the event's other starts and resumes.
3. resumes (unless no version of the domain's definitions waits for the event name, which the
   definitions Query tells: DefinitionStore.list_for_routing): the subject's contexts (one Query on the
   domain/subject index) that wait for the event name
   get their callbacks completed with {"id", "name", "data"}; a `evt#<domain>#<id>#<context>` record
   (conditional put, naming those callbacks) makes each context's resume at most once per event id.
   A wait no other wait for its name can follow (ContextRecord.resumed_once: outside parallel branches,
   and none on its "event" branch) needs no record: completing its callback is once, and a redelivery
   that finds it completed wakes the execution in case the first delivery died before the run.
In the worker (`run_inline`) each context started or resumed then runs at once, in this process.
A repeated delivery finds its starts and resumes made (the event is then a "duplicate") and finishes what
a delivery that died left undone; there is no event-wide record.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from stepwell.core.engine import Engine
from stepwell.core.worker import Known, Worker
from stepwell.errors import CallbackNotFound, ExecutionAlreadyEnded, ExecutionAlreadyExists, InvalidArgument
from stepwell.features.definitions.actions import (
    CHAIN_ID,
    ENGINE_EVENT_SOURCE,
    EVENT_CHAIN_KEY,
    EVENT_DEPTH_KEY,
    MAX_EVENT_DEPTH,
)
from stepwell.features.definitions.event_sources import EventSources, EventSourcesError
from stepwell.features.definitions.expressions import evaluation_meter
from stepwell.features.definitions.extractors import (
    DEFAULT_PATHS,
    ExtractedEvent,
    Extractor,
    ExtractorError,
    PathExtractor,
    default_extractor,
    normalize_event,
    register_extractor,
)
from stepwell.features.definitions.inline_runs import run_here_or_wake
from stepwell.features.definitions.interpreter import INTERPRETER_NAME
from stepwell.features.definitions.model import Definition, DefinitionError
from stepwell.features.definitions.runtime import DefinitionsRuntime
from stepwell.features.definitions.store import (
    ContextDataTooLarge,
    ContextRecord,
    StoredWorkflow,
    encode_context_data,
)
from stepwell.features.definitions.validation import parse_definition
from stepwell.model import (
    ExecutionRecord,
    ExternalInput,
    InvokeMessage,
    lone_surrogate_at,
    make_execution_id,
)

logger = logging.getLogger(__name__)

# A context item whose execution does not exist this long after it was written is an orphan.
ORPHAN_AFTER_SECONDS = 900.0
PARSED_CACHE_SIZE = 1000
# A context runs in the event's invocation only while that has this long left (a run takes well under it;
# the rest of a batch of events must fit too); otherwise its message wakes it in an invocation of its own.
INLINE_RUN_MIN_SECONDS = 60.0
# Contexts the events of one chain (definitions' events, all descending from one outside event) may start
# in a day, per domain: the depth limit stops a loop, this a chain that fans out (a definition emitting k
# events per generation would start k**8 contexts within the depth).
CHAIN_STARTS_PER_DAY = 1000
CHAIN_BUDGET_PERIOD_SECONDS = 86400
# How deep an event's objects and arrays may nest (the envelope counts: {"detail": {"data": {}}} is 3).
# Contexts copy, encode and evaluate their data recursively; 64 is far within Python's recursion limit
# however the data is handled (and within common JSON parsers' safe limits), and beyond any real event.
MAX_EVENT_NESTING = 64


class EventChainLimitExceeded(Exception):
    """A chain of definitions' events started as many contexts as its budget allows."""


def nesting_depth(value: Any) -> int:
    """How deep `value`'s objects and arrays nest (a scalar is 0, {} is 1, {"a": []} is 2); iterative, so
    an event of any depth is measured without recursion (each container is visited once)."""
    deepest = 0
    seen: set[int] = set()
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if id(item) in seen:  # a Python caller's object may hold itself; JSON cannot
            continue
        seen.add(id(item))
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children if isinstance(child, Mapping | list | tuple))
    return deepest


def _nesting_refusal(event: Mapping[str, Any]) -> str | None:
    depth = nesting_depth(event)
    if depth <= MAX_EVENT_NESTING:
        return None
    return (
        f"the event nests objects and arrays {depth} levels deep; at most {MAX_EVENT_NESTING} levels "
        "(MAX_EVENT_NESTING) are allowed"
    )


def _engine_stamp_refusal(event: Mapping[str, Any], domain: str) -> str | None:
    """An event a definition emitted speaks for the domain the engine stamped in detail.domain, whatever
    path a custom extractor reads the domain from."""
    if event.get("source") != ENGINE_EVENT_SOURCE:
        return None
    detail = event.get("detail")
    stamped = detail.get("domain") if isinstance(detail, Mapping) else None
    if stamped == domain:
        return None
    return f"an event the engine stamped for domain {stamped!r} maps to domain {domain!r}"


def _event_chain(event: Mapping[str, Any], event_id: str) -> tuple[int, str] | str:
    """How many definitions deep the event is and the id of the outside event its chain began with (0 and
    its own id for an event from outside; put_event stamps both on the events definitions emit), or why
    its stamps are refused. An engine event without stamps (emitted before the engine counted) is 1 deep
    and begins its own chain."""
    if event.get("source") != ENGINE_EVENT_SOURCE:
        return 0, event_id
    detail = event.get("detail")
    stamps = detail if isinstance(detail, Mapping) else {}
    depth, chain = stamps.get(EVENT_DEPTH_KEY, 1), stamps.get(EVENT_CHAIN_KEY, event_id)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_EVENT_DEPTH:
        shown = depth if isinstance(depth, int) else type(depth).__name__
        return (
            f"an event a definition emitted is {shown} definitions deep (detail.{EVENT_DEPTH_KEY}); "
            f"a whole number from 1 to {MAX_EVENT_DEPTH} is allowed"
        )
    if not isinstance(chain, str) or not CHAIN_ID.fullmatch(chain):
        return (
            f"an event a definition emitted names no chain (detail.{EVENT_CHAIN_KEY} is a "
            f"{type(chain).__name__}); 1-256 printable characters are allowed"
        )
    return depth, chain


@dataclass
class EventOutcome:
    """What one event did."""

    event_id: str
    status: str  # processed | duplicate | rejected
    reason: str | None = None
    domain: str | None = None
    subject_id: str | None = None
    name: str | None = None
    started: list[str] = field(default_factory=list)  # engine execution ids
    resumed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Starts and resumes an earlier delivery of the event made (all of them: the event is a duplicate).
    repeats: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "eventId": self.event_id,
            "status": self.status,
            "reason": self.reason,
            "domain": self.domain,
            "subjectId": self.subject_id,
            "name": self.name,
            "started": self.started,
            "resumed": self.resumed,
            "skipped": self.skipped,
        }


def instance_id_for(domain: str, workflow_id: str, subject_id: str, event_id: str) -> str:
    digest = hashlib.sha256(f"{domain}|{workflow_id}|{subject_id}|{event_id}".encode()).hexdigest()
    return "e" + digest[:31]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Router:
    def __init__(
        self,
        engine: Engine,
        runtime: DefinitionsRuntime,
        *,
        extractor: Extractor | None = None,
        paths: Mapping[str, Any] | None = None,
        sources: EventSources | None = None,
        run_inline: bool = False,
    ) -> None:
        self.engine = engine
        self.runtime = runtime
        if runtime.engine is None:  # the engine that routes a runtime's events runs its contexts
            runtime.engine = engine
        # In the worker (install): a context the event starts or resumes runs here at once instead of
        # through a message to this same function (a client routing for an operator sends messages: its
        # process has neither the workflow code nor the worker's role).
        self._worker = Worker(engine) if run_inline else None
        self._time_left: Callable[[], float] | None = None
        # None: no bus event may speak for any domain (events for an operator's domain still route).
        self.sources = sources if sources is not None else EventSources()
        self._extractor = extractor
        self._paths = dict(paths) if paths else None
        # A version that no longer parses is kept with its error, so it is not parsed again per event.
        self._parsed_cache: dict[tuple[str, str, int, int], Definition | Exception] = {}
        # Inside batch(): each domain's definitions and waited names, read once for the batch's events.
        self._batch_routing: dict[str, tuple[list[StoredWorkflow], frozenset[str] | None]] | None = None

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Route the events of one SQS batch, reading each domain's definitions once for all of them
        (one Query, not one per event). Every event of a batch was in the queue before the batch was
        received, and the definitions are read after that, so each event sees every definition stored
        before it was sent, as it would routed alone at the batch's start."""
        self._batch_routing = {}
        try:
            yield
        finally:
            self._batch_routing = None

    def _routing(self, domain: str) -> tuple[list[StoredWorkflow], frozenset[str] | None]:
        """The domain's definitions and the event names its contexts may wait for (see batch())."""
        batch = self._batch_routing
        if batch is None:
            return self.runtime.definitions.list_for_routing(domain)
        if domain not in batch:
            batch[domain] = self.runtime.definitions.list_for_routing(domain)
        return batch[domain]

    def _parsed(self, stored: StoredWorkflow) -> Definition:
        """Parse a stored definition once per version (a warm worker parses nothing per event)."""
        key = (stored.domain, stored.workflow_id, stored.version, stored.updated_at)
        found = self._parsed_cache.get(key)
        if found is None:
            if len(self._parsed_cache) >= PARSED_CACHE_SIZE:
                self._parsed_cache.clear()
            try:
                found = parse_definition(stored.definition)
            except Exception as invalid:
                found = invalid
            self._parsed_cache[key] = found
        if isinstance(found, Exception):
            raise found.with_traceback(None)  # not the frames of every earlier event that raised it
        return found

    def extractor(self) -> Extractor:
        """The extractor given, else the registered callable, else paths (looked up per event, so a
        callable registered by a workflow module imported later is used)."""
        return self._extractor if self._extractor is not None else default_extractor(self._paths)

    def _reject(self, event_id: str, reason: str, event: Mapping[str, Any] | None) -> EventOutcome:
        logger.warning("event %s rejected: %s", event_id, reason)
        self.runtime.events.record_rejected(event_id, reason, event, self.runtime.clock.now())
        return EventOutcome(event_id=event_id, status="rejected", reason=reason)

    def process_event(
        self,
        event: Mapping[str, Any],
        domain: str | None = None,
        time_left: Callable[[], float] | None = None,
    ) -> EventOutcome:
        """Route one event. `domain`: the domain an operator sends it for (the client, the CLI), which the
        payload may not contradict; None for a bus event, whose source must be allowed its domain.
        `time_left`: seconds the worker's invocation has left (contexts run here only while a run fits)."""
        self._time_left = time_left
        try:
            return self._process(event, domain)
        finally:
            self._time_left = None

    def _process(self, event: Mapping[str, Any], domain: str | None) -> EventOutcome:
        raw_id = event.get("id") if isinstance(event, Mapping) else None
        fallback_id = str(raw_id) if isinstance(raw_id, (str, int)) and raw_id != "" else ""
        if not fallback_id or lone_surrogate_at(fallback_id) is not None:  # no id, or one no store takes
            fallback_id = uuid.uuid4().hex
        if not isinstance(event, Mapping):
            return self._reject(
                fallback_id, f"an event must be a JSON object, got {type(event).__name__}", None
            )
        too_deep = _nesting_refusal(event)
        if too_deep is not None:  # before anything reads it; recorded without it (its excerpt recurses)
            return self._reject(fallback_id, too_deep, None)
        try:
            extracted = normalize_event(self.extractor()(event), fallback_id, domain)
        except Exception as error:  # the user's extractor may raise anything: record it, block nothing
            return self._reject(fallback_id, f"extractor failed: {error}", event)
        if domain is None:
            refusal = self.sources.refusal(event.get("source"), event.get("account"), extracted.domain)
            refusal = refusal or _engine_stamp_refusal(event, extracted.domain)
        elif extracted.domain != domain:
            refusal = f"the event claims domain {extracted.domain!r} but was sent for domain {domain!r}"
        else:
            refusal = None
        chain = _event_chain(event, extracted.event_id)
        if isinstance(chain, str):
            refusal = refusal or chain
        if refusal is not None:
            return self._reject(extracted.event_id, refusal, event)
        if isinstance(chain, tuple) and chain[0]:
            extracted = replace(extracted, depth=chain[0], chain=chain[1])
        outcome = EventOutcome(
            event_id=extracted.event_id,
            status="processed",
            domain=extracted.domain,
            subject_id=extracted.subject_id,
            name=extracted.name,
        )
        # No event-wide record: each start is keyed by the event id and each resume claimed per event and
        # context, so a repeated delivery finds what it would do done (and finishes what a delivery that
        # died left), for two fewer requests per event.
        workflows, waited = self._routing(extracted.domain)
        self._start_contexts(extracted, workflows, outcome)
        # No version of the domain's definitions waits for this name, so no context can: the subject's
        # contexts are not read (an event that only starts contexts, or does nothing, costs no Query).
        if waited is None or extracted.name in waited:
            self._resume_contexts(extracted, outcome)
        if outcome.repeats and not outcome.started and not outcome.resumed:
            outcome.status = "duplicate"
        return outcome

    # --- starting ---

    def _start_contexts(
        self, event: ExtractedEvent, workflows: list[StoredWorkflow], outcome: EventOutcome
    ) -> None:
        for stored in workflows:
            try:
                definition = self._parsed(stored)
            except Exception as invalid:  # stored before a rule tightened: it blocks no other definition
                outcome.skipped.append(f"{stored.workflow_id}: stored definition is invalid: {invalid}")
                logger.warning(
                    "event %s: definition %s is invalid (%s)",
                    event.event_id,
                    stored.workflow_id,
                    type(invalid).__name__,
                )
                continue
            env = {
                "data": event.data,
                "event": event.payload(),
                "subject": event.subject_id,
                "domain": event.domain,
            }
            for trigger in definition.triggers():
                if trigger.event != event.name:
                    continue
                if trigger.filter is not None:
                    try:
                        # The deployment's per-expression budget, as in runs: over it, this context fails.
                        meter = evaluation_meter(self.runtime.expression_cpu_seconds)
                        holds = trigger.filter.evaluate(env, meter)
                    except Exception as error:  # the definition's fault: its context fails, no other
                        reason = f"node {trigger.id!r} (trigger): filter failed: {error}"
                        self._fail_start(stored, event, reason, error, outcome=outcome)
                        break
                    if not holds:
                        outcome.skipped.append(f"{stored.workflow_id}: filter of {trigger.id!r} is false")
                        continue
                self._start(
                    stored,
                    concurrency=definition.concurrency,
                    trigger_id=trigger.id,
                    event=event,
                    outcome=outcome,
                )
                break  # one context per definition and event

    def _context_record(self, stored: StoredWorkflow, event: ExtractedEvent) -> ContextRecord:
        """The context an event starts for a definition (its instance id derives from the event id)."""
        instance_id = instance_id_for(event.domain, stored.workflow_id, event.subject_id, event.event_id)
        return ContextRecord(
            domain=event.domain,
            workflow_id=stored.workflow_id,
            subject_id=event.subject_id,
            instance_id=instance_id,
            version=stored.version,
            execution_id=make_execution_id(event.domain, INTERPRETER_NAME, event.subject_id, instance_id),
            trigger_event_id=event.event_id,
            data=dict(event.data) if isinstance(event.data, Mapping) else {},
        )

    def _fail_start(
        self,
        stored: StoredWorkflow,
        event: ExtractedEvent,
        reason: str,
        error: Exception,
        *,
        outcome: EventOutcome,
        repeated: bool | None = None,
    ) -> None:
        """A context that cannot start (its trigger's filter fails, the engine refuses the start): it is
        recorded as FAILED with the reason (it has no execution); both writes are idempotent, so a
        redelivery changes nothing. `repeated`: whether an earlier delivery made the context, when the
        caller created it already (None: it is created here)."""
        record = self._context_record(stored, event)
        try:
            encode_context_data(record.data)
        except ContextDataTooLarge:  # the event's data is why it fails: the failed context holds none
            record = replace(record, data={})
        if repeated is None:
            repeated = not self.runtime.contexts.create_context(record)
        if repeated:
            outcome.repeats += 1
        failure = {"ErrorType": type(error).__name__, "ErrorMessage": reason[:2000]}
        self.runtime.contexts.finish(record, "FAILED", record.data, failure)
        outcome.skipped.append(f"{stored.workflow_id}: context {record.instance_id} failed: {reason}")
        logger.warning(  # not the error's text: it may quote the event's data
            "event %s: context %s of definition %s failed at its start (%s)",
            event.event_id,
            record.instance_id,
            stored.workflow_id,
            type(error).__name__,
        )

    def _start(
        self,
        stored: StoredWorkflow,
        *,
        concurrency: str,
        trigger_id: str,
        event: ExtractedEvent,
        outcome: EventOutcome,
    ) -> None:
        contexts = self.runtime.contexts
        record = self._context_record(stored, event)
        instance_id = record.instance_id
        if concurrency == "single":
            for other in contexts.get_contexts(event.domain, stored.workflow_id, event.subject_id):
                if (
                    other.instance_id != instance_id
                    and other.status == "RUNNING"
                    and self._still_running(other)
                ):
                    outcome.skipped.append(
                        f"{stored.workflow_id}: subject {event.subject_id!r} already has running context "
                        f"{other.instance_id!r} (policy single)"
                    )
                    return
        # False on a redelivery: the start below is idempotent too, and makes a start that died in between.
        try:
            repeated = not contexts.create_context(record)
        except ContextDataTooLarge as error:  # the event's data cannot be a context's data
            reason = f"node {trigger_id!r} (trigger): the event's data cannot start a context: {error}"
            self._fail_start(stored, event, reason, error, outcome=outcome)
            return
        # A chain's start is counted once, by the delivery that made its context (a redelivery must not
        # fail a context an earlier delivery started).
        if event.depth and not repeated and not self._chain_may_start(event):
            reason = (
                f"node {trigger_id!r} (trigger): the chain of definitions' events that began with event "
                f"{event.chain!r} started {CHAIN_STARTS_PER_DAY} contexts today, the most allowed "
                "(a definition whose events start contexts that emit more of them)"
            )
            self._fail_start(
                stored, event, reason, EventChainLimitExceeded(reason), outcome=outcome, repeated=repeated
            )
            return
        start_input = {
            "domain": event.domain,
            "workflowId": stored.workflow_id,
            "subjectId": event.subject_id,
            "instanceId": instance_id,
            "version": stored.version,
            "definition": stored.definition,
            "trigger": trigger_id,
            "event": event.payload(),
        }
        try:
            if not self._runs_inline():
                execution_id = self.engine.start_execution(
                    INTERPRETER_NAME, start_input, instance_id, event.domain, subject_id=event.subject_id
                )
                self._started(stored, execution_id, repeated, outcome)
                return
            # It runs here; a repeated start runs it again (a first delivery may have died before its
            # run, and a run that finds nothing to do does nothing).
            execution, created = self.engine.start_execution_to_run(
                INTERPRETER_NAME, start_input, instance_id, event.domain, subject_id=event.subject_id
            )
        except InvalidArgument as error:  # nothing was created: its context fails, the event goes on
            reason = f"node {trigger_id!r} (trigger): {error}"
            self._fail_start(stored, event, reason, error, outcome=outcome, repeated=repeated)
            return
        except ExecutionAlreadyExists:
            # An earlier delivery of this event started it, before the definition got a new version.
            outcome.repeats += 1
            outcome.skipped.append(
                f"{stored.workflow_id}: context {instance_id} was started by an earlier delivery"
            )
            return
        self._started(stored, execution.execution_id, repeated and not created, outcome)
        self._run(execution.execution_id, Known(execution, fresh=created))

    def _chain_may_start(self, event: ExtractedEvent) -> bool:
        """Count a start against the budget of the event's chain (a delivery that dies between making the
        context and its start leaves the start uncounted: the budget bounds a runaway chain, it is not an
        exact count)."""
        period = int(self.runtime.clock.now() // CHAIN_BUDGET_PERIOD_SECONDS)
        key = f"chain#{event.domain}#{_digest(event.chain)}#{period}"
        expires_at = (period + 2) * CHAIN_BUDGET_PERIOD_SECONDS
        return self.runtime.events.take_from_budget(key, CHAIN_STARTS_PER_DAY, expires_at)

    def _started(
        self, stored: StoredWorkflow, execution_id: str, repeated: bool, outcome: EventOutcome
    ) -> None:
        if repeated:
            outcome.repeats += 1
            outcome.skipped.append(f"{stored.workflow_id}: {execution_id} was started by an earlier delivery")
        else:
            outcome.started.append(execution_id)

    def _still_running(self, context: ContextRecord) -> bool:
        """A context whose execution ended without updating its item (stopped from outside) is synced."""
        record = self.engine.store.get_execution(context.execution_id)
        if record is None:
            # Its start is in flight (the item is written just before the execution), or the start
            # failed and its event was never redelivered: after a while the context stops blocking.
            if self.runtime.clock.now() - context.created_at < ORPHAN_AFTER_SECONDS:
                return True
            error = {"ErrorType": "ExecutionNotCreated", "ErrorMessage": "its execution was never created"}
            self.runtime.contexts.finish(context, "FAILED", context.data, error)
            return False
        if not record.status.is_terminal:
            return True
        self.runtime.contexts.finish(context, record.status.value, context.data, record.error)
        return False

    # --- resuming ---

    def _resume_contexts(self, event: ExtractedEvent, outcome: EventOutcome) -> None:
        contexts = self.runtime.contexts
        events = self.runtime.events
        token: str | None = None
        while True:
            page = contexts.get_all_contexts_for_subject(
                event.domain, event.subject_id, limit=100, next_token=token
            )
            for context in page.items:
                if context.status != "RUNNING":
                    continue
                waits = context.waits_for(event.name)
                if not waits:
                    continue
                label = f"{context.workflow_id}/{context.instance_id}"
                callback_ids = [callback_id for _node_id, callback_id in waits]
                if context.resumed_once(event.name):
                    self._resume_once(context, callback_ids, event, outcome, label=label)
                    continue
                # One event resumes a context once: every wait it has open for the event (parallel
                # branches may wait for the same name), never a wait opened after a redelivery. The claim
                # names those waits' callbacks, so a redelivery finishes exactly what a claimer that died
                # began (completing a callback twice is refused) and nothing opened since.
                target = _digest(f"{context.context_key}/{context.instance_id}")
                key = f"evt#{event.domain}#{_digest(event.event_id)}#{target}"
                claimed = events.claim_for(key, self.runtime.clock.now(), callback_ids)
                if claimed is not None:
                    outcome.repeats += 1
                    outcome.skipped.append(f"{label}: already resumed")
                    if claimed:  # a claim this engine took: finish it (a no-op when it was finished)
                        self._resume(context.execution_id, claimed, event, [], recovering=True)
                    continue
                self._resume(context.execution_id, callback_ids, event, outcome.skipped, label=label)
                outcome.resumed.append(context.execution_id)
            token = page.next_token
            if not token:
                return

    def _resume_once(
        self,
        context: ContextRecord,
        callback_ids: list[str],
        event: ExtractedEvent,
        outcome: EventOutcome,
        *,
        label: str,
    ) -> None:
        """Resume a context whose waits on the event's name no other wait can follow (resumed_once), with
        no claim record: completing a callback is itself once. A redelivery finds them completed (or the
        context past them); it then wakes the execution, since the delivery that completed them may have
        died before its run, and a run that finds nothing to do does nothing."""
        skipped: list[str] = []
        if self._resume(context.execution_id, callback_ids, event, skipped, label=label):
            outcome.resumed.append(context.execution_id)
            outcome.skipped.extend(skipped)
            return
        outcome.repeats += 1
        outcome.skipped.append(f"{label}: already resumed (its callbacks were completed)")
        self._resume(context.execution_id, [], event, [], recovering=True)

    def _resume(
        self,
        execution_id: str,
        callback_ids: list[str],
        event: ExtractedEvent,
        skipped: list[str],
        *,
        label: str = "",
        recovering: bool = False,
    ) -> int:
        """Complete the callbacks with the event, then wake the execution: one run here, or their
        messages. `recovering`: a redelivery finishing a claim, whose claimer may have died after
        completing them and before the execution ran, so it is woken whatever the completions say.
        Returns how many callbacks this call completed."""
        record: ExecutionRecord | None = None
        results: dict[str, ExternalInput] = {}
        completed = 0
        inline = self._runs_inline()
        for callback_id in callback_ids:
            try:
                sent = self.engine.send_callback_success(
                    callback_id, json.dumps(event.payload()), wake=not inline
                )
            except (CallbackNotFound, ExecutionAlreadyEnded) as error:
                skipped.append(f"{label}: {error}")
                continue
            record = sent.record
            completed += 1
            if sent.result is not None:
                results[callback_id] = sent.result
        if inline and (record is not None or recovering):
            self._run(execution_id, Known(record, callback_results=results, no_inputs=True))
        elif recovering:  # the completions sent no message: one wakes it
            self.engine.queue.enqueue(InvokeMessage(execution_id).to_body())
        return completed

    def _runs_inline(self) -> bool:
        """Whether a context this event starts or resumes runs here: in the worker, while the invocation
        has time left for a run (otherwise, and in an operator's process, its message wakes it)."""
        if self._worker is None:
            return False
        return self._time_left is None or self._time_left() >= INLINE_RUN_MIN_SECONDS

    def _run(self, execution_id: str, known: Known) -> None:
        """Run the execution here (in the worker) with what this process knows of it. A run that cannot be
        made here (another worker holds the lease, another version runs it) or fails is left to a message;
        if that cannot be sent either, the event fails and its redelivery wakes it again."""
        assert self._worker is not None
        # The run's actions see the event's invocation's time left (an HTTP request must end within it).
        run_here_or_wake(self._worker, execution_id, time_left=self._time_left, known=known)


# The extractors' and the event sources' names are here too: callers (and the examples) import them from
# the router, where they were first.
__all__ = [
    "DEFAULT_PATHS",
    "DefinitionError",
    "EventOutcome",
    "EventSources",
    "EventSourcesError",
    "ExtractedEvent",
    "ExtractorError",
    "PathExtractor",
    "Router",
    "instance_id_for",
    "register_extractor",
]
