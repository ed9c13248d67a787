"""The API function's own environment (the module's modules/api sets it), besides the deployment's
StepwellConfig: who may do what (and which principals reach only some tenants), the deployment's
workflows, and how long a RequestResponse invoke waits."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from stepwell.core.registry import WORKFLOW_NAME_PATTERN
from stepwell.features.lambda_api.access import FUNCTION_PRINCIPALS_ENV, AccessPolicy, PrincipalError
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.features.lambda_api.context import MAX_WAIT_SECONDS, ApiSettings
from stepwell.features.lambda_api.tenants import TenantLimits

READ_PRINCIPALS_ENV = "STEPWELL_API_READ_PRINCIPALS"
OPERATE_PRINCIPALS_ENV = "STEPWELL_API_OPERATE_PRINCIPALS"
CALLBACK_PRINCIPALS_ENV = "STEPWELL_API_CALLBACK_PRINCIPALS"
TENANT_PRINCIPALS_ENV = "STEPWELL_API_TENANT_PRINCIPALS"
WORKFLOWS_ENV = "STEPWELL_API_WORKFLOWS"
MAX_WAIT_ENV = "STEPWELL_API_MAX_WAIT_SECONDS"
_SECONDS = re.compile(r"[0-9]{1,4}")


class SettingsError(ValueError):
    """The API function's environment holds a bad value (the message names the variable)."""


def api_settings(
    environ: Mapping[str, str],
    arns: ArnContext,
    retention_days: int,
    kms_key_arn: str,
    *,
    function_roles: Sequence[str] = (),
    durable_workflows: Sequence[str] = (),
) -> ApiSettings:
    """The endpoint's settings from the function's environment and its own ARN's context, with the durable
    functions' execution roles (data plane principals) and workflow names the module's parameter gives
    (stepwell.wiring.build.with_durable_functions_parameter) added to the environment's."""
    try:
        access = AccessPolicy.from_json(
            environ.get(READ_PRINCIPALS_ENV, ""),
            environ.get(OPERATE_PRINCIPALS_ENV, ""),
            environ.get(CALLBACK_PRINCIPALS_ENV, ""),
            _with_roles(environ.get(FUNCTION_PRINCIPALS_ENV, ""), function_roles),
        )
    except PrincipalError as error:
        raise SettingsError(
            f"{READ_PRINCIPALS_ENV}/{OPERATE_PRINCIPALS_ENV}/{CALLBACK_PRINCIPALS_ENV}/"
            f"{FUNCTION_PRINCIPALS_ENV}: {error}"
        ) from None
    try:
        tenants = TenantLimits.from_json(environ.get(TENANT_PRINCIPALS_ENV, ""))
    except PrincipalError as error:
        raise SettingsError(
            f"{TENANT_PRINCIPALS_ENV} must be a JSON object of tenant id -> list of principals: {error}"
        ) from None
    wait = environ.get(MAX_WAIT_ENV, "") or "60"
    if not _SECONDS.fullmatch(wait) or int(wait) > MAX_WAIT_SECONDS:
        raise SettingsError(f"{MAX_WAIT_ENV} must be whole seconds 0..{MAX_WAIT_SECONDS:.0f}, got {wait!r}")
    return ApiSettings(
        arns=arns,
        access=access,
        tenants=tenants,
        workflows=_with_durable(_workflows(environ.get(WORKFLOWS_ENV, "")), durable_workflows),
        retention_days=retention_days,
        kms_key_arn=kms_key_arn,
        max_wait_seconds=float(wait),
    )


def _with_roles(text: str, roles: Sequence[str]) -> str:
    """The function principals' JSON list with `roles` appended (an unparsable text is left to the policy's
    check, which names it)."""
    if not roles:
        return text
    try:
        listed = json.loads(text) if text else []
    except ValueError:
        return text
    if not isinstance(listed, list):
        return text
    return json.dumps([*listed, *(role for role in roles if role not in listed)])


def _with_durable(workflows: frozenset[str] | None, durable: Sequence[str]) -> frozenset[str] | None:
    """The listed workflows and the durable functions' names; None (not checked) stays None."""
    return None if workflows is None else workflows | frozenset(durable)


def _workflows(text: str) -> frozenset[str] | None:
    """The deployment's workflow names (a JSON list); None when the variable is unset or null."""
    if not text:
        return None
    try:
        names = json.loads(text)
    except ValueError:
        raise SettingsError(f"{WORKFLOWS_ENV} is not JSON: {text[:200]!r}") from None
    if names is None:
        return None
    if not isinstance(names, list) or not all(
        isinstance(name, str) and WORKFLOW_NAME_PATTERN.match(name) for name in names
    ):
        raise SettingsError(f"{WORKFLOWS_ENV} must be a JSON list of workflow names, got {text[:200]!r}")
    return frozenset(names)
