"""Continue-as-new for definitions' contexts: a context whose execution has run long enough carries its walk
into a fresh execution of the same context, so a wake-up replays a bounded log, not the context's history.

The interpreter (`Walker.run_path`) hands off at a top-level `wait` or `trigger_or_timeout` node, before it
waits, once the execution has made CONTINUE_AFTER_VISITS node visits: the hand-off step (`hand_off`) starts
continuation n + 1, whose execution name is the context's instance id and the count (`continuation_name`),
with the walk's state in its input (`Continuation`: the node it resumes at, data, event, node visits,
event depth and chain); points the context item at it (`ContextStore.continue_to`, conditional on the item
naming this execution or that one); and ends the old execution SUCCEEDED with {"continuedAs": id}. Every
part is idempotent (the id derives from the context and the count, the start is the engine's idempotent
start, the repoint is conditional), and the start comes first with its own message, so a crash anywhere
in the hand-off leaves either the old execution to retry the step or the new one already running: nothing
is lost or run twice. The docs: docs/reference/definitions.md#long-running-contexts.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from stepwell.errors import ExecutionAlreadyExists, ExecutionNotFound
from stepwell.features.definitions.model import DefinitionError
from stepwell.features.definitions.store import ContextRecord
from stepwell.model import ExecutionStatus, InvokeMessage, make_execution_id

if TYPE_CHECKING:
    from stepwell.features.definitions.runtime import DefinitionsRuntime

logger = logging.getLogger(__name__)

# The interpreter's registered name (interpreter.INTERPRETER_NAME, which imports this module).
_INTERPRETER = "stepwell.definition"

# Node visits an execution makes before it hands off at its next wait. Replaying a log costs about 65 us per
# operation (the SDK's and the engine's replay; BENCHMARKS.md, definitions replay) and a visit makes at most
# a few operations (a wait; a condition's decision step; a trigger_or_timeout's callback and two steps), so
# a wake-up replays at most a few milliseconds, about what a wake-up's own work costs, while a hand-off (a
# start and the new execution's first run, a few milliseconds) comes once per 64 visits, about 20 turns of
# a three-node loop. The node-visit limit (MAX_NODE_VISITS) counts across continuations; this only bounds
# what one execution's log holds.
CONTINUE_AFTER_VISITS = 64
# The new execution runs at once in the hand-off's invocation (so a trigger_or_timeout it resumes at listens
# within that invocation, as the old execution would have) only while the invocation has this long left:
# twice a run's default CPU budget (10 s), room for its first run and that run's waits on I/O.
INLINE_MIN_SECONDS = 20.0
# A continuation's input names this as its trigger: no node id can be it (schema.json's nodeId).
CONTINUATION_TRIGGER = "(continuation)"
_SUFFIX = re.compile(r"\.c([1-9][0-9]{0,8})\Z")
MAX_CONTINUATIONS = 999_999_999


class ContinuationError(DefinitionError):
    """A continuation input that is malformed, or a hand-off that found its context gone."""


def continuation_name(instance_id: str, count: int) -> str:
    """The execution name of a context's continuation `count` (0: the context's first execution)."""
    return instance_id if count == 0 else f"{instance_id}.c{count}"


def continuation_id(record: ContextRecord, count: int) -> str:
    """The execution id of a context's continuation `count`."""
    return make_execution_id(
        record.domain, _INTERPRETER, record.subject_id, continuation_name(record.instance_id, count)
    )


def chain_position(record: ContextRecord, execution_id: str) -> int | None:
    """Which continuation of the context `record` the execution `execution_id` is (0: its first), or None
    when it is none of them."""
    first = continuation_id(record, 0)
    if execution_id == first:
        return 0
    match = _SUFFIX.search(execution_id)
    if match is None or execution_id[: match.start()] != first:
        return None
    return int(match.group(1))


def chain_ids(record: ContextRecord) -> list[str]:
    """The ids of every execution the context has run in, oldest first (its item names the last)."""
    last = chain_position(record, record.execution_id)
    if last is None:  # an item naming an execution outside its chain: only that one is known
        return [record.execution_id]
    return [continuation_id(record, count) for count in range(last + 1)]


@dataclass(frozen=True)
class Continuation:
    """The walk's state a continuation starts from (its input's "continuation")."""

    count: int
    node: str
    data: dict[str, Any]
    visits: dict[str, int]
    depth: int
    chain: str

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "node": self.node,
            "data": self.data,
            "visits": self.visits,
            "depth": self.depth,
            "chain": self.chain,
        }

    @classmethod
    def parse(cls, value: Any) -> Continuation:
        """The input's continuation; ContinuationError naming what is wrong (the input is the engine's, but
        anyone who may start executions can write one, so it is checked like outside input)."""
        if not isinstance(value, Mapping):
            raise ContinuationError(f"continuation must be an object, got {type(value).__name__}")
        count, node, data = value.get("count"), value.get("node"), value.get("data")
        visits, depth, chain = value.get("visits"), value.get("depth"), value.get("chain")
        if not _whole(count) or not 1 <= count <= MAX_CONTINUATIONS:
            raise ContinuationError(
                f"continuation count {count!r}: a whole number from 1 to {MAX_CONTINUATIONS}"
            )
        if not isinstance(node, str) or not node:
            raise ContinuationError(f"continuation node {node!r}: a node id")
        if not isinstance(data, Mapping):
            raise ContinuationError(f"continuation data must be an object, got {type(data).__name__}")
        if not isinstance(visits, Mapping) or not all(
            isinstance(key, str) and _whole(seen) and seen >= 0 for key, seen in visits.items()
        ):
            raise ContinuationError("continuation visits must map node ids to whole numbers >= 0")
        if not _whole(depth) or depth < 0:
            raise ContinuationError(f"continuation depth {depth!r}: a whole number >= 0")
        if not isinstance(chain, str):
            raise ContinuationError(f"continuation chain must be a string, got {type(chain).__name__}")
        return cls(count, node, dict(data), dict(visits), depth, chain)


def _whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def canonical(value: Any) -> Any:
    """`value` as JSON gives it back, so every attempt of a hand-off starts the new execution with the same
    input text (a first attempt's live values and a retry's replayed ones may differ in type only)."""
    return json.loads(json.dumps(value, default=str))


def hand_off(
    runtime: DefinitionsRuntime,
    record: ContextRecord,
    payload: Mapping[str, Any],
    *,
    count: int,
    time_left: Callable[[], float] | None,
) -> str:
    """Start continuation `count` of the context `record` (whose execution_id is the execution handing off)
    with `payload` as its input and point the context at it; the new execution's id. Idempotent: a retry
    after a crash anywhere in here finds what the first attempt did and finishes it."""
    from stepwell.core.run import Known
    from stepwell.core.worker import Worker
    from stepwell.features.definitions.inline_runs import run_here_or_wake

    engine = runtime.engine
    if engine is None:
        raise ContinuationError("the definitions runtime knows no engine to start a continuation with")
    name = continuation_name(record.instance_id, count)
    new_id = continuation_id(record, count)
    old_id = record.execution_id
    inline = time_left is None or time_left() >= INLINE_MIN_SECONDS
    # First the start: from here on the new execution runs whatever becomes of this one. A first start that
    # runs it here sends no message (a message would run it a second time for nothing); a repeated one
    # (a retry after a crash, perhaps before that run) sends one.
    try:
        if inline:
            _, created = engine.start_execution_to_run(
                _INTERPRETER, dict(payload), name, record.domain, subject_id=record.subject_id
            )
            if not created:
                engine.queue.enqueue(InvokeMessage(new_id).to_body())
        else:
            engine.start_execution(
                _INTERPRETER, dict(payload), name, record.domain, subject_id=record.subject_id
            )
    except ExecutionAlreadyExists:
        # A first attempt started it with an input that differs in form only (canonical makes that rare):
        # the id is this context's own, so it is that start; a message wakes it in case that one died.
        engine.queue.enqueue(InvokeMessage(new_id).to_body())
    if not runtime.contexts.continue_to(record, old_id, new_id):
        _stop(runtime, new_id, "its context no longer runs in the execution that started it")
        raise ContinuationError(
            f"context {record.instance_id!r} of definition {record.workflow_id!r} no longer names execution "
            f"{old_id!r}: the hand-off to {new_id!r} is abandoned"
        )
    old = engine.store.get_execution(old_id)
    if old is None or old.status is not ExecutionStatus.RUNNING:
        # Stopped during the hand-off: its end observer stops what it finds started; this covers a start
        # made after the observer looked (one of the two sees the other's write).
        _stop(runtime, new_id, f"execution {old_id!r} ended during its hand-off")
        return new_id
    if inline:
        run_here_or_wake(Worker(engine), new_id, time_left=time_left, known=Known())
    return new_id


def _stop(runtime: DefinitionsRuntime, execution_id: str, reason: str) -> None:
    engine = runtime.engine
    if engine is None:
        return
    with contextlib.suppress(ExecutionNotFound):  # never started: nothing runs
        engine.stop_execution(execution_id, {"ErrorType": "ContextHandOffAbandoned", "ErrorMessage": reason})


def stop_later(runtime: DefinitionsRuntime, record: ContextRecord, after: int, reason: str) -> bool:
    """Stop the continuation of the context after number `after` (a stop of an execution that handed off
    stops the context); True if one was running and is stopped now."""
    engine = runtime.engine
    if engine is None:
        return False
    try:
        return engine.stop_execution(
            continuation_id(record, after + 1), {"ErrorType": "Stopped", "ErrorMessage": reason[:2000]}
        )
    except ExecutionNotFound:
        return False
