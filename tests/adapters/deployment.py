"""One Stepwell deployment inside moto's in-process mock, for the adapter tests (the builder lives in
stepwell.testing.mock_deployment)."""

from __future__ import annotations

from dataclasses import dataclass

from stepwell.aws import AwsClients
from stepwell.config import StepwellConfig
from stepwell.testing.mock_deployment import NAME, REGION, SUBJECT_INDEX, create_deployment

__all__ = ["NAME", "REGION", "SUBJECT_INDEX", "Deployment", "create_deployment"]


@dataclass
class Deployment:
    config: StepwellConfig
    clients: AwsClients
