"""An execution whose retention has passed is gone from the API at once, as on AWS: the table's TTL deletes
its items lazily (days later at times), and until then describe, history, stop and lists leave it out. Its
name stays taken until the items are gone, and a start under it says so instead of returning the old
execution. A running execution never expires, however old."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.log_expiry import NAME_HOLD_SECONDS
from stepwell.errors import ExecutionAlreadyExists, ExecutionNotFound, LogOfEarlierExecution
from stepwell.model import ExecutionStatus, InvokeMessage
from stepwell.testing.local import LocalStepwell


@durable_execution
def one_step(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: event, name="echo")


@durable_execution
def waits_long(event: Any, context: DurableContext) -> Any:
    context.wait(Duration.from_days(400))
    return "late"


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("echo", one_step)
    local.register("slow", waits_long)
    return local


def _listed(local: LocalStepwell, **query: Any) -> set[str]:
    return {record.execution_id for record in local.engine.list_executions(**query).items}


def test_an_ended_execution_is_gone_from_every_read_once_its_retention_has_passed(
    local: LocalStepwell,
) -> None:
    ended = local.start("echo", {"n": 1}, execution_name="first")
    record = local.run_to_completion(ended)
    assert record.status is ExecutionStatus.SUCCEEDED and record.ended_at is not None
    retention = local.store.retention_seconds
    running = local.start("slow", {}, execution_name="still-waiting")
    local.run_until_idle()

    # A second before its retention ends: there, as always.
    local.clock.advance_to(int(record.ended_at) + retention - 1)
    assert local.describe(ended)["Status"] == "SUCCEEDED"
    assert local.history(ended)
    assert ended in _listed(local, workflow="echo") and ended in _listed(local, status="SUCCEEDED")

    # Its retention has passed (the items' ttl): gone, though nothing deleted its items yet.
    local.clock.advance(1)
    assert local.store.get_execution(ended) is not None
    for read in (local.describe, local.history, local.engine.stop_execution):
        with pytest.raises(ExecutionNotFound, match="no execution with id"):
            read(ended)
    assert ended not in _listed(local, workflow="echo")
    assert ended not in _listed(local, status="SUCCEEDED")
    assert ended not in _listed(local, domain="default")

    # A running execution never expires, however long ago it started.
    assert local.describe(running)["Status"] == "RUNNING"
    assert running in _listed(local, status="RUNNING") and running in _listed(local, workflow="slow")


def test_a_start_under_an_expired_executions_name_is_refused_with_the_reason_and_changes_nothing(
    local: LocalStepwell,
) -> None:
    ended = local.start("echo", {"n": 1}, execution_name="reused")
    record = local.run_to_completion(ended)
    assert record.ended_at is not None
    before_retention = local.start("echo", {"n": 1}, execution_name="reused")
    assert before_retention == ended  # the same start, as before

    local.clock.advance_to(int(record.ended_at) + local.store.retention_seconds)
    stored = local.store.get_execution(ended)
    # The same input too: returning the old execution would hand a result from before the retention.
    for payload in ({"n": 1}, {"n": 2}):
        with pytest.raises(ExecutionAlreadyExists) as refused:
            local.start("echo", payload, execution_name="reused")
        message = str(refused.value)
        assert "'reused'" in message and "retention (30 days) has passed" in message
        assert "choose another execution name" in message
    assert local.store.get_execution(ended) == stored
    assert local.store.load_batches(ended)[0]  # its log is the TTL's to delete, not a start's

    # Another name starts as usual.
    other = local.start("echo", {"n": 1}, execution_name="reused-2")
    assert local.run_to_completion(other).status is ExecutionStatus.SUCCEEDED


def test_a_large_input_refused_under_an_expired_name_writes_no_object(
    local: LocalStepwell,
) -> None:
    ended = local.start("echo", {"n": 1}, execution_name="big-reuse")
    record = local.run_to_completion(ended)
    assert record.ended_at is not None and not local.payloads.references(ended)
    local.clock.advance_to(int(record.ended_at) + local.store.retention_seconds)

    big = {"blob": "x" * (240 * 1024)}  # over the inline limit (offloaded), within the input limit
    with pytest.raises(ExecutionAlreadyExists, match="retention"):
        local.start("echo", big, execution_name="big-reuse")
    # A refused start writes nothing: no object to leave behind or to retire.
    assert not local.payloads.references(ended) and not local.payloads.retired


@pytest.mark.parametrize("left", ["log+coordination", "log", "coordination"])
def test_a_new_execution_meeting_an_earlier_ones_items_fails_its_run_until_they_are_gone(
    local: LocalStepwell, left: str
) -> None:
    """Against the odds NAME_HOLD_SECONDS gives, the TTL removed the record before the other items: the name
    is free while the earlier execution's log or coordination record (with the end it carries) remain. The
    new execution's run fails (its message waits in the DLQ) rather than replay the other one's history or
    end with its result (its coordination record left: the run reads the log and takes the carried end), or
    hang, fenced at its first batch (the log alone: the run writes its first batch without reading)."""
    # With both left, its result is too large to ride on the coordination record: the end is in the log, and
    # the log's age alone tells. Otherwise the record carries the end (seq 1).
    pad = random.Random(7).randbytes(3072).hex() if left == "log+coordination" else ""
    earlier = local.start("echo", {"n": 1, "pad": pad}, execution_name="again")
    record = local.run_to_completion(earlier)
    assert record.ended_at is not None
    assert (local.store.get_carried_batch(earlier) is None) == bool(pad)
    local.clock.advance_to(int(record.ended_at) + local.store.retention_seconds + NAME_HOLD_SECONDS)
    local.store.remove_items(earlier, record=True, lease="coordination" not in left)
    if "log" not in left:
        assert local.store.remove_expired_batches(local.clock.now())
    log = local.store.load_batches(earlier)[0]
    assert bool(log) == ("log" in left)

    again = local.start("echo", {"n": 2, "pad": ""}, execution_name="again")
    assert again == earlier  # the same name is the same id
    with pytest.raises(LogOfEarlierExecution, match="earlier execution under the same name") as failed:
        local.run_until_idle()
    assert "redrive the message once the TTL has removed those too" in str(failed.value)
    assert local.record(again).status is ExecutionStatus.RUNNING
    assert local.history(again) == []  # none of the earlier execution's events
    assert local.store.load_batches(again)[0] == log  # its log untouched, its expiry too

    # The TTL removes the rest: redriven, the message runs the new execution from its start.
    local.store.remove_expired_batches(local.clock.now())
    local.store.remove_items(earlier, lease=True)
    local.process_one(InvokeMessage(again).to_body())
    ended = local.run_to_completion(again)
    assert ended.status is ExecutionStatus.SUCCEEDED
    assert json.loads(ended.result or "null") == {"n": 2, "pad": ""}
