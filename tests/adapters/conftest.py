"""Fixtures for the AWS adapter tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws
from stepwell.aws.clients import AwsClients

from .deployment import REGION, Deployment, create_deployment


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials so nothing can reach a real account."""
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)


@pytest.fixture
def deployment(aws_credentials: None) -> Iterator[Deployment]:
    with mock_aws():
        config = create_deployment()
        yield Deployment(config=config, clients=AwsClients(region=REGION))
