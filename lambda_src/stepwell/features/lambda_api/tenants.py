"""Tenant-scoped principals: who reaches only some tenants' executions.

An execution's tenant is its domain (Invoke's X-Amz-Tenant-Id, "default" without one), the first part of
its id and so of its ARN. The function's STEPWELL_API_TENANT_PRINCIPALS (JSON {"<tenant>": ["<principal>",
...]}, principals as access.py reads them; the module sets it) limits each principal listed
to the tenants it is listed under, for whatever classes of operation it has; it grants nothing itself. A
caller more than one listed principal admits (an account and one of its roles, say) reaches only the
tenants every one of them allows: each listing is a limit. A caller no listed principal admits keeps
deployment-wide access.

A limited caller is refused as AWS refuses a caller without permission (AccessDeniedException), and the
refusal never says whether what it named exists: an execution's ARN carries its tenant, so the refusal is
decided before anything is read, the same for another tenant's execution and one that never was; a
callback id carries none, so a limited caller's callback of another tenant and an unknown callback id are
refused alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from stepwell.features.lambda_api.access import Caller, Principal, PrincipalError
from stepwell.features.lambda_api.errors import ApiError
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE

# The model's TenantId pattern; a tenant is an execution's domain too, so also a key part.
TENANT_ID = re.compile(r"[A-Za-z0-9._:/=+@ -]{1,256}")
DEFAULT_TENANT = "default"
MAX_RESOURCE_SHOWN = 300


def is_tenant(text: str) -> bool:
    return bool(TENANT_ID.fullmatch(text) and KEY_PART_PATTERN.match(text))


@dataclass(frozen=True)
class TenantLimits:
    """The tenants each listed principal is limited to."""

    limits: tuple[tuple[Principal, frozenset[str]], ...] = ()

    @classmethod
    def from_json(cls, text: str) -> TenantLimits:
        """From the environment's JSON object (an empty text, null or {}: no principal is limited)."""
        try:
            value = json.loads(text) if text else None
        except ValueError:
            raise PrincipalError(f"not a JSON object: {text[:200]!r}") from None
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise PrincipalError(f"not a JSON object of tenant -> principals: {text[:200]!r}")
        tenants_of: dict[str, set[str]] = {}
        principals: dict[str, Principal] = {}
        for tenant, listed in value.items():
            if not is_tenant(tenant):
                raise PrincipalError(
                    f"tenant {tenant[:300]!r} is no tenant id (an execution's domain, as Invoke's TenantId "
                    f"names it): 1 to 256 of letters, digits and ._:/=+@- and space; {KEY_PART_RULE}"
                )
            if not isinstance(listed, list):
                raise PrincipalError(f"tenant {tenant!r}: its principals are not a JSON list: {listed!r}")
            for entry in listed:
                principal = Principal.parse(entry)
                principals[principal.text] = principal
                tenants_of.setdefault(principal.text, set()).add(tenant)
        return cls(tuple((principals[key], frozenset(tenants_of[key])) for key in sorted(principals)))

    def scope_of(self, caller: Caller | None) -> TenantScope | None:
        """The tenants `caller` is limited to; None: not limited (no listed principal admits it)."""
        if caller is None:
            return None
        admitting = [(principal, tenants) for principal, tenants in self.limits if principal.admits(caller)]
        if not admitting:
            return None
        allowed = frozenset.intersection(*(tenants for _, tenants in admitting))
        return TenantScope(caller.arn, tuple(principal.text for principal, _ in admitting), allowed)


@dataclass(frozen=True)
class TenantScope:
    """One request's limit: the caller, the listed principals that limit it and the tenants it reaches."""

    caller: str
    principals: tuple[str, ...]
    tenants: frozenset[str]

    def allows(self, tenant: str) -> bool:
        return tenant in self.tenants

    def refusal(self, operation: str, resource: str) -> ApiError:
        """AccessDeniedException for `operation` on `resource` (as the caller named it): the same answer
        whether or not what it names exists."""
        if len(resource) > MAX_RESOURCE_SHOWN:
            resource = resource[:MAX_RESOURCE_SHOWN] + "..."
        listed = ", ".join(sorted(self.tenants))
        limited = f"tenants {listed}" if len(self.tenants) > 1 else f"tenant {listed}"
        if not self.tenants:
            limited = "no tenant (its tenant lists have none in common)"
        return ApiError(
            "AccessDeniedException",
            f"User: {self.caller} is not authorized to perform: lambda:{operation} on resource: {resource} "
            f"(principal {' and '.join(self.principals)} is limited to {limited} by the API's tenant "
            "principals, STEPWELL_API_TENANT_PRINCIPALS)",
        )

    def check(self, tenant: str, operation: str, resource: str) -> None:
        if not self.allows(tenant):
            raise self.refusal(operation, resource)
