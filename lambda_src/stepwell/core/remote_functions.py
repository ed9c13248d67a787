"""Remote durable functions (issue 41): what registers one, the checkpoint token that binds a call of the
data plane to one execution and one invocation, and the parsing of Lambda's destination record that
brings an invocation's result back to the work queue.

A remote workflow is a user's own Lambda function (any runtime) that checkpoints against Stepwell's API
(CheckpointDurableExecution, GetDurableExecutionState). The worker invokes it asynchronously
(stepwell.core.remote_runs), the API serves its checkpoints (stepwell.core.remote_checkpoints), and its
result comes back as a destination record on the work queue.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from stepwell.core.invoke_targets import parse_function_arn
from stepwell.errors import InvalidArgument, InvalidMessage
from stepwell.model import ExecutionId

DURABLE_FUNCTIONS_ENV = "STEPWELL_DURABLE_FUNCTIONS"
# Lambda's longest function timeout: the default when the registration does not say the function's own.
MAX_FUNCTION_TIMEOUT_SECONDS = 900
# How long past the function's timeout its lease (and the wake-up at its expiry) waits for the result's
# destination record: Lambda delivers it within seconds of the function's end.
RESULT_MARGIN_SECONDS = 120
MAX_TOKEN_LENGTH = 2048  # the model's CheckpointToken
MAX_DURABLE_FUNCTIONS = 100
_QUALIFIER = re.compile(r"\$LATEST|[0-9]{1,10}|(?!^[0-9]+$)[A-Za-z0-9_-]{1,128}")
_OWNER = re.compile(r"[0-9a-f]{32}")
_TOKEN_TEXT = re.compile(r"[A-Z2-7]{1,2048}")
_REGISTRATION_KEYS = frozenset({"function_arn", "qualifier", "timeout_seconds"})


class AsyncLambdaInvoker(Protocol):
    def invoke_event(self, function: str, qualifier: str | None, payload: bytes) -> None:
        """Invoke `function` asynchronously (InvocationType Event) with `payload` (JSON); Lambda's refusal
        for good (missing function, access denied, bad qualifier) as
        stepwell.core.invoke_targets.LambdaInvokeRefused; throttling and service errors as they are."""
        ...


@dataclass(frozen=True)
class RemoteFunction:
    """A registered remote workflow: its function (unqualified ARN), the qualifier it is invoked with
    (None: unqualified, $LATEST) and the function's timeout, which bounds how long a run waits for it."""

    function_arn: str
    qualifier: str | None = None
    timeout_seconds: int = MAX_FUNCTION_TIMEOUT_SECONDS

    @property
    def qualified_arn(self) -> str:
        return self.function_arn if self.qualifier is None else f"{self.function_arn}:{self.qualifier}"

    @property
    def lease_seconds(self) -> float:
        """How long a run holds the execution's lease for one invocation of the function."""
        return float(self.timeout_seconds + RESULT_MARGIN_SECONDS)


def parse_durable_functions(value: object, source: str = DURABLE_FUNCTIONS_ENV) -> dict[str, RemoteFunction]:
    """The registrations {"<workflow>": {"function_arn": ..., "qualifier": ... | null, "timeout_seconds":
    1..900 (optional)}} (a JSON text or the object); InvalidArgument naming the bad value. The names are
    the registry's to check (Registry.allow_remote_functions)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError as error:
            raise InvalidArgument(f"{source} is not JSON: {error}") from None
    if not isinstance(value, Mapping):
        raise InvalidArgument(
            f"{source} must be a JSON object of workflow name -> {{function_arn, qualifier}}, "
            f"got {type(value).__name__}"
        )
    if len(value) > MAX_DURABLE_FUNCTIONS:
        raise InvalidArgument(f"{source} registers {len(value)} functions; at most {MAX_DURABLE_FUNCTIONS}")
    found: dict[str, RemoteFunction] = {}
    for name, entry in value.items():
        found[str(name)] = _registration(source, str(name), entry)
    return found


def _registration(source: str, name: str, entry: object) -> RemoteFunction:
    if not isinstance(entry, Mapping) or not set(entry) <= _REGISTRATION_KEYS:
        keys = sorted(entry) if isinstance(entry, Mapping) else type(entry).__name__
        raise InvalidArgument(
            f"{source}[{name!r}] must be an object with function_arn, qualifier (or null) and optionally "
            f"timeout_seconds; got {keys}"
        )
    try:
        arn = parse_function_arn(entry.get("function_arn")).arn
    except InvalidArgument as error:
        raise InvalidArgument(f"{source}[{name!r}].function_arn: {error}") from None
    qualifier = entry.get("qualifier")
    if qualifier is not None and (not isinstance(qualifier, str) or not _QUALIFIER.fullmatch(qualifier)):
        raise InvalidArgument(
            f"{source}[{name!r}].qualifier {qualifier!r} is no Lambda qualifier: $LATEST, a version number, "
            "an alias (letters, digits, '-', '_'), or null"
        )
    timeout = entry.get("timeout_seconds", MAX_FUNCTION_TIMEOUT_SECONDS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 900:
        raise InvalidArgument(
            f"{source}[{name!r}].timeout_seconds {timeout!r}: the function's timeout, whole seconds 1..900"
        )
    return RemoteFunction(arn, qualifier, timeout)


# ---------------------------------------------------------------------------------------------- tokens


@dataclass(frozen=True, kw_only=True)
class CheckpointToken:
    """What a checkpoint token names: the execution, the lease owner of the run that invoked the function
    (a random uuid: a token cannot be made for another execution), the log's next seq (the fence), the
    invocation's request id, when it started and the wake-up armed at its lease's expiry (epoch ms)."""

    execution_id: str
    owner: str
    seq: int
    request_id: str
    started_ms: int
    wake_ms: int

    def encode(self) -> str:
        """Base32 without padding: letters and digits only (URL-safe, and within the model's pattern)."""
        text = ".".join(
            (self.owner, self.request_id, f"{self.seq:x}", f"{self.started_ms:x}", f"{self.wake_ms:x}")
        )
        body = f"1.{text}.{self.execution_id}"
        # A checksum: a token cut short or edited reads as no token, never as another execution's.
        raw = f"{body}.{zlib.crc32(body.encode()):08x}".encode()
        token = base64.b32encode(raw).decode("ascii").rstrip("=")
        if len(token) > MAX_TOKEN_LENGTH:
            raise InvalidArgument(
                f"execution id {self.execution_id!r} is too long for a checkpoint token "
                f"({len(token)} characters; at most {MAX_TOKEN_LENGTH})"
            )
        return token

    def next(self, seq: int) -> CheckpointToken:
        return dataclasses.replace(self, seq=seq)


def decode_token(token: object) -> CheckpointToken | None:
    """The token's contents, or None when it is no token this engine made (hostile input: bounded)."""
    if not isinstance(token, str) or not _TOKEN_TEXT.fullmatch(token):
        return None
    try:
        raw = base64.b32decode(token + "=" * (-len(token) % 8)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    raw, _, checksum = raw.rpartition(".")
    if checksum != f"{zlib.crc32(raw.encode()):08x}":
        return None
    parts = raw.split(".", 6)
    if len(parts) != 7 or parts[0] != "1":
        return None
    _, owner, request_id, seq, started, wake, execution_id = parts
    if not _OWNER.fullmatch(owner) or not _OWNER.fullmatch(request_id):
        return None
    try:
        ExecutionId.parse(execution_id)
        numbers = [int(value, 16) for value in (seq, started, wake)]
    except ValueError:
        return None
    if any(len(value) > 16 for value in (seq, started, wake)):
        return None
    return CheckpointToken(
        execution_id=execution_id,
        owner=owner,
        seq=numbers[0],
        request_id=request_id,
        started_ms=numbers[1],
        wake_ms=numbers[2],
    )


# ---------------------------------------------------------------------------------------------- results

MAX_ERROR_TEXT = 4096
_FAILED_CONDITIONS = frozenset({"RetriesExhausted", "EventAgeExceeded", "RetryAttemptsExhausted"})


@dataclass(frozen=True)
class RemoteResult:
    """An invocation's end as its destination record tells it: the token it was invoked with, and either
    the function's output (`output`, the handler's return value as Lambda's responsePayload carries it)
    or a failure (`failure`: the error type and message; the invocation counts as crashed)."""

    token: CheckpointToken
    output: Any = None
    failure: tuple[str, str] | None = None


def is_remote_result(body: Mapping[str, Any]) -> bool:
    """Whether a work-queue message is the destination record of a remote function's invocation (its
    requestPayload is a durable invocation input with a checkpoint token)."""
    if "kind" in body or not isinstance(body.get("requestContext"), Mapping):
        return False
    payload = body.get("requestPayload")
    return isinstance(payload, Mapping) and "CheckpointToken" in payload and "DurableExecutionArn" in payload


def parse_remote_result(body: Mapping[str, Any]) -> RemoteResult:
    """The invocation's end from Lambda's destination record (on success or on failure), or InvalidMessage
    naming what is wrong. The record's size is bounded by the work queue's message size."""
    payload = body.get("requestPayload")
    token = decode_token(payload.get("CheckpointToken") if isinstance(payload, Mapping) else None)
    if token is None:
        raise InvalidMessage(
            "a destination record whose requestPayload holds no checkpoint token of this engine"
        )
    context = body["requestContext"]
    response = body.get("responseContext")
    response = response if isinstance(response, Mapping) else {}
    function_error = response.get("functionError")
    condition = context.get("condition")
    if isinstance(function_error, str) and function_error:
        error_type, message = _reported_error(body.get("responsePayload"), function_error)
        return RemoteResult(token, failure=(error_type, message))
    if condition in _FAILED_CONDITIONS or "responsePayload" not in body:
        reason = condition if isinstance(condition, str) else "no response"
        return RemoteResult(
            token,
            failure=("Lambda." + reason[:64], f"the invocation ended without a result ({reason[:200]})"),
        )
    return RemoteResult(token, output=body.get("responsePayload"))


def _reported_error(payload: object, function_error: str) -> tuple[str, str]:
    """The error type and message of a function error (a timeout's included) as Lambda reports it."""
    if isinstance(payload, Mapping):
        error_type = payload.get("errorType")
        message = payload.get("errorMessage")
        return (
            str(error_type)[:256] if error_type else f"Lambda.{function_error[:64]}",
            str(message)[:MAX_ERROR_TEXT] if message is not None else "",
        )
    text = payload if isinstance(payload, str) else json.dumps(payload, default=str)
    return f"Lambda.{function_error[:64]}", text[:MAX_ERROR_TEXT]


__all__ = [
    "DURABLE_FUNCTIONS_ENV",
    "AsyncLambdaInvoker",
    "CheckpointToken",
    "RemoteFunction",
    "RemoteResult",
    "decode_token",
    "is_remote_result",
    "parse_durable_functions",
    "parse_remote_result",
]
