"""Errors as Lambda's API answers them (botocore's `lambda` model), so every SDK raises the modeled exception:
the HTTP status, the `x-amzn-ErrorType` header and a JSON body with `Type` ("User" or "Service") and the
message under both `Message` and `message` (the model spells it one way or the other per exception).

`ApiError` is what every part of the endpoint raises; `translate` turns the engine's errors into the
exception AWS raises for the same case.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from stepwell.errors import (
    CallbackAlreadyClosed,
    CallbackNotFound,
    ExecutionAlreadyEnded,
    ExecutionAlreadyExists,
    ExecutionNotFound,
    InvalidArgument,
    InvalidWorkflowName,
    PayloadTooLarge,
    StepwellError,
    VersionNotFound,
    WorkflowNotFound,
)

# The model's httpStatusCode of each exception the endpoint raises (botocore 1.44's lambda-2015-03-31).
STATUS_BY_CODE: dict[str, int] = {
    "InvalidParameterValueException": 400,
    "InvalidRequestContentException": 400,
    "CallbackTimeoutException": 400,
    "AccessDeniedException": 403,
    "ResourceNotFoundException": 404,
    "UnknownOperationException": 404,
    "DurableExecutionAlreadyStartedException": 409,
    "ResourceConflictException": 409,
    "RequestTooLargeException": 413,
    "UnsupportedMediaTypeException": 415,
    "TooManyRequestsException": 429,
    "ServiceException": 500,
}

# DynamoDB's, SQS's, S3's and Lambda's answers that mean "slow down": the caller may retry later.
_THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "Throttling",
        "TooManyRequestsException",
        "SlowDown",
        "RequestThrottled",
        "TransactionConflictException",
    }
)


class ApiError(Exception):
    """One modeled error: `code` is the exception's name (the x-amzn-ErrorType)."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else STATUS_BY_CODE.get(code, 400)

    @property
    def kind(self) -> str:
        """The body's Type: who is at fault, as Lambda says it."""
        return "Service" if self.status >= 500 else "User"


def invalid(message: str) -> ApiError:
    return ApiError("InvalidParameterValueException", message)


def not_found(message: str) -> ApiError:
    return ApiError("ResourceNotFoundException", message)


def translate(error: Exception, operation: str) -> ApiError:
    """The modeled error of `operation` for an error the engine or an AWS adapter raised."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, StepwellError):
        return _stepwell_error(error, operation)
    if isinstance(error, ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in _THROTTLING_CODES:
            return ApiError(
                "TooManyRequestsException",
                f"the deployment's {code} answer: too many requests at once, try again shortly",
            )
        return ApiError("ServiceException", f"the deployment answered {code or 'an error'}; try again")
    return ApiError("ServiceException", "an internal error; try again (the endpoint's log has its details)")


def _stepwell_error(error: StepwellError, operation: str) -> ApiError:
    message = str(error)
    if isinstance(error, PayloadTooLarge):
        # Invoke models RequestTooLargeException; the other operations only a parameter error.
        code = "RequestTooLargeException" if operation == "Invoke" else "InvalidParameterValueException"
        return ApiError(code, message)
    if isinstance(error, VersionNotFound):
        return not_found(message)
    if isinstance(error, InvalidArgument | InvalidWorkflowName):
        return invalid(message)
    if isinstance(error, ExecutionAlreadyExists):
        return ApiError("DurableExecutionAlreadyStartedException", message)
    if isinstance(error, WorkflowNotFound | ExecutionNotFound):
        return not_found(message)
    if isinstance(error, CallbackAlreadyClosed):
        # AWS: a callback that completed or timed out "has already been closed".
        return ApiError("CallbackTimeoutException", message)
    if isinstance(error, CallbackNotFound):
        return not_found(message)
    if isinstance(error, ExecutionAlreadyEnded):
        if operation.startswith("SendDurableExecutionCallback"):
            return ApiError("CallbackTimeoutException", message)
        return invalid(message)
    return ApiError("ServiceException", message)
