"""Execution ARNs in AWS's shape, mapped to and from Stepwell's execution ids, and Lambda function names.

An execution's ARN is

    arn:<partition>:lambda:<region>:<account>:function:<workflow>:$LATEST/durable-execution/<name>/<id>

- `<workflow>` is the workflow's name (Invoke's and ListDurableExecutionsByFunction's FunctionName);
- `$LATEST` always: the qualifier is not part of an execution's identity here (an execution is pinned to
  the version that runs it first, known only after its ARN was handed out); GetDurableExecution's
  `Version` says which version runs it;
- `<name>` is the execution name, with any character AWS's names do not allow shown as "-";
- `<id>` is the Stepwell execution id (`domain#workflow#subject/instance`) in URL-safe base64 without
  padding: it alone names the execution, and the other parts must agree with it.

Every operation that takes an ARN also takes a Stepwell execution id as it is, as the Stepwell client and
CLI print it. Answers always give ARNs.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from stepwell.core.registry import WORKFLOW_NAME_PATTERN
from stepwell.features.lambda_api.errors import invalid, not_found
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionId

LATEST = "$LATEST"
LATEST_PUBLISHED = "$LATEST.PUBLISHED"
MAX_ARN_LENGTH = 1024
MAX_FUNCTION_NAME_LENGTH = 256
# DurableExecutionArn's name part (the model's pattern) and its length (DurableExecutionName's).
_ARN_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_IN_ARN_NAME = re.compile(r"[^A-Za-z0-9_-]")
# The model's DurableExecutionArn pattern, with '.' in the function part: workflow names may hold one.
# Patterns are used with fullmatch and explicit classes (`\d` matches any Unicode digit).
_EXECUTION_ARN = re.compile(
    r"arn:(?P<partition>aws[a-z-]{0,20}):lambda:(?P<region>[a-z0-9-]{1,32}):(?P<account>[0-9]{12}):"
    r"function:(?P<function>[A-Za-z0-9_.-]{1,64}):(?P<qualifier>\$LATEST(?:\.PUBLISHED)?|[0-9]{1,10})"
    r"/durable-execution/(?P<name>[A-Za-z0-9_-]{1,64})/(?P<id>[A-Za-z0-9_-]{1,1000})"
)
_ARN_SHAPE = (
    "arn:aws:lambda:<region>:<account>:function:<workflow>:$LATEST/durable-execution/<name>/<id>, as "
    "Invoke and ListDurableExecutionsByFunction return it, or a Stepwell execution id "
    "(domain#workflow#subject/instance)"
)
# FunctionName: a name, a partial ARN (account:function:name) or a full ARN, each with an optional
# qualifier (a version number, an alias, $LATEST or $LATEST.PUBLISHED).
_QUALIFIER = r"(?::(?P<qualifier>\$LATEST(?:\.PUBLISHED)?|[A-Za-z0-9_-]{1,128}))?"
_FUNCTION_NAMES = (
    re.compile(
        r"arn:(?P<partition>aws[a-z-]{0,20}):lambda:(?P<region>[a-z0-9-]{1,32}):(?P<account>[0-9]{12}):"
        r"function:(?P<name>[A-Za-z0-9_.-]{1,140})" + _QUALIFIER
    ),
    re.compile(r"(?P<account>[0-9]{12}):function:(?P<name>[A-Za-z0-9_.-]{1,140})" + _QUALIFIER),
    re.compile(r"(?P<name>[A-Za-z0-9_.-]{1,140})" + _QUALIFIER),
)
QUALIFIER_PATTERN = re.compile(r"\$LATEST(?:\.PUBLISHED)?|[A-Za-z0-9_-]{1,128}")


@dataclass(frozen=True)
class FunctionRef:
    """A FunctionName as given: the workflow's name and the qualifier it carried (None: none)."""

    name: str
    qualifier: str | None


@dataclass(frozen=True)
class ArnContext:
    """Where this endpoint's ARNs live: the partition, region and account of the deployment."""

    partition: str
    region: str
    account: str

    @classmethod
    def from_function_arn(cls, arn: str) -> ArnContext:
        """From the API function's own ARN (its Lambda context's invoked_function_arn)."""
        parts = arn.split(":")
        if len(parts) < 7 or parts[0] != "arn" or parts[2] != "lambda" or parts[5] != "function":
            raise ValueError(f"not a Lambda function ARN: {arn!r}")
        return cls(partition=parts[1], region=parts[3], account=parts[4])

    # ------------------------------------------------------------------ functions

    def function_arn(self, workflow: str, version: str | None = None) -> str:
        """The FunctionArn of a workflow: qualified by the version an execution runs on ($LATEST: none)."""
        prefix = f"arn:{self.partition}:lambda:{self.region}:{self.account}:function"
        return f"{prefix}:{workflow}:{version or LATEST}"

    def function(self, function_name: str) -> FunctionRef:
        """A FunctionName (name, partial or full ARN, optionally qualified) of this deployment.
        InvalidParameterValueException for anything else; ResourceNotFoundException for another
        account's or region's function."""
        if len(function_name) > MAX_FUNCTION_NAME_LENGTH:
            raise invalid(
                f"FunctionName is {len(function_name)} characters; at most {MAX_FUNCTION_NAME_LENGTH}"
            )
        for pattern in _FUNCTION_NAMES:
            match = pattern.fullmatch(function_name)
            if match is None:
                continue
            found = match.groupdict()
            account, region = found.get("account"), found.get("region")
            partition = found.get("partition")
            if (account and account != self.account) or (region and region != self.region):
                raise not_found(
                    f"Function not found: {function_name} (this endpoint serves the workflows of account "
                    f"{self.account} in {self.region})"
                )
            if partition and partition != self.partition:
                raise not_found(f"Function not found: {function_name} (partition {self.partition} here)")
            name = found["name"]
            if not WORKFLOW_NAME_PATTERN.match(name):
                raise invalid(
                    f"FunctionName {function_name!r}: {name!r} is no workflow name (1-64 characters: a "
                    "letter, then letters, digits, '_', '.' or '-')"
                )
            return FunctionRef(name, found.get("qualifier"))
        raise invalid(
            f"FunctionName {function_name!r} is not a function name, a partial ARN "
            "(<account>:function:<name>) or a function ARN, with an optional :<qualifier>"
        )

    # ------------------------------------------------------------------ executions

    def execution_arn(self, execution_id: str) -> str:
        """The ARN of the Stepwell execution `execution_id`."""
        ids = ExecutionId.parse(execution_id)
        encoded = base64.urlsafe_b64encode(execution_id.encode("utf-8")).decode("ascii").rstrip("=")
        return (
            f"arn:{self.partition}:lambda:{self.region}:{self.account}:function:{ids.workflow_id}:{LATEST}"
            f"/durable-execution/{arn_name(ids.instance_id)}/{encoded}"
        )

    def execution_id(self, value: str, label: str = "DurableExecutionArn") -> str:
        """The Stepwell execution id an ARN (or a Stepwell id given as it is) names."""
        if not value:
            raise invalid(f"{label} is required: {_ARN_SHAPE}")
        if len(value) > MAX_ARN_LENGTH:
            raise invalid(f"{label} is {len(value)} characters; at most {MAX_ARN_LENGTH}")
        if not value.startswith("arn:"):
            return _stepwell_id(value, label)
        match = _EXECUTION_ARN.fullmatch(value)
        if match is None:
            raise invalid(f"{label} {value!r} is not a durable execution ARN: {_ARN_SHAPE}")
        here = (match["partition"], match["region"], match["account"])
        if here != (self.partition, self.region, self.account):
            raise not_found(
                f"Durable execution not found: {value} (this endpoint serves the executions of account "
                f"{self.account} in {self.region})"
            )
        try:
            decoded = base64.urlsafe_b64decode(match["id"] + "=" * (-len(match["id"]) % 4)).decode("ascii")
            ids = ExecutionId.parse(decoded)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise not_found(f"Durable execution not found: {value}") from None
        # The readable parts must say what the id says: an edited ARN names no execution.
        if ids.workflow_id != match["function"] or arn_name(ids.instance_id) != match["name"]:
            raise not_found(f"Durable execution not found: {value}")
        return _stepwell_id(decoded, label)


def arn_name(execution_name: str) -> str:
    """An execution name as an ARN's name part: AWS's characters, at most 64."""
    if _ARN_NAME.fullmatch(execution_name):
        return execution_name
    return _NOT_IN_ARN_NAME.sub("-", execution_name)[:64] or "-"


def _stepwell_id(value: str, label: str) -> str:
    """`value` as a Stepwell execution id, every part of it a valid key part."""
    try:
        ids = ExecutionId.parse(value)
    except ValueError:
        raise invalid(f"{label} {value!r} is not a durable execution ARN: {_ARN_SHAPE}") from None
    for part, text in (
        ("domain", ids.domain),
        ("workflow", ids.workflow_id),
        ("subject", ids.subject_id),
        ("instance", ids.instance_id),
    ):
        if not KEY_PART_PATTERN.match(text):
            raise invalid(f"{label} {value!r}: its {part} {text!r} is not {KEY_PART_RULE}")
    return value
