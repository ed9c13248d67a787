"""Code versions in the in-process harness (stepwell.testing.local): a user's own upgrade test, as the
deployed worker runs it: executions stay on the version they started on, new ones run the live version,
an explicit upgrade moves one on purpose, and old versions are pruned only once nothing runs on them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.versions import prune_versions
from stepwell.core.worker import Known
from stepwell.errors import ExecutionAlreadyEnded, ForwardFailed, InvalidArgument, VersionNotFound
from stepwell.model import ExecutionStatus, InvokeMessage, OutcomeAction
from stepwell.testing.local import LocalStepwell


@durable_execution
def orders_v1(event: dict[str, Any], context: DurableContext) -> str:
    order = context.step(lambda _: f"order-{event['id']}", name="reserve")
    context.wait(Duration.from_hours(1), name="cooling-off")
    return f"v1 shipped {order}"


@durable_execution
def orders_v2(event: dict[str, Any], context: DurableContext) -> str:
    """v2 renames a step and inserts one before the wait: a v1 log does not replay on it."""
    order = context.step(lambda _: f"order-{event['id']}", name="reserve-stock")
    context.step(lambda _: "checked", name="fraud-check")
    context.wait(Duration.from_hours(1), name="cooling-off")
    return f"v2 shipped {order}"


@durable_execution
def orders_v1_fixed(event: dict[str, Any], context: DurableContext) -> str:
    """A v1-compatible fix: the same operations, another result."""
    order = context.step(lambda _: f"order-{event['id']}", name="reserve")
    context.wait(Duration.from_hours(1), name="cooling-off")
    return f"fixed shipped {order}"


def _result(local: LocalStepwell, execution_id: str) -> Any:
    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    return json.loads(record.result or "null")


def _waiting(local: LocalStepwell, order: int) -> str:
    execution_id = local.start("orders", {"id": order}, execution_name=f"order-{order}")
    local.run_until_idle()
    assert local.record(execution_id).status is ExecutionStatus.RUNNING
    return execution_id


def test_old_executions_finish_on_their_version_and_new_ones_run_the_live_one() -> None:
    local = LocalStepwell()
    assert local.deploy({"orders": orders_v1}) == "1"
    old = _waiting(local, 1)
    assert local.record(old).code_version == "1"

    assert local.deploy({"orders": orders_v2}) == "2"
    new = _waiting(local, 2)
    assert local.record(new).code_version == "2"
    assert local.forwarded == 0

    assert _result(local, old) == "v1 shipped order-1"
    assert _result(local, new) == "v2 shipped order-2"
    # The old execution's wake-up reached the live version first, which handed it to version 1.
    assert local.forwarded == 1
    assert local.describe(old)["Version"] == "1" and local.describe(new)["Version"] == "2"
    assert "ExecutionUpgraded" not in [event["EventType"] for event in local.history(old)]


def test_an_explicit_upgrade_runs_the_execution_on_the_new_code_and_is_recorded() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    moved, stays = _waiting(local, 1), _waiting(local, 2)
    local.deploy({"orders": orders_v1_fixed})

    assert local.engine.upgrade_execution(moved, "live") is True
    assert local.engine.upgrade_execution(moved, "2") is False  # already there
    assert local.record(moved).code_version == "2" and local.record(stays).code_version == "1"
    with pytest.raises(VersionNotFound, match="'7'"):
        local.engine.upgrade_execution(stays, "7")

    assert _result(local, moved) == "fixed shipped order-1"
    assert _result(local, stays) == "v1 shipped order-2"
    upgrades = [event for event in local.history(moved) if event["EventType"] == "ExecutionUpgraded"]
    assert [event["ExecutionUpgradedDetails"] for event in upgrades] == [
        {"FromVersion": "1", "ToVersion": "2"}
    ]
    with pytest.raises(ExecutionAlreadyEnded):
        local.engine.upgrade_execution(moved, "1")


def test_an_old_versions_run_that_read_the_record_before_an_upgrade_leaves_the_execution_to_the_new() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    execution_id = _waiting(local, 1)
    local.deploy({"orders": orders_v1_fixed})
    stale = local.record(execution_id)  # a version 1 worker read it (pinned to "1") before the upgrade
    local.clock.advance_to(local.clock.now() + 3600)  # its wait is over: the next run would end it

    assert local.engine.upgrade_execution(execution_id, "live") is True
    outcome = local.code_version("1").worker.run(execution_id, known=Known(record=stale))

    # It took the lease after the upgrade: the lease tells it, and version 2 runs the execution.
    assert outcome.action is OutcomeAction.FORWARD and outcome.details == {"version": "2"}
    assert local.record(execution_id).status is ExecutionStatus.RUNNING
    assert _result(local, execution_id) == "fixed shipped order-1"


def test_an_upgrade_to_code_that_does_not_match_the_log_fails_the_execution_clearly() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    execution_id = _waiting(local, 1)
    local.deploy({"orders": orders_v2})
    assert local.engine.upgrade_execution(execution_id, "live")

    record = local.run_to_completion(execution_id)
    assert record.status is ExecutionStatus.FAILED
    assert record.error is not None and record.error["ErrorType"].endswith("NonDeterministicExecutionError")
    assert "'reserve'" in record.error["ErrorMessage"] and "'reserve-stock'" in record.error["ErrorMessage"]
    failed = local.history(execution_id)[-1]
    assert failed["EventType"] == "ExecutionFailed"


def test_the_in_memory_versions_list_prune_and_refuse_what_is_in_use() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    waiting = _waiting(local, 1)
    local.deploy()  # the same code again: version 2
    local.deploy()  # version 3, live
    listed = local.functions.list_versions()
    assert [(each.version, each.aliases) for each in listed] == [("1", ()), ("2", ()), ("3", ("live",))]
    assert local.functions.current_version() == "3"

    # Version 1 still runs an execution; 2 runs none and is not among the newest 1.
    assert prune_versions(local.store, local.functions, keep=1) == ["2"]
    assert _result(local, waiting) == "v1 shipped order-1"
    assert prune_versions(local.store, local.functions, keep=1) == ["1"]
    assert [each.version for each in local.functions.list_versions()] == ["3"]
    with pytest.raises(InvalidArgument, match="'live' alias"):
        local.functions.delete_version("3")
    with pytest.raises(VersionNotFound, match="'1'"):
        local.functions.delete_version("1")
    assert local.deploy() == "4"  # numbers are never reused


def test_a_message_pinned_to_a_deleted_version_is_a_clear_forward_failure() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    execution_id = _waiting(local, 1)
    local.deploy()
    local.functions.delete_version("1")  # by hand: prune never deletes a version in use
    with pytest.raises(ForwardFailed, match="no published version '1'") as failure:
        local.run_to_completion(execution_id)
    assert failure.value.version == "1" and failure.value.version_missing
    # It waits for an operator's upgrade, however late: its log no longer expires (stepwell.core.log_expiry).
    assert local.store.batch_expiries(execution_id) and not any(local.store.batch_expiries(execution_id))
    local.clock.advance_to(local.clock.now() + 400 * 86_400)
    assert local.store.remove_expired_batches(local.clock.now()) == 0
    local.engine.upgrade_execution(execution_id, local.live_version)
    assert local.run_to_completion(execution_id).status is ExecutionStatus.SUCCEEDED


def test_invoking_a_version_runs_its_messages_and_reports_those_pinned_elsewhere() -> None:
    local = LocalStepwell()
    local.deploy({"orders": orders_v1})
    execution_id = _waiting(local, 1)
    local.deploy()
    local.advance_to_next_wakeup()
    record = {"messageId": "m-1", "body": json.dumps(InvokeMessage(execution_id).to_body())}

    assert local.functions.invoke("2", {"Records": [record]}) == {
        "batchItemFailures": [{"itemIdentifier": "m-1"}]
    }
    assert local.record(execution_id).status is ExecutionStatus.RUNNING
    assert local.functions.invoke("1", {"Records": [record]}) == {"batchItemFailures": []}
    assert local.record(execution_id).status is ExecutionStatus.SUCCEEDED


def test_without_a_deploy_nothing_is_pinned(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("orders", orders_v1)
    execution_id = _waiting(stepwell_local, 1)
    assert _result(stepwell_local, execution_id) == "v1 shipped order-1"
    assert stepwell_local.record(execution_id).code_version is None
    assert "Version" not in stepwell_local.describe(execution_id)
    assert stepwell_local.functions.list_versions() == [] and stepwell_local.forwarded == 0
