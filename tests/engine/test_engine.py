"""The engine's behaviour on the local backend: starting, running, waiting, callbacks, children, stop."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.aws.work_queue import QueueError
from stepwell.errors import (
    CallbackNotFound,
    ExecutionAlreadyEnded,
    ExecutionNotFound,
    InvalidArgument,
    InvalidWorkflowName,
    WorkflowNotFound,
)
from stepwell.limits import PayloadLimits
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import ExecutionStatus, HandOff, OutcomeAction
from stepwell.testing.local import ExecutionStuck, LocalStepwell


def event_types(local: LocalStepwell, execution_id: str) -> list[str]:
    return [event["EventType"] for event in local.history(execution_id)]


def test_a_step_workflow_succeeds_with_its_result_and_history(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == "Hello, Ada!"
    history = stepwell_local.history(execution_id)
    assert [event["EventType"] for event in history] == [
        "ExecutionStarted",
        "StepStarted",
        "StepSucceeded",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    assert [event["EventId"] for event in history] == [1, 2, 3, 4, 5]
    assert history[2]["Name"] == "greet"
    assert history[2]["StepSucceededDetails"]["Result"]["Payload"] == '"Hello, Ada!"'


def test_execution_id_is_context_key_and_instance(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"}, execution_name="run-1", subject_id="ada")
    assert execution_id == "default#greet#ada/run-1"


def test_start_is_idempotent_on_the_execution_name(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "Ada"}, execution_name="once")
    second = stepwell_local.start("greet", {"name": "Ada"}, execution_name="once")

    assert first == second
    assert stepwell_local.store.counters["create_execution"] == 2
    # Not run yet: the repeat sends its message again (the first one may be lost), which is harmless.
    assert len(stepwell_local.queue) == 2
    record = stepwell_local.run_to_completion(first)
    assert json.loads(record.result or "null") == "Hello, Ada!"
    assert stepwell_local.start("greet", {"name": "Ada"}, execution_name="once") == first
    assert len(stepwell_local.queue) == 0  # it ran: a repeat sends nothing
    assert event_types(stepwell_local, first).count("ExecutionStarted") == 1


def test_a_start_whose_message_was_lost_is_completed_by_its_retry(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is written, then sending its first message fails (the caller sees the start fail): the
    caller's retry of the same start sends it, so the execution runs instead of staying RUNNING forever."""
    stepwell_local.register("greet", workflows.greet)
    queue = stepwell_local.engine.queue
    send = queue.enqueue

    def lost(body: Any, delay_seconds: int = 0) -> None:
        raise QueueError("SQS refused the message")

    monkeypatch.setattr(queue, "enqueue", lost)
    with pytest.raises(QueueError):
        stepwell_local.start("greet", {"name": "Bo"}, execution_name="retried")
    monkeypatch.setattr(queue, "enqueue", send)
    execution_id = stepwell_local.start("greet", {"name": "Bo"}, execution_name="retried")
    record = stepwell_local.run_to_completion(execution_id)
    assert json.loads(record.result or "null") == "Hello, Bo!"


def test_a_three_day_wait_is_skipped_on_the_virtual_clock(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(record.result or "null") == "before-after"
    assert stepwell_local.clock.skipped_seconds >= 3 * 24 * 3600 - 1
    history = stepwell_local.history(execution_id)
    waits = [event for event in history if event["EventType"].startswith("Wait")]
    assert [event["EventType"] for event in waits] == ["WaitStarted", "WaitSucceeded"]
    assert waits[0]["WaitStartedDetails"]["Duration"] == 3 * 24 * 3600
    # The "before" step ran once: the second invocation replayed it from the log.
    assert event_types(stepwell_local, execution_id).count("StepStarted") == 2


def test_a_duplicate_message_changes_nothing(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()  # first invocation: suspended on the wait
    before = stepwell_local.history(execution_id)

    outcome = stepwell_local.worker.run(execution_id)  # the same message delivered again

    assert outcome.action is OutcomeAction.IDLE
    assert stepwell_local.history(execution_id) == before


def test_a_worker_backs_off_while_another_holds_the_lease(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    execution_id = stepwell_local.start("greet", {"name": "Ada"})
    now = stepwell_local.clock.now()
    assert stepwell_local.store.acquire_lease(execution_id, "other-worker", now, 60) is not None

    outcome = stepwell_local.worker.run(execution_id)

    assert outcome.action is OutcomeAction.BUSY
    assert stepwell_local.store.batch_count(execution_id) == 0


def test_a_callback_completes_and_wakes_the_execution(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id, "approval")
    assert len(callback_id) >= 32  # at least 128 random bits, URL-safe
    with pytest.raises(LookupError, match="no open callback named 'other'"):
        stepwell_local.callback_id(execution_id, "other")

    stepwell_local.engine.send_callback_heartbeat(callback_id)
    stepwell_local.engine.send_callback_success(callback_id, json.dumps({"approved": True}))
    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    # The SDK hands a callback's result over as the raw text that was sent.
    assert json.loads(record.result or "null") == '{"approved": true}'
    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, "1")


def test_a_callback_answered_before_its_deadline_leaves_no_wake_up(stepwell_local: LocalStepwell) -> None:
    """Its deadline was armed as a wake-up an hour ahead (on AWS a one-time schedule): the run the result
    ends withdraws it, instead of it coming an hour later to find nothing due."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    assert stepwell_local.queue.next_due_at() == pytest.approx(stepwell_local.clock.now() + 3600, abs=1)

    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id), '"yes"')
    assert stepwell_local.run_until_idle() == 1

    assert stepwell_local.record(execution_id).status is ExecutionStatus.SUCCEEDED
    assert len(stepwell_local.queue) == 0


def test_a_deadline_still_ahead_stays_armed_when_an_earlier_one_is_withdrawn(
    stepwell_local: LocalStepwell,
) -> None:
    """Two callbacks, deadlines in 1 h and 3 h: the 1 h one is answered, so its wake-up is withdrawn and
    the 3 h one armed in its place, and that callback still times out at its deadline."""
    stepwell_local.register("two_deadlines", workflows.two_deadlines)
    started = stepwell_local.clock.now()
    execution_id = stepwell_local.start("two_deadlines", None)
    stepwell_local.run_until_idle()
    assert stepwell_local.queue.next_due_at() == pytest.approx(started + 3600, abs=1)

    stepwell_local.engine.send_callback_success(stepwell_local.callback_id(execution_id, "sooner"), '"a"')
    stepwell_local.run_until_idle()
    assert len(stepwell_local.queue) == 1
    assert stepwell_local.queue.next_due_at() == pytest.approx(started + 3 * 3600, abs=1)

    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.FAILED
    assert stepwell_local.clock.now() == pytest.approx(started + 3 * 3600, abs=1)
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert [event["Name"] for event in timed_out] == ["later"]


def test_an_unknown_callback_id_is_refused(stepwell_local: LocalStepwell) -> None:
    with pytest.raises(CallbackNotFound, match="no-such-id"):
        stepwell_local.engine.send_callback_success("no-such-id", "1")


def test_a_callback_without_an_answer_times_out(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert timed_out[0]["CallbackTimedOutDetails"]["Error"]["Payload"]["ErrorType"] == "Callback.Timeout"


def test_a_callback_open_when_its_execution_ends_is_closed_with_it(stepwell_local: LocalStepwell) -> None:
    """Stopped while it waits for a callback: the callback's record is closed by the end (so it expires
    with the execution), and a sender is told the execution ended."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id)
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed

    assert stepwell_local.engine.stop_execution(execution_id) is True
    stepwell_local.run_until_idle()
    closed = stepwell_local.store.get_callback(callback_id)
    assert closed is not None and closed.completed
    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, "1")
    kinds = [event["EventType"] for event in stepwell_local.history(execution_id)]
    assert kinds[-1] == "ExecutionStopped" and "CallbackTimedOut" not in kinds


def test_a_completion_for_an_ended_execution_is_undone(stepwell_local: LocalStepwell) -> None:
    """Stopped, and a result arrives before a worker settled the stop: the completion, written without a
    read, finds the execution ended and is undone; the sender is told; nothing is left for a run to read."""
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    callback_id = stepwell_local.callback_id(execution_id)
    assert stepwell_local.engine.stop_execution(execution_id) is True

    with pytest.raises(ExecutionAlreadyEnded):
        stepwell_local.engine.send_callback_success(callback_id, '"late"')
    ref = stepwell_local.store.get_callback(callback_id)
    assert ref is not None and not ref.completed
    assert stepwell_local.store.get_callback_results([callback_id]) == []
    with pytest.raises(CallbackNotFound, match="no callback"):
        stepwell_local.engine.send_callback_success("cb-unknown", '"x"')


def test_stop_ends_the_execution_and_later_messages_do_nothing(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()

    assert stepwell_local.engine.stop_execution(execution_id) is True
    stepwell_local.run_until_idle()
    assert stepwell_local.engine.stop_execution(execution_id) is False
    history_after_stop = stepwell_local.history(execution_id)
    stepwell_local.worker.run(execution_id)

    assert stepwell_local.record(execution_id).status is ExecutionStatus.STOPPED
    assert history_after_stop[-1]["EventType"] == "ExecutionStopped"
    assert stepwell_local.history(execution_id) == history_after_stop
    assert len(stepwell_local.queue) == 0  # the pending wake-up was cancelled
    # Its log expires with it, from the stop: the batches before the end (the terminal one as written).
    store = stepwell_local.engine.store
    assert isinstance(store, MemoryExecutionStore)
    record = stepwell_local.record(execution_id)
    assert record.ended_at is not None
    # Its start and the stop, which took in the wait's start (carried by the release of the run that
    # armed it).
    expiries = store.batch_expiries(execution_id)
    assert len(expiries) == 2
    assert all(
        at is not None and abs(at - (record.ended_at + store.retention_seconds)) <= 1 for at in expiries
    )


def test_context_invoke_runs_a_child_and_resumes_the_parent(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("doubler", workflows.doubler)
    parent_id = stepwell_local.start("invoker", {"target": "doubler", "value": 21})

    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == {"doubled": 42}
    types = event_types(stepwell_local, parent_id)
    assert "ChainedInvokeStarted" in types and "ChainedInvokeSucceeded" in types
    children = stepwell_local.engine.list_executions(workflow="doubler").items
    assert len(children) == 1 and children[0].parent_execution_id == parent_id


def test_a_child_whose_worker_died_before_notifying_its_parent_notifies_it_on_its_next_message(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The child's worker wrote its terminal batch and died before resuming the parent (found by
    # `make chaos`): the redelivered message finds the end logged, and must still resume the parent.
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("doubler", workflows.doubler)
    parent_id = stepwell_local.start("invoker", {"target": "doubler", "value": 21})
    engine = stepwell_local.engine
    notify = engine.notify_parent

    def die_once(*args: object, **kwargs: object) -> None:
        monkeypatch.setattr(engine, "notify_parent", notify)
        raise SystemExit("the worker died")

    monkeypatch.setattr(engine, "notify_parent", die_once)
    with pytest.raises(SystemExit):
        stepwell_local.run_until_idle()
    child = engine.list_executions(workflow="doubler").items[0]
    assert child.status is ExecutionStatus.SUCCEEDED

    stepwell_local.worker.run(child.execution_id)  # the child's message again (SQS redelivers it)
    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == {"doubled": 42}
    # A further repeat of the child's message changes nothing in the ended parent.
    history = stepwell_local.history(parent_id)
    stepwell_local.worker.run(child.execution_id)
    stepwell_local.run_until_idle()
    assert stepwell_local.history(parent_id) == history


def test_a_failing_child_fails_the_invoke(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("failing_child", workflows.failing_child)
    parent_id = stepwell_local.start("invoker", {"target": "failing_child", "value": 7})

    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.FAILED
    assert "ChainedInvokeFailed" in event_types(stepwell_local, parent_id)


@pytest.mark.parametrize("qualifier", ["$LATEST", "$LATEST.PUBLISHED"])
def test_invoking_a_registered_workflow_by_a_qualified_name_runs_it(
    stepwell_local: LocalStepwell, qualifier: str
) -> None:
    # AWS requires qualified names for durable functions, so code ported from it carries a qualifier.
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("doubler", workflows.doubler)
    parent_id = stepwell_local.start("invoker", {"target": f"doubler:{qualifier}", "value": 21})

    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == {"doubled": 42}
    started = next(e for e in stepwell_local.history(parent_id) if e["EventType"] == "ChainedInvokeStarted")
    details = started["ChainedInvokeStartedDetails"]
    assert details["FunctionName"] == f"doubler:{qualifier}"  # as the code wrote it
    child = stepwell_local.engine.list_executions(workflow="doubler").items[0]
    assert details["DurableExecutionArn"] == child.execution_id
    assert child.workflow_id == "doubler" and child.parent_execution_id == parent_id


def test_invoking_a_registered_workflow_by_another_version_fails_the_invoke_naming_what_it_accepts(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("doubler", workflows.doubler)
    parent_id = stepwell_local.start("invoker", {"target": "doubler:3", "value": 21})

    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.FAILED
    assert "'doubler:3'" in str(record.error) and "$LATEST.PUBLISHED" in str(record.error)
    assert stepwell_local.engine.list_executions(workflow="doubler").items == []


def test_invoking_an_unregistered_workflow_fails_the_invoke_in_its_checkpoint_as_aws_does(
    stepwell_local: LocalStepwell, caplog: pytest.LogCaptureFixture
) -> None:
    stepwell_local.register("invoker", workflows.invoker)
    stepwell_local.register("secret_workflow", workflows.doubler)
    parent_id = stepwell_local.start("invoker", {"target": "missing", "value": 1})

    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.FAILED
    error = {"ErrorType": "ResourceNotFoundException", "ErrorMessage": "Function not found: missing."}
    # The START's checkpoint answers FAILED: the handler raises in the same invocation, one batch records
    # both events, and the history names nothing else registered.
    events = [(e["EventType"], e.get("Name")) for e in stepwell_local.history(parent_id)]
    assert events == [
        ("ExecutionStarted", None),
        ("ChainedInvokeStarted", "call child"),
        ("ChainedInvokeFailed", "call child"),
        ("InvocationCompleted", None),
        ("ExecutionFailed", None),
    ]
    history = stepwell_local.history(parent_id)
    assert history[1]["ChainedInvokeStartedDetails"] == {"FunctionName": "missing"}
    assert history[2]["ChainedInvokeFailedDetails"]["Error"]["Payload"] == error
    assert "secret_workflow" not in json.dumps(history, default=str)
    assert "secret_workflow" in caplog.text  # the operator's log says what is allowed
    assert stepwell_local.engine.list_executions(workflow="missing").items == []


@durable_execution
def invokes_then_waits(event: Any, context: DurableContext) -> Any:
    from aws_durable_execution_sdk_python.exceptions import InvokeError

    try:
        outcome = {"ok": context.invoke(event["target"], {"value": 1}, name="call")}
    except InvokeError as error:
        outcome = {"error": error.error_type}
    context.wait(Duration.from_seconds(60), name="nap")
    return outcome


def test_a_target_refused_at_its_start_stays_refused_on_replay(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("parent", invokes_then_waits)
    parent_id = stepwell_local.start("parent", {"target": "late"})
    stepwell_local.run_until_idle()
    # Registered after the invoke failed: the replay answers from the log, so nothing changes.
    stepwell_local.register("late", workflows.doubler)

    record = stepwell_local.run_to_completion(parent_id)

    assert json.loads(record.result or "null") == {"error": "ResourceNotFoundException"}
    assert event_types(stepwell_local, parent_id).count("ChainedInvokeFailed") == 1
    assert stepwell_local.engine.list_executions(workflow="late").items == []


def test_each_step_costs_one_batch_and_a_first_run_reads_no_log(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("counted_steps", workflows.counted_steps)
    execution_id = stepwell_local.start("counted_steps", {"steps": 50})

    record = stepwell_local.run_to_completion(execution_id)

    assert json.loads(record.result or "null") == sum(range(50))
    # 50 steps (START and SUCCEED in one batch each) + the final batch; no log load: the one run is the
    # execution's first, whose lease no run held before (Lease.never_held), so its log is empty.
    assert stepwell_local.store.batch_count(execution_id) <= 51
    assert stepwell_local.store.counters.get("load_batches", 0) == 0


def test_large_payloads_go_to_the_payload_store() -> None:
    local = LocalStepwell(inline_limit=1024)
    local.register("big_result", workflows.big_result)
    execution_id = local.start("big_result", {"size": 5000})

    record = local.run_to_completion(execution_id)

    assert record.result_is_ref
    assert json.loads(local.describe(execution_id)["Result"]) == "x" * 5000
    step = [e for e in local.history(execution_id) if e["EventType"] == "StepSucceeded"]
    assert step[0]["StepSucceededDetails"]["Result"]["Payload"] == json.dumps("x" * 5000)


def test_start_rejects_unknown_workflows_and_bad_names(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    with pytest.raises(WorkflowNotFound, match="'nope'"):
        stepwell_local.start("nope", {})
    with pytest.raises(InvalidArgument, match="execution name 'a/b'"):
        stepwell_local.start("greet", {}, execution_name="a/b")
    with pytest.raises(InvalidArgument, match="domain 'x#y'"):
        stepwell_local.start("greet", {}, domain="x#y")
    # A trailing newline made a second execution of the same name (`$` matches before it).
    with pytest.raises(InvalidArgument, match="execution name 'order-7\\\\n'"):
        stepwell_local.start("greet", {}, execution_name="order-7\n")
    with pytest.raises(InvalidArgument, match="subject id 'customer-1\\\\n'"):
        stepwell_local.start("greet", {}, subject_id="customer-1\n")
    with pytest.raises(InvalidWorkflowName, match="workflow name 'greet2\\\\n'"):
        stepwell_local.register("greet2\n", workflows.greet)
    with pytest.raises(InvalidArgument, match="not JSON-serializable"):
        stepwell_local.start("greet", {"when": object()})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"status": "RUNNING", "limit": 0}, "limit must be a whole number 1..1000, got 0"),
        ({"status": "RUNNING", "limit": 1001}, "got 1001"),
        ({"status": "RUNNING", "limit": "5"}, "got '5'"),
        ({"status": "RUNNING", "limit": 2.5}, "got 2.5"),
        ({"status": "RUNNING", "limit": True}, "got True"),
        ({"status": "RUNNING", "next_token": "zzz"}, "page token 'zzz' is not one this store returned"),
        ({"status": "RUNNING", "next_token": 5}, "page token 5"),
        ({"status": "running"}, "invalid status 'running'; allowed: RUNNING, SUCCEEDED"),
        ({"status": 1}, "invalid status 1"),
        ({"workflow": 5}, "invalid workflow name 5"),
        ({"domain": "a#b"}, "invalid domain 'a#b'"),
        ({"domain": "shop", "subject_id": "c-1\n"}, "invalid subject id"),
        ({}, "needs exactly one of status=, workflow_id= or domain="),
        ({"status": "RUNNING", "domain": "shop"}, "needs exactly one of"),
        ({"subject_id": "c-1"}, "needs exactly one of"),
    ],
)
def test_list_executions_refuses_bad_arguments_naming_them(
    stepwell_local: LocalStepwell, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        stepwell_local.engine.list_executions(**arguments)


def test_a_callback_result_must_be_json_text(stepwell_local: LocalStepwell) -> None:
    with pytest.raises(InvalidArgument, match=r"callback result must be JSON text .* got dict"):
        stepwell_local.engine.send_callback_success("cb-any", {"approved": True})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="callback result must be UTF-8 text"):
        stepwell_local.engine.send_callback_success("cb-any", b"\xff\xfe")


def test_describe_and_list_executions(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("greet", workflows.greet)
    first = stepwell_local.start("greet", {"name": "A"}, subject_id="customer-1", domain="shop")
    stepwell_local.run_to_completion(first)
    second = stepwell_local.start("greet", {"name": "B"}, subject_id="customer-2", domain="shop")

    assert stepwell_local.describe(first)["Status"] == "SUCCEEDED"
    assert stepwell_local.describe(second)["Status"] == "RUNNING"
    engine = stepwell_local.engine
    assert [r.execution_id for r in engine.list_executions(domain="shop", subject_id="customer-2").items] == [
        second
    ]
    assert [r.execution_id for r in engine.list_executions(status="SUCCEEDED").items] == [first]
    page = engine.list_executions(workflow="greet", limit=1)
    assert len(page.items) == 1 and page.next_token is not None
    rest = engine.list_executions(workflow="greet", limit=1, next_token=page.next_token)
    assert {page.items[0].execution_id, rest.items[0].execution_id} == {first, second}
    with pytest.raises(InvalidArgument, match="invalid status 'DONE'"):
        engine.list_executions(status="DONE")
    with pytest.raises(ExecutionNotFound):
        stepwell_local.describe("default#greet#x/none")


def test_a_waiting_execution_records_its_armed_wake_up_when_it_releases_the_lease(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three_day_wait", None)
    stepwell_local.run_until_idle()
    now = stepwell_local.clock.now()

    lease = stepwell_local.store.acquire_lease(execution_id, "probe", now, 1)

    assert lease is not None and not lease.taken_over
    assert lease.hand_off.wake_at == stepwell_local.queue.next_due_at()
    assert lease.hand_off.wake_at is not None and lease.hand_off.wake_at >= now + 3 * 24 * 3600 - 1


def test_run_to_completion_reports_an_execution_nobody_will_wake(stepwell_local: LocalStepwell) -> None:
    @workflows.durable_execution
    def forever(event: object, context: workflows.DurableContext) -> object:
        return context.create_callback(name="never").result()

    stepwell_local.register("forever", forever)
    execution_id = stepwell_local.start("forever", None)
    with pytest.raises(ExecutionStuck, match="nothing is scheduled"):
        stepwell_local.run_to_completion(execution_id)


def test_wait_for_condition_polls_on_the_virtual_clock(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("poll_until_ready", workflows.poll_until_ready)
    execution_id = stepwell_local.start("poll_until_ready", {"ready_after": 3})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == 3
    assert stepwell_local.clock.skipped_seconds >= 2 * 600 - 1  # two 10-minute delays, skipped


def test_map_runs_every_item(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("map_squares", workflows.map_squares)
    execution_id = stepwell_local.start("map_squares", {"items": [1, 2, 3, 4]})

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == [1, 4, 9, 16]


def test_an_invocation_that_keeps_crashing_fails_the_execution(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("always_crashes", workflows.always_crashes)
    execution_id = stepwell_local.start("always_crashes", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    assert record.error is not None and record.error["ErrorType"] == "Runtime.ExitError"
    crashes = [
        event
        for event in stepwell_local.history(execution_id)
        if event["EventType"] == "InvocationCompleted" and "Error" in event["InvocationCompletedDetails"]
    ]
    assert len(crashes) == 5
    # Its coordination record went with its end: no armed wake-up is left behind.
    lease = stepwell_local.store.acquire_lease(execution_id, "probe", stepwell_local.clock.now(), 1)
    assert lease is not None and lease.hand_off.wake_at is None


def test_workflow_modules_from_the_environment_register_their_handlers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from stepwell.core.registry import default_registry, import_workflow_modules

    monkeypatch.setenv("STEPWELL_WORKFLOW_MODULES", "workflow_module_for_import, ")
    try:
        assert import_workflow_modules() == ["workflow_module_for_import"]
        assert "imported-greeting" in default_registry
    finally:
        default_registry.unregister("imported-greeting")
    monkeypatch.setenv("STEPWELL_WORKFLOW_MODULES", "no_such_module_here")
    with pytest.raises(ImportError, match="'no_such_module_here'"):
        import_workflow_modules()


def test_a_timer_that_comes_due_during_an_invocation_runs_the_execution_again(
    stepwell_local: LocalStepwell,
) -> None:
    from aws_durable_execution_sdk_python.config import Duration, ParallelConfig

    clock = stepwell_local.clock

    def waits(context: workflows.DurableContext) -> str:
        context.wait(Duration.from_seconds(1))
        return "waited"

    def slow(context: workflows.DurableContext) -> str:
        context.step(lambda _: "started", name="start")  # synchronous: the wait's START is durable now
        # Time passes while this branch works: the other branch's wait ends during the invocation.
        return context.step(lambda _: clock.advance(5) or "worked", name="work")

    @workflows.durable_execution
    def branches(event: object, context: workflows.DurableContext) -> list[str]:
        return context.parallel([waits, slow], config=ParallelConfig(max_concurrency=2)).get_results()

    stepwell_local.register("branches", branches)
    execution_id = stepwell_local.start("branches", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    assert json.loads(record.result or "null") == ["waited", "worked"]


def test_two_workers_racing_one_runs_the_other_backs_off(stepwell_local: LocalStepwell) -> None:
    import threading

    inside_step = threading.Event()
    release = threading.Event()
    runs: list[int] = []

    def guarded(_: object) -> str:
        runs.append(1)
        inside_step.set()
        assert release.wait(timeout=30), "the test never released the step"
        return "done"

    @workflows.durable_execution
    def single_step(event: object, context: workflows.DurableContext) -> str:
        return context.step(guarded, name="guarded")

    stepwell_local.register("single_step", single_step)
    execution_id = stepwell_local.start("single_step", None)
    outcomes = []
    first = threading.Thread(target=lambda: outcomes.append(stepwell_local.worker.run(execution_id)))
    first.start()
    assert inside_step.wait(timeout=30)

    second = stepwell_local.worker.run(execution_id)  # the same message, delivered to a second worker
    release.set()
    first.join(timeout=30)

    assert second.action is OutcomeAction.BUSY
    assert [outcome.action for outcome in outcomes] == [OutcomeAction.FINISHED]
    assert runs == [1]
    assert event_types(stepwell_local, execution_id).count("StepSucceeded") == 1


def test_a_worker_killed_mid_invocation_resumes_with_each_step_recorded_once(
    stepwell_local: LocalStepwell,
) -> None:
    crashed: list[bool] = []

    def third(_: object) -> int:
        if not crashed:
            crashed.append(True)
            raise SystemExit(1)  # the process dies after two steps were checkpointed
        return 3

    @workflows.durable_execution
    def four_steps(event: object, context: workflows.DurableContext) -> int:
        one = context.step(lambda _: 1, name="one")
        two = context.step(lambda _: 2, name="two")
        three = context.step(third, name="three")
        return one + two + three + context.step(lambda _: 4, name="four")

    stepwell_local.register("four_steps", four_steps)
    execution_id = stepwell_local.start("four_steps", None)

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED and json.loads(record.result or "null") == 10
    succeeded = [e["Name"] for e in stepwell_local.history(execution_id) if e["EventType"] == "StepSucceeded"]
    assert succeeded == ["one", "two", "three", "four"]
    crashes = [
        e
        for e in stepwell_local.history(execution_id)
        if e["EventType"] == "InvocationCompleted" and "Error" in e["InvocationCompletedDetails"]
    ]
    assert len(crashes) == 1


def test_a_heartbeat_while_waiting_does_not_rerun_the_handler(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("approval", workflows.approval)
    execution_id = stepwell_local.start("approval", None)
    stepwell_local.run_until_idle()
    stepwell_local.engine.send_callback_heartbeat(stepwell_local.callback_id(execution_id, "approval"))
    stepwell_local.run_until_idle()  # the heartbeat is absorbed; nothing for the handler to do
    history = stepwell_local.history(execution_id)

    again = stepwell_local.worker.run(execution_id)  # a duplicate message afterwards

    assert again.action is OutcomeAction.IDLE
    assert stepwell_local.history(execution_id) == history
    assert [e["EventType"] for e in history].count("InvocationCompleted") == 1


@durable_execution
def _heartbeat_approval(event: Any, context: DurableContext) -> Any:
    config = CallbackConfig(timeout=Duration.from_hours(1), heartbeat_timeout=Duration.from_seconds(20))
    return context.create_callback(name="approval", config=config).result()


def test_a_heartbeat_moves_the_wake_up_to_its_new_deadline_and_a_silent_sender_times_out(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("heartbeat-approval", _heartbeat_approval)
    execution_id = stepwell_local.start("heartbeat-approval", None)
    stepwell_local.run_until_idle()
    started = stepwell_local.clock.now()
    stepwell_local.clock.advance(15)
    stepwell_local.engine.send_callback_heartbeat(stepwell_local.callback_id(execution_id, "approval"))
    stepwell_local.run_until_idle()  # absorbed: the heartbeat deadline is now 20 s after it

    record = stepwell_local.run_to_completion(execution_id)

    assert record.status is ExecutionStatus.FAILED
    timed_out = [e for e in stepwell_local.history(execution_id) if e["EventType"] == "CallbackTimedOut"]
    assert len(timed_out) == 1
    assert timed_out[0]["EventTimestamp"].timestamp() == pytest.approx(started + 35, abs=1)


def test_a_wake_up_lost_after_the_suspending_batch_is_scheduled_by_the_next_message(
    stepwell_local: LocalStepwell,
) -> None:
    # The worker died after writing the batch that suspends the execution and before scheduling its
    # wake-up: no message remains and its lease records no armed wake-up. The next message for it (SQS
    # delivers the dead worker's again) finds nothing to run and must schedule the wake-up.
    stepwell_local.register("three-day-wait", workflows.three_day_wait)
    execution_id = stepwell_local.start("three-day-wait", None)
    stepwell_local.run_until_idle()
    stepwell_local.queue.cancel_all(execution_id)
    store, now = stepwell_local.store, stepwell_local.clock.now()
    assert store.acquire_lease(execution_id, "dead worker", now, 60) is not None
    store.release_lease(execution_id, "dead worker", HandOff(wake_at=None))

    outcome = stepwell_local.worker.run(execution_id)

    assert outcome.action is OutcomeAction.IDLE and outcome.next_wake_at is not None
    assert stepwell_local.queue.next_due_at() == outcome.next_wake_at
    record = stepwell_local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED


def test_a_run_writes_its_coordination_record_twice_and_an_end_removes_it(
    stepwell_local: LocalStepwell,
) -> None:
    # Taking the lease and dropping it (with the wake-up armed) are the only coordination writes of a run.
    stepwell_local.register("greet", workflows.greet)
    stepwell_local.register("three_day_wait", workflows.three_day_wait)
    store = stepwell_local.store
    counters = store.counters

    stepwell_local.run_to_completion(stepwell_local.start("greet", {"name": "Ada"}))
    assert (counters["acquire_lease"], counters["release_lease"]) == (1, 1)

    waiting = stepwell_local.start("three_day_wait", {})
    record = stepwell_local.run_to_completion(waiting)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert (counters["acquire_lease"], counters["release_lease"]) == (3, 3)
    lease = store.acquire_lease(waiting, "probe", stepwell_local.clock.now(), 1)
    assert lease is not None and lease.hand_off.wake_at is None


# ------------------------------------------------------------------------------- chained invoke size caps

MIB = 1_048_576
AT_MOST_1_MIB = "payload size must be less than or equal to 1048576 bytes."


@durable_execution
def invokes_catching(event: Any, context: DurableContext) -> Any:
    from aws_durable_execution_sdk_python.exceptions import InvokeError

    try:
        return {"ok": len(context.invoke(event["target"], event["payload"], name="call"))}
    except InvokeError as error:
        return {"type": error.error_type, "message": error.message}


@durable_execution
def returns_text(event: Any, context: DurableContext) -> str:
    return "x" * int(event["size"])


def returns_text_plain(event: Any, lambda_context: Any) -> str:
    return "x" * int(event["size"])


def test_an_invoke_input_over_1_mib_fails_the_invoke_as_aws_refuses_it(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("parent", invokes_catching)
    stepwell_local.register("child", returns_text)
    # The parent's own input may carry it (its limit raised for that): the invoke's 1 MiB cap refuses it.
    stepwell_local.engine.limits = PayloadLimits(execution_input_bytes=2 * MIB)
    parent_id = stepwell_local.start("parent", {"target": "child", "payload": {"size": 1, "pad": "x" * MIB}})

    record = stepwell_local.run_to_completion(parent_id)

    assert json.loads(record.result or "null") == {
        "type": "InvalidParameterValueException",
        "message": f"CHAINED_INVOKE input {AT_MOST_1_MIB}",
    }
    assert stepwell_local.engine.list_executions(workflow="child").items == []


@pytest.mark.parametrize(
    ("plain", "message"),
    [(False, f"Execution output {AT_MOST_1_MIB}"), (True, f"CHAINED_INVOKE output {AT_MOST_1_MIB}")],
)
def test_a_child_result_over_1_mib_fails_the_invoke_as_aws_does(
    stepwell_local: LocalStepwell, plain: bool, message: str
) -> None:
    stepwell_local.register("parent", invokes_catching)
    if plain:
        stepwell_local.register_function("child", returns_text_plain)
    else:
        stepwell_local.register("child", returns_text)
    # At the cap exactly (the JSON string's quotes count) the result arrives; one byte more fails the invoke.
    at_cap = stepwell_local.start("parent", {"target": "child", "payload": {"size": MIB - 2}})
    over = stepwell_local.start("parent", {"target": "child", "payload": {"size": MIB - 1}})

    assert json.loads(stepwell_local.run_to_completion(at_cap).result or "null") == {"ok": MIB - 2}
    assert json.loads(stepwell_local.run_to_completion(over).result or "null")["message"] == message
    failed = next(e for e in stepwell_local.history(over) if e["EventType"] == "ChainedInvokeFailed")
    assert failed["ChainedInvokeFailedDetails"]["Error"]["Payload"] == {"ErrorMessage": message}  # no type
    statuses = sorted(r.status.value for r in stepwell_local.engine.list_executions(workflow="child").items)
    assert statuses == ["FAILED", "SUCCEEDED"]
