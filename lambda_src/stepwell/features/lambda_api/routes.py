"""Which operation a request is: botocore's `lambda` model's method and path of each operation served, and
the class of operation (read, operate, callbacks) whose principals may call it.

Paths are matched after one percent-decoding, so an execution ARN (which holds '/') is matched by its own
shape: `arn:...:function:...:<qualifier>/durable-execution/<name>/<id>`, or a Stepwell execution id
(`domain#workflow#subject/instance`), before the operation's suffix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stepwell.features.lambda_api.access import OperationClass
from stepwell.features.lambda_api.errors import ApiError

_EXECUTION = (
    r"(?P<execution>arn:[^/]{1,400}/durable-execution/[^/]{1,200}/[^/]{1,1100}"
    r"|[^/#]{1,200}#[^/#]{1,200}#[^/#]{1,200}/[^/]{1,200}|[^/]{1,1100})"
)
_FUNCTION = r"(?P<function>[^/]{1,300})"
_CALLBACK = r"(?P<callback>[^/]{1,1100})"


@dataclass(frozen=True)
class Operation:
    name: str
    method: str
    path: re.Pattern[str]
    kind: OperationClass


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "Invoke",
        "POST",
        re.compile(rf"/2015-03-31/functions/{_FUNCTION}/invocations/?"),
        OperationClass.OPERATE,
    ),
    Operation(
        "ListDurableExecutionsByFunction",
        "GET",
        re.compile(rf"/2025-12-01/functions/{_FUNCTION}/durable-executions/?"),
        OperationClass.READ,
    ),
    Operation(
        "GetDurableExecution",
        "GET",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}"),
        OperationClass.READ,
    ),
    Operation(
        "GetDurableExecutionHistory",
        "GET",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/history"),
        OperationClass.READ,
    ),
    Operation(
        "GetDurableExecutionState",
        "GET",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/state"),
        OperationClass.FUNCTIONS,
    ),
    Operation(
        "StopDurableExecution",
        "POST",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/stop"),
        OperationClass.OPERATE,
    ),
    Operation(
        "CheckpointDurableExecution",
        "POST",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/checkpoint"),
        OperationClass.FUNCTIONS,
    ),
    Operation(
        "PauseDurableExecution",
        "POST",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/pause"),
        OperationClass.OPERATE,
    ),
    Operation(
        "ResumeDurableExecution",
        "POST",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}/resume"),
        OperationClass.OPERATE,
    ),
    Operation(
        "DeleteDurableExecution",
        "DELETE",
        re.compile(rf"/2025-12-01/durable-executions/{_EXECUTION}"),
        OperationClass.OPERATE,
    ),
    Operation(
        "SendDurableExecutionCallbackSuccess",
        "POST",
        re.compile(rf"/2025-12-01/durable-execution-callbacks/{_CALLBACK}/succeed"),
        OperationClass.CALLBACKS,
    ),
    Operation(
        "SendDurableExecutionCallbackFailure",
        "POST",
        re.compile(rf"/2025-12-01/durable-execution-callbacks/{_CALLBACK}/fail"),
        OperationClass.CALLBACKS,
    ),
    Operation(
        "SendDurableExecutionCallbackHeartbeat",
        "POST",
        re.compile(rf"/2025-12-01/durable-execution-callbacks/{_CALLBACK}/heartbeat"),
        OperationClass.CALLBACKS,
    ),
)
SERVED = ", ".join(operation.name for operation in OPERATIONS)


@dataclass(frozen=True)
class Route:
    """The operation a request asks for, and the path's parameters."""

    operation: Operation
    params: dict[str, str]


def route(method: str, path: str) -> Route:
    """The operation of `method` `path`; UnknownOperationException naming what this endpoint serves."""
    for operation in OPERATIONS:
        if operation.method != method:
            continue
        match = operation.path.fullmatch(path)
        if match is not None:
            return Route(operation, {key: value for key, value in match.groupdict().items() if value})
    shown = path if len(path) <= 200 else path[:200] + "..."
    raise ApiError(
        "UnknownOperationException",
        f"{method} {shown} is no operation of this endpoint. It is Stepwell's durable execution API and "
        f"serves the Lambda API's durable execution operations: {SERVED} (Invoke of a workflow starts a "
        "durable execution). Other Lambda operations go to Lambda itself.",
    )
