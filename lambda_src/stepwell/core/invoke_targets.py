"""Targets of `context.invoke` that are not durable workflows: a registered plain function, or a Lambda
function the deployment allows (`invoke_function_arns`).

Each runs as the handler of a child execution, so it gets the child machinery (idempotent start, lease,
result offload, notifying the parent, stop, timeout) without checkpoints: the function runs once per
attempt, at least once under a crash, like a retried Lambda invoke. Its return value is the invoke's
result and its error the invoke's error, as Lambda reports a function error.
"""

from __future__ import annotations

import json
import re
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, Protocol

from aws_durable_execution_sdk_python.lambda_service import OperationType

from stepwell.errors import InvalidArgument

Handler = Callable[[Any, Any], Any]
# A Lambda-style handler: fn(event, lambda_context) -> a JSON-serializable value.
PlainFunction = Callable[[Any, Any], Any]

LATEST_VERSION = "$LATEST"
# Chained invoke payload caps, as AWS enforces them (the testing library's child_dispatcher.py): the input a
# parent sends, the result a durable child returns and the result a plain target returns, 1 MiB each (UTF-8).
MAX_CHAINED_INVOKE_PAYLOAD_BYTES = 1_048_576
_AT_MOST_1_MIB = f"payload size must be less than or equal to {MAX_CHAINED_INVOKE_PAYLOAD_BYTES} bytes."
CHAINED_INVOKE_INPUT_TOO_LARGE = f"CHAINED_INVOKE input {_AT_MOST_1_MIB}"
CHAINED_INVOKE_OUTPUT_TOO_LARGE = f"CHAINED_INVOKE output {_AT_MOST_1_MIB}"
CHILD_EXECUTION_OUTPUT_TOO_LARGE = f"Execution output {_AT_MOST_1_MIB}"
# Lambda's qualifier for the latest published version (ChainedInvokeOptions.FunctionName accepts it).
LATEST_PUBLISHED = "$LATEST.PUBLISHED"
# Lambda reports an error without an errorType (a runtime that sent none) under this type.
FUNCTION_ERROR_TYPE = "Lambda.FunctionError"
# What Lambda's Python runtime reports for a return value it cannot serialize.
MARSHAL_ERROR_TYPE = "Runtime.MarshalError"

_NAME = r"[A-Za-z0-9_-]{1,64}"
_QUALIFIER = r"[A-Za-z0-9_-]{1,128}"
_ARN = (
    r"arn:(?P<partition>aws[a-z-]*):lambda:(?P<region>[a-z]{2}(?:-[a-z]+)+-[0-9]+):(?P<account>[0-9]{12})"
    rf":function:(?P<name>{_NAME})"
)
ALLOWED_ARN_PATTERN = re.compile(rf"^{_ARN}\Z")
ALLOWED_ARN_RULE = (
    "an unqualified Lambda function ARN: arn:<partition>:lambda:<region>:<account>:function:<name>"
)
TARGET_PATTERN = re.compile(rf"^(?:{_ARN}|(?P<bare>{_NAME}))(?::(?P<qualifier>{_QUALIFIER}))?\Z")
TARGET_RULE = (
    "a function name or ARN, optionally with ':<version or alias>' "
    "(name, name:qualifier, ARN or ARN:qualifier)"
)

# ChainedInvokeOptions.FunctionName as botocore's Lambda model has it (NamespacedFunctionName, 1-256).
AWS_FUNCTION_NAME_PATTERN = re.compile(
    r"(arn:(aws[a-zA-Z-]*)?:lambda:)?((eusc-)?[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:)?(\d{12}:)?"
    r"(function:)?(?P<name>[a-zA-Z0-9-_\.]+)(:(\$LATEST(\.PUBLISHED)?|[a-zA-Z0-9-_]+))?"
)


def aws_function_name(target: str) -> str | None:
    """The function's name in an invoke target as AWS parses it (no ARN prefix, no qualifier); None when
    the target is not a function name or ARN at all."""
    match = AWS_FUNCTION_NAME_PATTERN.fullmatch(target) if 0 < len(target) <= 256 else None
    return match["name"] if match is not None else None


@dataclass(frozen=True)
class LambdaTarget:
    """A Lambda function: an allowed ARN's parts, or what a target names (region, account and partition
    None for a bare name), with the qualifier the target gives (None: unqualified)."""

    name: str
    partition: str | None = None
    region: str | None = None
    account: str | None = None
    qualifier: str | None = None

    @property
    def arn(self) -> str:
        return f"arn:{self.partition}:lambda:{self.region}:{self.account}:function:{self.name}"

    @property
    def qualified_arn(self) -> str:
        return f"{self.arn}:{self.qualifier}" if self.qualifier else self.arn

    @property
    def executed_version(self) -> str | None:
        """The version that runs, when the name tells it: a number, or $LATEST unqualified (an alias's
        version only Lambda knows)."""
        if self.qualifier is None:
            return LATEST_VERSION
        return self.qualifier if self.qualifier.isdigit() else None

    def matches(self, wanted: LambdaTarget) -> bool:
        """Whether `wanted` (what a target names) is this allowed function, whatever its qualifier."""
        return wanted.name == self.name and all(
            mine == theirs or theirs is None
            for mine, theirs in (
                (self.partition, wanted.partition),
                (self.region, wanted.region),
                (self.account, wanted.account),
            )
        )

    def with_qualifier(self, qualifier: str | None) -> LambdaTarget:
        return replace(self, qualifier=qualifier)


def parse_function_arn(arn: object) -> LambdaTarget:
    """An allowed Lambda function: an unqualified function ARN (the module's invoke_function_arns)."""
    match = ALLOWED_ARN_PATTERN.match(arn) if isinstance(arn, str) else None
    if match is None:
        raise InvalidArgument(f"invalid Lambda function ARN {arn!r}: must be {ALLOWED_ARN_RULE}")
    return LambdaTarget(match["name"], match["partition"], match["region"], match["account"])


def parse_target(target: str) -> LambdaTarget:
    """What an invoke's FunctionName names as a Lambda function. `:$LATEST` is the unqualified function
    (Lambda's Invoke accepts it: FunctionName's pattern in botocore's model ends (:($LATEST|...))?)."""
    target = target.removesuffix(":" + LATEST_VERSION)
    match = TARGET_PATTERN.match(target)
    if match is None:
        raise InvalidArgument(f"invalid invoke target {target!r}: must be {TARGET_RULE}")
    if match["bare"] is not None:
        return LambdaTarget(match["bare"], qualifier=match["qualifier"])
    return LambdaTarget(
        match["name"], match["partition"], match["region"], match["account"], qualifier=match["qualifier"]
    )


# ---------------------------------------------------------------------------------------------- invoking


@dataclass(frozen=True)
class LambdaResponse:
    """A synchronous invoke's answer: the payload, and Lambda's FunctionError ("Unhandled") when the
    function failed (the payload then is its {errorType, errorMessage, stackTrace})."""

    payload: bytes
    function_error: str | None = None
    executed_version: str | None = None


class LambdaInvokeRefused(Exception):
    """Lambda refused the invoke for good (the function does not exist, access denied, payload too
    large): the invoke fails with this error. Throttling and service errors are raised as they are, so
    the child's invocation is retried."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.message = message


class LambdaInvoker(Protocol):
    def invoke(self, function: str, payload: bytes) -> LambdaResponse:
        """Invoke `function` (an ARN, maybe qualified) synchronously with `payload` (JSON)."""
        ...


def function_error(payload: bytes) -> dict[str, Any]:
    """The invoke's error for a function error's payload, as Lambda reports it."""
    text = payload.decode("utf-8", errors="replace")
    try:
        reported = json.loads(text)
    except ValueError:
        reported = None
    if not isinstance(reported, dict):
        return {"ErrorType": FUNCTION_ERROR_TYPE, "ErrorMessage": text}
    error: dict[str, Any] = {
        "ErrorType": str(reported.get("errorType") or FUNCTION_ERROR_TYPE),
        "ErrorMessage": str(reported.get("errorMessage", "")),
    }
    trace = reported.get("stackTrace")
    if isinstance(trace, list) and trace:
        error["StackTrace"] = [str(frame) for frame in trace]
    return error


# ---------------------------------------------------------------------------------------------- handlers


def _input_payload(invocation: Any) -> str | None:
    """The child execution's input (the invoke's payload) from the SDK's invocation input."""
    for operation in invocation.initial_execution_state.operations:
        if operation.operation_type is OperationType.EXECUTION and operation.execution_details:
            payload: str | None = operation.execution_details.input_payload
            return payload
    return None


def _succeeded(result: str) -> dict[str, Any]:
    return {"Status": "SUCCEEDED", "Result": result}


def _failed(error_type: str, message: str) -> dict[str, Any]:
    return {"Status": "FAILED", "Error": {"ErrorType": error_type, "ErrorMessage": message}}


def plain_function_handler(fn: PlainFunction) -> Handler:
    """The child handler that runs `fn(event, lambda_context)` once: the event is the invoke's input
    ({} when it has none, as a Lambda invoke without a payload)."""

    def handler(invocation: Any, lambda_context: Any) -> dict[str, Any]:
        payload = _input_payload(invocation)
        try:
            event = _lambda_event(payload)
        except LambdaInvokeRefused as refused:  # as Lambda's Invoke refuses it: at once, never retried
            return _failed(refused.error_type, refused.message)
        try:
            value = fn(event, lambda_context)
        except Exception as error:  # the function's error is the invoke's, as Lambda reports it
            return _failed(type(error).__name__, str(error))
        try:
            return _succeeded(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as error:
            return _failed(MARSHAL_ERROR_TYPE, f"Unable to marshal response: {error}")

    return handler


def lambda_target_handler(target: LambdaTarget, invoker: LambdaInvoker) -> Handler:
    """The child handler that invokes the Lambda function `target` once, synchronously."""

    def handler(invocation: Any, lambda_context: Any) -> dict[str, Any]:
        payload = _input_payload(invocation)
        try:
            response = invoker.invoke(target.qualified_arn, (payload or "").encode())
        except LambdaInvokeRefused as refused:
            return _failed(refused.error_type, f"{target.qualified_arn}: {refused.message}")
        if response.function_error is not None:
            return {"Status": "FAILED", "Error": function_error(response.payload)}
        return _succeeded(response.payload.decode("utf-8", errors="replace"))

    return handler


def _lambda_event(payload: str | None) -> Any:
    """A Lambda-style function's event from an invoke's payload (none: {}); a payload that is not JSON is
    refused as Lambda's Invoke refuses it (InvalidRequestContentException)."""
    if not payload:
        return {}
    try:
        return json.loads(payload)
    except ValueError as error:
        raise LambdaInvokeRefused(
            "InvalidRequestContentException", f"Could not parse request body into json: {error}"
        ) from None


class MemoryLambdaInvoker:
    """LambdaInvoker over in-process functions (for LocalStepwell and tests): unqualified function ARN ->
    fn(event, lambda_context). Answers as Lambda does: the return value as JSON, an exception as
    FunctionError "Unhandled" with {errorType, errorMessage, stackTrace}; an ARN it does not have as
    ResourceNotFoundException. `calls` records (qualified ARN, payload) per invoke."""

    def __init__(self, functions: Mapping[str, PlainFunction]) -> None:
        self.functions = {parse_function_arn(arn).arn: fn for arn, fn in functions.items()}
        self.calls: list[tuple[str, bytes]] = []

    def invoke(self, function: str, payload: bytes) -> LambdaResponse:
        self.calls.append((function, payload))
        target = parse_target(function)
        fn = self.functions.get(target.with_qualifier(None).arn)
        if fn is None:
            raise LambdaInvokeRefused("ResourceNotFoundException", f"Function not found: {function}")
        context = SimpleNamespace(
            function_name=target.name, invoked_function_arn=function, aws_request_id=uuid.uuid4().hex
        )
        version = target.executed_version or "1"  # an alias: this in-memory Lambda has one version
        event = _lambda_event(payload.decode("utf-8", errors="replace"))
        try:
            value = fn(event, context)
        except Exception as error:
            report = {
                "errorType": type(error).__name__,
                "errorMessage": str(error),
                "stackTrace": traceback.format_tb(error.__traceback__),
            }
            return LambdaResponse(json.dumps(report).encode(), "Unhandled", version)
        return LambdaResponse(json.dumps(value).encode(), None, version)
