"""pytest fixtures for testing workflows in-process (registered by stepwell.testing.pytest_plugin).

    def test_order(stepwell_local):
        stepwell_local.register("order", order_handler)
        execution_id = stepwell_local.start("order", {"id": 7})
        record = stepwell_local.run_to_completion(execution_id)
        assert record.status.value == "SUCCEEDED"

    def test_approval(stepwell_local):
        stepwell_local.register("approval", approval_handler)
        execution_id = stepwell_local.start("approval", {"order": 7})
        # Handles what is due now, never moving the clock: with no step retrying on a delay before the
        # callback, the callback is open when it returns (else see run_to_completion's on_idle).
        stepwell_local.run_until_idle()
        callback_id = stepwell_local.callback_id(execution_id, "approve")
        stepwell_local.engine.send_callback_success(callback_id, '"yes"')
        assert stepwell_local.run_to_completion(execution_id).status.value == "SUCCEEDED"

    def test_a_deploy_keeps_waiting_orders_on_their_code(stepwell_local):
        stepwell_local.deploy({"order": order_v1})  # version "1", live
        waiting = stepwell_local.start("order", {"id": 7})
        stepwell_local.run_until_idle()  # it waits, pinned to version "1"
        stepwell_local.deploy({"order": order_v2})  # version "2", live: new executions run v2
        assert json.loads(stepwell_local.run_to_completion(waiting).result) == v1_result
        assert stepwell_local.forwarded == 1  # its wake-up went to version "1"

Each test gets a fresh engine over an empty memory store, with its own registry and virtual clock; until
`deploy` is called its code is unversioned (see stepwell.testing.local).
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
