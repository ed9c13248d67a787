"""An execution's ARN: one per execution, the one AWS's durable execution API answers
(stepwell.features.lambda_api), handed to every handler as its DurableExecutionArn and shown to users.

    arn:<partition>:lambda:<region>:<account>:function:<workflow>:$LATEST/durable-execution/<name>/<id>

- `<workflow>` is the workflow's name (Invoke's and ListDurableExecutionsByFunction's FunctionName);
- `$LATEST` always: the qualifier is not part of an execution's identity here (an execution is pinned to
  the version that runs it first, known only after its ARN was handed out);
- `<name>` is the execution's instance id (its execution name), with any character AWS's names do not
  allow shown as "-";
- `<id>` is the Stepwell execution id (`domain#workflow#subject/instance`) in URL-safe base64 without
  padding: it alone names the execution, and the other parts must agree with it.

The partition, region and account (ArnContext) are the deployment's: the worker's and the API function's,
which share them. A handler finds the EXECUTION operation under the last "/" segment of its ARN (the Python
SDK's ExecutionState.get_execution_operation); the log stores it under the execution id's last segment, so
the operations a handler is handed are translated on the way out (`as_handed`), the stored ones never.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Self

from aws_durable_execution_sdk_python.lambda_service import Operation, OperationType

from stepwell.model import ExecutionId

LATEST = "$LATEST"
# The partition, region and account a harness (no Lambda context) names its executions in: the local API
# backends' too, so local log records and local API answers give the same ARN.
LOCAL_PARTITION, LOCAL_REGION, LOCAL_ACCOUNT = "aws", "us-east-1", "123456789012"
# DurableExecutionArn's name part (the model's pattern) and its length (DurableExecutionName's).
_ARN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_IN_ARN_NAME = re.compile(r"[^A-Za-z0-9_-]")
# The model's DurableExecutionArn pattern, with '.' in the function part: workflow names may hold one.
# Patterns are used with fullmatch and explicit classes (`\d` matches any Unicode digit).
EXECUTION_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]{0,20}):lambda:(?P<region>[a-z0-9-]{1,32}):(?P<account>[0-9]{12}):"
    r"function:(?P<function>[A-Za-z0-9_.-]{1,64}):(?P<qualifier>\$LATEST(?:\.PUBLISHED)?|[0-9]{1,10})"
    r"/durable-execution/(?P<name>[A-Za-z0-9_-]{1,64})/(?P<id>[A-Za-z0-9_-]{1,1000})"
)
EXECUTION_ARN_SHAPE = (
    "arn:aws:lambda:<region>:<account>:function:<workflow>:$LATEST/durable-execution/<name>/<id>, as "
    "Invoke and ListDurableExecutionsByFunction return it, or a Stepwell execution id "
    "(domain#workflow#subject/instance)"
)


class NotAnExecutionArn(ValueError):
    """The value does not have an execution ARN's shape."""


class NamesNoExecution(ValueError):
    """The value has an execution ARN's shape but names no execution: its id part does not decode to an
    execution id, or its readable parts disagree with it."""


@dataclass(frozen=True)
class ParsedArn:
    """An execution ARN taken apart: where it lives and the Stepwell execution id it names."""

    partition: str
    region: str
    account: str
    execution_id: str


@dataclass(frozen=True)
class ArnContext:
    """Where a deployment's ARNs live: its partition, region and account."""

    partition: str
    region: str
    account: str

    @classmethod
    def from_function_arn(cls, arn: str) -> Self:
        """From a Lambda function's ARN (a Lambda context's invoked_function_arn, qualified or not)."""
        parts = arn.split(":")
        if len(parts) < 7 or parts[0] != "arn" or parts[2] != "lambda" or parts[5] != "function":
            raise ValueError(f"not a Lambda function ARN: {arn!r}")
        return cls(partition=parts[1], region=parts[3], account=parts[4])

    @classmethod
    def local(cls) -> Self:
        """The harness's (LOCAL_PARTITION, LOCAL_REGION, LOCAL_ACCOUNT)."""
        return cls(LOCAL_PARTITION, LOCAL_REGION, LOCAL_ACCOUNT)

    def function_arn(self, workflow: str, version: str | None = None) -> str:
        """The FunctionArn of a workflow: qualified by the version an execution runs on ($LATEST: none)."""
        prefix = f"arn:{self.partition}:lambda:{self.region}:{self.account}:function"
        return f"{prefix}:{workflow}:{version or LATEST}"

    def execution_arn(self, execution_id: str) -> str:
        """The ARN of the Stepwell execution `execution_id` (ValueError if it is no execution id)."""
        ids = ExecutionId.parse(execution_id)
        encoded = base64.urlsafe_b64encode(execution_id.encode("utf-8")).decode("ascii").rstrip("=")
        return (
            f"arn:{self.partition}:lambda:{self.region}:{self.account}:function:{ids.workflow_id}:{LATEST}"
            f"/durable-execution/{arn_name(ids.instance_id)}/{encoded}"
        )

    def owns(self, parsed: ParsedArn) -> bool:
        """Whether the ARN lives here (this partition, region and account)."""
        here = (self.partition, self.region, self.account)
        return (parsed.partition, parsed.region, parsed.account) == here


def arn_context_of(lambda_context: Any, default: ArnContext) -> ArnContext:
    """The deployment's ArnContext as a Lambda context tells it (its invoked_function_arn: the worker and the
    API function share partition, region and account); `default` without one (a harness, an inline run)."""
    function_arn = getattr(lambda_context, "invoked_function_arn", None)
    if isinstance(function_arn, str):
        try:
            return ArnContext.from_function_arn(function_arn)
        except ValueError:
            pass
    return default


def execution_arn_of_function(execution_id: str, function_arn: str) -> str:
    """The ARN of an execution run by the Lambda function `function_arn`, in that function's partition,
    region and account (a deployment's remote durable functions share the API's)."""
    return ArnContext.from_function_arn(function_arn).execution_arn(execution_id)


def parse_execution_arn(value: str) -> ParsedArn:
    """An execution ARN taken apart (NotAnExecutionArn, NamesNoExecution). The execution id it names is
    parsed, not checked against the store."""
    match = EXECUTION_ARN_PATTERN.fullmatch(value)
    if match is None:
        raise NotAnExecutionArn(f"{value!r} is not a durable execution ARN: {EXECUTION_ARN_SHAPE}")
    try:
        decoded = base64.urlsafe_b64decode(match["id"] + "=" * (-len(match["id"]) % 4)).decode("ascii")
        ids = ExecutionId.parse(decoded)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise NamesNoExecution(f"durable execution not found: {value}") from None
    # The readable parts must say what the id says: an edited ARN names no execution.
    if ids.workflow_id != match["function"] or arn_name(ids.instance_id) != match["name"]:
        raise NamesNoExecution(f"durable execution not found: {value}")
    return ParsedArn(match["partition"], match["region"], match["account"], decoded)


def execution_id_of(value: str) -> str:
    """The Stepwell execution id `value` names: an execution ARN's, or `value` itself when it is no ARN
    (a Stepwell id, as a handler run before ARNs were handed out holds). ValueError for anything else."""
    if value.startswith("arn:"):
        return parse_execution_arn(value).execution_id
    ExecutionId.parse(value)
    return value


def arn_name(execution_name: str) -> str:
    """An execution name as an ARN's name part: AWS's characters, at most 64."""
    if _ARN_NAME.fullmatch(execution_name):
        return execution_name
    return _NOT_IN_ARN_NAME.sub("-", execution_name)[:64] or "-"


def as_handed(operations: Iterable[Operation], *, execution_id: str, arn: str) -> list[Operation]:
    """The operations as a handler holding `arn` is handed them: the EXECUTION operation, stored under the
    execution id's last "/" segment, named by the ARN's last segment, where the SDKs look for it. The one
    place they are translated; every other operation, and the EXECUTION updates the SDK sends (they carry
    ids of their own, never the operation's), are as stored. An `arn` that is the execution id itself
    changes nothing."""
    stored, handed = execution_id.rsplit("/", 1)[-1], arn.rsplit("/", 1)[-1]
    listed = list(operations)
    if stored == handed:
        return listed
    return [
        dataclasses.replace(op, operation_id=handed)
        if op.operation_id == stored and op.operation_type is OperationType.EXECUTION
        else op
        for op in listed
    ]


def ids_as_handed(operation_ids: Iterable[str], *, execution_id: str, arn: str) -> list[str]:
    """Operation ids (an invocation's UpdatedOperationIds) as a handler holding `arn` knows them
    (`as_handed`'s rule)."""
    stored, handed = execution_id.rsplit("/", 1)[-1], arn.rsplit("/", 1)[-1]
    return [handed if op_id == stored else op_id for op_id in operation_ids]
