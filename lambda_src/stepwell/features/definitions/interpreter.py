"""The built-in workflow that runs a definition: every context is one durable execution of it.

Registered as `stepwell.definition` (INTERPRETER_NAME). Its input (written by the router):
{"domain", "workflowId", "subjectId", "instanceId", "version", "definition": {...}, "trigger": node id,
 "event": {"id", "name", "data"}}. The definition travels in the input, so a context keeps the version it
started with whatever happens to the stored definition later.

Node by node (each is an SDK operation, so durability, retries and history come from the engine):
- trigger: the start; the context's data starts as a copy of the event's data (when an object).
- action: `context.step` calling the registered action, with the node's retry policy as the step's
  retry strategy; the result goes to data[output] when the node names an output.
- wait: `context.wait` for a duration, or until a time from an expression (epoch seconds or ISO 8601,
  at most 366 days ahead like a duration); the current time is read in a step so replays agree.
- trigger_or_timeout: `context.create_callback` with the timeout; a step records on the context item
  that it waits for the event (node id -> event name, callback id) so the router can find it with a
  Query; the router completes the callback with the event. Branch "event" or "timeout". A step then
  clears the wait on the item, unless the branch leads straight to the context's end, whose write clears
  every wait anyway.
- condition: the expression's truth picks branch "true" or "false", decided in a step (`{name}:if`) whose
  result the log keeps, so a replay reads the branch instead of evaluating again (a condition cheaper
  than a step, at most RECORD_COST bytes read, is evaluated in place on every run); likewise a wait's
  `until` (`{name}:until`: the seconds to wait). A log written before these steps existed has none: a
  replay finding the context replaying past such a node without its step evaluates it in place, as then
  (`Walker.decide`), so executions started before keep replaying.
- parallel/join: `context.parallel` with one branch per outgoing edge, each walking to the join; the
  join's mode (all, any, n of m) is the completion config; data written by succeeded branches is merged
  in branch order.
- end: the context succeeds; its item gets status SUCCEEDED (FAILED with the error when a node fails).

Each run (one invocation) has a CPU budget, and each evaluation its own
(`stepwell.features.definitions.budgets`,
`DefinitionsRuntime.run_cpu_seconds` and `expression_cpu_seconds`): checked between nodes and inside the
evaluator, a run past either fails its context with an error naming the budget.

A long context continues in a new execution (`stepwell.features.definitions.continuation`): after
CONTINUE_AFTER_VISITS top-level node visits, at its next top-level wait, a step starts the context's next
execution with the walk's state in its input ("continuation": the node it resumes at, data, node visits,
event depth and chain), and this one ends with {"continuedAs": its id}: a wake-up replays a bounded log.

A definition's `flowControl` becomes the execution's flow limits when the engine creates it
(`definition_flow`, the registration's flow resolver), counted per (domain, definition id, key value).
"""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import (
    CallbackConfig,
    CompletionConfig,
    Duration,
    ParallelConfig,
    StepConfig,
)
from aws_durable_execution_sdk_python.exceptions import (
    CallbackTimeoutError,
    InvocationError,
)
from aws_durable_execution_sdk_python.retries import RetryDecision

from stepwell.core.arns import execution_id_of
from stepwell.core.flow_limits import resolve_flow
from stepwell.core.registry import EndObserver, Handler, Registry
from stepwell.errors import InvalidArgument
from stepwell.features.definitions.actions import (
    ActionContext,
    PermanentActionError,
    UnknownAction,
    retry_strategy,
)
from stepwell.features.definitions.budgets import ROOT_BYTES, RunBudget
from stepwell.features.definitions.continuation import (
    CONTINUATION_TRIGGER,
    CONTINUE_AFTER_VISITS,
    MAX_CONTINUATIONS,
    Continuation,
    canonical,
    chain_position,
    continuation_name,
    hand_off,
    stop_later,
)
from stepwell.features.definitions.expressions import Expression, ExpressionError, estimate_cost
from stepwell.features.definitions.flow_control import parse_flow_control
from stepwell.features.definitions.ids import MAX_ID_LENGTH
from stepwell.features.definitions.model import (
    MAX_WAIT_SECONDS,
    WAITING_TYPES,
    Definition,
    DefinitionError,
    Node,
    parse_instant,
)
from stepwell.features.definitions.runtime import DefinitionsRuntime, get_runtime
from stepwell.features.definitions.start_input import (
    DefinitionRuntimeError,
    StartInput,
    event_chain,
    event_depth,
)
from stepwell.features.definitions.store import (
    ContextDataTooLarge,
    ContextRecord,
    ContextStore,
    StoreError,
    encode_context_data,
)
from stepwell.features.definitions.validation import parse_definition
from stepwell.model import ExecutionRecord, ExecutionStatus, FlowLimit

INTERPRETER_NAME = "stepwell.definition"
# A condition whose estimated cost (stepwell.features.definitions.expressions.estimate_cost, in bytes
# read) is at
# most this is evaluated again on replays rather than kept in a step: replaying a step takes tens of
# microseconds (and its first run a checkpoint), evaluating `data.status == "paid"` about one.
RECORD_COST = 4096
MAX_NODE_VISITS = 10_000
MAX_ACTIONS_AT_ONCE = 4


# A decision's step never fails (an evaluation error is its result, raised after it): nothing to retry.
DECISION_STEP = StepConfig(retry_strategy=lambda _error, _attempts: RetryDecision.no_retry())


@dataclass(kw_only=True)
class RunState:
    data: dict[str, Any]
    event: dict[str, Any]
    visits: dict[str, int] = field(default_factory=dict)
    # The deepest event that started or resumed the context (the router's payload "depth"): the events
    # this context emits are one deeper, and a chain stops at MAX_EVENT_DEPTH.
    depth: int = 0
    # The outside event the context's chain began with (its trigger's), stamped on the events it emits.
    chain: str = ""
    # Where the walk is among parallel branches ("" outside any): it makes the names of decision steps
    # unique in the whole log, which Walker.decide looks them up in.
    branch: str = ""

    def received(self, event: dict[str, Any]) -> None:
        self.event = event
        self.depth = max(self.depth, event_depth(event))

    def env(self, start: StartInput) -> dict[str, Any]:
        return {"data": self.data, "event": self.event, "subject": start.subject_id, "domain": start.domain}

    def fork(self) -> RunState:
        # Each branch counts its own visits: branches run on threads, and operation names must not
        # depend on their interleaving (a replay has to name every operation the same way).
        return RunState(
            data=copy.deepcopy(self.data),
            event=copy.deepcopy(self.event),
            visits=dict(self.visits),
            depth=self.depth,
            chain=self.chain,
            branch=self.branch,
        )


def _error_dict(error: BaseException) -> dict[str, Any]:
    return {"ErrorType": type(error).__name__, "ErrorMessage": str(error)[:2000]}


def _execution_id(context: DurableContext) -> str:
    """The Stepwell id of the execution the worker handed the SDK by its ARN (stepwell.core.arns)."""
    state = getattr(context, "state", None)
    arn = getattr(state, "durable_execution_arn", None)
    if not arn:
        return ""
    try:
        return execution_id_of(str(arn))
    except ValueError:
        return str(arn)  # StartInput.parse names it as no execution id


class Walker:
    def __init__(
        self,
        runtime: DefinitionsRuntime,
        definition: Definition,
        start: StartInput,
        *,
        budget: RunBudget | None = None,
        recorded: frozenset[str] = frozenset(),
    ) -> None:
        self.runtime = runtime
        self.definition = definition
        self.start = start
        self.budget = budget or RunBudget(runtime.run_cpu_seconds, runtime.expression_cpu_seconds)
        # The names of the operations in the log when the run began (decide looks up its steps there).
        self.recorded = recorded
        # Parallel branches run at once, but only this many of their actions (each may hold an HTTP
        # response of up to 10 MiB): one definition must not take the worker's memory from the others.
        self.actions_at_once = threading.BoundedSemaphore(MAX_ACTIONS_AT_ONCE)
        # Whether a condition is worth a step, per condition node: a replay visits a loop's conditions once
        # per iteration, and estimating each visit made a run's cost grow with its history.
        self._worth_a_step: dict[str, bool] = {}
        # Top-level node visits this execution made (replays included: the walk is the same): past
        # CONTINUE_AFTER_VISITS it hands off at its next wait (continues). Not with flow control: a new
        # execution would queue for the key's slot behind other contexts, or count against its rate; nor
        # for an instance id too long to name its continuations (the router's are 32 characters).
        self.visited_here = 0
        self.may_continue = (
            runtime.engine is not None
            and definition.flow_concurrency is None
            and definition.flow_rate is None
            and len(continuation_name(start.instance_id, MAX_CONTINUATIONS)) <= MAX_ID_LENGTH
        )

    def snapshot(self, state: RunState, node: Node) -> dict[str, Any]:
        """The context's data to store at `node`; over the store's limit it fails the context here, with
        the node named (the store's step would retry a write that can never succeed)."""
        snapshot = copy.deepcopy(state.data)
        try:
            encode_context_data(snapshot)
        except ContextDataTooLarge as error:
            raise DefinitionRuntimeError(f"node {node.id!r} ({node.type}): {error}") from None
        return snapshot

    def evaluate(self, expression: Expression, state: RunState, node: Node) -> Any:
        try:
            return expression.evaluate(state.env(self.start), self.budget.meter())
        except Exception as error:  # the language raises only ExpressionError; anything else, named too
            detail = str(error) if isinstance(error, ExpressionError) else f"{type(error).__name__}: {error}"
            raise DefinitionRuntimeError(f"node {node.id!r} ({node.type}): {detail}") from None

    def run_path(
        self, context: DurableContext, state: RunState, node_id: str, stop_at: str | None
    ) -> str | None:
        """Walk from `node_id` until an end node (or the join `stop_at`, inside a parallel branch); the id of
        the execution the context continues in when it hands off on the way (None: it did not)."""
        while True:
            if node_id == stop_at:
                return None
            node = self.definition.nodes[node_id]
            count = state.visits.get(node_id, 0) + 1
            name = node_id if count == 1 else f"{node_id}#{count}"
            handing_off = f"{name}:continue"
            if stop_at is None and node.type in WAITING_TYPES and self.continues(context, handing_off):
                return self.hand_off(context, state, node_id, handing_off)
            state.visits[node_id] = count
            if stop_at is None:
                self.visited_here += 1
            if count > MAX_NODE_VISITS:
                raise DefinitionRuntimeError(f"node {node_id!r} visited more than {MAX_NODE_VISITS} times")
            self.check_budget(node)
            if node.type == "end":
                return None
            if node.type == "trigger":
                node_id = self.definition.next_node(node_id)
            elif node.type == "action":
                self.action(context, state, node, name)
                node_id = self.definition.next_node(node_id)
            elif node.type == "wait":
                self.wait(context, state, node, name)
                node_id = self.definition.next_node(node_id)
            elif node.type == "trigger_or_timeout":
                node_id = self.trigger_or_timeout(context, state, node, name, stop_at=stop_at)
            elif node.type == "condition":
                branch = "true" if self.condition(context, state, node, name) else "false"
                node_id = self.definition.next_node(node_id, branch)
            elif node.type == "parallel":
                join_id = self.parallel(context, state, node, name)
                node_id = self.definition.next_node(join_id)
            elif node.type == "join":
                raise DefinitionRuntimeError(f"node {node_id!r} (join) reached outside its parallel branches")
            else:  # validation rules this out
                raise DefinitionRuntimeError(f"node {node_id!r}: unknown type {node.type!r}")

    def continues(self, context: DurableContext, step_name: str) -> bool:
        """Whether the walk hands off here (a top-level wait, before waiting): once the execution made
        CONTINUE_AFTER_VISITS visits, unless the log says the walk went on here (a log written before, or by
        a run with fewer visits: a replay follows its log)."""
        if step_name in self.recorded:  # the log handed off here (whatever the bound was then)
            return True
        if not self.may_continue or self.visited_here < CONTINUE_AFTER_VISITS:
            return False
        return not context.is_replaying()

    def hand_off(self, context: DurableContext, state: RunState, node_id: str, step_name: str) -> str:
        """Continue the context in its next execution, which resumes the walk at `node_id` with this
        walk's state (continuation.hand_off, in a step: a replay reads the new execution's id)."""
        count = self.start.count + 1
        carried = Continuation(
            count=count,
            node=node_id,
            # Within the store's limit, as every write of the context's data is (else it fails here, named).
            data=self.snapshot(state, self.definition.nodes[node_id]),
            visits=state.visits,
            depth=state.depth,
            chain=state.chain,
        )
        payload = canonical(
            {
                **self.start.fields(),
                # No node has this id: an interpreter from before continuations, which would walk from the
                # trigger again (running its actions twice), fails the execution instead (a rollback).
                "trigger": CONTINUATION_TRIGGER,
                "event": state.event,
                "continuation": carried.to_json(),
            }
        )
        runtime, record, time_left = self.runtime, self.start.record(), _time_left(context)
        new_id = context.step(
            lambda _: hand_off(runtime, record, payload, count=count, time_left=time_left), name=step_name
        )
        return str(new_id)

    def check_budget(self, node: Node) -> None:
        reason = self.budget.exceeded()
        if reason is not None:
            raise DefinitionRuntimeError(f"node {node.id!r} ({node.type}): {reason}")

    def decide(
        self,
        context: DurableContext,
        state: RunState,
        step_name: str,
        compute: Callable[[], Any],
        *,
        unrecorded: Callable[[], Any] | None = None,
        record: bool = True,
    ) -> Any:
        """`compute()`'s value, computed once and kept by the log in a step named `step_name`, so a replay
        reads it instead of computing it again (a context's cost per wake-up is its new work, not its
        history). A DefinitionRuntimeError is the step's result too, raised after it.

        A log written before decisions were steps has no such step: the context is replaying (the log holds
        the next operation) and `step_name` is not in it. Then the value is computed in place, as when the log
        was written (`unrecorded`, default `compute`), and no step is made (one would not match the log's
        next operation). New work with `record` False is computed in place too, with no step: a decision
        cheaper to compute again than a step is to replay."""
        if state.branch:
            step_name = f"{step_name}@{state.branch}"
        if (context.is_replaying() and step_name not in self.recorded) or (
            not record and not context.is_replaying()
        ):
            return (unrecorded or compute)()

        def decided(_: StepContext) -> dict[str, Any]:
            try:
                return {"value": compute()}
            except DefinitionRuntimeError as error:
                return {"error": str(error)}

        outcome = context.step(decided, name=step_name, config=DECISION_STEP)
        if "error" in outcome:
            raise DefinitionRuntimeError(str(outcome["error"]))
        return outcome.get("value")

    def condition(self, context: DurableContext, state: RunState, node: Node, name: str) -> bool:
        expression = node.expression
        assert expression is not None
        # Whether the branch is worth a step is a property of the definition, so every run agrees; and a
        # replay follows the log whatever it says (decide), so changing RECORD_COST breaks no execution.
        record = self._worth_a_step.get(node.id)
        if record is None:
            record = self._worth_a_step[node.id] = estimate_cost(expression, ROOT_BYTES) > RECORD_COST
        return bool(
            self.decide(
                context,
                state,
                f"{name}:if",
                lambda: bool(self.evaluate(expression, state, node)),
                record=record,
            )
        )

    def action(self, context: DurableContext, state: RunState, node: Node, name: str) -> None:
        assert node.action is not None
        inputs = {
            key: self.evaluate(value, state, node) if isinstance(value, Expression) else copy.deepcopy(value)
            for key, value in node.inputs.items()
        }
        runtime, start, depth, chain = self.runtime, self.start, state.depth, state.chain
        action_name = node.action
        time_left = _time_left(context)
        at_once = self.actions_at_once

        def call(step: StepContext) -> Any:
            try:
                fn = runtime.actions.get(action_name)
            except UnknownAction as error:
                raise PermanentActionError(f"node {node.id!r}: {error}") from None
            action_context = ActionContext(
                domain=start.domain,
                workflow_id=start.workflow_id,
                subject_id=start.subject_id,
                instance_id=start.instance_id,
                node_id=node.id,
                attempt=step.attempt,
                clients=runtime.clients,
                event_bus_name=runtime.event_bus_name,
                own_functions=runtime.own_functions,
                event_depth=depth,
                event_chain=chain,
                time_left=time_left,
            )
            with at_once:
                return fn(copy.deepcopy(inputs), action_context)

        result = context.step(call, name=name, config=StepConfig(retry_strategy=retry_strategy(node.retry)))
        if node.output:
            state.data[node.output] = result

    def now(self, context: DurableContext, name: str) -> float:
        clock = self.runtime.clock
        value: float = context.step(lambda _: clock.now(), name=f"{name}:now")
        return value

    def wait(self, context: DurableContext, state: RunState, node: Node, name: str) -> None:
        if node.duration is not None:
            seconds = node.duration
        else:
            until = node.until
            assert until is not None
            clock = self.runtime.clock

            def ahead() -> float:
                value = self.evaluate(until, state, node)
                return _seconds_ahead(_instant(value, node), clock.now(), value, node)

            def unrecorded() -> float:  # as a log from before `until` was a decision has it: time in a step
                value = self.evaluate(until, state, node)
                return _seconds_ahead(_instant(value, node), self.now(context, name), value, node)

            seconds = float(self.decide(context, state, f"{name}:until", ahead, unrecorded=unrecorded))
        if seconds > 0:  # a time already past does not wait; the engine's waits are whole seconds (>= 1)
            context.wait(Duration.from_seconds(max(1, math.ceil(seconds))), name=name)

    def trigger_or_timeout(
        self, context: DurableContext, state: RunState, node: Node, name: str, *, stop_at: str | None
    ) -> str:
        """Wait for the node's event or its timeout; the id of the node its branch leads to."""
        assert node.event is not None and node.timeout is not None
        callback = context.create_callback(
            name=name, config=CallbackConfig(timeout=Duration.from_seconds(max(1, math.ceil(node.timeout))))
        )
        contexts, record, event_name = self.runtime.contexts, self.start.record(), node.event
        callback_id = callback.callback_id
        snapshot = self.snapshot(state, node)
        once = self.definition.resumes_once(node.id)
        context.step(
            lambda _: contexts.set_waiting(
                record,
                node_id=node.id,
                event_name=event_name,
                callback_id=callback_id,
                data=snapshot,
                once=once,
            ),
            name=f"{name}:listen",
        )
        branch = "event"
        try:
            payload = callback.result()
            received = json.loads(payload) if isinstance(payload, (str, bytes)) else payload
            state.received(dict(received) if isinstance(received, Mapping) else {"data": received})
            if node.output:
                state.data[node.output] = state.event.get("data")
        except CallbackTimeoutError:
            branch = "timeout"
        next_id = self.definition.next_node(node.id, branch)
        if stop_at is None and self.definition.nodes[next_id].type == "end":
            # The context ends next: its finish, the next write, clears every wait and stores the data.
            return next_id
        snapshot = self.snapshot(state, node)
        context.step(lambda _: contexts.clear_waiting(record, node.id, snapshot), name=f"{name}:done")
        return next_id

    def parallel(self, context: DurableContext, state: RunState, node: Node, name: str) -> str:
        join_id = self.definition.joins[node.id]
        join = self.definition.nodes[join_id]
        targets = [edge.target for edge in self.definition.outgoing[node.id]]

        def branch(index: int, target: str) -> Callable[[DurableContext], dict[str, Any]]:
            def run(child: DurableContext) -> dict[str, Any]:
                self.budget.enter()  # a branch runs on a thread of its own: its CPU counts from here
                try:
                    forked = state.fork()
                    forked.branch = f"{state.branch}{name}.{index}/"
                    self.run_path(child, forked, target, stop_at=join_id)  # never hands off in a branch
                    return {"data": forked.data, "event": forked.event, "depth": forked.depth}
                finally:
                    self.budget.leave()

            return run

        if join.mode == "all":
            completion = CompletionConfig(tolerated_failure_count=0, tolerated_failure_percentage=0)
            required = len(targets)
        else:
            required = 1 if join.mode == "any" else int(join.n or 1)
            completion = CompletionConfig(min_successful=required)
        result = context.parallel(
            [branch(index, target) for index, target in enumerate(targets)],
            name=name,
            config=ParallelConfig(completion_config=completion),
        )
        self.check_budget(node)  # a branch stopped by the budget: that is the error, not the join's count
        succeeded = sorted(result.succeeded(), key=lambda item: item.index)
        if len(succeeded) < required:
            errors = [str(error) for error in result.get_errors() if error is not None]
            raise DefinitionRuntimeError(
                f"join {join_id!r} ({join.mode}): {len(succeeded)} of {len(targets)} branches succeeded, "
                f"{required} needed; errors: {errors}"
            )
        base = state.data
        for item in succeeded:
            branch_data = item.result.get("data", {}) if isinstance(item.result, Mapping) else {}
            if isinstance(item.result, Mapping):  # an event a branch received deepens what follows
                state.depth = max(state.depth, event_depth(item.result))
            for key, value in branch_data.items():
                if key not in base or base[key] != value:
                    state.data[key] = value
        # Waits left open by branches that did not need to finish (any, n of m) are no longer listened to.
        record, contexts = self.start.record(), self.runtime.contexts
        region = self.region(node.id, join_id)
        if join.mode != "all" and region:
            snapshot = self.snapshot(state, node)

            def close(_: StepContext) -> None:
                for node_id in region:
                    contexts.clear_waiting(record, node_id, snapshot)

            context.step(close, name=f"{name}:close")
        return join_id

    def region(self, parallel_id: str, join_id: str) -> list[str]:
        """The trigger_or_timeout nodes between a parallel node and its join."""
        between = self.definition.between(parallel_id, join_id)
        return sorted(n for n in between if self.definition.nodes[n].type == "trigger_or_timeout")


def _recorded_names(context: DurableContext) -> frozenset[str]:
    """The names of the operations the execution's log holds (at any depth)."""
    operations = getattr(getattr(context, "state", None), "operations", None)
    if not isinstance(operations, Mapping):
        return frozenset()
    return frozenset(name for op in operations.values() if isinstance(name := getattr(op, "name", None), str))


def _time_left(context: DurableContext) -> Callable[[], float] | None:
    """Seconds the invocation has left, from the Lambda context the run was given (None: none)."""
    remaining = getattr(getattr(context, "lambda_context", None), "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    return lambda: float(remaining()) / 1000.0


def _seconds_ahead(target: float, now: float, value: Any, node: Node) -> float:
    """Seconds from now to `until`'s time, which must lie within the longest wait (a far-future time
    would overflow the engine's timestamps on every run of the context)."""
    seconds = target - now
    if not math.isfinite(seconds) or seconds > MAX_WAIT_SECONDS:
        raise DefinitionRuntimeError(
            f"node {node.id!r} (wait): 'until' gave {value!r}, more than 366 days ahead; "
            "a wait lasts at most 366 days"
        )
    return seconds


def _instant(value: Any, node: Node) -> float:
    try:
        return parse_instant(value)
    except ValueError as error:
        raise DefinitionRuntimeError(f"node {node.id!r} (wait): 'until' {error}") from None


def _record_end(
    contexts: ContextStore,
    record: ContextRecord,
    status: str,
    data: Mapping[str, Any] | None,
    *,
    error: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The context's final status and data. Not a step: only a run that ends the execution gets here, and
    a run after one that died before the end was recorded finds the context final already (finish is
    conditional on RUNNING), so it needs no checkpoint of its own (one write fewer per context).
    Data that can never be stored (over the store's limit, too deep to copy or encode) ends the context
    FAILED with the data it last stored: with `error` when it failed anyway, else with why the data was
    refused, which is returned so that the execution fails too. A store that fails otherwise ends the
    invocation to be retried (InvocationError), never the workflow; after the retries the execution fails
    and the interpreter's end observer (context_ender) ends the context."""
    try:
        try:
            contexts.finish(record, status, None if data is None else copy.deepcopy(dict(data)), error)
            return None
        except (ContextDataTooLarge, RecursionError) as unstorable:
            refusal = _error_dict(unstorable)
            contexts.finish(record, "FAILED", None, error if status == "FAILED" and error else refusal)
            return None if status == "FAILED" else refusal
    except Exception as failure:  # the type only: the store's message may quote the context's data
        raise InvocationError(f"recording the context's end failed ({type(failure).__name__})") from failure


def _data_of(state: RunState | None) -> dict[str, Any] | None:
    """The data a failed context ends with: None (the data it last stored) when the run failed before its
    state was made."""
    return None if state is None else state.data


def _initial_state(start: StartInput) -> tuple[RunState, str]:
    """The walk's state and the node it starts at: the trigger's event for a first execution, what the
    previous execution carried for a continuation."""
    carried = start.continuation
    if carried is not None:
        state = RunState(
            data=copy.deepcopy(carried.data),
            event=start.event,
            visits=dict(carried.visits),
            depth=carried.depth,
            chain=carried.chain,
        )
        return state, carried.node
    trigger_event = start.event
    initial = trigger_event.get("data")
    state = RunState(
        data=copy.deepcopy(dict(initial)) if isinstance(initial, Mapping) else {},
        event=trigger_event,
        depth=event_depth(trigger_event),
        chain=event_chain(trigger_event),
    )
    return state, start.trigger


def make_interpreter(runtime: Callable[[], DefinitionsRuntime] | DefinitionsRuntime = get_runtime) -> Handler:
    """The interpreter handler, on a runtime (or a function returning it, called per invocation)."""

    def current() -> DefinitionsRuntime:
        return runtime if isinstance(runtime, DefinitionsRuntime) else runtime()

    @durable_execution
    def interpret(event: Any, context: DurableContext) -> Any:
        chosen = current()
        budget = RunBudget(chosen.run_cpu_seconds, chosen.expression_cpu_seconds)
        budget.enter()
        start = StartInput.parse(event, _execution_id(context))  # not a context's start: no context to end
        record, contexts = start.record(), chosen.contexts
        state: RunState | None = None
        # Everything after the parse is inside the try, so whatever fails (RecursionError on deep data,
        # MemoryError, the SDK's own errors) ends the context with the execution, never leaves it RUNNING.
        try:
            state, first = _initial_state(start)
            definition = parse_definition(start.definition)
            if first not in definition.nodes:
                label = "trigger" if start.continuation is None else "continuation"
                raise DefinitionRuntimeError(
                    f"{label} node {first!r} is not in definition {start.workflow_id!r}"
                )
            walker = Walker(chosen, definition, start, budget=budget, recorded=_recorded_names(context))
            continued = walker.run_path(context, state, first, stop_at=None)
        except InvocationError as error:
            if error.is_retryable():  # the invocation is retried; the run that ends it ends the context
                raise
            _record_end(contexts, record, "FAILED", _data_of(state), error=_error_dict(error))
            raise
        except Exception as error:  # the SDK's ExecutionError too: it fails the execution
            _record_end(contexts, record, "FAILED", _data_of(state), error=_error_dict(error))
            raise
        if continued is not None:  # the context runs on in that execution: this one ends, not the context
            return {"continuedAs": continued}
        refused = _record_end(contexts, record, "SUCCEEDED", state.data)
        if refused is not None:  # the context ended FAILED: so does its execution
            raise DefinitionRuntimeError(str(refused["ErrorMessage"]))
        return {"data": state.data}

    return interpret


# The process-wide handler on the runtime from the environment (configure() replaces it).
handler = make_interpreter()


def definition_flow(domain: str, start: Any) -> tuple[FlowLimit, ...]:
    """The flow limits of a context from the start input the router writes: its definition's
    `flowControl`, with keys evaluated over the trigger's event, the subject and the domain, counted under
    the definition's id. InvalidArgument naming the key when it gives nothing usable; an input that is not
    a context's start has none (the interpreter fails it when it runs)."""
    definition = start.get("definition") if isinstance(start, Mapping) else None
    if not isinstance(definition, Mapping):
        return ()
    try:
        concurrency, rate = parse_flow_control(definition.get("flowControl"))
    except DefinitionError as error:  # validated before it was stored; the input may come from elsewhere
        raise InvalidArgument(str(error)) from None
    return resolve_flow(
        domain, str(start.get("workflowId")), concurrency=concurrency, rate=rate, source=start
    )


def context_ender(
    runtime: Callable[[], DefinitionsRuntime] | DefinitionsRuntime = get_runtime,
) -> EndObserver:
    """The interpreter's end observer: a context whose execution ended without the interpreter seeing it
    (stopped, timed out, failed by crashes) ends with it, so it neither shows RUNNING nor keeps its data
    past the retention period (finish gives it its ttl)."""

    def finish_context(record: ExecutionRecord, start: object) -> None:
        workflow_id = start.get("workflowId") if isinstance(start, Mapping) else None
        # The context's instance id: a continuation's execution name is that and its count.
        instance_id = start.get("instanceId", record.instance_id) if isinstance(start, Mapping) else None
        if not isinstance(workflow_id, str) or not isinstance(instance_id, str):
            return  # not a context's start: nothing to finish
        chosen = runtime if isinstance(runtime, DefinitionsRuntime) else runtime()
        contexts = chosen.contexts
        try:
            context = contexts.get_context(record.domain, workflow_id, record.subject_id, instance_id)
        except (InvalidArgument, StoreError):
            return
        if context is None:
            return
        ended = chain_position(context, record.execution_id)
        current = chain_position(context, context.execution_id)
        if ended is None or current is None:
            return
        reason = f"execution {record.execution_id!r} of the context ended {record.status.value}"
        if current > ended:  # it handed off: the context runs on in a later execution
            if record.status is not ExecutionStatus.STOPPED:
                return
            # A stop of any of its executions stops the context: the one it continued in stops too, and
            # that one's end ends the context.
            if stop_later(chosen, context, ended, reason):
                return
        if context.status == "RUNNING":
            contexts.finish(context, record.status.value, context.data, record.error)
        # A hand-off in flight may have started the next one (before it named it on the item): it ends too.
        stop_later(chosen, context, ended, reason)

    return finish_context


def register_interpreter(registry: Registry, runtime: DefinitionsRuntime | None = None) -> Handler:
    """Register the interpreter in `registry` (on `runtime`, or the process-wide one)."""
    return registry.register(
        INTERPRETER_NAME,
        make_interpreter(runtime) if runtime is not None else handler,
        flow_resolver=definition_flow,
        on_ended=context_ender(runtime if runtime is not None else get_runtime),
    )
