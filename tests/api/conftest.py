"""The durable execution API in-process: the engine on the local harness (LocalStepwell), the endpoint's
handler, and an AWS_IAM function URL front end (tests/api/iam_url_front.py) that boto3's own `lambda`
client, signed as one of the principals below, talks to."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from botocore.config import Config
from stepwell.core.registry import Registry
from stepwell.features.lambda_api.access import AccessPolicy, Principal
from stepwell.features.lambda_api.arns import ArnContext
from stepwell.features.lambda_api.context import ApiSettings
from stepwell.features.lambda_api.handler import LambdaApiHandler
from stepwell.testing.local import LocalStepwell

from tests.api.iam_url_front import IamFunctionUrlFront, Identity
from tests.engine import workflows

REGION = "us-east-1"
ACCOUNT = "123456789012"
ARNS = ArnContext("aws", REGION, ACCOUNT)
OPERATOR_ROLE = f"arn:aws:iam::{ACCOUNT}:role/stepwell-operator"
READER_ROLE = f"arn:aws:iam::{ACCOUNT}:role/teams/stepwell-reader"
SENDER_USER = f"arn:aws:iam::{ACCOUNT}:user/partners/payment-provider"
OPERATOR = Identity(
    "AKIAOPERATOR00000001",
    "operator-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/stepwell-operator/alice",
    ACCOUNT,
    "AROAOPERATOR:alice",
    "operator-session-token",
)
READER = Identity(
    "AKIAREADER0000000001",
    "reader-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/stepwell-reader/bob",
    ACCOUNT,
    "AROAREADER:bob",
    "reader-session-token",
)
SENDER = Identity("AKIASENDER0000000001", "sender-secret", SENDER_USER, ACCOUNT, "AIDASENDER")
# Signs correctly, but no principal list (nor the resource policy) names it.
STRANGER = Identity(
    "AKIASTRANGER00000001",
    "stranger-secret",
    f"arn:aws:sts::{ACCOUNT}:assumed-role/someone-else/eve",
    ACCOUNT,
    "AROASTRANGER:eve",
    "stranger-session-token",
)
ACCESS = AccessPolicy.from_lists(
    read=[OPERATOR_ROLE, READER_ROLE],
    operate=[OPERATOR_ROLE],
    callbacks=[OPERATOR_ROLE, SENDER_USER],
    # tests/remote's functions sign as the operator: its role is also the registered functions' role there.
    functions=[OPERATOR_ROLE],
)
WORKFLOWS = {
    "greet": workflows.greet,
    "approval": workflows.approval,
    "three_day_wait": workflows.three_day_wait,
    "failing": workflows.failing_child,
    "invoker": workflows.invoker,
    "doubler": workflows.doubler,
}
# A refused call is final: no retries to slow the refusal tests down.
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 1}, read_timeout=60)


def resource_policy(access: AccessPolicy) -> list[Principal]:
    """What the module's resource policy names: every principal of every class."""
    return [*access.read, *access.operate, *access.callbacks]


@dataclass
class ApiStack:
    local: LocalStepwell
    handler: LambdaApiHandler
    front: IamFunctionUrlFront

    def client(self, identity: Identity = OPERATOR) -> Any:
        self.front.register(identity)
        return boto3.client(
            "lambda",
            endpoint_url=self.front.url,
            region_name=REGION,
            config=CLIENT_CONFIG,
            **identity.client_kwargs(),
        )


def api_stack(
    settings: ApiSettings | None = None,
    workflows_listed: bool = True,
    max_wait_seconds: float = 5.0,
    versions: int = 0,
) -> ApiStack:
    """The endpoint on a local harness; `versions`: how many code versions to publish first (0: the code
    is unversioned)."""
    registry = Registry()
    for name, handler in WORKFLOWS.items():
        registry.register(name, handler)
    local = LocalStepwell(registry)
    for _ in range(versions):
        local.deploy()
    settings = settings or ApiSettings(
        arns=ARNS,
        access=ACCESS,
        workflows=frozenset(WORKFLOWS) if workflows_listed else None,
        retention_days=30,
        max_wait_seconds=max_wait_seconds,
    )
    # RequestResponse waits: instead of sleeping, the harness runs what is due (its clock stays put).
    handler = LambdaApiHandler(local.engine, settings, sleep=lambda seconds: local.run_until_idle() and None)
    front = IamFunctionUrlFront(
        lambda event: handler.handle(event, 60.0), REGION, lambda: resource_policy(settings.access)
    )
    return ApiStack(local, handler, front)


@pytest.fixture
def stack() -> Iterator[ApiStack]:
    built = api_stack()
    yield built
    built.front.close()
