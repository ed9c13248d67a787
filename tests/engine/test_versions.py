"""Code versions in-process: executions pinned to the version they started on, forwarding between the
worker's versions, upgrades, a replay that disagrees with its log, and pruning of old versions."""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.history import format_timeline
from stepwell.core.registry import Registry
from stepwell.core.versions import PRUNE_GRACE_SECONDS, prune_grace_seconds, prune_versions, running_version
from stepwell.core.worker import Worker
from stepwell.errors import ExecutionAlreadyEnded, InvalidArgument, VersionNotFound
from stepwell.model import ExecutionStatus, InvokeMessage, OutcomeAction
from stepwell.wiring.entry import FORWARDED_FROM
from versioned_stack import VersionedStack

DAY = 86400


def _order(code: str, steps: tuple[str, ...]) -> Any:
    """An order workflow: the named steps (each adds quantity * its weight), a day's wait, a result."""
    weights = {"price": 100, "subtotal": 100, "tax": 20}

    @durable_execution
    def order(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
        total = 0
        for name in steps:

            def amount(_: StepContext, name: str = name) -> int:
                return int(event["quantity"]) * weights[name]

            total += context.step(amount, name=name)
        context.wait(Duration.from_days(1))
        return {"code": code, "total": total}

    return order


def _stable(code: str) -> Any:
    @durable_execution
    def stable(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
        greeting = context.step(lambda _: f"hello {event['name']}", name="greet")
        context.wait(Duration.from_days(1))
        return {"code": code, "greeting": greeting}

    return stable


def _parent(code: str) -> Any:
    @durable_execution
    def parent(event: Any, context: DurableContext) -> dict[str, Any]:
        child = context.invoke("stable", {"name": "kid"}, name="child")
        return {"code": code, "child": child}

    return parent


def _registry(code: str, order_steps: tuple[str, ...]) -> Registry:
    registry = Registry()
    registry.register("order", _order(code, order_steps))
    registry.register("stable", _stable(code))
    registry.register("parent", _parent(code))
    return registry


V1 = ("v1", ("price",))
V2 = ("v2", ("subtotal", "tax"))  # the step renamed and a step inserted before the wait
V3 = ("v3", ("price", "tax"))  # only a step inserted before the wait


@pytest.fixture
def stack() -> VersionedStack:
    stack = VersionedStack()
    stack.publish(_registry(*V1))
    return stack


def _events(stack: VersionedStack, execution_id: str, event_type: str) -> list[dict[str, Any]]:
    history = stack.live.engine.get_execution_history(execution_id)
    return [event for event in history if event["EventType"] == event_type]


def test_the_first_run_pins_an_execution_and_its_children_start_on_its_version(stack: VersionedStack) -> None:
    engine = stack.live.engine
    parent = engine.start_execution("parent", None, execution_name="p")
    assert stack.record(parent).code_version is None  # created unpinned: its first run pins it

    body = stack.queue.pop_due(stack.clock.now())
    assert body is not None
    stack.live.handle_sqs_batch([stack.sqs_record(body)])

    assert stack.record(parent).code_version == "1"
    children = [execution_id for execution_id in stack.store.list_pinned("1").items if execution_id != parent]
    assert len(children) == 1 and stack.record(children[0]).parent_execution_id == parent
    assert stack.store.counters.get("pin_version") == 1  # the child was created pinned: no extra write
    assert engine.describe_execution(parent)["Version"] == "1"
    # Its journal names the version it ran on (no upgrade event on a first run).
    assert _events(stack, parent, "ExecutionUpgraded") == []


def test_an_execution_that_ends_in_its_first_run_is_pinned_by_its_end_alone(stack: VersionedStack) -> None:
    registry = _registry(*V1)

    @durable_execution
    def quick(event: Any, context: DurableContext) -> int:
        return int(context.step(lambda _: 2 * int(event), name="double"))

    registry.register("quick", quick)
    stack.publish(registry)  # version 2
    engine = stack.live.engine
    execution_id = engine.start_execution("quick", 21, execution_name="q")
    waiting = engine.start_execution("stable", {"name": "w"}, execution_name="w")

    stack.drive()

    record = stack.record(execution_id)
    assert (record.status, record.result, record.code_version) == (ExecutionStatus.SUCCEEDED, "42", "2")
    assert engine.describe_execution(execution_id)["Version"] == "2"
    # One write for the ended one (its end names the version); the one that waits is pinned as its run ends.
    assert stack.store.counters.get("pin_version") == 1
    assert stack.record(waiting).code_version == "2"
    assert stack.store.list_pinned("2").items == [waiting]


def test_a_first_run_that_died_before_its_pin_goes_on_on_the_version_that_wrote_its_log(
    stack: VersionedStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 1's first run writes the log, then its process dies before the pin is stored; a deploy
    follows. The redelivered message reaches version 2, which must not replay version 1's log on its own
    code (V2 renamed the step): it pins the execution to version 1 and forwards the message there."""
    execution_id = stack.live.engine.start_execution("order", {"quantity": 3}, execution_name="died")
    pin = stack.store.pin_version

    def killed(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the worker's process was killed")

    monkeypatch.setattr(stack.store, "pin_version", killed)
    stack.drive()  # the failed message comes back after REDELIVERY_SECONDS
    monkeypatch.setattr(stack.store, "pin_version", pin)
    assert stack.record(execution_id).code_version is None
    assert _events(stack, execution_id, "StepSucceeded")  # its log was written on version 1

    stack.publish(_registry(*V2))
    (record,) = stack.run_until_ended([execution_id])

    assert (record.status, record.code_version) == (ExecutionStatus.SUCCEEDED, "1")
    assert json.loads(record.result or "null") == {"code": "v1", "total": 300}
    assert _events(stack, execution_id, "ExecutionUpgraded") == []
    assert [version for version, _ in stack.functions.invocations][:1] == ["1"]  # forwarded by version 2


def test_a_deploy_leaves_waiting_executions_on_their_version_and_new_ones_run_the_new_code(
    stack: VersionedStack,
) -> None:
    old = [
        stack.live.engine.start_execution("order", {"quantity": q}, execution_name=f"old-{q}") for q in (1, 2)
    ]
    stack.drive()
    assert [stack.record(execution_id).code_version for execution_id in old] == ["1", "1"]

    stack.publish(_registry(*V2))
    new = stack.live.engine.start_execution("order", {"quantity": 2}, execution_name="new")
    stack.drive()
    stack.clock.advance(DAY + 1)  # both old wake-ups due together: they arrive in one batch
    records = stack.run_until_ended([*old, new])

    assert [json.loads(record.result or "null") for record in records] == [
        {"code": "v1", "total": 100},
        {"code": "v1", "total": 200},
        {"code": "v2", "total": 240},
    ]
    assert [record.code_version for record in records] == ["1", "1", "2"]
    # The two old executions' wake-ups arrived in one batch: one invoke of version 1 ran both.
    forwards = [event for version, event in stack.functions.invocations if version == "1"]
    assert len(forwards) == 1 and forwards[0][FORWARDED_FROM] == "2"
    assert len(forwards[0]["Records"]) == 2
    assert stack.store.count_pinned("1") == 0


def test_an_upgrade_moves_a_waiting_execution_to_the_new_code_and_the_history_records_it(
    stack: VersionedStack,
) -> None:
    execution_id = stack.live.engine.start_execution("stable", {"name": "bo"}, execution_name="bo")
    stack.drive()
    stack.publish(_registry(*V2))
    engine = stack.live.engine

    assert engine.upgrade_execution(execution_id, "live") is True
    assert engine.upgrade_execution(execution_id, "2") is False  # already there
    assert stack.record(execution_id).code_version == "2"
    stack.drive()  # the upgrade's message: version 2 replays the log now, before the wait ends
    upgraded = _events(stack, execution_id, "ExecutionUpgraded")
    assert [event["ExecutionUpgradedDetails"] for event in upgraded] == [
        {"FromVersion": "1", "ToVersion": "2"}
    ]
    assert "version 1 -> 2" in format_timeline(engine.get_execution_history(execution_id))

    (record,) = stack.run_until_ended([execution_id])
    assert json.loads(record.result or "null") == {"code": "v2", "greeting": "hello bo"}
    assert engine.describe_execution(execution_id)["Version"] == "2"
    assert len(_events(stack, execution_id, "ExecutionUpgraded")) == 1


def test_an_upgrade_refuses_unpublished_versions_and_ended_executions(stack: VersionedStack) -> None:
    engine = stack.live.engine
    execution_id = engine.start_execution("stable", {"name": "al"}, execution_name="al")
    stack.drive()

    with pytest.raises(VersionNotFound, match=r"'7' is not published; published: 1 \(live\)"):
        engine.upgrade_execution(execution_id, "7")
    with pytest.raises(InvalidArgument, match="invalid version ''"):
        engine.upgrade_execution(execution_id, "")
    assert stack.record(execution_id).code_version == "1"

    engine.stop_execution(execution_id)
    with pytest.raises(ExecutionAlreadyEnded, match="has ended \\(STOPPED\\)"):
        engine.upgrade_execution(execution_id, "1")

    unversioned = stack.engine(Registry(), None)
    unversioned.functions = None
    with pytest.raises(InvalidArgument, match="no worker function versions configured"):
        unversioned.upgrade_execution(execution_id, "1")


@pytest.mark.parametrize(
    ("code", "logged", "found"),
    [
        (V2, "the log has STEP 'price'", "has STEP 'subtotal'"),  # renamed: the names differ
        (V3, "the log has WAIT (unnamed)", "has STEP 'tax'"),  # inserted: the types differ
    ],
)
def test_a_replay_that_disagrees_with_the_log_fails_naming_the_operation(
    stack: VersionedStack, code: tuple[str, tuple[str, ...]], logged: str, found: str
) -> None:
    execution_id = stack.live.engine.start_execution("order", {"quantity": 3}, execution_name="forced")
    stack.drive()
    stack.publish(_registry(*code))
    stack.live.engine.upgrade_execution(execution_id, "live")

    (record,) = stack.run_until_ended([execution_id])

    assert record.status is ExecutionStatus.FAILED
    error = record.error or {}
    assert error["ErrorType"].endswith("NonDeterministicExecutionError")  # the SDK's type, kept
    message = error["ErrorMessage"]
    assert logged in message and f"the code on worker version 2 {found}" in message, message
    operation_id = message.split("at operation '")[1].split("'")[0]
    assert f"id={operation_id!r}" in message  # the SDK's own words are kept after ours
    (failed,) = _events(stack, execution_id, "ExecutionFailed")
    assert failed["ExecutionFailedDetails"]["Error"]["Payload"] == error


def test_a_forwarded_batch_is_never_forwarded_again(stack: VersionedStack) -> None:
    execution_id = stack.live.engine.start_execution("stable", {"name": "cy"}, execution_name="cy")
    stack.drive()
    stack.publish(_registry(*V2))
    record = stack.sqs_record(InvokeMessage(execution_id).to_body())

    # Version 2 got an event that version 1 forwarded (as if the alias had moved in between).
    answer = stack.live.handle_event({"Records": [record], FORWARDED_FROM: "1"})

    assert answer == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert stack.functions.invocations == []


def test_the_forwarded_answer_decides_each_record_and_a_missing_version_fails_its_group(
    stack: VersionedStack, caplog: pytest.LogCaptureFixture
) -> None:
    engine = stack.live.engine
    ids = [engine.start_execution("stable", {"name": n}, execution_name=n) for n in ("a", "b")]
    stack.drive()
    stack.publish(_registry(*V2))
    records = [stack.sqs_record(InvokeMessage(execution_id).to_body()) for execution_id in ids]
    local = stack.sqs_record({"kind": "reconcile"})

    stack.functions.canned["1"] = {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    answer = stack.live.handle_sqs_batch([records[0], local, records[1]])
    assert answer == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    assert [version for version, _ in stack.functions.invocations] == ["1"]

    stack.functions.canned["1"] = {"unexpected": True}
    answer = stack.live.handle_sqs_batch(records)
    assert len(answer["batchItemFailures"]) == 2

    del stack.functions.runtimes["1"]
    caplog.set_level(logging.ERROR, logger="stepwell.wiring.entry")
    answer = stack.live.handle_sqs_batch(records)
    assert {item["itemIdentifier"] for item in answer["batchItemFailures"]} == {
        r["messageId"] for r in records
    }
    assert "version 1 no longer exists" in caplog.text and "stepwell executions upgrade" in caplog.text
    assert "hello" not in caplog.text and '"name"' not in caplog.text  # no payloads in logs


def test_a_wake_up_for_a_version_that_is_gone_keeps_its_executions_log(stack: VersionedStack) -> None:
    """The execution waits for an operator's upgrade, however late: its log must not expire meanwhile
    (stepwell.core.log_expiry), though its wake-up came well within the log's safe window."""
    engine = stack.live.engine
    execution_id = engine.start_execution("stable", {"name": "a"}, execution_name="a")
    stack.drive()
    expiries = stack.store.batch_expiries(execution_id)
    assert expiries and all(at is not None for at in expiries)  # a day's wait: not kept when it suspended
    stack.publish(_registry(*V2))
    del stack.functions.runtimes["1"]

    record = stack.sqs_record(InvokeMessage(execution_id).to_body())
    assert stack.live.handle_sqs_batch([record]) == {
        "batchItemFailures": [{"itemIdentifier": record["messageId"]}]
    }

    assert stack.store.batch_expiries(execution_id) == [None] * len(expiries)
    assert stack.store.remove_expired_batches(stack.clock.now() + 400 * DAY) == 0


def test_a_direct_invoke_of_an_execution_pinned_elsewhere_is_run_by_its_version(
    stack: VersionedStack,
) -> None:
    """A long wake-up Scheduler invokes on the alias: forwarded with one synchronous invoke, as a batch is."""
    execution_id = stack.live.engine.start_execution("stable", {"name": "di"}, execution_name="di")
    stack.drive()
    stack.publish(_registry(*V2))
    stack.clock.advance(DAY + 1)
    body = InvokeMessage(execution_id, due_at=stack.clock.now()).to_body()

    answer = stack.live.handle_event(body)

    assert answer == {"kind": "invoke", "action": "forwarded", "executionId": execution_id}
    assert stack.functions.invocations == [("1", {**body, FORWARDED_FROM: "2"})]
    record = stack.record(execution_id)
    assert (record.status, record.code_version) == (ExecutionStatus.SUCCEEDED, "1")
    assert json.loads(record.result or "")["code"] == V1[0]


@pytest.mark.parametrize("why", ["forwarded already", "version gone"])
def test_a_direct_invoke_that_cannot_be_forwarded_goes_back_to_the_queue(
    stack: VersionedStack, why: str
) -> None:
    execution_id = stack.live.engine.start_execution("stable", {"name": "dq"}, execution_name="dq")
    stack.drive()
    stack.publish(_registry(*V2))
    body = InvokeMessage(execution_id).to_body()
    if why == "version gone":
        del stack.functions.runtimes["1"]
        event = body
    else:
        event = {**body, FORWARDED_FROM: "1"}  # as if the alias had moved in between

    answer = stack.live.handle_event(event)

    assert answer == {"kind": "invoke", "action": "requeued", "executionId": execution_id}
    # The queue gets the body alone: its worker forwards it as a message (or leaves it to the DLQ).
    assert stack.queue.pop_due(stack.clock.now()) == body
    assert [version for version, _ in stack.functions.invocations] == (
        [] if why == "forwarded already" else ["1"]
    )
    assert stack.record(execution_id).status is ExecutionStatus.RUNNING


def test_an_unversioned_worker_neither_pins_nor_forwards(stack: VersionedStack) -> None:
    pinned = stack.live.engine.start_execution("stable", {"name": "un"}, execution_name="un")
    stack.drive()
    unversioned = Worker(stack.engine(_registry(*V1), None))
    fresh = unversioned.engine.start_execution("stable", {"name": "fr"}, execution_name="fr")

    assert unversioned.run(fresh).action is OutcomeAction.RAN
    assert stack.record(fresh).code_version is None
    stack.clock.advance(DAY + 1)
    assert unversioned.run(pinned).action is OutcomeAction.FINISHED  # pinned to 1, run here all the same
    assert running_version({"AWS_LAMBDA_FUNCTION_VERSION": "$LATEST"}) is None
    assert running_version({}) is None and running_version({"AWS_LAMBDA_FUNCTION_VERSION": "4"}) == "4"


def test_pruning_deletes_only_old_unaliased_versions_nothing_runs_on(stack: VersionedStack) -> None:
    engine = stack.live.engine
    waiting = engine.start_execution("stable", {"name": "w"}, execution_name="w")  # pinned to 1
    stack.drive()
    for code in (V2, V2, V2, V2):
        stack.publish(_registry(*code))  # versions 2..5, the alias on 5
    stack.functions.alias_version = "4"  # a deploy of 5 in progress: the alias still on 4
    functions = stack.functions

    # Kept: the newest three (3, 4, 5) and 1 (an execution is pinned to it); deleted: 2.
    assert prune_versions(stack.store, functions, keep=3) == ["2"]
    assert sorted(functions.runtimes, key=int) == ["1", "3", "4", "5"]
    # Kept: 4 (the alias's), 5 (the newest, and newer than the alias's), 1 (pinned); deleted: 3.
    assert prune_versions(stack.store, functions, keep=1) == ["3"]

    stack.functions.alias_version = "5"
    engine.stop_execution(waiting)
    assert prune_versions(stack.store, functions, keep=1) == ["1", "4"]
    assert prune_versions(stack.store, functions, keep=1) == []
    stack.functions.alias_version = None  # no alias: which code is live is unknown, nothing goes
    assert prune_versions(stack.store, functions, keep=1) == []
    with pytest.raises(InvalidArgument, match="keep must be a whole number of versions, at least 1"):
        prune_versions(stack.store, functions, keep=0)


def test_the_reconciler_prunes_and_a_pruning_failure_does_not_stop_it(
    stack: VersionedStack, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):
        stack.publish(_registry(*V2), keep_versions=1)

    # Right after a deploy an invocation of an old version may still run (and pin): none goes yet.
    assert stack.live.reconciler.run().deleted_versions == []
    stack.clock.advance(PRUNE_GRACE_SECONDS - 60)
    assert stack.live.reconciler.run().deleted_versions == []
    stack.clock.advance(120)
    report = stack.live.reconciler.run()
    assert report.deleted_versions == ["1", "2", "3"]

    def broken(*args: Any) -> None:
        raise RuntimeError("throttled")

    # Version 4 may go (its successor was published a grace ago) but its deletion fails.
    stack.publish(_registry(*V2), keep_versions=1)
    stack.clock.advance(PRUNE_GRACE_SECONDS + 60)
    stack.functions.delete_version = broken  # type: ignore[method-assign]
    caplog.set_level(logging.ERROR, logger="stepwell.features.reconciler")
    report = stack.live.reconciler.run()
    assert report.deleted_versions == [] and "pruning worker versions failed (RuntimeError)" in caplog.text


def test_a_work_queue_with_a_long_visibility_timeout_lengthens_the_grace_before_a_version_goes(
    stack: VersionedStack,
) -> None:
    """A first run killed before its pin comes back once the queue's visibility timeout runs out, and its
    retry pins the execution to the version its log names: with a 4-hour timeout (the module allows 12),
    that version stays past the two hours the default grace gives, until the retry has had its run."""
    visibility = 4 * 3600
    grace = prune_grace_seconds(visibility)
    assert prune_grace_seconds(0) == prune_grace_seconds(5400) == PRUNE_GRACE_SECONDS  # the module's default
    assert grace == visibility + 1800
    for _ in range(3):
        stack.publish(_registry(*V2), keep_versions=1, prune_grace=grace)

    stack.clock.advance(PRUNE_GRACE_SECONDS + 60)
    assert stack.live.reconciler.run().deleted_versions == []  # a killed first run's retry may yet come
    stack.clock.advance(visibility + 1800 - PRUNE_GRACE_SECONDS)
    assert stack.live.reconciler.run().deleted_versions == ["1", "2", "3"]


CALLBACKS: dict[str, str] = {}


def _approval(code: str) -> Any:
    @durable_execution
    def approval(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
        def submit(callback_id: str, _: Any) -> None:
            CALLBACKS[event["name"]] = callback_id

        answer = context.wait_for_callback(submit, name="approve")
        return {"code": code, "answer": answer}

    return approval


def test_a_callback_of_an_execution_pinned_to_another_version_is_also_written_as_an_input(
    stack: VersionedStack,
) -> None:
    """Code of an older engine may read callback results only from inputs: a sender of another version
    (or none: the client, the callbacks function) writes both when the callback's record does not say
    that a run of the execution's version created it (code that reads results from records); its own
    version, or a callback its version's run created, only the record."""
    CALLBACKS.clear()
    registry_v1 = Registry()
    registry_v1.register("approval", _approval("v1"))
    stack.publish(registry_v1)  # version 2 runs the approvals started now
    old = stack.live.engine.start_execution("approval", {"name": "old"}, execution_name="old")
    stack.drive()
    registry_v2 = Registry()
    registry_v2.register("approval", _approval("v2"))
    stack.publish(registry_v2)  # version 3
    new = stack.live.engine.start_execution("approval", {"name": "new"}, execution_name="new")
    stack.drive()
    assert (stack.record(old).code_version, stack.record(new).code_version) == ("2", "3")

    def inputs_written() -> int:
        return stack.store.counters.get("put_external_input", 0)

    old_ref = stack.store.get_callback(CALLBACKS["old"])
    assert old_ref is not None and old_ref.version == "2"  # created by version 2's run
    # As an engine before results on callback records wrote it: no version (written over in place, as
    # put_callback keeps a record that exists).
    stack.store._callbacks[old_ref.callback_id] = dataclasses.replace(old_ref, version=None)
    before = inputs_written()
    stack.live.engine.send_callback_success(CALLBACKS["new"], '"yes"')  # its own version: the record only
    assert inputs_written() == before
    stack.live.engine.send_callback_success(CALLBACKS["old"], '"ok"')  # pinned to version 2
    assert inputs_written() == before + 1
    records = stack.run_until_ended([old, new])
    assert [json.loads(record.result or "null") for record in records] == [
        {"code": "v1", "answer": '"ok"'},  # the result text, the same through either path
        {"code": "v2", "answer": '"yes"'},
    ]
    assert stack.store.list_external_inputs(old) == []  # absorbed once (the record's copy was a no-op)
    assert len(_events(stack, old, "CallbackSucceeded")) == 1


def test_a_callback_created_by_its_versions_run_is_completed_with_one_write_from_anywhere(
    stack: VersionedStack,
) -> None:
    """A callback whose record says the execution's own version created it (code that reads results from
    records) gets no input copy from a sender of another version or of none (the client)."""
    CALLBACKS.clear()
    registry_v1 = Registry()
    registry_v1.register("approval", _approval("v1"))
    stack.publish(registry_v1)
    old = stack.live.engine.start_execution("approval", {"name": "old"}, execution_name="old")
    stack.drive()
    registry_v2 = Registry()
    registry_v2.register("approval", _approval("v2"))
    stack.publish(registry_v2)  # the execution stays on version 2
    before = stack.store.counters.get("put_external_input", 0)
    client = dataclasses.replace(stack.live.engine, code_version=None)  # a sender of no version
    client.send_callback_success(CALLBACKS["old"], '"ok"')
    assert stack.store.counters.get("put_external_input", 0) == before
    (record,) = stack.run_until_ended([old])
    assert json.loads(record.result or "null") == {"code": "v1", "answer": '"ok"'}
    assert len(_events(stack, old, "CallbackSucceeded")) == 1
