"""A run whose caller knows no input is pending (the router, after completing callbacks) takes the lease's
word on the log's length: with its cached fold of exactly that length it reads nothing. A lease taken
over from a dead holder, a fold of another length or a caller that cannot say so reads the log."""

from __future__ import annotations

from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.worker import Known, Worker
from stepwell.model import ExecutionStatus, HandOff, OutcomeAction
from stepwell.testing.local import LocalStepwell


@durable_execution
def two_naps(event: Any, context: DurableContext) -> str:
    context.step(lambda _: 1, name="first")
    context.wait(Duration.from_hours(1), name="nap-1")
    context.step(lambda _: 2, name="second")
    context.wait(Duration.from_hours(1), name="nap-2")
    return "done"


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("two-naps", two_naps)
    return local


def log_reads(local: LocalStepwell) -> int:
    return local.store.counters.get("load_batches", 0)


def suspended(local: LocalStepwell) -> str:
    execution_id = local.start("two-naps")
    local.run_until_idle()  # to its first wait: the worker keeps its fold, the release the log's length
    local.clock.advance(3600)
    return execution_id


def test_a_run_told_no_input_is_pending_reads_no_log_when_its_fold_is_the_log(local: LocalStepwell) -> None:
    execution_id = suspended(local)
    before = log_reads(local)
    outcome = Worker(local.engine).run(execution_id, known=Known(no_inputs=True))
    assert outcome.action is OutcomeAction.RAN and log_reads(local) == before
    # The run went on from where the log is: its next wait is in the history, EventIds contiguous.
    history = local.history(execution_id)
    assert [e["EventId"] for e in history] == list(range(1, len(history) + 1))
    assert [e["Name"] for e in history if e["EventType"] == "WaitStarted"] == ["nap-1", "nap-2"]
    local.clock.advance(3600)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_a_message_run_reads_the_log_as_before(local: LocalStepwell) -> None:
    execution_id = suspended(local)
    before = log_reads(local)
    Worker(local.engine).run(execution_id)  # a message: an input may be pending
    assert log_reads(local) == before + 1


def test_a_lease_taken_over_from_a_dead_holder_reads_the_log(local: LocalStepwell) -> None:
    execution_id = suspended(local)
    # A worker took the lease and died holding it; its lease expired.
    assert local.store.acquire_lease(execution_id, "dead", local.clock.now(), 60) is not None
    local.clock.advance(61)
    before = log_reads(local)
    Worker(local.engine).run(execution_id, known=Known(no_inputs=True))
    assert log_reads(local) == before + 1


def test_a_fold_of_another_length_reads_the_log(local: LocalStepwell) -> None:
    execution_id = suspended(local)
    lease = local.store.acquire_lease(execution_id, "other", local.clock.now(), 60)
    assert lease is not None and lease.hand_off.log_next is not None
    # Another worker's release says the log grew past this worker's fold.
    local.store.release_lease(execution_id, "other", HandOff(log_next=lease.hand_off.log_next + 1))
    before = log_reads(local)
    Worker(local.engine).run(execution_id, known=Known(no_inputs=True))
    assert log_reads(local) == before + 1
