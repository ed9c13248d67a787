"""What the local runtime knows of a function version (``FunctionSpec``, read from the Lambda API) and
of one invocation's answer (``InvocationResult``), and how it reads a FunctionName as Lambda's Invoke
takes it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

# A boto3 client on the backend for a service name ("lambda", "sqs").
ClientFactory = Callable[[str], Any]
# A version's deployed zip: called with "name" for $LATEST and "name:version" for a published version.
CodeFetcher = Callable[[str], bytes]

LATEST = "$LATEST"


class RuntimeKind(Enum):
    """Which worker runs a function version's code: the harness's Python or the machine's ``node``."""

    PYTHON = "python"
    NODE = "node"


# The Node.js Runtime values the pinned AWS provider (5.100) accepts; each runs on the machine's one
# ``node`` (v20 here), whatever major version it names. Every python3.* runs on the harness's Python; moto
# stores any string, and "" (a function created without one) runs as Python, as before Node was run.
NODE_RUNTIMES = ("nodejs18.x", "nodejs20.x", "nodejs22.x")


class UnsupportedRuntime(ValueError):
    """A function version whose Runtime the local runtime cannot run (java21, provided.al2023, ...)."""


def runtime_kind(runtime: str) -> RuntimeKind:
    """The worker a version of Runtime ``runtime`` runs in; UnsupportedRuntime names the ones allowed."""
    if runtime in NODE_RUNTIMES:
        return RuntimeKind.NODE
    if runtime.startswith("python3.") or runtime == "":
        return RuntimeKind.PYTHON
    raise UnsupportedRuntime(
        f"Runtime {runtime!r} is not run by the local Lambda runtime; it runs python3.* and "
        f"{', '.join(NODE_RUNTIMES)}"
    )


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
    runtime: str = ""  # Lambda's Runtime (python3.13, nodejs20.x, ...); "" when the function names none

    @property
    def qualified_arn(self) -> str:
        """The ARN of this version (``...:function:name:$LATEST`` or ``...:name:3``), as destination
        records name the function that ran."""
        return f"{self.arn}:{self.version}"


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
        runtime=str(configuration.get("Runtime") or ""),
    )
