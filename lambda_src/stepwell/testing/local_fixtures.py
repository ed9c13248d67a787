"""pytest fixtures for testing workflows in-process (registered by stepwell.testing.pytest_plugin).

    def test_order(stepwell_local):
        stepwell_local.register("order", order_handler)
        execution_id = stepwell_local.start("order", {"id": 7})
        record = stepwell_local.run_to_completion(execution_id)
        assert record.status.value == "SUCCEEDED"

Each test gets a fresh engine over an empty memory store, with its own registry and virtual clock.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stepwell.testing.local import LocalStepwell

__all__ = ["stepwell_local"]


@pytest.fixture
def stepwell_local() -> Iterator[LocalStepwell]:
    """An in-process Stepwell (memory store, virtual clock) for one test."""
    yield LocalStepwell()
