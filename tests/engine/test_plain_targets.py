"""context.invoke of targets that are not durable workflows: a registered plain function, and a Lambda
function the deployment allows (here through the in-memory invoker), on the local backend."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import InvokeConfig
from aws_durable_execution_sdk_python.exceptions import InvokeError
from aws_durable_execution_sdk_python.serdes import SerDes, SerDesContext
from history_model import check_history_against_model
from stepwell.core.invoke_targets import TARGET_RULE, MemoryLambdaInvoker
from stepwell.model import ExecutionStatus, child_execution_id
from stepwell.testing.local import LocalStepwell

PRICING = "arn:aws:lambda:eu-west-1:123456789012:function:pricing"
SHIPPING = "arn:aws:lambda:eu-west-1:123456789012:function:shipping"
PRICING_ELSEWHERE = "arn:aws:lambda:us-east-1:123456789012:function:pricing"
INVOKE_NAME = "call target"


@durable_execution
def invoker(event: Any, context: DurableContext) -> Any:
    """Invokes event["target"] with event["payload"]; a failed invoke becomes the result, to assert on."""
    try:
        return {"result": context.invoke(event["target"], event.get("payload"), name=INVOKE_NAME)}
    except InvokeError as error:
        return {"error": {"type": error.error_type, "message": error.message, "trace": error.stack_trace}}


class OutOfStock(Exception):
    pass


def run(local: LocalStepwell, target: str, payload: Any = None) -> tuple[str, Any, list[dict[str, Any]]]:
    """Run the invoker on `target`: its id, its result, and its history (checked against the API's shapes)."""
    if "invoker" not in local.registry.names():
        local.register("invoker", invoker)
    parent_id = local.start("invoker", {"target": target, "payload": payload})
    record = local.run_to_completion(parent_id)
    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    history = local.history(parent_id)
    assert check_history_against_model(history) == []
    return parent_id, json.loads(local.engine.resolve(record.result, record.result_is_ref) or "null"), history


def invoke_events(history: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The chained invoke's events: type and details (their Id, SubType and Name checked here)."""
    events = [e for e in history if e["EventType"].startswith("ChainedInvoke")]
    for event in events:
        assert (event["SubType"], event["Name"]) == ("ChainedInvoke", INVOKE_NAME)
        assert event["Id"] == events[0]["Id"]
    return [(e["EventType"], e[e["EventType"] + "Details"]) for e in events]


def child_history(local: LocalStepwell, parent_id: str, history: list[dict[str, Any]], target: str) -> Any:
    operation_id = next(e["Id"] for e in history if e["EventType"] == "ChainedInvokeStarted")
    target = target.removesuffix(":$LATEST")  # the unqualified function's child
    child_id = child_execution_id(parent_id, operation_id, target)
    child = local.record(child_id)
    assert (child.workflow_id, child.parent_execution_id) == (target, parent_id)
    events = local.history(child_id)
    assert check_history_against_model(events) == []
    return [(e["EventType"], e.get(e["EventType"] + "Details")) for e in events]


# ------------------------------------------------------------------------------------ registered functions


def test_a_registered_function_runs_once_as_a_lambda_handler(stepwell_local: LocalStepwell) -> None:
    calls: list[tuple[Any, Any]] = []

    def quote(event: Any, lambda_context: Any) -> Any:
        calls.append((event, lambda_context))
        return {"sku": event["sku"], "price": 12.5}

    stepwell_local.register_function("quote", quote)
    parent_id, result, history = run(stepwell_local, "quote", {"sku": "A-1"})

    assert result == {"result": {"sku": "A-1", "price": 12.5}}
    assert len(calls) == 1 and calls[0][0] == {"sku": "A-1"}
    assert isinstance(calls[0][1].aws_request_id, str)  # a Lambda context, as a Lambda handler gets
    assert invoke_events(history) == [
        (
            "ChainedInvokeStarted",
            {
                "FunctionName": "quote",
                "Input": {"Payload": '{"sku": "A-1"}', "Truncated": False},
                "ExecutedVersion": "$LATEST",
            },
        ),
        (
            "ChainedInvokeSucceeded",
            {"Result": {"Payload": '{"sku": "A-1", "price": 12.5}', "Truncated": False}},
        ),
    ]
    # Its child execution has no checkpoints: it started, ran once and ended with the value.
    child = child_history(stepwell_local, parent_id, history, "quote")
    assert [event_type for event_type, _ in child] == [
        "ExecutionStarted",
        "InvocationCompleted",
        "ExecutionSucceeded",
    ]
    assert child[0][1] == {"Input": {"Payload": '{"sku": "A-1"}', "Truncated": False}}
    assert child[2][1] == {"Result": {"Payload": '{"sku": "A-1", "price": 12.5}', "Truncated": False}}


@pytest.mark.parametrize("value", [{"a": [1, 2]}, [1, "two"], "text", 3.5, 0, True, None])
def test_any_json_value_a_function_returns_is_the_invokes_result(
    stepwell_local: LocalStepwell, value: Any
) -> None:
    stepwell_local.register_function("constant", lambda event, lambda_context: value)
    _, result, history = run(stepwell_local, "constant", {"x": 1})
    assert result == {"result": value}
    assert invoke_events(history)[1] == (
        "ChainedInvokeSucceeded",
        {"Result": {"Payload": json.dumps(value), "Truncated": False}},
    )


def test_an_invoke_without_a_payload_gives_the_function_what_the_sdk_sent(
    stepwell_local: LocalStepwell,
) -> None:
    events: list[Any] = []
    stepwell_local.register_function("record", lambda event, lambda_context: events.append(event))
    _, result, history = run(stepwell_local, "record", None)
    started = invoke_events(history)[0][1]
    # The SDK serializes the missing payload as JSON null: the function gets None, as a Lambda invoked
    # with the payload "null" does.
    assert started["Input"] == {"Payload": "null", "Truncated": False}
    assert events == [None] and result == {"result": None}


def test_a_function_error_fails_the_invoke_as_lambda_reports_it(stepwell_local: LocalStepwell) -> None:
    def reserve(event: Any, lambda_context: Any) -> Any:
        raise OutOfStock(f"no stock of {event['sku']}")

    stepwell_local.register_function("reserve", reserve)
    parent_id, result, history = run(stepwell_local, "reserve", {"sku": "B-2"})

    assert result == {"error": {"type": "OutOfStock", "message": "no stock of B-2", "trace": None}}
    assert invoke_events(history) == [
        (
            "ChainedInvokeStarted",
            {
                "FunctionName": "reserve",
                "Input": {"Payload": '{"sku": "B-2"}', "Truncated": False},
                "ExecutedVersion": "$LATEST",
            },
        ),
        (
            "ChainedInvokeFailed",
            {
                "Error": {
                    "Payload": {"ErrorType": "OutOfStock", "ErrorMessage": "no stock of B-2"},
                    "Truncated": False,
                }
            },
        ),
    ]
    child = child_history(stepwell_local, parent_id, history, "reserve")
    assert child[-1] == (
        "ExecutionFailed",
        {
            "Error": {
                "Payload": {"ErrorType": "OutOfStock", "ErrorMessage": "no stock of B-2"},
                "Truncated": False,
            }
        },
    )


def test_a_value_that_is_not_json_fails_the_invoke_as_a_marshal_error(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register_function("opaque", lambda event, lambda_context: {"when": object()})
    _, result, history = run(stepwell_local, "opaque", {})
    error = invoke_events(history)[1]
    assert error == (
        "ChainedInvokeFailed",
        {
            "Error": {
                "Payload": {
                    "ErrorType": "Runtime.MarshalError",
                    "ErrorMessage": (
                        "Unable to marshal response: Object of type object is not JSON serializable"
                    ),
                },
                "Truncated": False,
            }
        },
    )
    assert result["error"]["type"] == "Runtime.MarshalError"


class TextSerDes(SerDes[Any]):
    """A payload serializer that writes plain text, not JSON."""

    def serialize(self, value: Any, serdes_context: SerDesContext) -> str:
        return str(value)

    def deserialize(self, data: str, serdes_context: SerDesContext) -> Any:
        return data


@durable_execution
def text_invoker(event: Any, context: DurableContext) -> Any:
    config: InvokeConfig[Any, Any] = InvokeConfig(serdes_payload=TextSerDes(), serdes_result=TextSerDes())
    try:
        return {"result": context.invoke(event["target"], "hello world", name="call", config=config)}
    except InvokeError as error:
        return {"error": [error.error_type, error.message]}


@pytest.mark.parametrize("kind", ["registered", "lambda"])
def test_a_payload_that_is_not_json_fails_the_invoke_at_once_as_lambda_refuses_it(
    stepwell_local: LocalStepwell, kind: str
) -> None:
    # Lambda's Invoke refuses a body that is not JSON before the function runs: the invoke fails once,
    # never retried as a crash.
    calls: list[Any] = []
    if kind == "registered":
        stepwell_local.register_function("echo", lambda event, lambda_context: calls.append(event))
        target = "echo"
    else:
        stepwell_local.allow_lambda_functions({PRICING: lambda event, lambda_context: calls.append(event)})
        target = PRICING
    stepwell_local.register("text_invoker", text_invoker)
    parent_id = stepwell_local.start("text_invoker", {"target": target})
    record = stepwell_local.run_to_completion(parent_id)

    assert record.status is ExecutionStatus.SUCCEEDED and calls == []
    error_type, message = json.loads(record.result or "null")["error"]
    assert error_type == "InvalidRequestContentException"
    assert "Could not parse request body into json" in message
    crashes = [e for e in stepwell_local.history(parent_id) if e["EventType"] == "InvocationCompleted"]
    assert len(crashes) <= 2  # the parent's own invocations, not five crashed attempts of the child


def test_a_large_result_of_a_function_goes_through_the_payload_store() -> None:
    local = LocalStepwell(inline_limit=1024)
    big = "x" * 50_000
    local.register_function("big", lambda event, lambda_context: {"blob": big, "n": event["n"]})
    parent_id, result, history = run(local, "big", {"n": 1})
    assert result == {"result": {"blob": big, "n": 1}}
    assert invoke_events(history)[1] == (
        "ChainedInvokeSucceeded",
        {"Result": {"Payload": json.dumps({"blob": big, "n": 1}), "Truncated": False}},
    )
    operation_id = next(e["Id"] for e in history if e["EventType"] == "ChainedInvokeStarted")
    assert local.record(child_execution_id(parent_id, operation_id, "big")).result_is_ref
    assert local.record(parent_id).result_is_ref


def test_a_function_that_crashes_its_process_runs_again(stepwell_local: LocalStepwell) -> None:
    attempts: list[int] = []

    def flaky(event: Any, lambda_context: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise SystemExit(1)  # the process dies: nothing was recorded, the invocation is retried
        return len(attempts)

    stepwell_local.register_function("flaky", flaky)
    _, result, _ = run(stepwell_local, "flaky", {})
    assert result == {"result": 2} and len(attempts) == 2


def test_a_new_code_version_keeps_the_functions_and_runs_them_on_its_version() -> None:
    local = LocalStepwell()
    local.register("invoker", invoker)
    local.register_function("quote", lambda event, lambda_context: "quoted")
    local.allow_lambda_functions({PRICING: lambda event, lambda_context: "priced"})
    version = local.deploy()

    _, result, history = run(local, "quote", {})
    assert result == {"result": "quoted"}
    assert invoke_events(history)[0][1]["ExecutedVersion"] == version
    _, result, history = run(local, "pricing", {})
    assert result == {"result": "priced"}
    assert invoke_events(history)[0][1]["ExecutedVersion"] == "$LATEST"


# ------------------------------------------------------------------------------------ Lambda functions


@pytest.mark.parametrize(
    ("target", "invoked", "executed_version"),
    [
        ("pricing", PRICING, "$LATEST"),
        ("pricing:3", f"{PRICING}:3", "3"),
        ("pricing:live", f"{PRICING}:live", None),
        (PRICING, PRICING, "$LATEST"),
        (f"{PRICING}:3", f"{PRICING}:3", "3"),
        (f"{PRICING}:live", f"{PRICING}:live", None),
        ("pricing:$LATEST", PRICING, "$LATEST"),  # Invoke accepts it: the unqualified function
        (f"{PRICING}:$LATEST", PRICING, "$LATEST"),
    ],
)
def test_an_allowed_lambda_function_is_invoked_by_name_or_arn(
    stepwell_local: LocalStepwell, target: str, invoked: str, executed_version: str | None
) -> None:
    contexts: list[Any] = []

    def pricing(event: Any, lambda_context: Any) -> Any:
        contexts.append(lambda_context)
        return {"total": event["qty"] * 4}

    lambda_service = stepwell_local.allow_lambda_functions({PRICING: pricing})
    parent_id, result, history = run(stepwell_local, target, {"qty": 3})

    assert result == {"result": {"total": 12}}
    assert lambda_service.calls == [(invoked, b'{"qty": 3}')]
    assert contexts[0].invoked_function_arn == invoked
    started: dict[str, Any] = {"FunctionName": target, "Input": {"Payload": '{"qty": 3}', "Truncated": False}}
    if executed_version is not None:
        started["ExecutedVersion"] = executed_version
    assert invoke_events(history) == [
        ("ChainedInvokeStarted", started),
        ("ChainedInvokeSucceeded", {"Result": {"Payload": '{"total": 12}', "Truncated": False}}),
    ]
    child = child_history(stepwell_local, parent_id, history, target)
    assert child[-1] == ("ExecutionSucceeded", {"Result": {"Payload": '{"total": 12}', "Truncated": False}})


def test_a_lambda_function_error_keeps_its_type_message_and_stack_trace(
    stepwell_local: LocalStepwell,
) -> None:
    def pricing(event: Any, lambda_context: Any) -> Any:
        raise ValueError(f"unknown sku {event['sku']}")

    stepwell_local.allow_lambda_functions({PRICING: pricing})
    _, result, history = run(stepwell_local, "pricing", {"sku": "Z"})

    failed_type, failed = invoke_events(history)[1]
    assert failed_type == "ChainedInvokeFailed"
    error = failed["Error"]["Payload"]
    trace = error.pop("StackTrace")
    assert error == {"ErrorType": "ValueError", "ErrorMessage": "unknown sku Z"}
    assert trace and all(isinstance(frame, str) for frame in trace) and "in pricing" in trace[-1]
    assert result == {"error": {"type": "ValueError", "message": "unknown sku Z", "trace": trace}}


def test_a_function_lambda_does_not_have_fails_the_invoke_with_lambdas_error(
    stepwell_local: LocalStepwell,
) -> None:
    # Allowed by the deployment, but Lambda answers ResourceNotFoundException (e.g. deleted since).
    stepwell_local.registry.allow_lambda_targets([PRICING], MemoryLambdaInvoker({}))
    _, result, history = run(stepwell_local, "pricing:2", {})
    assert invoke_events(history)[1] == (
        "ChainedInvokeFailed",
        {
            "Error": {
                "Payload": {
                    "ErrorType": "ResourceNotFoundException",
                    "ErrorMessage": f"{PRICING}:2: Function not found: {PRICING}:2",
                },
                "Truncated": False,
            }
        },
    )
    assert result["error"]["type"] == "ResourceNotFoundException"


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        (SHIPPING, f"no workflow, function or Lambda target {SHIPPING!r}"),
        (PRICING_ELSEWHERE, f"no workflow, function or Lambda target {PRICING_ELSEWHERE!r}"),
        (
            "pricing:$LATEST.PUBLISHED",
            f"invalid invoke target 'pricing:$LATEST.PUBLISHED': must be {TARGET_RULE}",
        ),
    ],
)
def test_a_target_that_is_not_allowed_fails_the_invoke_without_a_call(
    stepwell_local: LocalStepwell, target: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    lambda_service = stepwell_local.allow_lambda_functions({PRICING: lambda event, lambda_context: 1})
    stepwell_local.register_function("quote", lambda event, lambda_context: 2)
    _, result, history = run(stepwell_local, target, {})

    # As AWS: Lambda's error for an unknown function, in the START's checkpoint (no Input recorded); what
    # the deployment registers and allows goes to the operator's log only.
    name = {SHIPPING: "shipping", PRICING_ELSEWHERE: "pricing", "pricing:$LATEST.PUBLISHED": "pricing"}[
        target
    ]
    message = f"Function not found: {name}."
    assert invoke_events(history) == [
        ("ChainedInvokeStarted", {"FunctionName": target}),
        (
            "ChainedInvokeFailed",
            {
                "Error": {
                    "Payload": {"ErrorType": "ResourceNotFoundException", "ErrorMessage": message},
                    "Truncated": False,
                }
            },
        ),
    ]
    assert result["error"]["message"] == message
    assert (
        f"{reason}; registered workflows: invoker; registered functions: quote; "
        f"allowed Lambda functions (STEPWELL_INVOKE_FUNCTIONS): {PRICING}"
    ) in caplog.text
    assert lambda_service.calls == []
