"""Upgrading a deployment from before code versions (docs/engine.md, Upgrading from a release before code
versions): its executions were run by an unversioned worker, so nothing pins them and their logs name no
version. Done in two applies (first the release with versions and the workflow code unchanged, which
publishes version 1; then the new code), the reconciler pins them to version 1 and they finish on the code
they started on; new executions run the new code."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from stepwell.core.registry import Registry
from stepwell.core.versions import PRUNE_GRACE_SECONDS, adopt_unversioned
from stepwell.model import ExecutionStatus
from stepwell.wiring.entry import EntryRuntime
from test_versions import V1, V2, _events, _registry
from versioned_stack import REDELIVERY_SECONDS, VersionedStack


def _unversioned_runtime(stack: VersionedStack, registry: Registry) -> EntryRuntime:
    """The worker of a release before code versions: Lambda's $LATEST, which neither pins nor forwards."""
    return EntryRuntime(stack.engine(registry, None))


def _drive(stack: VersionedStack, runtime: EntryRuntime) -> None:
    """Deliver every due message to `runtime` (the old module's mapping invoked the unqualified function)."""
    while (body := stack.queue.pop_due(stack.clock.now())) is not None:
        record = stack.sqs_record(body)
        answer = runtime.handle_sqs_batch([record])
        if answer["batchItemFailures"]:
            stack.queue.enqueue(json.loads(record["body"]), int(REDELIVERY_SECONDS))


def _started_before_versions(stack: VersionedStack) -> tuple[VersionedStack, list[str], str]:
    """Two orders and a stable one that ran on the unversioned worker and wait a day."""
    old = _unversioned_runtime(stack, _registry(*V1))
    orders = [
        old.engine.start_execution("order", {"quantity": quantity}, execution_name=f"old-{quantity}")
        for quantity in (1, 2)
    ]
    stable = old.engine.start_execution("stable", {"name": "ana"}, execution_name="old-stable")
    _drive(stack, old)
    for execution_id in [*orders, stable]:
        record = stack.record(execution_id)
        assert (record.status, record.code_version) == (ExecutionStatus.RUNNING, None)
    return stack, orders, stable


def _result(record: Any) -> Any:
    assert record.status is ExecutionStatus.SUCCEEDED, record.error
    return json.loads(record.result or "null")


def test_upgrading_in_one_apply_replays_the_old_executions_on_the_new_code_and_fails_them() -> None:
    """The failure this path avoids: the first version published holds new code, the executions from
    before are pinned by their next run to it and their logs do not match it."""
    stack, orders, stable = _started_before_versions(VersionedStack())
    stack.publish(_registry(*V2))  # the release with versions and the new workflow code, at once
    # Version 1 takes them on, as it would had it the code they started on.
    assert sorted(stack.live.reconciler.run().adopted_executions) == sorted([*orders, stable])

    records = stack.run_until_ended(orders)

    for record in records:
        assert record.status is ExecutionStatus.FAILED and record.error is not None
        assert str(record.error["ErrorType"]).endswith("NonDeterministicExecutionError")
        assert "the log has STEP 'price'" in str(record.error["ErrorMessage"])


@pytest.mark.parametrize("reconciled", ["between the applies", "after the second apply"])
def test_upgrading_in_two_applies_finishes_the_old_executions_on_the_code_they_started_on(
    reconciled: str,
) -> None:
    stack, orders, stable = _started_before_versions(VersionedStack())

    stack.publish(
        _registry(*V1), keep_versions=1
    )  # first apply: the release with versions, the code unchanged
    if reconciled == "between the applies":
        adopted = stack.live.reconciler.run().adopted_executions
    stack.publish(_registry(*V2), keep_versions=1)  # second apply: the new workflow code, version 2 and live
    if reconciled == "after the second apply":  # before any of them wakes up
        adopted = stack.live.reconciler.run().adopted_executions
    assert sorted(adopted) == sorted([*orders, stable])
    assert sorted(stack.store.list_pinned("1").items) == sorted([*orders, stable])
    new = stack.live.engine.start_execution("order", {"quantity": 2}, execution_name="new")

    # Version 1 stays while they wait, however long after the second apply.
    stack.clock.advance(PRUNE_GRACE_SECONDS + 60)
    assert stack.live.reconciler.run().deleted_versions == []
    records = stack.run_until_ended([*orders, stable, new])

    for record, quantity in zip(records, (1, 2), strict=False):
        assert _result(record) == {"code": "v1", "total": quantity * 100}
        assert record.code_version == "1"
    assert _result(records[2]) == {"code": "v1", "greeting": "hello ana"}
    assert (_result(records[3]), records[3].code_version) == ({"code": "v2", "total": 240}, "2")
    # Not an upgrade: they run on the code they started on, and their next wake-up was forwarded to it.
    assert all(_events(stack, record.execution_id, "ExecutionUpgraded") == [] for record in records)
    assert [version for version, _ in stack.functions.invocations] == ["1", "1", "1"]
    # Once they have ended, version 1 goes as any idle version does.
    assert stack.live.reconciler.run().deleted_versions == ["1"]


def test_only_executions_whose_log_was_written_without_versions_are_pinned_to_version_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack, orders, stable = _started_before_versions(VersionedStack())
    old = _unversioned_runtime(stack, _registry(*V1))
    for execution_id in orders:
        old.engine.stop_execution(execution_id)  # ended before the upgrade
    stack.publish(_registry(*V1))
    pinned = stack.live.engine.start_execution("stable", {"name": "pinned"}, execution_name="pinned")
    stack.drive()
    not_run = stack.live.engine.start_execution("stable", {"name": "later"}, execution_name="not-run")
    # A first run on version 1 whose process died before its pin: its log names version 1 already.
    died = stack.live.engine.start_execution("order", {"quantity": 5}, execution_name="died")
    pin = stack.store.pin_version

    def killed(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the worker's process was killed")

    monkeypatch.setattr(stack.store, "pin_version", killed)
    body = stack.queue.pop_due(stack.clock.now())
    assert body is not None and body["executionId"] == not_run
    stack.queue.enqueue(body, 60)  # not run yet
    stack.drive()
    monkeypatch.setattr(stack.store, "pin_version", pin)
    assert stack.record(died).code_version is None and stack.record(not_run).code_version is None
    stack.publish(_registry(*V2))

    assert adopt_unversioned(stack.store, stack.functions) == [stable]
    assert stack.record(pinned).code_version == "1"
    assert stack.record(not_run).code_version is None and stack.record(died).code_version is None
    assert adopt_unversioned(stack.store, stack.functions) == []  # once only
    assert [stack.record(execution_id).status for execution_id in orders] == [ExecutionStatus.STOPPED] * 2

    # The worker does the rest: the one not run yet starts on the live code, the one that died on version 1.
    stack.clock.advance(60)
    records = stack.run_until_ended([not_run, died, stable])
    assert [record.code_version for record in records] == ["2", "1", "1"]
    assert _result(records[1]) == {"code": "v1", "total": 500}


def test_without_version_1_nothing_is_pinned() -> None:
    stack, _, stable = _started_before_versions(VersionedStack())
    stack.publish(_registry(*V1))
    stack.publish(_registry(*V1))
    stack.functions.delete_version("1")  # deleted by hand: which code it had is unknown

    assert adopt_unversioned(stack.store, stack.functions) == []
    assert stack.record(stable).code_version is None


def test_a_failed_adoption_keeps_every_version_until_the_next_run(caplog: pytest.LogCaptureFixture) -> None:
    stack, _, _ = _started_before_versions(VersionedStack())
    stack.publish(_registry(*V1), keep_versions=1)
    stack.publish(_registry(*V2), keep_versions=1)
    stack.clock.advance(PRUNE_GRACE_SECONDS + 60)

    def throttled(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("throttled")

    listing = stack.store.list_executions
    stack.store.list_executions = throttled  # type: ignore[method-assign]
    caplog.set_level(logging.ERROR, logger="stepwell.features.reconciler")
    report = stack.live.reconciler.run()
    assert (report.adopted_executions, report.deleted_versions) == ([], [])
    assert (
        "pinning executions from before code versions failed (RuntimeError); pruning skipped" in caplog.text
    )

    stack.store.list_executions = listing  # type: ignore[method-assign]
    report = stack.live.reconciler.run()
    assert len(report.adopted_executions) == 3 and report.deleted_versions == []
