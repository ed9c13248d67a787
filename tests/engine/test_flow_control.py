"""Flow control per key (stepwell.core.flow_control) on the local backend: concurrency limits queue executions
and start them in order as slots free, rate limits delay them to the times a sliding window allows, and
neither loses or doubles a start (crashed holders, stops, timeouts, duplicate messages, children)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell import Concurrency, Rate
from stepwell.core.engine import Engine
from stepwell.core.flow_control import FLOW_LEASE_SECONDS
from stepwell.core.registry import Registry
from stepwell.errors import InvalidArgument
from stepwell.features.reconciler import Reconciler
from stepwell.model import ExecutionQuery, ExecutionStatus, FlowLimit, InvokeMessage, OutcomeAction
from stepwell.testing.local import LocalStepwell, metric_totals

HOLD_SECONDS = 10


@durable_execution
def works_ten_seconds(event: Any, context: DurableContext) -> str:
    context.wait(Duration.from_seconds(HOLD_SECONDS), name="work")
    return "done"


@durable_execution
def quick(event: Any, context: DurableContext) -> str:
    return context.step(lambda _: "done", name="work")


@durable_execution
def waits_for_release(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name="release").result()


@durable_execution
def invokes_limited(event: Any, context: DurableContext) -> Any:
    return context.invoke("limited", event, name="call")


def _history(local: LocalStepwell, execution_id: str) -> list[dict[str, Any]]:
    return local.history(execution_id)


def _event_time(local: LocalStepwell, execution_id: str, event_type: str) -> float:
    for event in local.history(execution_id):
        if event["EventType"] == event_type:
            stamp = event["EventTimestamp"]
            return stamp.timestamp() if isinstance(stamp, datetime) else float(stamp)
    raise AssertionError(f"{execution_id} has no {event_type}")


def _started_at(local: LocalStepwell, execution_id: str) -> float:
    return _event_time(local, execution_id, "ExecutionStarted")


def _ended_at(local: LocalStepwell, execution_id: str) -> float:
    # The terminal event's time: the history keeps milliseconds, as for ExecutionStarted.
    return _event_time(local, execution_id, local.history(execution_id)[-1]["EventType"])


def _event_types(local: LocalStepwell, execution_id: str) -> list[str]:
    return [event["EventType"] for event in local.history(execution_id)]


def _run_all(local: LocalStepwell) -> None:
    while True:
        local.run_until_idle()
        if not local.advance_to_next_wakeup():
            return


def _most_running_at_once(local: LocalStepwell, execution_ids: list[str]) -> int:
    """The most executions between their ExecutionStarted and their end at any moment."""
    edges = []
    for execution_id in execution_ids:
        edges.append((_started_at(local, execution_id), 1))
        edges.append((_ended_at(local, execution_id), -1))
    running = most = 0
    for _, change in sorted(edges):  # an end sorts before a start at the same moment
        running += change
        most = max(most, running)
    return most


def _outcome(local: LocalStepwell, execution_id: str) -> OutcomeAction:
    return next(o.action for o in local.outcomes if o.execution_id == execution_id)


# ---------------------------------------------------------------------------------------------- concurrency


def test_concurrency_two_runs_two_and_starts_the_rest_in_order_as_slots_free(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(2, key="$.tenant"))
    t0 = local.clock.now()
    ids = [local.start("render", {"tenant": "t-1", "n": n}, execution_name=f"r{n}") for n in range(5)]

    local.run_until_idle()

    expected = [OutcomeAction.RAN] * 2 + [OutcomeAction.WAITING] * 3
    assert [_outcome(local, execution_id) for execution_id in ids] == expected
    assert [local.record(execution_id).status for execution_id in ids] == [ExecutionStatus.RUNNING] * 5
    for waiting in ids[2:]:  # nothing is logged before an execution starts
        assert _event_types(local, waiting) == []
    status = local.engine.flow_status("render", key="t-1")
    assert status["concurrency"] == {
        "limit": 2,
        "running": 2,
        "waiting": 3,
        "holders": ids[:2],
        "next": ids[2:],
    }
    assert status["rate"] is None
    assert metric_totals(local.metrics.records, "render")["ExecutionsWaiting"] == 3

    _run_all(local)

    assert all(local.record(execution_id).status is ExecutionStatus.SUCCEEDED for execution_id in ids)
    starts = [_started_at(local, execution_id) - t0 for execution_id in ids]
    assert starts == sorted(starts)  # in their start order
    assert starts[:2] == pytest.approx([0, 0], abs=1)
    assert starts[2:4] == pytest.approx([HOLD_SECONDS, HOLD_SECONDS], abs=1)  # as the first two end
    assert starts[4] == pytest.approx(2 * HOLD_SECONDS, abs=1)
    assert _most_running_at_once(local, ids) == 2
    after = local.engine.flow_status("render", key="t-1")["concurrency"]
    assert (after["running"], after["waiting"], after["holders"], after["next"]) == (0, 0, [], [])


def test_keys_do_not_block_each_other(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(1, key="$.customer.id"))
    t0 = local.clock.now()
    first_a = local.start("render", {"customer": {"id": "a"}})
    only_b = local.start("render", {"customer": {"id": 42}})  # an integer key counts as its digits
    second_a = local.start("render", {"customer": {"id": "a"}})

    _run_all(local)

    assert _started_at(local, first_a) - t0 == pytest.approx(0, abs=1)
    assert _started_at(local, only_b) - t0 == pytest.approx(0, abs=1)
    assert _started_at(local, second_a) - t0 == pytest.approx(HOLD_SECONDS, abs=1)
    assert local.record(only_b).flow == (
        FlowLimit(kind="concurrency", domain="default", workflow="render", key="42", limit=1),
    )


def test_without_a_key_the_whole_workflow_is_one_key(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("nightly", works_ten_seconds, concurrency=Concurrency(1))
    local.register("other", works_ten_seconds, concurrency=Concurrency(1))
    t0 = local.clock.now()
    first = local.start("nightly", {"customer": "a"})
    second = local.start("nightly", {"customer": "b"})
    elsewhere = local.start("other", {})  # another workflow's limit is its own

    _run_all(local)

    assert [_started_at(local, e) - t0 for e in (first, second, elsewhere)] == pytest.approx(
        [0, HOLD_SECONDS, 0], abs=1
    )
    assert local.engine.flow_status("nightly")["concurrency"]["limit"] == 1


# ---------------------------------------------------------------------------------------------- rate


def test_rate_three_per_minute_delays_the_rest_to_the_sliding_window_in_order(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("sync", quick, rate=Rate(3, 60, key="$.account"))
    t0 = local.clock.now()
    ids = [local.start("sync", {"account": "acc-1", "n": n}, execution_name=f"s{n}") for n in range(7)]

    local.run_until_idle()

    expected = [OutcomeAction.FINISHED] * 3 + [OutcomeAction.DELAYED] * 4
    assert [_outcome(local, execution_id) for execution_id in ids] == expected
    reserved = [local.store.get_flow_start(execution_id) or 0.0 for execution_id in ids]
    # Exactly what the window allows: 3 now, then each start 60 s after the start three before it.
    assert reserved[:3] == pytest.approx([t0] * 3, abs=1)
    assert reserved[3:] == [reserved[0] + 60, reserved[1] + 60, reserved[2] + 60, reserved[3] + 60]
    delayed = [o for o in local.outcomes if o.action is OutcomeAction.DELAYED]
    assert [o.next_wake_at for o in delayed] == reserved[3:]
    status = local.engine.flow_status("sync", key="acc-1")
    assert status["concurrency"] is None
    assert status["rate"] == {
        "limit": 3,
        "period": 60,
        "recentStarts": 3,
        "delayed": 3,  # the window keeps the last three starts: 60, 60, 120
        "nextStartAt": reserved[4] + 60,
    }
    assert metric_totals(local.metrics.records, "sync")["ExecutionsDelayed"] == 4

    _run_all(local)

    starts = [_started_at(local, execution_id) for execution_id in ids]
    assert starts == sorted(starts)
    assert [round(s - t0) for s in starts] == [0, 0, 0, 60, 60, 60, 120]
    for execution_id, at in zip(ids, reserved, strict=True):
        assert _started_at(local, execution_id) >= at - 0.001  # history keeps milliseconds
    assert all(local.record(execution_id).status is ExecutionStatus.SUCCEEDED for execution_id in ids)
    # A delayed execution's armed wake-up is gone once it ended.
    for execution_id in ids:
        lease = local.store.acquire_lease(execution_id, "probe", local.clock.now(), 1)
        assert lease is not None and lease.hand_off.wake_at is None


def test_a_start_the_rate_admits_at_once_reserves_the_time_its_history_records(
    stepwell_local: LocalStepwell, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gate runs inside the first run, after its start time is taken: a slow moment in between (a
    # loaded machine, a throttled read) must not put the reservation after the ExecutionStarted it
    # admits, or the window would count from a time nobody started at.
    local = stepwell_local
    local.register("sync", quick, rate=Rate(1, 60))
    limits_of = local.engine.flow_limits

    def slow_limits(record: Any) -> Any:
        local.clock.advance(2)
        return limits_of(record)

    monkeypatch.setattr(local.engine, "flow_limits", slow_limits)
    first, second = (local.start("sync", {"n": n}) for n in range(2))
    _run_all(local)

    started = [_started_at(local, execution_id) for execution_id in (first, second)]
    reserved = [local.store.get_flow_start(execution_id) or 0.0 for execution_id in (first, second)]
    assert started[0] == pytest.approx(reserved[0], abs=0.001)  # history keeps milliseconds
    assert reserved[1] == reserved[0] + 60  # one a minute, counted from the first's start
    assert started[1] >= reserved[1] - 0.001


def test_both_limits_together(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("export", works_ten_seconds, concurrency=Concurrency(1), rate=Rate(2, 60))
    t0 = local.clock.now()
    ids = [local.start("export", {"n": n}) for n in range(3)]

    local.run_until_idle()
    assert [_outcome(local, execution_id) for execution_id in ids] == [
        OutcomeAction.RAN,
        OutcomeAction.WAITING,
        OutcomeAction.DELAYED,
    ]

    _run_all(local)

    # Rate first (two per minute: the third at 60 s), then one at a time (the second after the first).
    assert [round(_started_at(local, e) - t0) for e in ids] == [0, HOLD_SECONDS, 60]
    assert _most_running_at_once(local, ids) == 1


# ---------------------------------------------------------------------------------------------- failures


def test_a_stopped_waiting_execution_is_skipped_and_does_not_hold_its_turn(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(1))
    t0 = local.clock.now()
    _running, stopped, next_one = (local.start("render", {"n": n}) for n in range(3))
    local.run_until_idle()

    assert local.engine.stop_execution(stopped)
    local.run_until_idle()
    assert local.engine.flow_status("render")["concurrency"]["waiting"] == 2  # until its ticket is served
    _run_all(local)

    assert local.record(stopped).status is ExecutionStatus.STOPPED
    assert "InvocationCompleted" not in _event_types(local, stopped)  # its handler never ran
    assert _started_at(local, next_one) - t0 == pytest.approx(HOLD_SECONDS, abs=1)
    assert local.record(next_one).status is ExecutionStatus.SUCCEEDED
    assert local.engine.flow_status("render")["concurrency"]["waiting"] == 0


def _one_holder_one_waiting(local: LocalStepwell) -> tuple[str, str]:
    """An execution holding the one slot of its workflow until released, and one waiting behind it."""
    local.register("approval", waits_for_release, concurrency=Concurrency(1))
    holder = local.start("approval", {"n": 0})
    waiting = local.start("approval", {"n": 1})
    local.run_until_idle()
    return holder, waiting


def test_a_stopped_holder_frees_its_slot(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    holder, waiting = _one_holder_one_waiting(local)
    assert local.engine.flow_status("approval")["concurrency"]["holders"] == [holder]

    local.engine.stop_execution(holder)
    local.run_until_idle()

    assert local.engine.flow_status("approval")["concurrency"]["holders"] == [waiting]
    assert "ExecutionStarted" in _event_types(local, waiting)


def _waiting_behind_a_crashed_holder(local: LocalStepwell) -> str:
    """The holder's worker ended it and died before releasing its slot (its message lost too)."""
    holder, waiting = _one_holder_one_waiting(local)
    assert local.store.complete_execution(holder, ExecutionStatus.FAILED, local.clock.now(), error={})
    return waiting


def test_a_crashed_holder_is_reclaimed_by_the_next_start_once_its_lease_expired(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    waiting = _waiting_behind_a_crashed_holder(local)
    assert _outcome(local, waiting) is OutcomeAction.WAITING  # the lease still trusts the dead holder

    local.clock.advance(FLOW_LEASE_SECONDS + 1)
    newcomer = local.start("approval", {"n": 2})
    local.run_until_idle()

    # The dead holder's slot went to the execution that waited first; the newcomer waits behind it.
    status = local.engine.flow_status("approval")["concurrency"]
    assert (status["holders"], status["next"]) == ([waiting], [newcomer])
    assert "ExecutionStarted" in _event_types(local, waiting)
    assert _outcome(local, newcomer) is OutcomeAction.WAITING


def test_the_reconcilers_sweep_reclaims_a_crashed_holder_without_a_new_start(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    waiting = _waiting_behind_a_crashed_holder(local)
    reconciler = Reconciler(local.store, local.queue, local.clock)

    assert reconciler.run().swept_flow_keys == []  # not due yet: the holder's lease is trusted
    local.clock.advance(FLOW_LEASE_SECONDS + 1)
    report = reconciler.run()
    local.run_until_idle()

    assert report.swept_flow_keys == [
        FlowLimit(kind="concurrency", domain="default", workflow="approval", key="", limit=1).scope
    ]
    assert local.engine.flow_status("approval")["concurrency"]["holders"] == [waiting]
    assert "ExecutionStarted" in _event_types(local, waiting)
    # The queue is empty: the key is no longer swept.
    local.clock.advance(FLOW_LEASE_SECONDS + 1)
    assert reconciler.run().swept_flow_keys == []


def test_a_long_running_holder_keeps_its_slot_when_its_lease_expires(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    holder, waiting = _one_holder_one_waiting(local)
    local.clock.advance(FLOW_LEASE_SECONDS + 1)

    Reconciler(local.store, local.queue, local.clock).run()
    local.run_until_idle()

    status = local.engine.flow_status("approval")["concurrency"]
    assert (status["holders"], status["next"]) == ([holder], [waiting])
    slots = local.store.get_flow_slots(
        FlowLimit(kind="concurrency", domain="default", workflow="approval", key="", limit=1).scope
    )
    assert slots is not None and slots.holders[holder] > local.clock.now()  # renewed


# ---------------------------------------------------------------------------------------------- timeouts


def _shared_key(domain: str, parsed_input: Any) -> tuple[FlowLimit, ...]:
    # Two workflows counted under one key: a resolver decides the limits (as the definitions' does).
    return (FlowLimit(kind="concurrency", domain=domain, workflow="shared", key="", limit=1),)


def test_an_execution_timeout_fires_while_waiting(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("holder", waits_for_release, flow_resolver=_shared_key)
    local.register("impatient", works_ten_seconds, execution_timeout=30, flow_resolver=_shared_key)
    holder = local.start("holder", {})
    impatient = local.start("impatient", {})
    patient = local.start("holder", {"n": 2})
    local.run_until_idle()
    assert _outcome(local, impatient) is OutcomeAction.WAITING
    assert next(o for o in local.outcomes if o.execution_id == impatient).next_wake_at == pytest.approx(
        local.record(impatient).created_at + 30
    )

    local.advance_to_next_wakeup()
    local.run_until_idle()

    record = local.record(impatient)
    assert record.status is ExecutionStatus.TIMED_OUT
    assert record.ended_at == pytest.approx(record.created_at + 30, abs=1)
    assert _event_types(local, impatient) == ["ExecutionStarted", "ExecutionTimedOut"]
    # Its turn is skipped: when the holder ends, the next waiting one starts.
    local.engine.send_callback_success(local.callback_id(holder), "1")
    local.run_until_idle()
    assert local.engine.flow_status("shared")["concurrency"]["holders"] == [patient]


def test_an_execution_timeout_fires_while_delayed(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("hourly", quick, execution_timeout=60, rate=Rate(1, 3600))
    first = local.start("hourly", {})
    delayed = local.start("hourly", {})
    local.run_until_idle()
    outcome = next(o for o in local.outcomes if o.execution_id == delayed)
    created_at = local.record(delayed).created_at
    assert (outcome.action, outcome.next_wake_at) == (OutcomeAction.DELAYED, pytest.approx(created_at + 60))
    assert outcome.details["startAt"] == pytest.approx(_started_at(local, first) + 3600, abs=1)

    _run_all(local)

    record = local.record(delayed)
    assert record.status is ExecutionStatus.TIMED_OUT
    assert record.ended_at == pytest.approx(created_at + 60, abs=1)
    lease = local.store.acquire_lease(delayed, "probe", local.clock.now(), 1)
    assert lease is not None and lease.hand_off.wake_at is None


# ---------------------------------------------------------------------------------------------- duplicates


def test_duplicate_first_messages_take_one_slot_and_start_once(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(1), rate=Rate(5, 60))
    first = local.start("render", {"n": 0})
    for _ in range(2):  # SQS delivered its first message three times
        local.queue.enqueue(InvokeMessage(first).to_body())
    second = local.start("render", {"n": 1})

    local.run_until_idle()

    assert _event_types(local, first).count("ExecutionStarted") == 1
    assert metric_totals(local.metrics.records, "render")["ExecutionsStarted"] == 1
    status = local.engine.flow_status("render")
    assert (status["concurrency"]["holders"], status["concurrency"]["next"]) == ([first], [second])
    assert status["rate"]["recentStarts"] == 2  # one start each, whatever the repeats
    _run_all(local)
    assert local.record(second).status is ExecutionStatus.SUCCEEDED


def test_a_repeated_message_of_a_delayed_execution_keeps_its_reserved_time(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("sync", quick, rate=Rate(1, 60))
    local.start("sync", {"n": 0})
    delayed = local.start("sync", {"n": 1})
    local.run_until_idle()
    reserved = local.store.get_flow_start(delayed)

    outcome = local.process_one(InvokeMessage(delayed).to_body())

    assert (outcome.action, outcome.next_wake_at) == (OutcomeAction.DELAYED, reserved)
    assert local.engine.flow_status("sync")["rate"]["delayed"] == 1
    assert metric_totals(local.metrics.records, "sync")["ExecutionsDelayed"] == 1


# ---------------------------------------------------------------------------------------------- children


def test_a_child_of_context_invoke_waits_for_its_targets_limit(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("limited", waits_for_release, concurrency=Concurrency(1, key="$.customer"))
    local.register("parent", invokes_limited)
    holder = local.start("limited", {"customer": "c-1"})
    parent = local.start("parent", {"customer": "c-1"})
    local.run_until_idle()

    status = local.engine.flow_status("limited", key="c-1")["concurrency"]
    (child,) = status["next"]
    assert local.record(child).parent_execution_id == parent
    assert _event_types(local, child) == []

    local.engine.send_callback_success(local.callback_id(holder), '"first"')
    local.run_until_idle()
    local.engine.send_callback_success(local.callback_id(child), "2")
    record = local.run_to_completion(parent)

    assert record.status is ExecutionStatus.SUCCEEDED
    assert local.record(child).status is ExecutionStatus.SUCCEEDED
    assert _started_at(local, child) >= _ended_at(local, holder)


def test_a_child_whose_key_cannot_be_resolved_fails_the_invoke(stepwell_local: LocalStepwell) -> None:
    local = stepwell_local
    local.register("limited", waits_for_release, concurrency=Concurrency(1, key="$.customer"))
    local.register("parent", invokes_limited)
    parent = local.start("parent", {"no": "customer"})

    record = local.run_to_completion(parent)

    assert record.status is ExecutionStatus.FAILED
    failed = next(e for e in local.history(parent) if e["EventType"] == "ChainedInvokeFailed")
    error = failed["ChainedInvokeFailedDetails"]["Error"]["Payload"]
    assert error["ErrorType"] == "InvalidArgument"
    assert "'$.customer' names nothing in the input" in error["ErrorMessage"]


# ---------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("bad_input", "message"),
    [
        ({"tenant": None}, "the concurrency limit of 'render' key '$.tenant' gave None"),
        ({"other": 1}, "the concurrency limit of 'render' key '$.tenant' names nothing in the input"),
        ({"tenant": ""}, "gave ''"),
        ({"tenant": "x" * 257}, "a string of 1-256 printable characters"),
    ],
)
def test_a_start_whose_key_cannot_be_resolved_is_refused_and_stores_nothing(
    stepwell_local: LocalStepwell, bad_input: Any, message: str
) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(2, key="$.tenant"))

    with pytest.raises(InvalidArgument, match="render") as raised:
        local.start("render", bad_input)

    assert message in str(raised.value)
    assert local.store.list_executions(ExecutionQuery(workflow_id="render")).items == []
    assert len(local.queue) == 0
    assert "create_execution" not in local.store.counters


def test_a_start_without_the_code_is_limited_by_the_workers_registration(
    stepwell_local: LocalStepwell,
) -> None:
    local = stepwell_local
    local.register("render", works_ten_seconds, concurrency=Concurrency(1, key="$.tenant"))

    class AnyName(Registry):  # a client's registry: it has no workflow code, so it knows no limits
        def __contains__(self, name: object) -> bool:
            return isinstance(name, str)

    client = Engine(local.store, local.queue, local.queue, local.payloads, local.clock, registry=AnyName())
    first = client.start_execution("render", {"tenant": "t"})
    second = client.start_execution("render", {"tenant": "t"})
    keyless = client.start_execution("render", {"no": "tenant"})
    assert local.record(first).flow == ()

    local.run_until_idle()

    assert local.engine.flow_status("render", key="t")["concurrency"]["next"] == [second]
    failed = local.record(keyless)
    assert failed.status is ExecutionStatus.FAILED
    assert failed.error is not None and failed.error["ErrorType"] == "stepwell.errors.InvalidArgument"
    assert "names nothing in the input" in failed.error["ErrorMessage"]
    _run_all(local)
    assert local.record(second).status is ExecutionStatus.SUCCEEDED


def test_flow_status_refuses_bad_arguments_naming_them(stepwell_local: LocalStepwell) -> None:
    engine = stepwell_local.engine
    with pytest.raises(InvalidArgument, match="invalid domain 'bad domain'"):
        engine.flow_status("render", domain="bad domain")
    with pytest.raises(InvalidArgument, match=r"invalid key .*at most 256 printable"):
        engine.flow_status("render", key="k" * 257)
    with pytest.raises(InvalidArgument, match="invalid workflow ''"):
        engine.flow_status("")
    # A key nothing has used yet has no state.
    assert engine.flow_status("render", key="never") == {
        "workflow": "render",
        "domain": "default",
        "key": "never",
        "concurrency": None,
        "rate": None,
    }
