"""The store every contract test runs on: `execution_store` is the memory store, then the DynamoDB store on
moto's in-process tables (stepwell.testing.mock_deployment), so each test runs on both."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws
from moto.dynamodb.responses import DynamoHandler
from stepwell.aws.clients import AwsClients
from stepwell.aws.dynamodb_store import DynamoDbExecutionStore
from stepwell.aws.dynamodb_store.shards import IndexShards
from stepwell.aws.payloads import S3PayloadStore
from stepwell.memory.store import MemoryExecutionStore
from stepwell.ports import ExecutionStore
from stepwell.testing.mock_deployment import REGION, create_deployment

# The sharded store's index shards: writers spread over 3, readers read 4, so one shard is always empty.
SHARDED = IndexShards(write=3, read=4)


@pytest.fixture(params=["memory", "dynamodb"])
def execution_store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ExecutionStore]:
    if request.param == "memory":
        yield MemoryExecutionStore()
        return
    yield from _dynamodb_store(monkeypatch, IndexShards())


@pytest.fixture(params=["memory", "dynamodb-sharded"])
def sharded_store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ExecutionStore]:
    """The memory store, then the DynamoDB store with its index key values over SHARDED's shards: the
    listings must give the same orders and pages."""
    if request.param == "memory":
        yield MemoryExecutionStore()
        return
    yield from _dynamodb_store(monkeypatch, SHARDED)


def _dynamodb_store(monkeypatch: pytest.MonkeyPatch, shards: IndexShards) -> Iterator[ExecutionStore]:
    # Fake credentials, so nothing can reach a real account.
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    # DynamoDB applies a conditional write atomically; moto in-process checks and writes in two steps, so
    # threads racing on one item could both pass the check. One request at a time, as DynamoDB serialises
    # writes to an item: the racing contract tests then prove the conditions, not moto's locking.
    serial = threading.Lock()
    call_action = DynamoHandler.call_action

    def one_at_a_time(handler: DynamoHandler) -> Any:
        with serial:
            return call_action(handler)

    monkeypatch.setattr(DynamoHandler, "call_action", one_at_a_time)
    with mock_aws():
        config = create_deployment()
        clients = AwsClients(region=REGION)
        yield DynamoDbExecutionStore(
            clients.dynamodb,
            executions_table=config.executions_table,
            operations_table=config.operations_table,
            coordination_table=config.coordination_table,
            subject_index=config.subject_index_name,
            payloads=S3PayloadStore(clients.s3, config.payload_bucket),
            index_shards=shards,
        )
