"""What every operation of the endpoint works with: the engine, the deployment's ARNs and settings, and
the time this request has left."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from stepwell.core.arns import ArnContext
from stepwell.core.engine import Engine
from stepwell.features.lambda_api.access import AccessPolicy
from stepwell.features.lambda_api.arns import ApiArns
from stepwell.features.lambda_api.tenants import TenantLimits, TenantScope

# How long Invoke's RequestResponse waits for the execution's end at most (Lambda's synchronous limit);
# the function's own timeout bounds it further (ApiSettings.max_wait_seconds, the request's remaining time).
MAX_WAIT_SECONDS = 900.0
# Time kept for answering after a RequestResponse wait, out of the function's remaining time.
ANSWER_MARGIN_SECONDS = 2.0


@dataclass(frozen=True)
class ApiSettings:
    """The deployment's settings the endpoint answers with."""

    arns: ArnContext
    access: AccessPolicy
    # The principals limited to some tenants (STEPWELL_API_TENANT_PRINCIPALS); none by default.
    tenants: TenantLimits = field(default_factory=TenantLimits)
    # The deployment's workflows (the module's workflow_names): Invoke of another is ResourceNotFound.
    # None: not listed, so any valid name is started (the worker fails one it does not have).
    workflows: frozenset[str] | None = None
    retention_days: int = 30
    kms_key_arn: str = ""
    # RequestResponse waits at most this long for the execution to end (besides the time left).
    max_wait_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not 0 <= self.max_wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(
                f"max_wait_seconds must be 0..{MAX_WAIT_SECONDS:.0f}, got {self.max_wait_seconds}"
            )


@dataclass
class ApiContext:
    """One request's view: the engine, the settings, and how to wait (real time in Lambda; a test drives
    its harness instead of sleeping)."""

    engine: Engine
    settings: ApiSettings
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    # Seconds the request has left (the Lambda context's remaining time), None: unbounded.
    remaining_seconds: float | None = None
    started_at: float = field(default=0.0)
    # The tenants the caller reaches, when a tenant-scoped principal admits it (None: every tenant).
    scope: TenantScope | None = None

    @property
    def arns(self) -> ApiArns:
        """The deployment's ARNs, read and written with the API's errors."""
        return ApiArns.of(self.settings.arns)

    def wait_deadline(self) -> float:
        """The monotonic time by which a RequestResponse wait gives up."""
        budget = self.settings.max_wait_seconds
        if self.remaining_seconds is not None:
            budget = min(budget, self.remaining_seconds - ANSWER_MARGIN_SECONDS)
        return self.started_at + max(0.0, budget)
