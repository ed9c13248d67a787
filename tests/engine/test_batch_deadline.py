"""Batch isolation (issue 37, item 1): a worker's SQS batch answers before its invocation's deadline, handing
back as batch item failures only the messages it has not finished, so one slow message never makes a
finished message of another tenant's retry (a Lambda timeout redelivers the whole batch)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.testing.local import LocalStepwell
from stepwell.wiring.entry import BATCH_RESERVE_SECONDS, EntryRuntime, MessageResult

# The slow workflow's step waits for this (the test lets it go); its runs are counted.
RELEASE = threading.Event()
SLOW_STEP_RUNS = [0]


def _slow_step(_: Any) -> str:
    SLOW_STEP_RUNS[0] += 1
    assert RELEASE.wait(30), "the test never let the slow step go"
    return "slow done"


@durable_execution
def slow(event: Any, context: DurableContext) -> str:
    return context.step(_slow_step, name="slow step")


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    RELEASE.clear()
    SLOW_STEP_RUNS[0] = 0
    yield
    RELEASE.set()  # never leave a run waiting behind a failed test


class RealTimeContext:
    """A Lambda context whose invocation ends `seconds` of real time after it is made."""

    aws_request_id = "request-1"

    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


class FakeClockContext:
    """A Lambda context on a fake clock: the handled messages move it, nothing waits."""

    aws_request_id = "request-2"

    def __init__(self, timeout_seconds: float) -> None:
        self.remaining = timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int(self.remaining * 1000))


def _inline(work: Callable[[], Any], deadline: Any) -> tuple[bool, Any]:
    """EntryRuntime._bounded without its thread: the message runs in the caller's, to its end."""
    return True, work()


def _records(local: LocalStepwell) -> dict[str, dict[str, Any]]:
    """The queued messages as SQS records, by the execution they wake."""
    records: dict[str, dict[str, Any]] = {}
    while (body := local.queue.pop_due(local.clock.now())) is not None:
        execution_id = body["executionId"]
        records[execution_id] = {"messageId": f"m-{len(records)}", "body": json.dumps(body)}
    return records


def _ended_events(local: LocalStepwell, execution_id: str) -> list[str]:
    return [
        event["EventType"]
        for event in local.history(execution_id)
        if event["EventType"] in ("ExecutionSucceeded", "ExecutionFailed")
    ]


def test_a_slow_message_alone_is_handed_back_and_its_retry_ends_the_execution_once(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.register("slow", slow)
    fast_id = stepwell_local.start("greet", {"name": "fast"})
    slow_id = stepwell_local.start("slow", None)
    records = _records(stepwell_local)
    runtime = EntryRuntime(stepwell_local.engine)

    # A five-second invocation (room for the fast message on a loaded machine): the fast message ends,
    # the slow one's step still waits at the deadline.
    started = time.monotonic()
    answer = runtime.handle_event({"Records": [records[fast_id], records[slow_id]]}, RealTimeContext(5.0))
    assert time.monotonic() - started < 5.0  # answered before the invocation's end
    assert answer == {"batchItemFailures": [{"itemIdentifier": records[slow_id]["messageId"]}]}
    assert stepwell_local.describe(fast_id)["Status"] == "SUCCEEDED"
    assert _ended_events(stepwell_local, fast_id) == ["ExecutionSucceeded"]
    assert SLOW_STEP_RUNS == [1] and stepwell_local.describe(slow_id)["Status"] == "RUNNING"

    # The handed-back run goes on (Lambda thaws the container for its next invocation) and ends; SQS
    # delivers the slow message alone again: the retry waits for that run and adds nothing.
    RELEASE.set()
    answer = runtime.handle_event({"Records": [records[slow_id]]}, RealTimeContext(10.0))
    assert answer == {"batchItemFailures": []}
    assert SLOW_STEP_RUNS == [1]
    description = stepwell_local.describe(slow_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == "slow done"
    assert _ended_events(stepwell_local, slow_id) == ["ExecutionSucceeded"]
    assert _ended_events(stepwell_local, fast_id) == ["ExecutionSucceeded"]


def test_a_batch_arriving_while_a_handed_back_run_still_goes_is_handed_back_unstarted(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.register("slow", slow)
    slow_id = stepwell_local.start("slow", None)
    records = _records(stepwell_local)
    runtime = EntryRuntime(stepwell_local.engine)
    answer = runtime.handle_event({"Records": [records[slow_id]]}, RealTimeContext(2.0))
    assert answer == {"batchItemFailures": [{"itemIdentifier": records[slow_id]["messageId"]}]}

    # The next invocation of this container: one run at a time, so its message waits for its own turn.
    fast_id = stepwell_local.start("greet", {"name": "next"})
    fast_record = _records(stepwell_local)[fast_id]
    answer = runtime.handle_event({"Records": [fast_record]}, RealTimeContext(2.0))
    assert answer == {"batchItemFailures": [{"itemIdentifier": fast_record["messageId"]}]}
    assert stepwell_local.describe(fast_id)["Status"] == "RUNNING"
    assert stepwell_local.history(fast_id) == []  # never run: its first run writes its log

    RELEASE.set()
    answer = runtime.handle_event({"Records": [fast_record]}, RealTimeContext(10.0))
    assert answer == {"batchItemFailures": []}
    assert stepwell_local.describe(fast_id)["Status"] == "SUCCEEDED"
    assert stepwell_local.describe(slow_id)["Status"] == "SUCCEEDED" and SLOW_STEP_RUNS == [1]


def test_messages_left_when_the_deadline_nears_are_handed_back_unstarted(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake clock in the context: the second message takes 58 of the invocation's 60 s, which leaves
    less than the reserve, so the last two are handed back and never started."""
    runtime = EntryRuntime(stepwell_local.engine)
    context = FakeClockContext(60.0)
    cost = {"fast-1": 0.5, "slow": 58.0, "fast-2": 0.5, "fast-3": 0.5}
    started: list[str] = []

    def handle_body(body: Mapping[str, Any], _: Any = None) -> MessageResult:
        started.append(body["name"])
        context.remaining -= cost[body["name"]]
        return MessageResult("reconcile", "ran")

    monkeypatch.setattr(runtime, "handle_body", handle_body)
    # Inline, not in a thread: the fake clock moves inside the message, and a thread could move it past the
    # deadline before the handler starts waiting for it (the real-time tests above cover the threads).
    monkeypatch.setattr(runtime, "_bounded", _inline)
    records = [{"messageId": name, "body": json.dumps({"kind": "reconcile", "name": name})} for name in cost]
    answer = runtime.handle_event({"Records": records}, context)
    assert answer == {"batchItemFailures": [{"itemIdentifier": "fast-2"}, {"itemIdentifier": "fast-3"}]}
    assert started == ["fast-1", "slow"]
    assert 0 < context.remaining < BATCH_RESERVE_SECONDS


def test_a_short_timeout_keeps_a_tenth_of_its_time_and_still_runs_its_messages(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short function (the module allows 1 s) would hand back every message with a 2 s reserve: it keeps
    a tenth of its time instead. A 10 s one here, so the last message's thread has a whole second of real
    time to answer in (the join waits in real time) even on a loaded machine."""
    runtime = EntryRuntime(stepwell_local.engine)
    context = FakeClockContext(10.0)
    started: list[str] = []

    def handle_body(body: Mapping[str, Any], _: Any = None) -> MessageResult:
        started.append(body["name"])
        context.remaining -= 4.0
        return MessageResult("reconcile", "ran")

    monkeypatch.setattr(runtime, "handle_body", handle_body)
    # Inline, not in a thread: the fake clock moves inside the message, and a thread could move it past the
    # deadline before the handler starts waiting for it (the real-time tests above cover the threads).
    monkeypatch.setattr(runtime, "_bounded", _inline)
    records = [{"messageId": name, "body": json.dumps({"kind": "reconcile", "name": name})} for name in "abc"]
    answer = runtime.handle_event({"Records": records}, context)
    # 10 - 4 - 4 = 2 s left, over the 1 s reserve (a tenth; with the 2 s one nothing is left): "c" starts.
    assert answer == {"batchItemFailures": []} and started == ["a", "b", "c"]


def test_without_a_lambda_context_nothing_bounds_the_batch(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = EntryRuntime(stepwell_local.engine)
    ran_in: list[str] = []

    def handle_body(body: Mapping[str, Any], _: Any = None) -> MessageResult:
        ran_in.append(threading.current_thread().name)
        return MessageResult("reconcile", "ran")

    monkeypatch.setattr(runtime, "handle_body", handle_body)
    records = [{"messageId": "m", "body": json.dumps({"kind": "reconcile"})}]
    assert runtime.handle_event({"Records": records}) == {"batchItemFailures": []}
    assert ran_in == [threading.current_thread().name]  # in the caller's thread, as before
