"""Who may do what: the principals allowed per class of operation, and the caller a request comes from.

The module lists principals per class (its `api_principals`: read, operate, callbacks). The function URL
(auth type AWS_IAM) lets only signed requests through, and its resource policy only these principals; the
handler then checks the caller Lambda names in the event's `requestContext.authorizer.iam` against the
class of the operation asked for. A request without that identity (a URL without AWS_IAM, a test backend
that does not sign) is refused: the handler never guesses who is calling.

A principal is one of
- an account id (`123456789012`) or its root ARN (`arn:aws:iam::123456789012:root`): any principal of
  that account its own IAM policies let through;
- an IAM role ARN (`arn:aws:iam::123456789012:role/path/name`): any session of that role (a session's ARN,
  `arn:aws:sts::123456789012:assumed-role/name/session`, carries no path: roles are matched by name, which
  is unique in an account);
- an IAM user ARN (`arn:aws:iam::123456789012:user/path/name`): that user.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stepwell.features.lambda_api.errors import ApiError


class OperationClass(StrEnum):
    READ = "read"
    OPERATE = "operate"
    CALLBACKS = "callbacks"
    # The data plane (CheckpointDurableExecution, GetDurableExecutionState): only the registered durable
    # functions' roles call it (issue 41); each call's token binds it to one execution and invocation too.
    FUNCTIONS = "functions"


_ACCOUNT = re.compile(r"[0-9]{12}")
_IAM_PRINCIPAL = re.compile(
    r"arn:(?P<partition>aws[a-z-]{0,20}):iam::(?P<account>[0-9]{12}):"
    r"(?:(?P<root>root)|(?P<kind>role|user)/(?:[A-Za-z0-9+=,.@_/-]{0,500}/)?(?P<name>[A-Za-z0-9+=,.@_-]{1,128}))"
)
# The caller as Lambda names it: an IAM user, a role's session, the account's root, a federated user.
_CALLER = re.compile(
    r"arn:(?P<partition>aws[a-z-]{0,20}):(?:iam|sts)::(?P<account>[0-9]{12}):(?P<rest>[\x21-\x7e]{1,1000})"
)
_ASSUMED_ROLE = re.compile(r"assumed-role/(?P<role>[A-Za-z0-9+=,.@_-]{1,128})/[\x21-\x7e]{1,200}")
PRINCIPAL_RULE = (
    "an account id (123456789012), an account's root ARN (arn:aws:iam::123456789012:root), an IAM role ARN "
    "(arn:aws:iam::123456789012:role/NAME) or an IAM user ARN (arn:aws:iam::123456789012:user/NAME)"
)


class PrincipalError(ValueError):
    """A configured principal that is none of the forms PRINCIPAL_RULE names."""


@dataclass(frozen=True)
class Principal:
    """One allowed principal: an account (kind "account"), a role or a user."""

    text: str
    account: str
    kind: str
    partition: str | None = None
    name: str | None = None
    arn: str | None = None

    @classmethod
    def parse(cls, text: object) -> Principal:
        if not isinstance(text, str):
            raise PrincipalError(f"principal {text!r} is not a string: {PRINCIPAL_RULE}")
        if _ACCOUNT.fullmatch(text):
            return cls(text, text, "account")
        match = _IAM_PRINCIPAL.fullmatch(text)
        if match is None:
            raise PrincipalError(f"principal {text!r} is not {PRINCIPAL_RULE}")
        if match["root"]:
            return cls(text, match["account"], "account", match["partition"])
        return cls(text, match["account"], match["kind"], match["partition"], match["name"], text)

    def admits(self, caller: Caller) -> bool:
        if caller.account != self.account or (self.partition and self.partition != caller.partition):
            return False
        if self.kind == "account":
            return True
        if self.kind == "role":
            return caller.role == self.name
        return caller.arn == self.arn


@dataclass(frozen=True)
class Caller:
    """The signed caller of a request, as the function URL's front end names it."""

    arn: str
    account: str
    partition: str
    role: str | None  # the role's name, for a role's session


def caller_of(event: Mapping[str, Any]) -> Caller | None:
    """The caller of a function URL request with AWS_IAM auth (requestContext.authorizer.iam); None when
    the event has no such identity."""
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
    if not isinstance(iam, Mapping):
        return None
    arn = iam.get("userArn")
    if not isinstance(arn, str):
        return None
    match = _CALLER.fullmatch(arn)
    if match is None:
        return None
    assumed = _ASSUMED_ROLE.fullmatch(match["rest"]) if ":sts::" in arn else None
    return Caller(arn, match["account"], match["partition"], assumed["role"] if assumed else None)


@dataclass(frozen=True)
class AccessPolicy:
    """The principals allowed per class of operation."""

    read: tuple[Principal, ...] = ()
    operate: tuple[Principal, ...] = ()
    callbacks: tuple[Principal, ...] = ()
    functions: tuple[Principal, ...] = ()

    @classmethod
    def from_lists(
        cls,
        read: Iterable[object],
        operate: Iterable[object],
        callbacks: Iterable[object],
        functions: Iterable[object] = (),
    ) -> AccessPolicy:
        return cls(
            tuple(map(Principal.parse, read)),
            tuple(map(Principal.parse, operate)),
            tuple(map(Principal.parse, callbacks)),
            tuple(map(Principal.parse, functions)),
        )

    @classmethod
    def from_json(cls, read: str, operate: str, callbacks: str, functions: str = "") -> AccessPolicy:
        """From the environment's JSON lists (an empty text is an empty list)."""
        lists: list[list[object]] = []
        texts = (("read", read), ("operate", operate), ("callbacks", callbacks), ("functions", functions))
        for label, text in texts:
            try:
                value = json.loads(text) if text else []
            except ValueError:
                raise PrincipalError(f"the {label} principals are not a JSON list: {text[:200]!r}") from None
            if not isinstance(value, list):
                raise PrincipalError(f"the {label} principals are not a JSON list: {text[:200]!r}")
            lists.append(value)
        return cls.from_lists(*lists)

    def principals(self, kind: OperationClass) -> tuple[Principal, ...]:
        return {
            OperationClass.READ: self.read,
            OperationClass.OPERATE: self.operate,
            OperationClass.CALLBACKS: self.callbacks,
            OperationClass.FUNCTIONS: self.functions,
        }[kind]

    def check(self, caller: Caller | None, kind: OperationClass, operation: str, resource: str) -> None:
        """AccessDeniedException unless `caller` is one of `kind`'s principals."""
        if caller is None:
            raise ApiError(
                "AccessDeniedException",
                "the request carries no signed caller: this endpoint is a Lambda function URL with AWS_IAM "
                "auth, so sign requests with SigV4 for service lambda (boto3's and the AWS CLI's lambda "
                "client with endpoint_url do)",
            )
        if not any(principal.admits(caller) for principal in self.principals(kind)):
            raise ApiError(
                "AccessDeniedException",
                f"User: {caller.arn} is not authorized to perform: lambda:{operation} on resource: "
                f"{resource} ({_WHO_MAY[kind]})",
            )


# The data plane's principals (OperationClass.FUNCTIONS): the registered durable functions' execution roles.
FUNCTION_PRINCIPALS_ENV = "STEPWELL_API_FUNCTION_PRINCIPALS"
_WHO_MAY = {
    OperationClass.READ: "the module's api_principals.read lists who may",
    OperationClass.OPERATE: "the module's api_principals.operate lists who may",
    OperationClass.CALLBACKS: "the module's api_principals.callbacks lists who may",
    OperationClass.FUNCTIONS: "only the roles of the module's durable_functions may",
}
