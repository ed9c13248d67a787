"""A run that suspends the execution leaves its last batch (its InvocationCompleted, and the start of the
wait it suspends on) on the lease's release instead of the log; the execution's next batch writes it
first, at the same seq. A small end stays
on the record for good. The history shows them all along, exactly once, and nothing is lost when crashes
come between."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.journal import Journal, decode_body
from stepwell.model import ExecutionStatus, HandOff, InvokeMessage
from stepwell.testing.local import LocalStepwell, metric_totals


@durable_execution
def step_wait_step(event: Any, context: DurableContext) -> int:
    first: int = context.step(lambda _: 1, name="first")
    context.wait(Duration.from_hours(1), name="nap")
    second: int = context.step(lambda _: 2, name="second")
    return first + second


@durable_execution
def one_step(event: Any, context: DurableContext) -> str:
    size = int(event["size"]) if isinstance(event, dict) else 1
    return str(context.step(lambda _: result_text(size), name="only"))


def result_text(size: int) -> str:
    """`size` characters that deflate poorly (hex digests), so the stored size is about the text's."""
    digests = (hashlib.sha256(str(index).encode()).hexdigest() for index in range(size // 64 + 1))
    return "".join(digests)[:size]


CRASHES = {"left": 0}
STEP_RUNS: dict[str, int] = {}


def counted(name: str, value: int) -> int:
    STEP_RUNS[name] = STEP_RUNS.get(name, 0) + 1
    return value


@durable_execution
def counted_wait(event: Any, context: DurableContext) -> int:
    first: int = context.step(lambda _: counted("first", 1), name="first")
    context.wait(
        Duration.from_hours(1), name=str(event.get("wait", "nap")) if isinstance(event, dict) else "nap"
    )
    second: int = context.step(lambda _: counted("second", 2), name="second")
    return first + second


@durable_execution
def crashes_then_waits(event: Any, context: DurableContext) -> str:
    context.step(lambda _: "ok", name="before")
    if CRASHES["left"] > 0:
        CRASHES["left"] -= 1
        raise SystemExit(3)  # the process dies mid-invocation: a crash, not a failure
    context.wait(Duration.from_hours(1), name="nap")
    return "done"


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("step-wait-step", step_wait_step)
    local.register("crashes-then-waits", crashes_then_waits)
    local.register("one-step", one_step)
    local.register("counted-wait", counted_wait)
    STEP_RUNS.clear()
    return local


def log_bodies(local: LocalStepwell, execution_id: str) -> list[dict[str, Any]]:
    batches, last = local.store.load_batches(execution_id)
    assert last is None
    return [decode_body(batch.body) for batch in batches]


def event_types(body: dict[str, Any]) -> list[str]:
    return [event["t"] for event in body.get("e", [])]


def test_a_suspension_carries_its_invocation_completed_until_the_next_batch(local: LocalStepwell) -> None:
    execution_id = local.start("step-wait-step")
    local.run_until_idle()

    bodies = log_bodies(local, execution_id)
    # The log holds the step's checkpoint only: the wait's start waited for the run's last batch.
    assert not any({"WaitStarted", "InvocationCompleted"} & set(event_types(body)) for body in bodies)
    carried = local.store.get_carried_batch(execution_id)
    assert carried is not None and carried.seq == len(bodies)
    assert event_types(decode_body(carried.body)) == ["WaitStarted", "InvocationCompleted"]
    waiting = local.history(execution_id)
    assert waiting[-1]["EventType"] == "InvocationCompleted"  # shown while it waits
    assert [event["EventId"] for event in waiting] == list(range(1, len(waiting) + 1))

    # A repeated message finds nothing due: it writes nothing and the batch stays carried.
    local.process_one(InvokeMessage(execution_id).to_body())
    assert len(log_bodies(local, execution_id)) == len(bodies)
    assert local.store.get_carried_batch(execution_id) == carried
    assert local.history(execution_id) == waiting

    local.advance_to_next_wakeup()
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    after = log_bodies(local, execution_id)
    # The wake-up's first batch starts with the carried events, at the seq they were carried for.
    assert event_types(after[carried.seq])[:3] == ["WaitStarted", "InvocationCompleted", "WaitSucceeded"]
    history = local.history(execution_id)
    assert history[: len(waiting)] == waiting  # what was shown is what the log now holds, same EventIds
    kinds = [event["EventType"] for event in history]
    assert kinds.count("InvocationCompleted") == 2 and kinds[-1] == "ExecutionSucceeded"
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))
    # The end (small, nothing waits for it) stays on the record, after the log, where the history reads it.
    end = local.store.get_carried_batch(execution_id)
    assert end is not None and end.seq == len(after) and decode_body(end.body)["z"] == 1
    assert event_types(decode_body(end.body))[-1] == "ExecutionSucceeded"


def test_the_history_names_the_wait_its_carried_start_and_its_end_record(local: LocalStepwell) -> None:
    execution_id = local.start("counted-wait")
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    history = local.history(execution_id)
    waits = [event for event in history if event["EventType"] in ("WaitStarted", "WaitSucceeded")]
    assert [(event["EventType"], event["Name"]) for event in waits] == [
        ("WaitStarted", "nap"),
        ("WaitSucceeded", "nap"),
    ]
    assert waits[0]["Id"] == waits[1]["Id"]
    steps = [event["Name"] for event in history if event["EventType"] == "StepSucceeded"]
    assert steps == ["first", "second"]
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))
    assert STEP_RUNS == {"first": 1, "second": 1}


def run_until_a_release_that_carries_dies(local: LocalStepwell) -> list[str]:
    """Run what is due until the first release that carries a batch, whose worker dies instead: the
    executions whose release never came."""
    release = local.store.release_lease
    dropped: list[str] = []

    def dies_before_releasing(execution: str, owner: str, hand_off: HandOff) -> None:
        if hand_off.carried is not None and not dropped:
            dropped.append(execution)
            raise RuntimeError("the worker's process died before its release")
        release(execution, owner, hand_off)

    local.store.release_lease = dies_before_releasing  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="died before its release"):
        local.run_until_idle()
    return dropped


def test_a_release_that_never_comes_loses_only_the_wait_start_it_carried(local: LocalStepwell) -> None:
    execution_id = local.start("counted-wait")
    dropped = run_until_a_release_that_carries_dies(local)
    assert dropped == [execution_id]
    assert local.store.get_carried_batch(execution_id) is None
    assert not any("WaitStarted" in event_types(body) for body in log_bodies(local, execution_id))

    # The wake-up it armed comes after the lease expired: the replay answers the step from the log,
    # starts the wait again and ends after it.
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    assert STEP_RUNS == {"first": 1, "second": 1}
    kinds = [event["EventType"] for event in local.history(execution_id)]
    assert kinds.count("WaitStarted") == 1 and kinds.count("WaitSucceeded") == 1
    assert kinds.count("StepSucceeded") == 2


def test_a_suspension_too_large_to_carry_writes_its_wait_start(local: LocalStepwell) -> None:
    execution_id = local.start("counted-wait", {"wait": result_text(2048)})  # a name that deflates poorly
    local.run_until_idle()
    bodies = log_bodies(local, execution_id)
    assert "WaitStarted" in event_types(bodies[-1])  # over a write unit on the record: written
    carried = local.store.get_carried_batch(execution_id)
    assert carried is None or carried.seq < len(bodies)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    assert STEP_RUNS == {"first": 1, "second": 1}


@durable_execution
def waits_first(event: Any, context: DurableContext) -> int:
    context.wait(Duration.from_hours(1), name="nap")
    return int(context.step(lambda _: counted("after", 3), name="after"))


def test_a_first_run_that_suspends_at_once_leaves_the_log_empty_and_its_start_carried() -> None:
    local = LocalStepwell()
    local.register("waits-first", waits_first)
    execution_id = local.start("waits-first", {"order": 1})
    local.run_until_idle()
    assert log_bodies(local, execution_id) == []
    carried = local.store.get_carried_batch(execution_id)
    assert carried is not None and carried.seq == 0
    assert event_types(decode_body(carried.body)) == [
        "ExecutionStarted",
        "WaitStarted",
        "InvocationCompleted",
    ]
    assert metric_totals(local.metrics.records, "waits-first")["ExecutionsStarted"] == 1  # counted now
    waiting = local.history(execution_id)
    assert [event["EventType"] for event in waiting][:2] == ["ExecutionStarted", "WaitStarted"]
    assert json.loads(waiting[0]["ExecutionStartedDetails"]["Input"]["Payload"]) == {"order": 1}

    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED and record.result == "3"
    history = local.history(execution_id)
    assert history[: len(waiting)] == waiting
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))
    assert [event["EventType"] for event in history].count("ExecutionStarted") == 1
    assert STEP_RUNS.get("after") == 1
    # The batch that wrote the carried start did not count it again.
    assert metric_totals(local.metrics.records, "waits-first")["ExecutionsStarted"] == 1


@durable_execution
def waits_twice_first(event: Any, context: DurableContext) -> int:
    context.wait(Duration.from_seconds(5), name="first")
    context.wait(Duration.from_seconds(5), name="second")
    return 1


def test_a_second_run_that_carries_the_start_again_does_not_count_it_again() -> None:
    local = LocalStepwell()
    local.register("waits-twice", waits_twice_first)
    execution_id = local.start("waits-twice", {})
    local.run_until_idle()
    assert local.advance_to_next_wakeup()
    local.run_until_idle()  # the first wait ended, the second began: the log is still empty
    assert log_bodies(local, execution_id) == []
    carried = local.store.get_carried_batch(execution_id)
    assert carried is not None and event_types(decode_body(carried.body)).count("ExecutionStarted") == 1

    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    assert metric_totals(local.metrics.records, "waits-twice")["ExecutionsStarted"] == 1


def test_a_lost_first_release_runs_the_execution_from_its_start_again() -> None:
    local = LocalStepwell()
    local.register("waits-first", waits_first)
    STEP_RUNS.clear()
    execution_id = local.start("waits-first", {"order": 2})
    dropped = run_until_a_release_that_carries_dies(local)
    assert dropped == [execution_id] and log_bodies(local, execution_id) == []

    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    kinds = [event["EventType"] for event in local.history(execution_id)]
    assert kinds.count("ExecutionStarted") == 1 and kinds.count("WaitStarted") == 1
    assert STEP_RUNS == {"after": 1}


def test_a_first_batch_whose_input_is_kept_elsewhere_is_written() -> None:
    local = LocalStepwell(inline_limit=64)
    local.register("waits-first", waits_first)
    big = {"pad": "p" * 200}
    execution_id = local.start("waits-first", big)
    local.run_until_idle()
    batches, _ = local.store.load_batches(execution_id)
    assert len(batches) == 1  # written (the input's reference, "ir", is restored by a load of the log)
    assert local.store.get_carried_batch(execution_id) is None
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    started = local.history(execution_id)[0]
    assert json.loads(started["ExecutionStartedDetails"]["Input"]["Payload"]) == big


def test_a_suspension_after_crashes_writes_its_batch(local: LocalStepwell) -> None:
    CRASHES["left"] = 1
    execution_id = local.start("crashes-then-waits")
    local.run_until_idle()
    local.advance_to_next_wakeup()  # the crash's retry
    local.run_until_idle()

    bodies = log_bodies(local, execution_id)
    # The batch resets the count of crashes: it is written, never only carried.
    assert event_types(bodies[-1]) == ["WaitStarted", "InvocationCompleted"] and bodies[-1]["c"] == 0
    carried = local.store.get_carried_batch(execution_id)
    assert carried is None or carried.seq < len(bodies)
    history = [event["EventType"] for event in local.history(execution_id)]
    assert history.count("InvocationCompleted") == 2


def test_a_carried_batch_the_log_has_taken_is_left_out() -> None:
    journal = Journal("default#wf#s/e1")
    journal.fold(0, {"e": [{"t": "ExecutionStarted", "s": 1}], "w": 1})
    assert not journal.carry(0, {"e": [{"t": "InvocationCompleted", "s": 2}], "w": 0})  # written already
    assert not journal.carry(5, {"e": [{"t": "InvocationCompleted", "s": 2}], "w": 0})  # not the next
    assert journal.next_seq == 1 and journal.next_event_id == 2 and journal.needs_invocation

    assert journal.carry(1, {"e": [{"t": "InvocationCompleted", "s": 2}], "c": 0, "w": 0})
    assert journal.next_seq == 1 and journal.next_event_id == 3 and not journal.needs_invocation
    assert not journal.has_unflushed  # nothing new: a run that changes nothing writes nothing
    journal.needs_invocation = True
    flushed = journal.flush()
    assert event_types(flushed.body) == ["InvocationCompleted"]
    assert flushed.body["c"] == 0 and flushed.body["w"] == 1  # this batch's flags win


def test_a_small_end_stays_on_the_record_and_late_messages_keep_it(local: LocalStepwell) -> None:
    execution_id = local.start("one-step", {"size": 3})
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    bodies = log_bodies(local, execution_id)
    assert not any(body.get("z") for body in bodies)  # the log holds no end
    end = local.store.get_carried_batch(execution_id)
    assert end is not None and end.seq == len(bodies)
    history = local.history(execution_id)
    assert history[-1]["EventType"] == "ExecutionSucceeded"
    assert history[-1]["ExecutionSucceededDetails"]["Result"]["Payload"] == '"' + result_text(3) + '"'
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))

    # Messages for the ended execution (a duplicate, a late wake-up) change nothing and keep the end.
    for _ in range(2):
        local.process_one(InvokeMessage(execution_id).to_body())
    assert local.store.get_carried_batch(execution_id) == end
    assert len(log_bodies(local, execution_id)) == len(bodies)
    assert local.history(execution_id) == history
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"


@durable_execution
def answers_at_once(event: Any, context: DurableContext) -> Any:
    return event


@pytest.mark.parametrize("inline_limit", [None, 64], ids=["input inline", "input kept elsewhere"])
def test_an_execution_that_ends_in_its_first_batch_keeps_it_on_the_record(inline_limit: int | None) -> None:
    local = LocalStepwell() if inline_limit is None else LocalStepwell(inline_limit=inline_limit)
    local.register("answers", answers_at_once)
    given = {"pad": "p" * 200}
    execution_id = local.start("answers", given)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    assert log_bodies(local, execution_id) == []  # one write fewer: the release keeps the whole batch
    end = local.store.get_carried_batch(execution_id)
    assert end is not None and end.seq == 0 and end.terminal
    history = local.history(execution_id)
    assert [event["EventType"] for event in history] == [
        "ExecutionStarted",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    assert json.loads(history[0]["ExecutionStartedDetails"]["Input"]["Payload"]) == given
    assert json.loads(history[-1]["ExecutionSucceededDetails"]["Result"]["Payload"]) == given
    assert metric_totals(local.metrics.records, "answers")["ExecutionsStarted"] == 1
    local.process_one(InvokeMessage(execution_id).to_body())  # a late message changes nothing
    assert local.history(execution_id) == history


def test_a_large_end_is_written_to_the_log(local: LocalStepwell) -> None:
    execution_id = local.start("one-step", {"size": 8000})  # over 2.5 KB deflated
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    bodies = log_bodies(local, execution_id)
    assert bodies[-1].get("z") == 1
    assert local.store.get_carried_batch(execution_id) is None  # the record went with the end
    history = local.history(execution_id)
    assert history[-1]["EventType"] == "ExecutionSucceeded"
    assert history[-1]["ExecutionSucceededDetails"]["Result"]["Payload"] == '"' + result_text(8000) + '"'


def test_an_end_leaves_out_the_input_its_first_batch_holds(local: LocalStepwell) -> None:
    big = {"size": 3, "pad": "p" * 3000}
    execution_id = local.start("one-step", big)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED
    end = local.store.get_carried_batch(execution_id)
    assert end is not None and len(end.body) <= 512  # carried: the 3 KB input is not in it
    bodies = [*log_bodies(local, execution_id), decode_body(end.body)]
    journal = Journal(execution_id)
    for seq, body in enumerate(bodies):
        journal.fold(seq, body)
    execution = journal.operations[journal.execution_operation_id]
    assert execution.status.value == "SUCCEEDED"
    assert execution.execution_details is not None
    assert json.loads(execution.execution_details.input_payload or "") == big
    started = local.history(execution_id)[0]
    assert json.loads(started["ExecutionStartedDetails"]["Input"]["Payload"]) == big
