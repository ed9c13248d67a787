"""What the local runtime knows of a function version (``FunctionSpec``, read from the Lambda API) and
of one invocation's answer (``InvocationResult``), and how it reads a FunctionName as Lambda's Invoke
takes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# A boto3 client on the backend for a service name ("lambda", "sqs").
ClientFactory = Callable[[str], Any]
# A version's deployed zip: called with "name" for $LATEST and "name:version" for a published version.
CodeFetcher = Callable[[str], bytes]

LATEST = "$LATEST"


@dataclass(frozen=True)
class InvocationResult:
    function_name: str
    payload: Any
    error: dict[str, Any] | None = None  # errorType, errorMessage, stackTrace; None on success
    executed_version: str = LATEST

    @property
    def succeeded(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class FunctionSpec:
    """One version of a function as it runs: ``version`` is a number or ``$LATEST``."""

    name: str
    arn: str  # the unqualified function ARN
    version: str
    handler: str
    timeout_seconds: int
    memory_mb: int
    environment: dict[str, str]
    code_sha256: str
    last_modified: str
    role: str = ""  # the function's execution role ARN


class InvalidFunctionReference(ValueError):
    """A FunctionName or Qualifier Lambda would refuse (InvalidParameterValueException)."""


def split_function_reference(reference: str, qualifier: str | None = None) -> tuple[str, str | None]:
    """(name, qualifier) of a FunctionName as Lambda's Invoke takes it: ``name``, ``name:qualifier``,
    a partial ARN (``account:function:name[:qualifier]``) or a full ARN, plus a separate Qualifier."""
    parts = reference.split(":")
    if parts[0] == "arn" and len(parts) >= 7 and parts[5] == "function":
        parts = parts[6:]
    elif len(parts) >= 3 and parts[1] == "function":
        parts = parts[2:]
    if not parts[0] or len(parts) > 2 or (len(parts) == 2 and not parts[1]):
        raise InvalidFunctionReference(
            f"{reference!r} is not a function name, name:qualifier or function ARN "
            "(arn:aws:lambda:region:account:function:name[:qualifier])"
        )
    in_reference = parts[1] if len(parts) == 2 else None
    if in_reference is not None and qualifier and qualifier != in_reference:
        raise InvalidFunctionReference(
            f"the qualifier in {reference!r} ({in_reference}) does not match the Qualifier {qualifier!r}"
        )
    return parts[0], in_reference or qualifier or None


def invocation_arn(spec: FunctionSpec, qualifier: str | None) -> str:
    """The ARN an invocation came through, as the context's invoked_function_arn reports it."""
    return f"{spec.arn}:{qualifier}" if qualifier else spec.arn


def read_function_spec(lambda_client: Any, function_name: str, qualifier: str | None = None) -> FunctionSpec:
    """The version ``qualifier`` (a number, an alias, ``$LATEST``; None: ``$LATEST``) names, as it
    is now: an alias is resolved by this call, so a moved alias is seen at once."""
    request: dict[str, str] = {"FunctionName": function_name}
    if qualifier:
        request["Qualifier"] = qualifier
    configuration = lambda_client.get_function_configuration(**request)
    return FunctionSpec(
        name=configuration["FunctionName"],
        arn=":".join(configuration["FunctionArn"].split(":")[:7]),
        version=str(configuration.get("Version") or LATEST),
        handler=configuration["Handler"],
        timeout_seconds=int(configuration.get("Timeout", 3)),
        memory_mb=int(configuration.get("MemorySize", 128)),
        environment={
            key: str(value)
            for key, value in configuration.get("Environment", {}).get("Variables", {}).items()
        },
        code_sha256=configuration.get("CodeSha256", ""),
        last_modified=configuration.get("LastModified", ""),
        role=str(configuration.get("Role", "")),
    )
