"""Remote durable functions (issue 41), in-process on the memory store: a handler written with the AWS
durable SDK runs as the user's own Lambda function (tests/remote/harness.py), checkpointing through the
API, its end coming back to the worker as Lambda's destination record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.core.remote_checkpoints import MAX_CHECKPOINT_UPDATES
from stepwell.core.remote_runs import INVALID_OUTPUT_TYPE, INVOCATION_LOST_TYPE
from stepwell.core.worker import MAX_CONSECUTIVE_CRASHES
from stepwell.errors import InvalidMessage
from stepwell.limits import PAYLOAD_OVER_LIMIT_TYPE
from stepwell.model import ExecutionStatus, OutcomeAction
from stepwell.ports import ExecutionStore
from stepwell.testing.local import LocalStepwell

from tests.api.conftest import ARNS
from tests.remote.harness import EventInvoke, Ran, RemoteStack, destination_record, function_arn, remote_stack


def flow(event: Any, context: DurableContext) -> Any:
    first = context.step(lambda _: event["n"] + 1, name="first")
    context.wait(Duration.from_seconds(30), name="pause")
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    answer = callback.result()
    second = context.step(lambda _: first * 2, name="second")
    return {"first": first, "second": second, "answer": answer}


def quiet(event: Any, context: DurableContext) -> str:
    """Never checkpoints: no durable operation at all."""
    return f"quiet {event['n']}"


def one_step(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: len(event.get("blob", "")), name="measure")


@pytest.fixture
def stack(execution_store: ExecutionStore) -> Iterator[RemoteStack]:
    """On the memory store, then on the DynamoDB store (moto): the worker's and the API's."""
    built = remote_stack(
        {"flow_remote": flow, "quiet": quiet, "one_step": one_step, "missing": quiet, "denied": quiet},
        {"flow_local": flow},
        store=execution_store,
    )
    yield built
    built.close()


def _answer_approvals(local: LocalStepwell) -> bool:
    """on_idle: answers the first open "approval" callback of any execution."""
    for record in local.engine.list_executions(status=ExecutionStatus.RUNNING).items:
        try:
            callback_id = local.callback_id(record.execution_id, "approval")
        except LookupError:
            continue
        local.engine.send_callback_success(callback_id, json.dumps("yes"))
        return True
    return False


def _shape(history: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A history without what differs between two runs of the same code: times, ids and request ids."""
    shaped = []
    for event in history:
        payloads = [
            json.dumps(details.get("Result") or details.get("Error") or details.get("Input"), sort_keys=True)
            for key, details in event.items()
            if key.endswith("Details") and isinstance(details, dict) and key != "InvocationCompletedDetails"
        ]
        shaped.append((event["EventType"], event.get("Name"), event.get("SubType"), *payloads))
    return shaped


def _pending(stack: RemoteStack, workflow: str, payload: Any = None) -> tuple[str, EventInvoke]:
    """Start a remote execution and run the worker: its function is invoked, not run yet."""
    execution_id = stack.local.start(workflow, payload if payload is not None else {"n": 1})
    stack.local.run_until_idle()
    assert stack.fake_lambda.pending, "the worker invoked nothing"
    return execution_id, stack.fake_lambda.pending.pop()


def _step_start(op_id: str, name: str = "s") -> dict[str, Any]:
    return {"Id": op_id, "Type": "STEP", "Action": "START", "Name": name, "SubType": "Step"}


def _log_length(stack: RemoteStack, execution_id: str) -> int:
    return len(stack.local.history(execution_id))


# ---------------------------------------------------------------------------------------------- runs


def test_steps_a_wait_and_a_callback_end_as_the_same_handler_does_in_the_worker(stack: RemoteStack) -> None:
    local = stack.local
    in_worker = local.start("flow_local", {"n": 1})
    assert local.run_to_completion(in_worker, on_idle=_answer_approvals).status is ExecutionStatus.SUCCEEDED
    remote = local.start("flow_remote", {"n": 1})
    assert stack.run(remote, on_idle=_answer_approvals).status is ExecutionStatus.SUCCEEDED

    assert local.describe(remote)["Result"] == local.describe(in_worker)["Result"]
    assert json.loads(local.describe(remote)["Result"]) == {"first": 2, "second": 4, "answer": '"yes"'}
    assert _shape(local.history(remote)) == _shape(local.history(in_worker))
    # Three invocations (to the wait, to the callback, to the end), each an Event invoke of the function
    invokes = [
        invoke for invoke in stack.fake_lambda.invoked if invoke.function == function_arn("flow_remote")
    ]
    assert len(invokes) == 3 and all(invoke.qualifier is None for invoke in invokes)
    first = invokes[0].payload
    # Handed the execution's ARN as the API answers it, its EXECUTION operation under the ARN's last part
    assert first["DurableExecutionArn"] == ARNS.execution_arn(remote)
    execution_op = first["InitialExecutionState"]["Operations"][0]
    assert execution_op["Type"] == "EXECUTION"
    assert execution_op["Id"] == first["DurableExecutionArn"].rpartition("/")[2]
    # Each invocation's end is logged under the request id its token carried
    request_ids = [
        event["InvocationCompletedDetails"]["RequestId"]
        for event in local.history(remote)
        if event["EventType"] == "InvocationCompleted"
    ]
    assert len(set(request_ids)) == 3 and all(len(request_id) == 32 for request_id in request_ids)
    assert [result.action for result in stack.results] == ["ran", "ran", "finished"]


def test_a_function_that_never_checkpoints_succeeds_with_its_return_value(stack: RemoteStack) -> None:
    execution_id = stack.local.start("quiet", {"n": 7})
    record = stack.run(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED
    assert json.loads(stack.local.describe(execution_id)["Result"]) == "quiet 7"


def test_an_input_over_the_first_page_is_read_with_get_durable_execution_state(stack: RemoteStack) -> None:
    blob = "b" * 40_000
    execution_id = stack.local.start("one_step", {"blob": blob})
    stack.local.run_until_idle()
    state = stack.fake_lambda.pending[0].payload["InitialExecutionState"]
    assert state == {"Operations": [], "NextMarker": "0"}  # the input alone is over the page's budget
    assert stack.run(execution_id).status is ExecutionStatus.SUCCEEDED
    assert stack.local.describe(execution_id)["Result"] == str(len(blob))


@pytest.mark.parametrize(
    ("workflow", "code", "message"),
    [
        ("missing", "ResourceNotFoundException", "Function not found"),
        ("denied", "AccessDeniedException", "is not authorized to perform: lambda:InvokeFunction"),
    ],
)
def test_a_refused_invoke_ends_the_execution_failed_naming_the_function(
    stack: RemoteStack, workflow: str, code: str, message: str
) -> None:
    stack.fake_lambda.refusals[function_arn(workflow)] = (code, message)
    execution_id = stack.local.start(workflow, {"n": 1})
    stack.local.run_until_idle()
    record = stack.local.record(execution_id)
    assert record.status is ExecutionStatus.FAILED
    error = stack.local.describe(execution_id)["Error"]
    assert error["ErrorType"] == code
    assert function_arn(workflow) in error["ErrorMessage"] and message in error["ErrorMessage"]
    assert not len(stack.local.queue)  # nothing left scheduled: no wake-up at a lease's expiry


# ---------------------------------------------------------------------------------------------- tokens


def test_a_checkpoint_with_another_executions_token_is_refused_and_changes_nothing(
    stack: RemoteStack,
) -> None:
    first, first_invoke = _pending(stack, "one_step")
    second, second_invoke = _pending(stack, "one_step")
    before = _log_length(stack, second)
    for arn, token in (
        (second_invoke.payload["DurableExecutionArn"], first_invoke.payload["CheckpointToken"]),
        (first_invoke.payload["DurableExecutionArn"], "Zm9yZ2Vk"),  # no token of this deployment
    ):
        with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
            stack.client.checkpoint_durable_execution(
                DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("x")]
            )
        assert refused.value.response["Error"]["Message"].startswith("Invalid checkpoint token")
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException):
        stack.client.get_durable_execution_state(
            DurableExecutionArn=second_invoke.payload["DurableExecutionArn"],
            CheckpointToken=first_invoke.payload["CheckpointToken"],
        )
    assert _log_length(stack, second) == before
    # Each function still runs with its own
    stack.fake_lambda.pending.extend([first_invoke, second_invoke])
    assert stack.run(first).status is ExecutionStatus.SUCCEEDED
    assert stack.run(second).status is ExecutionStatus.SUCCEEDED


def test_a_finished_runs_token_is_refused(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    stack.fake_lambda.pending.append(invoke)
    assert stack.run(execution_id).status is ExecutionStatus.SUCCEEDED
    arn, token = invoke.payload["DurableExecutionArn"], invoke.payload["CheckpointToken"]
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
        stack.client.get_durable_execution_state(DurableExecutionArn=arn, CheckpointToken=token)
    assert "ended SUCCEEDED" in refused.value.response["Error"]["Message"]
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException):
        stack.client.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("late")]
        )


def test_an_ended_invocations_token_is_refused_while_the_execution_runs_on(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "flow_remote")
    assert stack.deliver(destination_record(stack.run_invoke(invoke))).action == "ran"  # at its wait
    arn, token = invoke.payload["DurableExecutionArn"], invoke.payload["CheckpointToken"]
    length = _log_length(stack, execution_id)
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
        stack.client.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("late")]
        )
    assert "no longer holds the execution" in refused.value.response["Error"]["Message"]
    assert _log_length(stack, execution_id) == length
    assert stack.run(execution_id, on_idle=_answer_approvals).status is ExecutionStatus.SUCCEEDED


def test_a_replayed_token_is_refused_unless_its_client_token_says_it_is_a_retry(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    arn, token = invoke.payload["DurableExecutionArn"], invoke.payload["CheckpointToken"]
    first = stack.client.checkpoint_durable_execution(
        DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("a", "a")], ClientToken="try-1"
    )
    assert first["CheckpointToken"] != token
    assert [op["Id"] for op in first["NewExecutionState"]["Operations"]] == ["a"]
    length = _log_length(stack, execution_id)
    # The same call again (a retry after a lost answer): the first answer, nothing written again
    again = stack.client.checkpoint_durable_execution(
        DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("a", "a")], ClientToken="try-1"
    )
    assert again["CheckpointToken"] == first["CheckpointToken"]
    assert again["NewExecutionState"]["Operations"] == first["NewExecutionState"]["Operations"]
    assert _log_length(stack, execution_id) == length
    # The old token with other updates, or without the ClientToken: stale, nothing changes
    for client_token in ("try-2", None):
        extra = {"ClientToken": client_token} if client_token else {}
        with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
            stack.client.checkpoint_durable_execution(
                DurableExecutionArn=arn, CheckpointToken=token, Updates=[_step_start("b", "b")], **extra
            )
        assert "not the current one" in refused.value.response["Error"]["Message"]
    assert _log_length(stack, execution_id) == length
    # The new token goes on
    third = stack.client.checkpoint_durable_execution(
        DurableExecutionArn=arn, CheckpointToken=first["CheckpointToken"], Updates=[_step_start("b", "b")]
    )
    assert third["CheckpointToken"] not in (token, first["CheckpointToken"])


def test_updates_over_the_size_and_count_limits_are_refused_and_change_nothing(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    arn, token = invoke.payload["DurableExecutionArn"], invoke.payload["CheckpointToken"]
    length = _log_length(stack, execution_id)
    limit = stack.local.engine.limits.operation_payload.bytes
    big = {**_step_start("big"), "Action": "SUCCEED", "Payload": json.dumps("x" * limit)}
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
        stack.client.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token, Updates=[big]
        )
    assert f"{limit:,} bytes" in refused.value.response["Error"]["Message"]
    many = [_step_start(f"op-{index}") for index in range(MAX_CHECKPOINT_UPDATES + 1)]
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException) as refused:
        stack.client.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token, Updates=many
        )
    assert f"at most {MAX_CHECKPOINT_UPDATES}" in refused.value.response["Error"]["Message"]
    bad = {**_step_start("typed"), "StepOptions": {"NextAttemptDelaySeconds": "soon"}}
    unchecked = stack.unvalidated_client()  # boto3 would refuse the type before sending it
    with pytest.raises(unchecked.exceptions.InvalidParameterValueException) as refused:
        unchecked.checkpoint_durable_execution(DurableExecutionArn=arn, CheckpointToken=token, Updates=[bad])
    assert "NextAttemptDelaySeconds must be a int" in refused.value.response["Error"]["Message"]
    assert _log_length(stack, execution_id) == length
    # The token is still the current one
    stack.fake_lambda.pending.append(invoke)
    assert stack.run(execution_id).status is ExecutionStatus.SUCCEEDED


def test_get_durable_execution_state_pages_a_10000_operation_log(stack: RemoteStack) -> None:
    _, invoke = _pending(stack, "one_step")
    arn, token = invoke.payload["DurableExecutionArn"], invoke.payload["CheckpointToken"]
    for batch in range(40):
        updates = [_step_start(f"op-{batch * 250 + index:05d}") for index in range(250)]
        token = stack.client.checkpoint_durable_execution(
            DurableExecutionArn=arn, CheckpointToken=token, Updates=updates
        )["CheckpointToken"]
    first = stack.client.get_durable_execution_state(DurableExecutionArn=arn, CheckpointToken=token)
    assert len(first["Operations"]) == 100  # the model's default MaxItems
    ids: list[str] = []
    marker = ""
    pages = 0
    while True:
        page = stack.client.get_durable_execution_state(
            DurableExecutionArn=arn, CheckpointToken=token, Marker=marker, MaxItems=1000
        )
        ids.extend(op["Id"] for op in page["Operations"])
        pages += 1
        marker = page.get("NextMarker", "")
        if not marker:
            break
    assert pages == 11 and len(ids) == 10_001 and len(set(ids)) == 10_001
    assert ids[1:] == [f"op-{index:05d}" for index in range(10_000)]  # after the EXECUTION operation
    with pytest.raises(stack.client.exceptions.InvalidParameterValueException):
        stack.client.get_durable_execution_state(DurableExecutionArn=arn, CheckpointToken=token, Marker="x")


# ---------------------------------------------------------------------------------------------- results


def test_a_function_that_returns_pending_with_nothing_pending_crashes_bounded(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    for attempt in range(MAX_CONSECUTIVE_CRASHES):
        result = stack.deliver(destination_record(Ran(invoke, output={"Status": "PENDING"})))
        assert result.action == ("finished" if attempt == MAX_CONSECUTIVE_CRASHES - 1 else "crashed")
        if attempt < MAX_CONSECUTIVE_CRASHES - 1:
            assert stack.local.advance_to_next_wakeup()
            stack.local.run_until_idle()
            invoke = stack.fake_lambda.pending.pop()
    assert stack.local.record(execution_id).status is ExecutionStatus.FAILED
    error = stack.local.describe(execution_id)["Error"]
    assert error["ErrorType"] == INVALID_OUTPUT_TYPE and "waits for nothing" in error["ErrorMessage"]
    assert not stack.fake_lambda.pending


def test_a_failure_record_counts_as_a_crash_and_the_function_runs_again(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    failed = Ran(invoke, error=RuntimeError("the function's process died"))
    assert stack.deliver(destination_record(failed)).action == "crashed"
    crashes = [
        event["InvocationCompletedDetails"]["Error"]["Payload"]
        for event in stack.local.history(execution_id)
        if event["EventType"] == "InvocationCompleted"
    ]
    assert crashes == [{"ErrorType": "RuntimeError", "ErrorMessage": "the function's process died"}]
    assert stack.run(execution_id).status is ExecutionStatus.SUCCEEDED  # the retry, after the backoff


@pytest.mark.parametrize(
    "output",
    [
        "not an object",
        {"Status": "DONE"},
        {"Status": "SUCCEEDED", "Result": {"not": "a string"}},
        {"Status": "FAILED", "Error": "no object"},
    ],
)
def test_a_malformed_output_counts_as_a_crash(stack: RemoteStack, output: Any) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    assert stack.deliver(destination_record(Ran(invoke, output=output))).action == "crashed"
    errors = [
        event["InvocationCompletedDetails"]["Error"]["Payload"]
        for event in stack.local.history(execution_id)
        if event["EventType"] == "InvocationCompleted"
    ]
    assert errors[0]["ErrorType"] == INVALID_OUTPUT_TYPE
    assert stack.local.record(execution_id).status is ExecutionStatus.RUNNING


def test_an_oversized_output_fails_the_execution(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    limit = stack.local.engine.limits.execution_result.bytes
    output = {"Status": "SUCCEEDED", "Result": json.dumps("r" * limit)}
    assert stack.deliver(destination_record(Ran(invoke, output=output))).action == "finished"
    assert stack.local.record(execution_id).status is ExecutionStatus.FAILED
    assert stack.local.describe(execution_id)["Error"]["ErrorType"] == PAYLOAD_OVER_LIMIT_TYPE


def test_a_lost_result_is_retried_at_the_leases_expiry_bounded(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    lost = [invoke]
    while stack.local.record(execution_id).status is ExecutionStatus.RUNNING:
        assert stack.local.advance_to_next_wakeup()
        stack.local.run_until_idle()
        lost.extend(stack.fake_lambda.pending)
        stack.fake_lambda.pending.clear()
    assert len(lost) == MAX_CONSECUTIVE_CRASHES  # each lost one counted; the fifth crash ends it
    error = stack.local.describe(execution_id)["Error"]
    assert error["ErrorType"] == INVOCATION_LOST_TYPE and function_arn("one_step") in error["ErrorMessage"]
    # A late record of any of them is dropped: its run no longer holds the lease
    for invoke in lost:
        result = stack.deliver(destination_record(Ran(invoke, output={"Status": "SUCCEEDED", "Result": "1"})))
        assert result.action == "ignored"
    assert stack.local.record(execution_id).status is ExecutionStatus.FAILED


def test_a_record_delivered_twice_has_no_second_effect(stack: RemoteStack) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    record = destination_record(stack.run_invoke(invoke))
    assert stack.deliver(record).action == OutcomeAction.FINISHED
    history = stack.local.history(execution_id)
    again = stack.deliver(record)
    assert again.action == OutcomeAction.IGNORED and again.details["reason"] == "stale result"
    assert stack.local.history(execution_id) == history
    assert stack.local.record(execution_id).status is ExecutionStatus.SUCCEEDED


def test_a_stop_while_the_function_runs_refuses_its_checkpoints_and_its_result_settles_it(
    stack: RemoteStack,
) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    assert stack.local.engine.stop_execution(execution_id)
    stack.local.run_until_idle()  # the stop's message finds the lease held: it comes back later
    ran = stack.run_invoke(invoke)  # its step's checkpoint is refused: the invocation ends with an error
    assert ran.error is not None and "Invalid checkpoint token" in str(ran.error)
    settled = stack.deliver(destination_record(ran))  # as its owner: the stop is settled, nothing runs
    assert settled.details["status"] == "STOPPED"
    assert stack.run(execution_id).status is ExecutionStatus.STOPPED
    events = [event["EventType"] for event in stack.local.history(execution_id)]
    assert events[-1] == "ExecutionStopped" and "StepSucceeded" not in events
    assert not stack.fake_lambda.pending


def test_a_pause_while_the_function_runs_ends_its_invocation_at_a_checkpoint_and_holds_it(
    stack: RemoteStack,
) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    assert stack.local.engine.pause_execution(execution_id)
    ran = stack.run_invoke(invoke)  # its step's checkpoint is stored, answered without a token
    assert ran.output == {"Status": "PENDING"}
    stack.deliver(destination_record(ran))
    stack.local.run_until_idle()
    assert stack.local.record(execution_id).status is ExecutionStatus.PAUSED
    assert not stack.fake_lambda.pending  # nothing invoked while paused
    assert stack.local.engine.resume_execution(execution_id)
    assert stack.run(execution_id).status is ExecutionStatus.SUCCEEDED
    events = [event["EventType"] for event in stack.local.history(execution_id)]
    assert events.count("StepSucceeded") == 1 and "ExecutionPaused" in events and "ExecutionResumed" in events


@pytest.mark.parametrize(
    "token",
    ["", "not a token", "A" * 5000, 12, None, {"owner": "x"}],
)
def test_a_destination_record_without_a_token_of_this_engine_is_refused_as_no_engine_message(
    stack: RemoteStack, token: Any
) -> None:
    execution_id, invoke = _pending(stack, "one_step")
    forged = EventInvoke(invoke.function, None, {**invoke.payload, "CheckpointToken": token})
    with pytest.raises(InvalidMessage):  # the entry leaves it to the DLQ: nothing loops
        stack.deliver(destination_record(Ran(forged, output={"Status": "SUCCEEDED", "Result": "1"})))
    assert stack.local.record(execution_id).status is ExecutionStatus.RUNNING
    # The invocation's own record still finishes the run
    assert stack.deliver(destination_record(stack.run_invoke(invoke))).action == "finished"
