"""Chained invoke (context.invoke): a child runs and resumes its parent, also after its worker died;
qualified, unknown and refused targets; the 1 MiB caps on a child's input and result."""

from __future__ import annotations

import json
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from local_history import event_types
from stepwell.limits import PayloadLimits
from stepwell.model import ExecutionStatus
from stepwell.testing.local import LocalStepwell


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
