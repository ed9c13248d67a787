"""pytest fixtures for testing workflows in-process (registered by stepwell.testing.pytest_plugin).

    def test_order(stepwell_local):
        stepwell_local.register("order", order_handler)
        execution_id = stepwell_local.start("order", {"id": 7})
        record = stepwell_local.run_to_completion(execution_id)
        assert record.status.value == "SUCCEEDED"

    def test_approval(stepwell_local):
        stepwell_local.register("approval", approval_handler)
        execution_id = stepwell_local.start("approval", {"order": 7})
        stepwell_local.run_until_idle()  # runs until the workflow waits for its callback
        callback_id = stepwell_local.callback_id(execution_id, "approve")
        stepwell_local.engine.send_callback_success(callback_id, '"yes"')
        assert stepwell_local.run_to_completion(execution_id).status.value == "SUCCEEDED"

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
