"""Lambda function names (FunctionName) and execution ARNs as the API takes them: the ARN's shape is
stepwell.core.arns (one per execution, handed to handlers too); this module adds the API's errors.

Every operation that takes an ARN also takes a Stepwell execution id as it is, as the Stepwell client and
CLI print it. Answers always give ARNs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stepwell.core import arns as core_arns
from stepwell.core.arns import (
    EXECUTION_ARN_SHAPE,
    LATEST,
    NamesNoExecution,
    NotAnExecutionArn,
    parse_execution_arn,
)
from stepwell.core.registry import WORKFLOW_NAME_PATTERN
from stepwell.features.lambda_api.errors import invalid, not_found
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionId

LATEST_PUBLISHED = "$LATEST.PUBLISHED"
MAX_ARN_LENGTH = 1024
MAX_FUNCTION_NAME_LENGTH = 256
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
class ApiArns(core_arns.ArnContext):
    """The endpoint's view of its deployment's ARNs (stepwell.core.arns.ArnContext): FunctionName parsing
    and execution ARNs (or Stepwell ids) read with the API's errors."""

    @classmethod
    def of(cls, arns: core_arns.ArnContext) -> ApiArns:
        return arns if isinstance(arns, ApiArns) else cls(arns.partition, arns.region, arns.account)

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

    def execution_id(self, value: str, label: str = "DurableExecutionArn") -> str:
        """The Stepwell execution id an ARN (or a Stepwell id given as it is) names."""
        if not value:
            raise invalid(f"{label} is required: {EXECUTION_ARN_SHAPE}")
        if len(value) > MAX_ARN_LENGTH:
            raise invalid(f"{label} is {len(value)} characters; at most {MAX_ARN_LENGTH}")
        if not value.startswith("arn:"):
            return _stepwell_id(value, label)
        try:
            parsed = parse_execution_arn(value)
        except NotAnExecutionArn:
            shape = EXECUTION_ARN_SHAPE
            raise invalid(f"{label} {value!r} is not a durable execution ARN: {shape}") from None
        except NamesNoExecution:
            raise not_found(f"Durable execution not found: {value}") from None
        if not self.owns(parsed):
            raise not_found(
                f"Durable execution not found: {value} (this endpoint serves the executions of account "
                f"{self.account} in {self.region})"
            )
        return _stepwell_id(parsed.execution_id, label)


def _stepwell_id(value: str, label: str) -> str:
    """`value` as a Stepwell execution id, every part of it a valid key part."""
    try:
        ids = ExecutionId.parse(value)
    except ValueError:
        raise invalid(f"{label} {value!r} is not a durable execution ARN: {EXECUTION_ARN_SHAPE}") from None
    for part, text in (
        ("domain", ids.domain),
        ("workflow", ids.workflow_id),
        ("subject", ids.subject_id),
        ("instance", ids.instance_id),
    ):
        if not KEY_PART_PATTERN.match(text):
            raise invalid(f"{label} {value!r}: its {part} {text!r} is not {KEY_PART_RULE}")
    return value


# What the endpoint's settings and its callers name the deployment's ARNs.
ArnContext = ApiArns

__all__ = ["LATEST", "LATEST_PUBLISHED", "QUALIFIER_PATTERN", "ApiArns", "ArnContext", "FunctionRef"]
