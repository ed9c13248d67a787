"""One Stepwell deployment inside moto's in-process mock, for the adapter tests (the builder lives in
stepwell.testing.mock_deployment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepwell.aws.clients import AwsClients
from stepwell.aws.dynamodb_store import DynamoDbExecutionStore
from stepwell.config import StepwellConfig
from stepwell.testing.mock_deployment import NAME, REGION, SUBJECT_INDEX, create_deployment

__all__ = ["NAME", "REGION", "SUBJECT_INDEX", "Deployment", "create_deployment"]


@dataclass
class Deployment:
    config: StepwellConfig
    clients: AwsClients

    def execution_store(self, **options: Any) -> DynamoDbExecutionStore:
        """The engine's store on this deployment's tables (no payload bucket unless `payloads=` names one;
        `options` are DynamoDbExecutionStore's keyword arguments)."""
        config = self.config
        return DynamoDbExecutionStore(
            self.clients.dynamodb,
            executions_table=config.executions_table,
            operations_table=config.operations_table,
            coordination_table=config.coordination_table,
            subject_index=config.subject_index_name,
            **options,
        )
