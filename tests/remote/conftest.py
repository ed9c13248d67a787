"""Fixtures of the remote durable functions' tests (tests/remote/harness.py): `execution_store`, the memory
store and the DynamoDB store on moto, as the stores' contract tests run on."""

from tests.contracts.conftest import execution_store

__all__ = ["execution_store"]
