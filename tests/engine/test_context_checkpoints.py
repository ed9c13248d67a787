"""A checkpoint that only starts or ends child contexts rides with the next batch instead of a write of its
own (stepwell.core.service): fewer writes, the same history, and a crash before that batch loses nothing a
replay does not record again. A checkpoint that something outside the run waits on is written at once."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.lambda_service import (
    CallbackOptions,
    ErrorObject,
    OperationAction,
    OperationSubType,
    OperationType,
    WaitOptions,
)
from stepwell.core.journal import decode_body, new_callback_key
from stepwell.core.service import StoreServiceClient
from stepwell.model import ExecutionRecord, ExecutionStatus
from stepwell.testing.local import LocalStepwell
from test_journal_and_service import CALLBACK, FAIL, START, STEP, SUCCEED, update

NOW = 1_800_000_000.0
CONTEXT = OperationType.CONTEXT
RUNS: Counter[str] = Counter()


def _ran(name: str, value: int) -> int:
    RUNS[name] += 1
    return value


def _branch(index: int) -> Any:
    def run(child: DurableContext) -> int:
        return child.step(lambda _: _ran(f"work-{index}", index), name=f"work-{index}")

    return run


@durable_execution
def fan_out(event: dict[str, Any], context: DurableContext) -> int:
    results = context.parallel([_branch(i) for i in range(3)], name="fan-out").get_results()
    return context.step(lambda _: _ran("close", sum(results)), name="close")


def _event_types(body: str) -> list[str]:
    return [str(event["t"]) for event in decode_body(body).get("e", [])]


def test_context_starts_and_ends_ride_with_the_next_batch_and_the_history_is_whole() -> None:
    RUNS.clear()
    local = LocalStepwell()
    local.register("fan_out", fan_out)
    execution_id = local.start("fan_out", {})
    local.run_to_completion(execution_id)

    assert local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert RUNS == {"work-0": 1, "work-1": 1, "work-2": 1, "close": 1}
    batches, _ = local.store.load_batches(execution_id)
    # No batch holds context events alone: each rode with the steps after it (or with the end).
    for batch in batches:
        types = _event_types(batch.body)
        assert any(not kind.startswith("Context") for kind in types), types
    history = local.history(execution_id)
    kinds = Counter(str(event["EventType"]) for event in history)
    assert kinds["ContextStarted"] == 4 and kinds["ContextSucceeded"] == 4
    assert kinds["StepSucceeded"] == 4 and kinds["ExecutionSucceeded"] == 1
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))


EXECUTION = "default#wf#s/i"


def _client(local: LocalStepwell, owner: str) -> StoreServiceClient:
    """A worker's service client over the execution's log as stored (started in it if it is new)."""
    if local.store.get_execution(EXECUTION) is None:
        now = local.clock.now()  # its batches are written on this clock: none predates it (engine.predates)
        local.store.create_execution(
            ExecutionRecord(
                execution_id=EXECUTION,
                domain="default",
                workflow_id="wf",
                subject_id="s",
                instance_id="i",
                execution_name="i",
                status=ExecutionStatus.RUNNING,
                created_at=now,
                updated_at=now,
                input_payload="null",
            )
        )
    journal = local.engine.load_journal(EXECUTION)
    if journal.is_empty:
        journal.start_execution("null", NOW)
    return StoreServiceClient(local.engine, local.record(EXECUTION), journal, owner=owner)


def test_a_crash_before_the_next_batch_loses_the_context_events_and_the_replay_records_them_once() -> None:
    local = LocalStepwell()
    execution_id = EXECUTION
    first = _client(local, "first")
    first.checkpoint(execution_id, first.token, [update("a", STEP, START), update("a", STEP, SUCCEED)], None)
    assert len(local.store.load_batches(execution_id)[0]) == 1

    context = [update("x", CONTEXT, START), update("x", CONTEXT, SUCCEED, payload='"done"')]
    answer = first.checkpoint(execution_id, first.token, context, None)

    # Answered with the context as the run now sees it, and nothing written.
    state = answer.new_execution_state
    assert answer.checkpoint_token == first.token and first.deferred == 1
    assert state is not None and [op.operation_id for op in state.operations or []] == ["x"]
    assert len(local.store.load_batches(execution_id)[0]) == 1

    # The worker dies here. The next one does not find the context: its replay records it again.
    second = _client(local, "second")
    ids = {op.operation_id for op in second.initial_operations()}
    assert "x" not in ids and "a" in ids
    second.checkpoint(execution_id, second.token, context, None)
    second.checkpoint(
        execution_id, second.token, [update("b", STEP, START), update("b", STEP, SUCCEED)], None
    )

    batches, _ = local.store.load_batches(execution_id)
    assert len(batches) == 2
    assert _event_types(batches[1].body) == [
        "ContextStarted",
        "ContextSucceeded",
        "StepStarted",
        "StepSucceeded",
    ]
    history = local.history(execution_id)
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))
    assert [event["EventType"] for event in history].count("ContextSucceeded") == 1


def test_a_context_checkpoint_something_outside_the_run_waits_on_is_written_at_once() -> None:
    local = LocalStepwell()
    execution_id = EXECUTION
    client = _client(local, "w")

    # A callback started with its context: its id must resolve before user code has it.
    client.checkpoint(
        execution_id,
        client.token,
        [
            update("x", CONTEXT, START),
            update("c", CALLBACK, START, callback_options=CallbackOptions(timeout_seconds=10)),
        ],
        None,
    )
    assert len(local.store.load_batches(execution_id)[0]) == 1

    # The callback's deadline passes: the context's end comes with its time-out, which closes the
    # callback's record (a completion sent after it is refused), so it is written at once.
    local.clock.advance(11)
    client.checkpoint(execution_id, client.token, [update("x", CONTEXT, SUCCEED, payload="1")], None)
    batches, _ = local.store.load_batches(execution_id)
    assert len(batches) == 2 and client.deferred == 0
    assert "CallbackTimedOut" in _event_types(batches[1].body)


WAIT = OperationType.WAIT
SUBMITTER_CONTEXT = update("cx", CONTEXT, START, sub_type=OperationSubType.WAIT_FOR_CALLBACK)
WAIT_FOR_CALLBACK = [SUBMITTER_CONTEXT, update("cb", CALLBACK, START)]


def _submitter(action: Any, **fields: Any) -> Any:
    return dataclasses.replace(
        update("sub", STEP, action, parent_id="cx", **fields), name="name-cx submitter"
    )


# Checkpoints a run sends after `before` (already written), and whether they may wait for the next batch.
RULE_CASES = {
    "a context's start and end": ([], [update("x", CONTEXT, START), update("x", CONTEXT, FAIL)], True),
    "a wait's start": ([], [update("w", WAIT, START, wait_options=WaitOptions(wait_seconds=5))], True),
    "a wait's cancel": (
        [update("w", WAIT, START, wait_options=WaitOptions(wait_seconds=5))],
        [update("w", WAIT, OperationAction.CANCEL)],
        False,
    ),
    "a step's result": ([], [update("s", STEP, START), update("s", STEP, SUCCEED, payload="1")], False),
    "a callback's start": ([SUBMITTER_CONTEXT], [update("cb", CALLBACK, START)], True),
    "the submitter's start and result": (
        WAIT_FOR_CALLBACK,
        [_submitter(START), _submitter(SUCCEED, payload="null")],
        True,
    ),
    "the submitter's retry": (
        WAIT_FOR_CALLBACK,
        [_submitter(START), _submitter(OperationAction.RETRY, error=ErrorObject("m", "T", None, None))],
        False,
    ),
    "the submitter's failure": (
        WAIT_FOR_CALLBACK,
        [_submitter(START), _submitter(FAIL, error=ErrorObject("m", "T", None, None))],
        False,
    ),
    "a context's start with a step's result": (
        [],
        [update("x", CONTEXT, START), update("s", STEP, START), update("s", STEP, SUCCEED)],
        False,
    ),
}


@pytest.mark.parametrize("case", RULE_CASES)
def test_a_checkpoint_waits_for_the_next_batch_exactly_when_its_batch_could_ride_on_the_release(
    case: str,
) -> None:
    """The service's rule (may a checkpoint wait) and the carried batch's (may a batch ride on the lease's
    release) are one rule, Journal.replays_alike: what one leaves unwritten the other may carry."""
    before, updates, expected = RULE_CASES[case]
    local = LocalStepwell()
    client = _client(local, "w")
    client._journal.callback_key = new_callback_key()  # derived ids, as a new execution has
    if before:
        client.checkpoint(EXECUTION, client.token, before, None)
    written = len(local.store.load_batches(EXECUTION)[0])
    deferred = client.deferred

    client.checkpoint(EXECUTION, client.token, updates, None)

    left = client.deferred > deferred
    assert left is expected
    assert len(local.store.load_batches(EXECUTION)[0]) == written + (0 if left else 1)
    if left:
        # What it left unwritten is a batch the release may carry.
        assert client._journal.flush().replayable
