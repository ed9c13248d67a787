"""Every operation of the durable execution API through boto3's own `lambda` client, signed, against the
endpoint served in-process (tests/api/conftest.py): the model's request and response shapes, pagination,
filters, and the modeled exceptions botocore raises for each refusal."""

from __future__ import annotations

import base64
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aws_durable_execution_sdk_python.lambda_service import OperationType
from botocore.exceptions import ClientError
from stepwell.core.arns import as_handed
from stepwell.errors import CallbackAlreadyClosed, CallbackNotFound
from stepwell.features.lambda_api.errors import translate

from tests.api.conftest import ACCOUNT, ARNS, READER, REGION, ApiStack, api_stack

ARN_PREFIX = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"


def _start(client: Any, function: str, payload: Any, name: str | None = None, **options: Any) -> str:
    extra = {"DurableExecutionName": name} if name else {}
    answer = client.invoke(
        FunctionName=function, Payload=json.dumps(payload), InvocationType="Event", **extra, **options
    )
    assert answer["StatusCode"] == 202
    assert answer["Payload"].read() == b""
    arn: str = answer["DurableExecutionArn"]
    return arn


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_invoke_event_starts_a_durable_execution_named_by_an_arn_in_aws_shape(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "greet", {"name": "Ada"}, "order-7")
    assert arn.startswith(f"{ARN_PREFIX}greet:$LATEST/durable-execution/order-7/")
    execution_id = ARNS.execution_id(arn)
    assert execution_id == "default#greet#order-7/order-7"
    assert stack.local.describe(execution_id)["Status"] == "RUNNING"
    stack.local.run_until_idle()

    described = client.get_durable_execution(DurableExecutionArn=arn)
    assert described["DurableExecutionArn"] == arn
    assert described["DurableExecutionName"] == "order-7"
    assert described["FunctionArn"] == f"{ARN_PREFIX}greet:$LATEST"
    assert described["Status"] == "SUCCEEDED"
    assert json.loads(described["InputPayload"]) == {"name": "Ada"}
    assert json.loads(described["Result"]) == "Hello, Ada!"
    assert described["Version"] == "$LATEST"
    assert described["ExecutionDataIncluded"] is True
    assert described["DurableConfig"] == {"RetentionPeriodInDays": 30}
    assert described["StartTimestamp"] <= described["EndTimestamp"]
    assert abs(described["StartTimestamp"].timestamp() - stack.local.clock.now()) < 60


def test_the_same_name_and_payload_is_the_same_execution_and_another_payload_is_refused(
    stack: ApiStack,
) -> None:
    client = stack.client()
    first = _start(client, "greet", {"name": "Ada"}, "once")
    assert _start(client, "greet", {"name": "Ada"}, "once") == first
    with pytest.raises(client.exceptions.DurableExecutionAlreadyStartedException) as refused:
        _start(client, "greet", {"name": "Bob"}, "once")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert "different input" in refused.value.response["Error"]["Message"]
    assert refused.value.response["Type"] == "User"


def test_invoke_with_a_tenant_starts_in_the_tenants_domain_and_takes_every_form_of_function_name(
    stack: ApiStack,
) -> None:
    client = stack.client()
    arn = _start(client, "greet", {"name": "Ada"}, "t1", TenantId="acme-7")
    assert ARNS.execution_id(arn) == "acme-7#greet#t1/t1"
    for function in (f"{ARN_PREFIX}greet", f"{ACCOUNT}:function:greet", "greet:$LATEST"):
        started = _start(client, function, {"name": function}, None)
        assert ARNS.execution_id(started).startswith("default#greet#")
    stack.local.run_until_idle()
    assert client.get_durable_execution(DurableExecutionArn=arn)["Status"] == "SUCCEEDED"


def test_invoke_request_response_waits_for_the_execution_and_answers_its_result(stack: ApiStack) -> None:
    client = stack.client()
    answer = client.invoke(
        FunctionName="greet", Payload=json.dumps({"name": "Bo"}), DurableExecutionName="sync"
    )
    assert answer["StatusCode"] == 200
    assert "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == "Hello, Bo!"
    assert answer["ExecutedVersion"] == "$LATEST"
    assert ARNS.execution_id(answer["DurableExecutionArn"]) == "default#greet#sync/sync"
    # The same invoke again answers the ended execution's result at once.
    again = client.invoke(
        FunctionName="greet", Payload=json.dumps({"name": "Bo"}), DurableExecutionName="sync"
    )
    assert json.loads(again["Payload"].read()) == "Hello, Bo!"


def test_invoke_request_response_of_a_failing_execution_answers_its_error_as_a_function_error(
    stack: ApiStack,
) -> None:
    answer = stack.client().invoke(FunctionName="failing", Payload=json.dumps({"value": 3}))
    assert answer["StatusCode"] == 200
    assert answer["FunctionError"] == "Unhandled"
    error = json.loads(answer["Payload"].read())
    assert "cannot handle 3" in error["errorMessage"]
    assert error["errorType"]
    described = stack.client().get_durable_execution(DurableExecutionArn=answer["DurableExecutionArn"])
    assert described["Status"] == "FAILED"
    assert "cannot handle 3" in described["Error"]["ErrorMessage"]


def test_invoke_request_response_answers_still_running_past_its_wait_and_the_execution_goes_on() -> None:
    stack = api_stack(max_wait_seconds=0.3)
    try:
        began = time.monotonic()
        answer = stack.client().invoke(FunctionName="three_day_wait", Payload=b"{}")
        assert time.monotonic() - began < 10
        assert answer["FunctionError"] == "Unhandled"
        error = json.loads(answer["Payload"].read())
        assert error["errorType"] == "Stepwell.ExecutionStillRunning"
        arn = answer["DurableExecutionArn"]
        assert arn in error["errorMessage"]
        assert stack.client().get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"
        stack.local.run_to_completion(ARNS.execution_id(arn))
        assert stack.client().get_durable_execution(DurableExecutionArn=arn)["Status"] == "SUCCEEDED"
    finally:
        stack.front.close()


def test_invoke_dry_run_checks_everything_and_starts_nothing(stack: ApiStack) -> None:
    client = stack.client()
    answer = client.invoke(FunctionName="greet", Payload=b"{}", InvocationType="DryRun")
    assert answer["StatusCode"] == 204
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.invoke(FunctionName="nope", Payload=b"{}", InvocationType="DryRun")
    assert client.list_durable_executions_by_function(FunctionName="greet")["DurableExecutions"] == []


def test_invoke_of_a_function_the_deployment_does_not_have_or_an_unknown_version_is_not_found(
    stack: ApiStack,
) -> None:
    client = stack.client()
    with pytest.raises(client.exceptions.ResourceNotFoundException) as unknown:
        _start(client, "nope", {})
    message = unknown.value.response["Error"]["Message"]
    assert f"Function not found: {ARN_PREFIX}nope" in message and "greet" in message
    with pytest.raises(client.exceptions.ResourceNotFoundException) as versioned:
        _start(client, "greet", {}, Qualifier="3")
    assert "not versioned" in versioned.value.response["Error"]["Message"]
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        _start(client, "stepwell.definition", {})
    with pytest.raises(client.exceptions.ResourceNotFoundException) as elsewhere:
        _start(client, f"arn:aws:lambda:{REGION}:999999999999:function:greet", {})
    assert "account 123456789012" in elsewhere.value.response["Error"]["Message"]
    with pytest.raises(client.exceptions.InvalidParameterValueException) as mismatch:
        _start(client, "greet:$LATEST", {}, Qualifier="$LATEST.PUBLISHED")
    assert "does not match" in mismatch.value.response["Error"]["Message"]


def test_get_durable_execution_without_execution_data_and_by_stepwell_id(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "greet", {"name": "Ada"}, "data")
    stack.local.run_until_idle()
    compact = client.get_durable_execution(DurableExecutionArn=arn, IncludeExecutionData=False)
    assert compact["ExecutionDataIncluded"] is False
    assert "InputPayload" not in compact and "Result" not in compact
    by_id = client.get_durable_execution(DurableExecutionArn="default#greet#data/data")
    assert by_id["DurableExecutionArn"] == arn
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.get_durable_execution(DurableExecutionArn="default#greet#data/other")


def test_history_pages_with_markers_in_either_order_and_without_execution_data(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "greet", {"name": "Ada"}, "paged")
    stack.local.run_until_idle()
    everything = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    kinds = [event["EventType"] for event in everything]
    assert kinds[0] == "ExecutionStarted" and kinds[-1] == "ExecutionSucceeded"
    assert [event["EventId"] for event in everything] == list(range(1, len(everything) + 1))
    assert isinstance(everything[0]["EventTimestamp"], datetime)

    pages = client.get_paginator("get_durable_execution_history").paginate(
        DurableExecutionArn=arn, PaginationConfig={"PageSize": 2}
    )
    paged = [event for page in pages for event in page["Events"]]
    assert paged == everything
    first = client.get_durable_execution_history(DurableExecutionArn=arn, MaxItems=2)
    assert len(first["Events"]) == 2 and first["NextMarker"]
    newest = client.get_durable_execution_history(DurableExecutionArn=arn, ReverseOrder=True, MaxItems=1)
    assert newest["Events"][0]["EventType"] == "ExecutionSucceeded"

    bare = client.get_durable_execution_history(DurableExecutionArn=arn, IncludeExecutionData=False)["Events"]
    assert bare[0]["ExecutionStartedDetails"]["Input"] == {"Truncated": True}
    with pytest.raises(client.exceptions.InvalidParameterValueException) as bad_marker:
        client.get_durable_execution_history(DurableExecutionArn=arn, Marker="not-ours")
    assert "marker" in bad_marker.value.response["Error"]["Message"]


def test_history_names_the_execution_operations_events_by_the_id_a_handler_is_handed(stack: ApiStack) -> None:
    client = stack.client()
    done, stopped = _start(client, "greet", {"name": "Ada"}, "named"), _start(client, "approval", {}, "halt")
    stack.local.run_until_idle()
    execution_id = ARNS.execution_id(done)
    stored = stack.local.engine.load_journal(execution_id).operations.values()
    handed = as_handed(stored, execution_id=execution_id, arn=done)
    [operation] = [op for op in handed if op.operation_type is OperationType.EXECUTION]
    # The handler's (and GetDurableExecutionState's) id of the EXECUTION operation: the ARN's last segment.
    assert operation.operation_id == done.rsplit("/", 1)[-1] != execution_id.rsplit("/", 1)[-1]
    client.stop_durable_execution(DurableExecutionArn=stopped)
    stack.local.run_until_idle()
    for arn, ended in ((done, "ExecutionSucceeded"), (stopped, "ExecutionStopped")):
        events = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
        ids = {event["EventType"]: event.get("Id") for event in events}
        assert ids["ExecutionStarted"] == ids[ended] == arn.rsplit("/", 1)[-1]
        # Only the execution's own events: the others keep their operations' ids, or none.
        others = {event.get("Id") for event in events if not event["EventType"].startswith("Execution")}
        assert others and arn.rsplit("/", 1)[-1] not in others
        newest = client.get_durable_execution_history(DurableExecutionArn=arn, ReverseOrder=True, MaxItems=1)
        assert newest["Events"][0]["EventType"] == ended
        assert newest["Events"][0]["Id"] == arn.rsplit("/", 1)[-1]
    # An ARN segment longer than the model's OperationId (64) names no event: the history stays valid.
    long = _start(client, "greet", {"name": "Ada"}, "n" * 40)
    stack.local.run_until_idle()
    assert len(long.rsplit("/", 1)[-1]) > 64
    events = client.get_durable_execution_history(DurableExecutionArn=long)["Events"]
    assert events[-1]["EventType"] == "ExecutionSucceeded"
    assert all("Id" not in event for event in events if event["EventType"].startswith("Execution"))


def test_history_names_a_chained_invokes_child_by_its_arn(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "invoker", {"target": "doubler", "value": 21}, "parent")
    stack.local.run_to_completion(ARNS.execution_id(arn))
    events = client.get_durable_execution_history(DurableExecutionArn=arn)["Events"]
    [started] = [event for event in events if event["EventType"] == "ChainedInvokeStarted"]
    child = started["ChainedInvokeStartedDetails"]["DurableExecutionArn"]
    assert child.startswith(f"{ARN_PREFIX}doubler:$LATEST/durable-execution/")
    assert client.get_durable_execution(DurableExecutionArn=child)["Status"] == "SUCCEEDED"
    assert json.loads(client.get_durable_execution(DurableExecutionArn=arn)["Result"]) == {"doubled": 42}


def test_list_by_function_pages_newest_first_with_its_filters(stack: ApiStack) -> None:
    client = stack.client()
    arns = []
    for index in range(5):
        arns.append(_start(client, "approval", {}, f"wait-{index}"))
        stack.local.clock.advance(1.0)
    stack.local.run_until_idle()
    done = _start(client, "greet", {"name": "x"}, "other-function")
    stack.local.run_until_idle()

    listed = client.list_durable_executions_by_function(FunctionName="approval")["DurableExecutions"]
    assert [item["DurableExecutionArn"] for item in listed] == arns[::-1]
    assert {item["Status"] for item in listed} == {"RUNNING"}
    assert listed[0]["FunctionArn"] == f"{ARN_PREFIX}approval:$LATEST"
    assert "EndTimestamp" not in listed[0]

    pages = client.get_paginator("list_durable_executions_by_function").paginate(
        FunctionName="approval", PaginationConfig={"PageSize": 2}
    )
    assert [item["DurableExecutionArn"] for page in pages for item in page["DurableExecutions"]] == arns[::-1]

    client.stop_durable_execution(DurableExecutionArn=arns[1])
    stopped = client.list_durable_executions_by_function(FunctionName="approval", Statuses=["STOPPED"])
    assert [item["DurableExecutionArn"] for item in stopped["DurableExecutions"]] == [arns[1]]
    running = client.list_durable_executions_by_function(
        FunctionName="approval", Statuses=["RUNNING", "FAILED"], MaxItems=2
    )
    assert [item["DurableExecutionArn"] for item in running["DurableExecutions"]] == [arns[4], arns[3]]
    named = client.list_durable_executions_by_function(FunctionName="approval", DurableExecutionName="wait-2")
    assert [item["DurableExecutionArn"] for item in named["DurableExecutions"]] == [arns[2]]
    starts = [stack.local.record(ARNS.execution_id(arn)).created_at for arn in arns]
    window = client.list_durable_executions_by_function(
        FunctionName="approval",
        # Half a second off the starts (a second apart): a timestamp travels with microseconds at most.
        StartedAfter=datetime.fromtimestamp(starts[1] + 0.5, tz=UTC),
        StartedBefore=datetime.fromtimestamp(starts[4] - 0.5, tz=UTC),
    )
    assert [item["DurableExecutionArn"] for item in window["DurableExecutions"]] == [arns[3], arns[2]]
    latest = client.list_durable_executions_by_function(FunctionName="approval", Qualifier="$LATEST")
    assert len(latest["DurableExecutions"]) == 5
    others = client.list_durable_executions_by_function(FunctionName=f"{ARN_PREFIX}greet")
    assert [item["DurableExecutionArn"] for item in others["DurableExecutions"]] == [done]
    future = datetime.now(tz=UTC) + timedelta(days=1)
    assert (
        client.list_durable_executions_by_function(FunctionName="approval", StartedAfter=future)[
            "DurableExecutions"
        ]
        == []
    )


def test_list_refuses_bad_filters_and_a_function_the_deployment_lacks(stack: ApiStack) -> None:
    client = stack.client()
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.list_durable_executions_by_function(FunctionName="nope")
    with pytest.raises(client.exceptions.InvalidParameterValueException) as status:
        client.list_durable_executions_by_function(FunctionName="greet", Statuses=["DONE"])
    assert "DONE" in status.value.response["Error"]["Message"]
    with pytest.raises(client.exceptions.InvalidParameterValueException) as marker:
        client.list_durable_executions_by_function(FunctionName="greet", Marker="bogus")
    assert "bogus" in marker.value.response["Error"]["Message"]


def test_stop_ends_a_running_execution_once_and_refuses_an_ended_one(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "approval", {}, "to-stop")
    stack.local.run_until_idle()
    error = {"ErrorType": "Cancelled", "ErrorMessage": "customer cancelled", "ErrorData": "{}"}
    stopped = client.stop_durable_execution(DurableExecutionArn=arn, Error=error)
    assert isinstance(stopped["StopTimestamp"], datetime)
    stack.local.run_until_idle()
    described = client.get_durable_execution(DurableExecutionArn=arn)
    assert described["Status"] == "STOPPED"
    assert described["Error"]["ErrorType"] == "Cancelled"
    assert described["Error"]["ErrorMessage"] == "customer cancelled"
    again = client.stop_durable_execution(DurableExecutionArn=arn)
    assert again["StopTimestamp"] == described["EndTimestamp"]
    assert client.get_durable_execution_history(DurableExecutionArn=arn)["Events"][-1]["EventType"] == (
        "ExecutionStopped"
    )

    done = _start(client, "greet", {"name": "x"}, "finished")
    stack.local.run_until_idle()
    with pytest.raises(client.exceptions.InvalidParameterValueException) as ended:
        client.stop_durable_execution(DurableExecutionArn=done)
    assert "already ended SUCCEEDED" in ended.value.response["Error"]["Message"]
    with pytest.raises(client.exceptions.InvalidParameterValueException):
        client.stop_durable_execution(DurableExecutionArn=arn, Error={"ErrorType": "x" * 70_000})


def test_callbacks_succeed_fail_and_heartbeat_and_a_closed_callback_times_out(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "approval", {}, "approve")
    stack.local.run_until_idle()
    callback_id = stack.local.callback_id(ARNS.execution_id(arn))
    client.send_durable_execution_callback_heartbeat(CallbackId=callback_id)
    client.send_durable_execution_callback_success(CallbackId=callback_id, Result=b'{"approved": true}')
    stack.local.run_until_idle()
    described = client.get_durable_execution(DurableExecutionArn=arn)
    assert described["Status"] == "SUCCEEDED"
    assert json.loads(json.loads(described["Result"])) == {"approved": True}
    with pytest.raises(client.exceptions.CallbackTimeoutException) as closed:
        client.send_durable_execution_callback_success(CallbackId=callback_id, Result=b"again")
    assert closed.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(client.exceptions.CallbackTimeoutException):
        client.send_durable_execution_callback_heartbeat(CallbackId=callback_id)

    failing = _start(client, "approval", {}, "decline")
    stack.local.run_until_idle()
    failing_callback = stack.local.callback_id(ARNS.execution_id(failing))
    client.send_durable_execution_callback_failure(
        CallbackId=failing_callback, Error={"ErrorType": "Declined", "ErrorMessage": "card declined"}
    )
    stack.local.run_until_idle()
    failed = client.get_durable_execution(DurableExecutionArn=failing)
    assert failed["Status"] == "FAILED" and "card declined" in json.dumps(failed["Error"])
    events = client.get_durable_execution_history(DurableExecutionArn=failing)["Events"]
    assert "CallbackFailed" in [event["EventType"] for event in events]

    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.send_durable_execution_callback_success(CallbackId="cb" + "A" * 30, Result=b"{}")
    with pytest.raises(client.exceptions.InvalidParameterValueException):
        client.send_durable_execution_callback_success(CallbackId="not a callback", Result=b"{}")
    with pytest.raises(client.exceptions.InvalidParameterValueException):
        client.send_durable_execution_callback_failure(CallbackId="cbA", Error={"ErrorType": "x" * 70_000})


def test_a_callback_of_a_stopped_execution_is_closed(stack: ApiStack) -> None:
    client = stack.client()
    arn = _start(client, "approval", {}, "stop-first")
    stack.local.run_until_idle()
    callback_id = stack.local.callback_id(ARNS.execution_id(arn))
    client.stop_durable_execution(DurableExecutionArn=arn)
    with pytest.raises(client.exceptions.CallbackTimeoutException) as closed:
        client.send_durable_execution_callback_success(CallbackId=callback_id, Result=b"{}")
    assert "has ended" in closed.value.response["Error"]["Message"]


def test_a_closed_callback_is_told_from_an_unknown_one_by_the_engines_error_type(stack: ApiStack) -> None:
    arn = _start(stack.client(), "approval", {}, "closed")
    stack.local.run_until_idle()
    callback_id = stack.local.callback_id(ARNS.execution_id(arn))
    stack.local.engine.send_callback_success(callback_id, '"yes"')
    with pytest.raises(CallbackAlreadyClosed):
        stack.local.engine.send_callback_success(callback_id, '"again"')
    with pytest.raises(CallbackNotFound) as unknown:
        stack.local.engine.send_callback_success("cb" + "A" * 30, None)
    assert not isinstance(unknown.value, CallbackAlreadyClosed)
    # The API goes by the type, whatever the message says.
    operation = "SendDurableExecutionCallbackSuccess"
    assert translate(CallbackAlreadyClosed("closed"), operation).code == "CallbackTimeoutException"
    assert translate(CallbackNotFound("already completed"), operation).code == "ResourceNotFoundException"


def test_the_data_plane_refuses_a_token_of_no_invocation_and_a_caller_who_is_no_durable_function(
    stack: ApiStack,
) -> None:
    """GetDurableExecutionState and CheckpointDurableExecution serve the registered functions' roles (the
    operator is one here) and only with a current invocation's token (tests/remote covers real tokens)."""
    client = stack.client()
    arn = _start(client, "approval", {}, "sdk-only")
    with pytest.raises(client.exceptions.InvalidParameterValueException) as state:
        client.get_durable_execution_state(DurableExecutionArn=arn, CheckpointToken="dG9rZW4=")
    assert "GetDurableExecutionHistory" in state.value.response["Error"]["Message"]
    with pytest.raises(client.exceptions.InvalidParameterValueException):
        client.checkpoint_durable_execution(DurableExecutionArn=arn, CheckpointToken="dG9rZW4=")
    reader = stack.client(READER)  # may read executions, but is no durable function's role
    for call in (reader.get_durable_execution_state, reader.checkpoint_durable_execution):
        with pytest.raises(ClientError) as denied:
            call(DurableExecutionArn=arn, CheckpointToken="dG9rZW4=")
        assert denied.value.response["Error"]["Code"] == "AccessDeniedException"
        assert "durable_functions" in denied.value.response["Error"]["Message"]


def test_pause_resume_and_delete_change_the_execution_and_refuse_what_its_status_does_not_allow(
    stack: ApiStack,
) -> None:
    client = stack.client()
    arn = _start(client, "approval", {}, "lifecycle")
    stack.local.run_until_idle()
    paused = client.pause_durable_execution(
        DurableExecutionArn=arn, Reason="maintenance", ExecutionTimeoutPaused=False
    )
    assert paused["ResponseMetadata"]["HTTPStatusCode"] == 202
    stack.local.run_until_idle()
    assert client.get_durable_execution(DurableExecutionArn=arn)["Status"] == "PAUSED"
    pause = stack.local.describe(ARNS.execution_id(arn))["PauseDetails"]
    assert pause["Reason"] == "maintenance" and pause["ExecutionTimeoutPaused"] is False
    # A repeat succeeds and changes nothing (the first pause stands).
    client.pause_durable_execution(DurableExecutionArn=arn, Reason="again")
    assert stack.local.describe(ARNS.execution_id(arn))["PauseDetails"]["Reason"] == "maintenance"
    with pytest.raises(client.exceptions.ResourceConflictException) as running:
        client.delete_durable_execution(DurableExecutionArn=arn)
    assert "has not ended (PAUSED)" in running.value.response["Error"]["Message"]
    assert running.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409

    resumed = client.resume_durable_execution(DurableExecutionArn=arn, Reason="done")
    assert resumed["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert client.get_durable_execution(DurableExecutionArn=arn)["Status"] == "RUNNING"
    client.stop_durable_execution(DurableExecutionArn=arn)
    stack.local.run_until_idle()
    for call in (client.pause_durable_execution, client.resume_durable_execution):
        with pytest.raises(client.exceptions.ResourceConflictException):
            call(DurableExecutionArn=arn)

    deleted = client.delete_durable_execution(DurableExecutionArn=arn)
    assert deleted["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert abs(deleted["DeletionRequestTimestamp"].timestamp() - stack.local.clock.now()) < 60
    assert client.get_durable_execution(DurableExecutionArn=arn)["Status"] == "DELETING"
    stack.local.run_until_idle()
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.get_durable_execution(DurableExecutionArn=arn)
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        client.pause_durable_execution(DurableExecutionArn="default#approval#gone/gone")


def test_an_operation_this_endpoint_does_not_serve_names_what_it_serves(stack: ApiStack) -> None:
    client = stack.client()
    with pytest.raises(ClientError) as listing:
        client.list_functions()
    assert listing.value.response["Error"]["Code"] == "UnknownOperationException"
    message = listing.value.response["Error"]["Message"]
    for served in (
        "Invoke",
        "GetDurableExecution",
        "ListDurableExecutionsByFunction",
        "StopDurableExecution",
    ):
        assert served in message
    with pytest.raises(ClientError) as config:
        client.get_function_configuration(FunctionName="greet")
    assert config.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_errors_carry_the_header_the_status_and_type_and_message_in_the_body(stack: ApiStack) -> None:
    client = stack.client()
    with pytest.raises(client.exceptions.ResourceNotFoundException) as missing:
        client.get_durable_execution(DurableExecutionArn=ARNS.execution_arn("default#greet#x/x"))
    response = missing.value.response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert response["ResponseMetadata"]["HTTPHeaders"]["x-amzn-errortype"] == "ResourceNotFoundException"
    assert response["Type"] == "User"
    assert response["Message"] == response["Error"]["Message"]
    with pytest.raises(client.exceptions.InvalidParameterValueException) as bad:
        client.get_durable_execution(DurableExecutionArn="arn:aws:lambda:nowhere")
    assert "not a durable execution ARN" in bad.value.response["Error"]["Message"]
    assert bad.value.response["message"] == bad.value.response["Error"]["Message"]


def test_payloads_over_the_deployments_limit_are_refused_before_anything_starts(stack: ApiStack) -> None:
    client = stack.client()
    big = json.dumps({"blob": base64.b64encode(b"x" * 400_000).decode()})
    with pytest.raises(client.exceptions.RequestTooLargeException) as refused:
        client.invoke(FunctionName="greet", Payload=big, InvocationType="Event")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 413
    assert client.list_durable_executions_by_function(FunctionName="greet")["DurableExecutions"] == []
