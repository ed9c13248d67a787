"""IAM enforcement for the harness's moto server (``start_moto_server(enforce_iam=True)``).

moto authenticates and authorizes requests once ``INITIAL_NO_AUTH_ACTION_COUNT`` requests have been
served (an environment variable of the server process; unset, every request is free). Its own
evaluation is too coarse for the module's least-privilege policies: it names the resource of a request
only for SQS queues, S3 buckets and objects, IAM roles and STS AssumeRole, and asks every other service
(DynamoDB, Lambda, EventBridge, Scheduler, Logs) about ``"*"``, which a statement naming a table or a
bus never matches; it passes condition values only to trust policies; it raises a server error for a
trust policy with a ``Service`` principal; and its signature check refuses valid Lambda and Scheduler
requests (REST paths). So, in this mode only, the server keeps moto's authentication (an access key of
an IAM user, or an STS session's key with its session token) and replaces the authorization:

- each request becomes one or more checks ``(action, resource ARN, condition keys)``: DynamoDB per table
  (and index), per table of a batch and per item of a transaction with the item action IAM uses for it;
  EventBridge PutEvents per entry (its bus, ``events:source``, ``events:detail-type``); Lambda per
  function ARN with its qualifier (``Invoke`` is ``lambda:InvokeFunction``); Scheduler per schedule ARN
  plus ``iam:PassRole`` of the target's role (``iam:PassedToService``); S3 per object or bucket (with
  ``s3:prefix`` for a listing, and ``s3:GetObject`` of a copy's source); SQS, IAM and STS as moto names
  them;
- the caller's identity policies (a user's inline, attached and group policies; an assumed role's inline
  and attached policies) decide: an explicit Deny wins, else some Allow must match the action, the
  resource and every condition (StringEquals/Like, ArnEquals/Like, Bool, Null, their negations and
  ...IfExists; any other operator is unmet, so a grant it guards shows up as a refusal, not a pass);
- sts:AssumeRole also needs the role's trust policy to name the caller: an AWS principal (``*``, the
  account, the caller's ARN), or a ``Service`` principal, which the harness plays as an IAM user of that
  name (``lambda.amazonaws.com`` assumes the functions' roles, as Lambda does).

Not evaluated (docs/security.md lists them): resource-based policies (bucket, queue, Lambda permissions,
KMS key policies), permissions boundaries, SCPs and session policies, signatures, global condition keys
(``aws:SourceArn``, ``aws:SecureTransport``, ...), and requests the harness serves itself (Invoke through
the local Lambda runtime, schedules fired by ``stepwell.testing.scheduler``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

SERVICE_PRINCIPALS = ("lambda.amazonaws.com", "scheduler.amazonaws.com")

# Lambda's API operation names whose IAM action is named otherwise.
_LAMBDA_ACTIONS = {
    "Invoke": "InvokeFunction",
    "InvokeAsync": "InvokeFunction",
    "InvokeWithResponseStream": "InvokeFunctionWithResponseStream",
}
# DynamoDB transaction items are authorized as these item actions (there is no TransactWriteItems action).
_TRANSACT_ITEM_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
# S3's API operations whose IAM action is named otherwise (a copy also reads its source: _s3_checks).
_S3_ACTIONS = {
    "ListObjectsV2": "ListBucket",
    "ListObjects": "ListBucket",
    "HeadBucket": "ListBucket",
    "HeadObject": "GetObject",
    "CopyObject": "PutObject",
    "DeleteObjects": "DeleteObject",
    "CreateMultipartUpload": "PutObject",
    "UploadPart": "PutObject",
    "CompleteMultipartUpload": "PutObject",
    "ListObjectVersions": "ListBucketVersions",
}
_JSON_SERVICES = ("dynamodb", "events", "lambda", "scheduler", "logs", "kms", "sqs", "ssm")


@dataclass(frozen=True)
class Check:
    """One authorization question: may the caller do ``action`` on ``resource`` in ``context``?"""

    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)


def _glob(pattern: str, value: str, ignore_case: bool = False) -> bool:
    """IAM's wildcard match (``*`` any run, ``?`` one character; nothing else is special)."""
    regex = "^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$"
    return re.match(regex, value, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL) is not None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _condition_met(operator: str, expected: list[str], value: str) -> bool | None:
    """None: an operator this evaluator does not know."""
    if operator == "StringEquals":
        return value in expected
    if operator == "StringNotEquals":
        return value not in expected
    if operator == "StringEqualsIgnoreCase":
        return value.lower() in [item.lower() for item in expected]
    if operator in ("StringLike", "ArnLike", "ArnEquals"):
        return any(_glob(pattern, value) for pattern in expected)
    if operator in ("StringNotLike", "ArnNotLike", "ArnNotEquals"):
        return not any(_glob(pattern, value) for pattern in expected)
    if operator == "Bool":
        return value.lower() in [str(item).lower() for item in expected]
    return None


def conditions_met(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    """Every condition of a statement, as IAM evaluates it for single-valued keys: a key the request does
    not carry fails its condition, except with ``...IfExists`` and ``Null``."""
    lowered = {key.lower(): value for key, value in context.items()}
    for raw_operator, block in conditions.items():
        if_exists = raw_operator.endswith("IfExists")
        operator = raw_operator[: -len("IfExists")] if if_exists else raw_operator
        for key, raw_expected in block.items():
            expected = [str(item) for item in _as_list(raw_expected)]
            value = lowered.get(key.lower())
            if operator == "Null":
                if (value is None) != (expected[0].lower() == "true"):
                    return False
                continue
            if value is None:
                if if_exists:
                    continue
                return False
            if not _condition_met(operator, expected, value):
                return False  # unmet, or an operator not evaluated here (treated as unmet)
    return True


def _statement_matches(statement: Mapping[str, Any], check: Check) -> bool:
    if "Action" in statement:
        if not any(_glob(p, check.action, ignore_case=True) for p in _as_list(statement["Action"])):
            return False
    elif any(_glob(p, check.action, ignore_case=True) for p in _as_list(statement.get("NotAction", []))):
        return False
    if "Resource" in statement:
        if not any(_glob(p, check.resource) for p in _as_list(statement["Resource"])):
            return False
    elif any(_glob(p, check.resource) for p in _as_list(statement.get("NotResource", []))):
        return False
    return conditions_met(statement.get("Condition") or {}, check.context)


def decide(documents: Iterable[Mapping[str, Any]], check: Check) -> bool:
    """Identity policies' answer: an explicit Deny wins, else an Allow must match."""
    allowed = False
    for document in documents:
        for statement in _as_list(document.get("Statement", [])):
            if not _statement_matches(statement, check):
                continue
            if statement.get("Effect") == "Deny":
                return False
            allowed = True
    return allowed


def _principal_matches(principal: Any, caller_arn: str, account_id: str) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, Mapping):
        return False
    for value in _as_list(principal.get("AWS", [])):
        if value in ("*", caller_arn, account_id, f"arn:aws:iam::{account_id}:root"):
            return True
    # A service principal: the harness plays the service as an IAM user of the service's name.
    return any(caller_arn.endswith(f":user/{service}") for service in _as_list(principal.get("Service", [])))


def trusts(trust_policy: Mapping[str, Any], caller_arn: str, account_id: str) -> bool:
    """The role's trust policy lets the caller assume it (Deny statements and conditions included)."""
    check = Check("sts:AssumeRole", "*")
    allowed = False
    for statement in _as_list(trust_policy.get("Statement", [])):
        if not any(_glob(p, check.action, ignore_case=True) for p in _as_list(statement.get("Action", []))):
            continue
        if not _principal_matches(statement.get("Principal"), caller_arn, account_id):
            continue
        if not conditions_met(statement.get("Condition") or {}, {}):
            continue
        if statement.get("Effect") == "Deny":
            return False
        allowed = True
    return allowed


# -- requests to checks ------------------------------------------------------------------------------


def _json_body(handler: Any) -> dict[str, Any]:
    # Some handlers hold the body parsed already (DynamoDB), others as text or bytes.
    for candidate in (getattr(handler, "body", None), getattr(handler, "raw_body", None)):
        if isinstance(candidate, dict):
            return candidate
    try:
        body = json.loads(getattr(handler, "raw_body", None) or handler.body or "{}")
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


def _table_arn(region: str, account: str, table: str) -> str:
    return table if table.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{table}"


def _dynamodb_checks(action: str, body: dict[str, Any], region: str, account: str) -> list[Check]:
    if action in ("BatchGetItem", "BatchWriteItem"):
        tables = sorted(body.get("RequestItems", {}))
        return [Check(f"dynamodb:{action}", _table_arn(region, account, t)) for t in tables]
    if action in ("TransactWriteItems", "TransactGetItems"):
        checks = []
        for item in body.get("TransactItems", []):
            for kind, operation in item.items():
                table = _table_arn(region, account, str(operation.get("TableName", "")))
                checks.append(Check(f"dynamodb:{_TRANSACT_ITEM_ACTIONS.get(kind, kind)}", table))
        return checks
    named = body.get("TableName") or body.get("ResourceArn")
    if not named:
        return [Check(f"dynamodb:{action}", "*")]
    resource = _table_arn(region, account, str(named))
    if body.get("IndexName"):
        resource += f"/index/{body['IndexName']}"
    return [Check(f"dynamodb:{action}", resource)]


def _events_checks(action: str, body: dict[str, Any], region: str, account: str) -> list[Check]:
    if action != "PutEvents":
        name = str(body.get("EventBusName") or body.get("Name") or "")
        if not name:
            return [Check(f"events:{action}", "*")]
        bus = name if name.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{name}"
        return [Check(f"events:{action}", bus)]
    checks = []
    for entry in body.get("Entries", []):
        name = str(entry.get("EventBusName") or "default")
        bus = name if name.startswith("arn:") else f"arn:aws:events:{region}:{account}:event-bus/{name}"
        context = {
            "events:source": str(entry.get("Source", "")),
            "events:detail-type": str(entry.get("DetailType", "")),
        }
        checks.append(Check("events:PutEvents", bus, context))
    return checks


def _lambda_checks(handler: Any, action: str, region: str, account: str) -> list[Check]:
    iam_action = f"lambda:{_LAMBDA_ACTIONS.get(action, action)}"
    uri = getattr(handler, "uri_match", None) or {}
    name = unquote(str(uri.get("FunctionName") or ""))
    if not name:
        return [Check(iam_action, "*")]
    arn = name if name.startswith("arn:") else f"arn:aws:lambda:{region}:{account}:function:{name}"
    qualifier = (handler.querystring.get("Qualifier") or [None])[0]
    if qualifier and arn.count(":") == 6:
        arn += f":{qualifier}"
    return [Check(iam_action, arn)]


def _scheduler_checks(handler: Any, action: str, region: str, account: str) -> list[Check]:
    uri = getattr(handler, "uri_match", None) or {}
    name = unquote(str(uri.get("Name") or ""))
    body = _json_body(handler)
    prefix = f"arn:aws:scheduler:{region}:{account}"
    if not name:
        return [Check(f"scheduler:{action}", "*")]
    if "ScheduleGroup" in action:
        return [Check(f"scheduler:{action}", f"{prefix}:schedule-group/{name}")]
    group = body.get("GroupName") or (handler.querystring.get("groupName") or ["default"])[0]
    checks = [Check(f"scheduler:{action}", f"{prefix}:schedule/{group}/{name}")]
    role = (body.get("Target") or {}).get("RoleArn")
    if action in ("CreateSchedule", "UpdateSchedule") and role:
        # Scheduler's role is passed to the service: iam:PassRole with iam:PassedToService.
        checks.append(Check("iam:PassRole", str(role), {"iam:PassedToService": "scheduler.amazonaws.com"}))
    return checks


def _logs_checks(action: str, body: dict[str, Any], region: str, account: str) -> list[Check]:
    group = body.get("logGroupName")
    if not group:
        return [Check(f"logs:{action}", "*")]
    resource = f"arn:aws:logs:{region}:{account}:log-group:{group}"
    stream = body.get("logStreamName")
    return [Check(f"logs:{action}", f"{resource}:log-stream:{stream}" if stream else f"{resource}:*")]


def _ssm_checks(action: str, body: dict[str, Any], region: str, account: str) -> list[Check]:
    # A parameter's ARN holds its name without the leading '/' of a path name.
    names = [body["Name"]] if isinstance(body.get("Name"), str) else body.get("Names") or []
    if not names:
        return [Check(f"ssm:{action}", "*")]
    return [
        Check(f"ssm:{action}", f"arn:aws:ssm:{region}:{account}:parameter/{str(name).lstrip('/')}")
        for name in names
    ]


def _s3_checks(handler: Any, action: str, resource: str) -> list[Check]:
    action = _S3_ACTIONS.get(action, action)
    context: dict[str, str] = {}
    prefix = (handler.querystring.get("prefix") or [None])[0] if hasattr(handler, "querystring") else None
    if prefix is not None:
        context["s3:prefix"] = prefix
    checks = [Check(f"s3:{action}", resource, context)]
    source = handler.headers.get("x-amz-copy-source") if hasattr(handler, "headers") else None
    if source:
        # A copy reads its source as s3:GetObject.
        path = unquote(source.split("?", 1)[0]).lstrip("/")
        checks.append(Check("s3:GetObject", f"arn:aws:s3:::{path}"))
    return checks


def request_checks(
    handler: Any, service: str, action: str, resource: str, *, region: str, account: str
) -> list[Check]:
    """What one request needs allowed (see the module docstring)."""
    if service == "dynamodb":
        return _dynamodb_checks(action, _json_body(handler), region, account)
    if service == "events":
        return _events_checks(action, _json_body(handler), region, account)
    if service == "lambda":
        return _lambda_checks(handler, action, region, account)
    if service == "scheduler":
        return _scheduler_checks(handler, action, region, account)
    if service == "logs":
        return _logs_checks(action, _json_body(handler), region, account)
    if service == "s3":
        return _s3_checks(handler, action, resource)
    if service == "ssm":
        return _ssm_checks(action, _json_body(handler), region, account)
    return [Check(f"{service}:{action}", resource)]


# -- installing it into moto -------------------------------------------------------------------------


def _policy_documents(policies: Iterable[Any]) -> list[dict[str, Any]]:
    from moto.iam.access_control import IAMPolicy

    return [IAMPolicy(policy)._policy_json for policy in policies]


def _denied(handler: Any, iam_request: Any, *, service: str, caller: str, check: Check) -> None:
    message = (
        f"User: {caller} is not authorized to perform: {check.action} on resource: {check.resource} "
        "because no identity-based policy allows the action (stepwell.testing.moto_iam)"
    )
    if service in _JSON_SERVICES:
        from moto.core.exceptions import JsonRESTError

        raise JsonRESTError("AccessDeniedException", message)
    iam_request._raise_access_denied()


def install() -> None:
    """Replace moto's authorization (after its free requests) with the checks above."""
    from moto import settings
    from moto.core.authorization import ActionAuthenticatorMixin
    from moto.iam.models import iam_backends

    def authenticate_and_authorize(self: Any, iam_request_cls: type, resource: str = "*") -> None:
        if ActionAuthenticatorMixin.request_count < settings.INITIAL_NO_AUTH_ACTION_COUNT:
            ActionAuthenticatorMixin.request_count += 1
            return
        if self.headers.get("X-Amz-Target") in ActionAuthenticatorMixin.PUBLIC_OPERATIONS:
            return
        action = self._get_action()
        # Authenticates: an unknown key, or a session key without its token, is refused here.
        iam_request = iam_request_cls(
            account_id=self.current_account,
            method=self.method,
            path=self.raw_path,
            data=self.data,
            body=self.raw_body,
            headers=self.headers,
            action=action,
        )
        service = iam_request._service
        region = iam_request._region
        account = self.current_account
        caller = iam_request._access_key.arn
        iam_action = iam_request._action.split(":", 1)[1]
        if iam_request._action == "sts:GetCallerIdentity":
            return  # always allowed, as in AWS
        documents = _policy_documents(iam_request._access_key.collect_policies())
        for check in request_checks(self, service, iam_action, resource, region=region, account=account):
            if not decide(documents, check):
                _denied(self, iam_request, service=service, caller=caller, check=check)
            if check.action == "sts:AssumeRole":
                role = iam_backends[account]["aws"].get_role_by_arn(check.resource)
                if not trusts(json.loads(role.assume_role_policy_document), caller, account):
                    _denied(self, iam_request, service=service, caller=caller, check=check)

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_and_authorize  # type: ignore[method-assign]
