"""Payload limits: how large an execution's input and result, an operation's payload and a callback's
result may be (docs/security.md, Limits).

The defaults are at least as strict as AWS Lambda durable functions': an asynchronous invoke's payload
(an execution's input) is 256 KB, an operation's checkpoint payload 256 KB (the SDK's
CHECKPOINT_SIZE_LIMIT_BYTES), a callback's result at most 1 MiB (botocore's
SendDurableExecutionCallbackSuccess Result) and an execution's result at most 6 MiB (GetDurableExecution's
Result, the invoke response). The deployment may set them (module variables max_*_bytes,
STEPWELL_MAX_*_BYTES) up to AWS's figures.

A size is the UTF-8 bytes of the JSON text as sent or returned. An API call over a limit raises
PayloadTooLarge (an InvalidArgument: client, CLI, callback URL and bus events show its message); a run
whose checkpoint or result is over one fails with PayloadOverLimit's ErrorType and the same message, and
nothing over a limit is stored. The inline limit (stepwell.core.engine.DEFAULT_INLINE_LIMIT: larger
payloads go
to S3) is how a payload is kept, not a limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_durable_execution_sdk_python.exceptions import CheckpointError, DurableApiErrorCategory

from stepwell.errors import PayloadTooLarge

KIB = 1024
MIB = 1024 * KIB
# AWS's figures, the most a deployment may allow.
AWS_MAX_EXECUTION_INPUT_BYTES = 6 * MIB  # a synchronous invoke's payload (GetDurableExecution InputPayload)
AWS_MAX_EXECUTION_RESULT_BYTES = 6 * MIB  # GetDurableExecution's Result (OutputPayload)
AWS_MAX_OPERATION_PAYLOAD_BYTES = 6 * MIB  # CheckpointDurableExecution's OperationUpdate Payload
AWS_MAX_CALLBACK_RESULT_BYTES = 1 * MIB  # SendDurableExecutionCallbackSuccess's Result
# The least a deployment may set: "null", an error object and a small result always fit.
MIN_LIMIT_BYTES = KIB

DEFAULT_MAX_EXECUTION_INPUT_BYTES = 256 * KIB  # AWS: 256 KB for an asynchronous invoke
DEFAULT_MAX_EXECUTION_RESULT_BYTES = 1 * MIB  # AWS: 6 MB; 1 MiB is what a chained invoke's child may return
DEFAULT_MAX_OPERATION_PAYLOAD_BYTES = 256 * KIB  # AWS: 256 KB per operation (the SDK's checkpoint limit)
DEFAULT_MAX_CALLBACK_RESULT_BYTES = 256 * KIB  # AWS: 1 MiB (botocore); it becomes an operation's payload


class PayloadOverLimit(CheckpointError):
    """A checkpoint the engine refuses because a payload is over its limit. Not retryable (as AWS's
    InvalidParameterValueException): the SDK fails the execution with it, whose ErrorType is this class's
    qualified name (PAYLOAD_OVER_LIMIT_TYPE)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_category=DurableApiErrorCategory.EXECUTION)


PAYLOAD_OVER_LIMIT_TYPE = f"{PayloadOverLimit.__module__}.{PayloadOverLimit.__qualname__}"


@dataclass(frozen=True)
class Limit:
    """One limit: what it bounds, its size in bytes, and the settings that change it."""

    what: str
    bytes: int
    variable: str
    environment: str

    def problem(self, subject: str, text: str | None) -> str | None:
        """The message for `text` (the payload of `subject`) when it is over the limit, else None."""
        size = payload_size(text)
        if size <= self.bytes:
            return None
        return (
            f"{subject} is {size:,} bytes; the limit on {self.what} is {self.bytes:,} bytes "
            f"(module variable {self.variable}, {self.environment})"
        )

    def check(self, subject: str, text: str | None) -> None:
        """PayloadTooLarge naming the limit, the size and the setting when `text` is over the limit."""
        message = self.problem(subject, text)
        if message is not None:
            raise PayloadTooLarge(message)


def payload_size(text: str | None) -> int:
    """A payload's size as the limits count it: its UTF-8 bytes (None is no payload)."""
    return 0 if text is None else len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class PayloadLimits:
    """A deployment's payload limits in bytes (StepwellConfig.payload_limits; the module's max_*_bytes)."""

    execution_input_bytes: int = DEFAULT_MAX_EXECUTION_INPUT_BYTES
    execution_result_bytes: int = DEFAULT_MAX_EXECUTION_RESULT_BYTES
    operation_payload_bytes: int = DEFAULT_MAX_OPERATION_PAYLOAD_BYTES
    callback_result_bytes: int = DEFAULT_MAX_CALLBACK_RESULT_BYTES

    def __post_init__(self) -> None:
        for limit, most in (
            (self.execution_input, AWS_MAX_EXECUTION_INPUT_BYTES),
            (self.execution_result, AWS_MAX_EXECUTION_RESULT_BYTES),
            (self.operation_payload, AWS_MAX_OPERATION_PAYLOAD_BYTES),
            (self.callback_result, AWS_MAX_CALLBACK_RESULT_BYTES),
        ):
            value = limit.bytes
            if isinstance(value, bool) or not isinstance(value, int) or not MIN_LIMIT_BYTES <= value <= most:
                raise ValueError(
                    f"{limit.variable} ({limit.environment}) must be a whole number of bytes from "
                    f"{MIN_LIMIT_BYTES} to {most:,} (AWS's limit on {limit.what}), got {value!r}"
                )

    @property
    def execution_input(self) -> Limit:
        return Limit(
            "an execution's input",
            self.execution_input_bytes,
            "max_execution_input_bytes",
            "STEPWELL_MAX_EXECUTION_INPUT_BYTES",
        )

    @property
    def execution_result(self) -> Limit:
        return Limit(
            "an execution's result",
            self.execution_result_bytes,
            "max_execution_result_bytes",
            "STEPWELL_MAX_EXECUTION_RESULT_BYTES",
        )

    @property
    def operation_payload(self) -> Limit:
        return Limit(
            "an operation's payload",
            self.operation_payload_bytes,
            "max_operation_payload_bytes",
            "STEPWELL_MAX_OPERATION_PAYLOAD_BYTES",
        )

    @property
    def callback_result(self) -> Limit:
        return Limit(
            "a callback's result",
            self.callback_result_bytes,
            "max_callback_result_bytes",
            "STEPWELL_MAX_CALLBACK_RESULT_BYTES",
        )
