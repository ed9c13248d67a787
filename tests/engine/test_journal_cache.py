"""The journal cache: a warm worker folds only the log items written since its last run of an execution,
and what it holds is always exactly what folding the whole log gives."""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.lambda_service import (
    CallbackOptions,
    OperationAction,
    OperationStatus,
    OperationType,
    OperationUpdate,
    WaitOptions,
)
from stepwell.core.arns import as_handed, execution_id_of
from stepwell.core.engine import Engine
from stepwell.core.journal import Journal, decode_body, encode_body
from stepwell.core.journal_cache import (
    FoldedLog,
    JournalCache,
    JournalCacheOptions,
    copy_journal,
    default_max_bytes,
)
from stepwell.core.worker import Worker
from stepwell.errors import InvalidArgument, SequenceConflict
from stepwell.model import Batch, ExecutionStatus, ExternalInput, InputKind, InvokeMessage, OutcomeAction
from stepwell.testing.local import LocalStepwell

CYCLES = 12
NOW = 1_800_000_000.0


@durable_execution
def cycles(event: Any, context: DurableContext) -> int:
    """Step-and-wait cycles: each wake-up runs one more step and starts one more hour's wait."""
    total = 0
    for index in range(event["cycles"]):
        total += context.step(lambda _, index=index: index + len(event.get("pad", "")), name=f"step-{index}")
        context.wait(Duration.from_hours(1), name=f"wait-{index}")
    return total


def cold(engine: Engine) -> Engine:
    """The same engine without a cache: every load folds the whole log."""
    return dataclasses.replace(engine, journals=JournalCache(JournalCacheOptions(enabled=False)))


def comparable(journal: Journal) -> dict[str, Any]:
    """A journal's state: every field but the engine's callback and the timer heap's tie-break counter
    (which only orders timers of the same due time, in push order either way)."""
    state = {
        f.name: getattr(journal, f.name)
        for f in dataclasses.fields(journal)
        if f.name not in ("describe_invoke", "_timer_counter", "_timers")
    }
    state["_timers"] = sorted((due, op, kind) for due, _, op, kind in journal._timers)
    return state


def fresh_fold(engine: Engine, execution_id: str) -> Journal:
    return cold(engine).load_journal(execution_id)


def cached_state(engine: Engine, execution_id: str) -> dict[str, Any] | None:
    """The cached journal as a load would start from it, put back unchanged."""
    entry = engine.journals.take(execution_id)
    if entry is None:
        return None
    engine.journals.put(execution_id, entry)
    journal = dataclasses.replace(entry.journal)
    journal.finish_loading()
    return comparable(journal)


class CountingLoads:
    """Wraps the store's load_batches: (after_seq, batches returned) per call."""

    def __init__(self, local: LocalStepwell) -> None:
        self.calls: list[tuple[int, int]] = []
        original = local.store.load_batches

        def load_batches(
            execution_id: str,
            after_seq: int = -1,
            limit: int = 1000,
            inputs: list[ExternalInput] | None = None,
        ) -> tuple[list[Batch], int | None]:
            batches, last = original(execution_id, after_seq, limit, inputs)
            self.calls.append((after_seq, len(batches)))
            return batches, last

        local.store.load_batches = load_batches  # type: ignore[method-assign]

    @property
    def items(self) -> int:
        return sum(count for _, count in self.calls)


def run_cycles(local: LocalStepwell, execution_id: str, each: Callable[[], None] = lambda: None) -> None:
    """Run the execution to its end one message at a time, calling `each` after every message."""
    for _ in range(10 * CYCLES):
        local.run_until_idle()
        each()
        if local.record(execution_id).status is not ExecutionStatus.RUNNING:
            return
        assert local.advance_to_next_wakeup()
    raise AssertionError("the execution did not end")


def start_and_resume(local: LocalStepwell, resumes: int) -> str:
    """Start an execution of `cycles` and run its first message and `resumes` wake-ups (its fold is then
    cached)."""
    execution_id = local.start("cycles", {"cycles": CYCLES})
    local.run_until_idle()
    for _ in range(resumes):
        assert local.advance_to_next_wakeup()
        local.run_until_idle()
    assert cached_state(local.engine, execution_id) is not None
    return execution_id


@pytest.mark.parametrize("inline_limit", [None, 64], ids=["inline", "offloaded"])
def test_a_warm_workers_journal_equals_a_fresh_fold_after_every_resume(inline_limit: int | None) -> None:
    local = LocalStepwell(inline_limit=inline_limit)
    local.register("cycles", cycles)
    execution_id = local.start("cycles", {"cycles": CYCLES, "pad": "p" * 100})
    checked = 0

    def compare() -> None:
        nonlocal checked
        state = cached_state(local.engine, execution_id)
        # Kept after every run while it runs, but the first with an offloaded input: folding the batch
        # that refers to it would read it back, so the next load reads the whole log once.
        first_with_a_reference = inline_limit is not None and checked == 0
        if local.record(execution_id).status is ExecutionStatus.RUNNING and not first_with_a_reference:
            assert state is not None
            assert state == comparable(fresh_fold(local.engine, execution_id))
        checked += 1

    run_cycles(local, execution_id, compare)

    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    assert checked == CYCLES + 1
    assert len(local.engine.journals) == 0  # an ended execution is not kept


def test_a_warm_worker_reads_only_its_last_batch_and_the_ones_after_it() -> None:
    local = LocalStepwell()
    local.register("cycles", cycles)
    loads = CountingLoads(local)
    execution_id = local.start("cycles", {"cycles": CYCLES})
    seen: list[tuple[int, int]] = []

    def note() -> None:
        seen.extend(loads.calls)
        loads.calls.clear()

    run_cycles(local, execution_id, note)

    # The first run reads nothing (its log is empty: Lease.never_held); every resume reads from the batch
    # its fold ended with: that batch, and nothing newer (this worker wrote everything since).
    resumes = seen
    assert len(resumes) == CYCLES
    assert all(count == 1 for _, count in resumes)
    assert [after for after, _ in resumes] == sorted(after for after, _ in resumes)

    colder = LocalStepwell()
    colder.register("cycles", cycles)
    colder.engine.journals = JournalCache(JournalCacheOptions(enabled=False))
    cold_loads = CountingLoads(colder)
    cold_id = colder.start("cycles", {"cycles": CYCLES})
    run_cycles(colder, cold_id)
    assert colder.describe(cold_id)["Result"] == local.describe(execution_id)["Result"]
    assert cold_loads.items > 5 * sum(count for _, count in seen)  # the whole log, on every resume


def test_the_sdk_replays_the_same_operations_a_fresh_fold_gives() -> None:
    local = LocalStepwell()
    replays: list[bool] = []

    @functools.wraps(cycles)  # a wrapper of a durable handler (the registry checks it)
    def checked(invocation_input: Any, lambda_context: Any) -> Any:
        # What the log holds, and what changed since (a wait that ended) as the SDK is told: the EXECUTION
        # operation under the ARN's last segment (stepwell.core.arns.as_handed).
        arn = invocation_input.durable_execution_arn
        stored = fresh_fold(local.engine, execution_id_of(arn)).operations.values()
        folded = {op.operation_id: op for op in as_handed(stored, execution_id=execution_id_of(arn), arn=arn)}
        given = {op.operation_id: op for op in invocation_input.initial_execution_state.operations}
        changed = set(invocation_input.updated_operation_ids)
        replays.append(
            [op_id for op_id in given if op_id in folded] == list(folded)
            and all(given[op_id] == op for op_id, op in folded.items() if op_id not in changed)
            and set(given) - set(folded) <= changed
            and len(changed) <= 1
        )
        return cycles(invocation_input, lambda_context)

    local.register("cycles", checked)
    execution_id = local.start("cycles", {"cycles": CYCLES})
    run_cycles(local, execution_id)

    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    assert len(replays) == CYCLES + 1 and all(replays)


def test_batches_another_worker_wrote_are_folded_on_top_of_the_cached_journal() -> None:
    local = LocalStepwell()
    local.register("cycles", cycles)
    execution_id = start_and_resume(local, 3)

    # Another process (its own engine and cache) runs the next two wake-ups.
    other = dataclasses.replace(local.engine, journals=JournalCache())
    other_worker = Worker(other)
    for _ in range(2):
        assert local.advance_to_next_wakeup()
        body = local.queue.pop_due(local.clock.now())
        assert body is not None
        assert other_worker.handle_message(body).action is OutcomeAction.RAN

    journal = local.engine.load_journal(execution_id)  # the stale fold, caught up
    assert comparable(journal) == comparable(fresh_fold(local.engine, execution_id))
    run_cycles(local, execution_id)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    assert local.describe(execution_id)["Result"] == str(sum(range(CYCLES)))


def test_a_fenced_worker_drops_its_journal_and_the_next_run_folds_the_winners_batches() -> None:
    local = LocalStepwell()
    intrude = {"now": False}

    @functools.wraps(cycles)  # a wrapper of a durable handler (the registry checks it)
    def fenced_once(invocation_input: Any, lambda_context: Any) -> Any:
        if intrude["now"]:
            intrude["now"] = False
            # A worker whose lease had expired lost the log: a newer one appended the next batch first.
            execution_id = execution_id_of(invocation_input.durable_execution_arn)
            seq = local.engine.load_journal(execution_id).next_seq
            winner = Batch(seq=seq, body='{"w":1}', created_at=local.clock.now())
            local.store.append_batch(execution_id, winner)
        return cycles(invocation_input, lambda_context)

    local.register("cycles", fenced_once)
    execution_id = start_and_resume(local, 1)

    intrude["now"] = True
    assert local.advance_to_next_wakeup()
    local.run_until_idle()

    assert local.outcomes[-1].action is OutcomeAction.FENCED
    assert cached_state(local.engine, execution_id) is None
    local.queue.enqueue(InvokeMessage(execution_id).to_body())  # the newer worker's own wake-up
    run_cycles(local, execution_id)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"


def test_a_run_whose_write_fails_keeps_nothing_of_what_it_did_not_flush() -> None:
    local = LocalStepwell()
    local.register("cycles", cycles)
    execution_id = start_and_resume(local, 1)
    before = comparable(fresh_fold(local.engine, execution_id))

    original = local.store.append_batch

    def outage(execution_id: str, batch: Batch) -> None:
        raise ConnectionError("the table is unreachable")

    local.store.append_batch = outage  # type: ignore[method-assign]
    assert local.advance_to_next_wakeup()
    body = local.queue.pop_due(local.clock.now())
    assert body is not None
    with pytest.raises(ConnectionError):
        local.worker.handle_message(body)
    local.store.append_batch = original  # type: ignore[method-assign]

    assert cached_state(local.engine, execution_id) is None
    after = comparable(fresh_fold(local.engine, execution_id))
    assert after.pop("log_expiry").kept and before.pop("log_expiry") is not None  # a failed run keeps its log
    assert after == before
    local.queue.enqueue(body)  # SQS delivers it again
    run_cycles(local, execution_id)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"
    assert local.describe(execution_id)["Result"] == str(sum(range(CYCLES)))


def test_a_journal_closed_with_unflushed_changes_or_fenced_keeps_only_what_the_store_holds() -> None:
    local = LocalStepwell()
    local.register("cycles", cycles)
    execution_id = start_and_resume(local, 0)
    engine = local.engine
    record = local.record(execution_id)

    journal = engine.open_journal(execution_id)
    journal.apply_update(
        OperationUpdate("extra", OperationType.STEP, OperationAction.START, name="extra"), local.clock.now()
    )
    engine.close_journal(journal, keep=False)  # the worker's verdict on a run with unflushed changes
    assert len(engine.journals) == 0

    journal = engine.open_journal(execution_id)
    local.store.append_batch(
        execution_id, Batch(seq=journal.next_seq, body='{"w":1}', created_at=local.clock.now())
    )
    journal.apply_update(
        OperationUpdate("extra", OperationType.STEP, OperationAction.START, name="extra"), local.clock.now()
    )
    with pytest.raises(SequenceConflict):
        engine.append_journal(record, journal)
    # The worker drops it; kept anyway, the fold holds only what the store took, and the next load
    # folds the winner's batch on top.
    engine.close_journal(journal, keep=True)
    loaded = engine.load_journal(execution_id)
    assert "extra" not in loaded.operations
    assert comparable(loaded) == comparable(fresh_fold(engine, execution_id))


@pytest.mark.parametrize(
    "last_batch",
    [
        Batch(seq=1, body='{"w":0}', created_at=0.0),  # rewritten: the log now holds another batch there
        Batch(seq=99, body='{"w":0}', created_at=0.0),  # the log is shorter than the fold
    ],
    ids=["rewritten", "shorter"],
)
def test_a_cached_journal_whose_last_batch_is_not_in_the_log_is_refolded(last_batch: Batch) -> None:
    local = LocalStepwell()
    local.register("cycles", cycles)
    execution_id = start_and_resume(local, 0)
    stale = Journal(execution_id)
    stale.fold(last_batch.seq, {"o": [], "w": 0, "z": 1})
    local.engine.journals.put(execution_id, FoldedLog(stale, last_batch=last_batch, size=10))

    journal = local.engine.load_journal(execution_id)

    assert comparable(journal) == comparable(fresh_fold(local.engine, execution_id))
    assert not journal.ended


def entry(execution_id: str, size: int) -> FoldedLog:
    return FoldedLog(Journal(execution_id), Batch(seq=0, body="{}", created_at=0.0), size=size)


def test_the_cache_evicts_the_least_recently_used_beyond_its_count_and_size() -> None:
    cache = JournalCache(JournalCacheOptions(max_journals=2, max_bytes=1000))
    for name in ("a", "b", "c"):
        cache.put(name, entry(name, 100))
    assert len(cache) == 2 and cache.take("a") is None and cache.evictions == 1

    cache.put("d", entry("d", 850))  # 100 (c) + 850 fits; b goes (count), then nothing more
    assert cache.take("b") is None and len(cache) == 2 and cache.size == 950
    cache.put("e", entry("e", 200))  # over the size: the oldest (c, then d) go until it fits
    assert cache.take("c") is None and cache.take("d") is None and cache.size == 200

    cache.put("huge", entry("huge", 1001))  # larger than the whole bound: never kept
    assert cache.take("huge") is None and cache.take("e") is not None and cache.size == 0


def test_nothing_is_kept_when_disabled_and_bad_options_are_refused() -> None:
    cache = JournalCache(JournalCacheOptions(enabled=False))
    cache.put("a", entry("a", 1))
    assert len(cache) == 0
    for options, named in (
        ({"max_journals": 0}, "max_journals must be an integer >= 1, got 0"),
        ({"max_bytes": "big"}, "max_bytes must be an integer >= 1, got 'big'"),
        ({"enabled": "yes"}, "enabled must be true or false, got 'yes'"),
    ):
        with pytest.raises(InvalidArgument, match=named):
            JournalCacheOptions(**options)


@pytest.fixture
def moto_stack(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto import mock_aws
    from stepwell.aws.clients import AwsClients
    from stepwell.clock import VirtualClock
    from stepwell.core.registry import Registry
    from stepwell.testing.mock_deployment import REGION, create_deployment
    from stepwell.wiring.entry import EntryRuntime

    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(variable, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        config = create_deployment()
        registry = Registry()
        registry.register("cycles", cycles)
        runtime = EntryRuntime.from_config(
            config, AwsClients(region=REGION), registry=registry, clock=VirtualClock()
        )
        yield runtime


def test_on_dynamodb_a_warm_worker_reads_one_batch_per_resume_and_folds_what_a_fresh_load_does(
    moto_stack: Any,
) -> None:
    engine: Engine = moto_stack.engine
    worker = Worker(engine)
    loads: list[int] = []
    original = engine.store.load_batches

    def load_batches(
        execution_id: str,
        after_seq: int = -1,
        limit: int = 1000,
        inputs: list[ExternalInput] | None = None,
    ) -> tuple[list[Batch], int | None]:
        batches, last = original(execution_id, after_seq, limit, inputs)
        loads.append(len(batches))
        return batches, last

    engine.store.load_batches = load_batches  # type: ignore[method-assign]
    execution_id = engine.start_execution("cycles", {"cycles": 4})
    outcomes = []
    for _ in range(5):
        loads.clear()
        outcomes.append(worker.run(execution_id).action)
        if outcomes[-1] is OutcomeAction.FINISHED:
            break
        fresh = fresh_fold(engine, execution_id)
        assert cached_state(engine, execution_id) == comparable(fresh)
        # The wait the run suspended on started in the batch its release carries, as the next run takes it.
        carried = engine.store.get_carried_batch(execution_id)
        assert carried is not None and fresh.carry(carried.seq, decode_body(carried.body))
        wake_at = fresh.next_wake_at()
        assert wake_at is not None
        engine.clock.advance_to(wake_at)  # type: ignore[attr-defined]
        if len(outcomes) > 1:
            assert loads[0] == 1  # the resume read its fold's last batch only

    assert outcomes == [OutcomeAction.RAN] * 4 + [OutcomeAction.FINISHED]
    assert engine.describe_execution(execution_id)["Status"] == "SUCCEEDED"


def test_the_default_bound_shrinks_with_a_small_function_memory() -> None:
    assert default_max_bytes("512") == 32 * 1024 * 1024
    assert default_max_bytes("128") == 8 * 1024 * 1024
    assert default_max_bytes("") == 32 * 1024 * 1024  # not in Lambda
    assert default_max_bytes("10240") == 32 * 1024 * 1024


def _folded_with_open_and_ended_operations(ended: int) -> Journal:
    """A journal as a load folds it: `ended` waits that ended, then a wait and a callback (with a heartbeat
    deadline) still open."""
    writer = Journal("default#wf#s/e1")
    writer.start_execution("{}", NOW)
    bodies = [writer.flush().body]
    for index in range(ended):
        options = WaitOptions(wait_seconds=1)
        writer.apply_update(
            OperationUpdate(f"w{index}", OperationType.WAIT, OperationAction.START, wait_options=options), NOW
        )
        writer.fire_due_timers(NOW + 1)
        bodies.append(writer.flush().body)
    writer.apply_update(
        OperationUpdate(
            "wait", OperationType.WAIT, OperationAction.START, wait_options=WaitOptions(wait_seconds=60)
        ),
        NOW,
    )
    writer.apply_update(
        OperationUpdate(
            "cb",
            OperationType.CALLBACK,
            OperationAction.START,
            callback_options=CallbackOptions(timeout_seconds=600, heartbeat_timeout_seconds=30),
        ),
        NOW,
    )
    bodies.append(writer.flush().body)
    folded = Journal("default#wf#s/e1")
    for seq, body in enumerate(bodies):
        folded.fold(seq, decode_body(encode_body(body)))
    folded.finish_loading()
    return folded


def test_a_copy_for_a_run_shares_nothing_the_run_changes() -> None:
    folded = _folded_with_open_and_ended_operations(ended=3)
    before = copy.deepcopy(comparable(folded))
    live = copy_journal(folded)
    assert comparable(live) == before

    # A run changes private state (a heartbeat), absorbs an input, starts, ends and times out operations.
    heartbeat = ExternalInput("0001#a", InputKind.CALLBACK_HEARTBEAT, NOW + 10, operation_id="cb")
    live.absorb([heartbeat], NOW + 10)
    live.apply_update(
        OperationUpdate(
            "later", OperationType.WAIT, OperationAction.START, wait_options=WaitOptions(wait_seconds=5)
        ),
        NOW + 10,
    )
    assert live.fire_due_timers(NOW + 700) == 3
    live.invocation_completed(NOW + 10, NOW + 700, "request", None)
    live.flush()

    assert comparable(folded) == before
    assert live.meta["cb"]["heartbeatAt"] == NOW + 40 and folded.meta["cb"]["heartbeatAt"] == NOW + 30
    assert live.operations["wait"].status is OperationStatus.SUCCEEDED
    assert folded.operations["wait"].status is OperationStatus.STARTED


def test_a_run_looks_for_timers_callbacks_and_children_among_the_open_operations_only() -> None:
    folded = _folded_with_open_and_ended_operations(ended=50)
    assert list(folded._open) == [folded.execution_operation_id, "wait", "cb"]
    assert [entry[2] for entry in sorted(folded._timers)] == ["cb", "wait"]  # the heartbeat's first
    details = folded.operations["cb"].callback_details
    assert details is not None and folded.open_callbacks() == [details.callback_id]

    live = copy_journal(folded)
    live.fire_due_timers(NOW + 60)  # the callback's heartbeat deadline and the wait's end
    assert list(live._open) == [live.execution_operation_id]
    assert live.open_callbacks() == [] and list(folded._open)[1:] == ["wait", "cb"]
    assert Journal(live.execution_id, operations=dict(live.operations))._open == live._open  # as built anew
