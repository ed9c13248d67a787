"""The worker's router runs the contexts an event starts or resumes at once, in its own process, instead of
through a message to itself; what it cannot run (another worker holds the execution) or fails to run is
left to a message, and a redelivery finishes what a router that died began: the callbacks its claim named,
then the run, and nothing opened since."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from stepwell.features.definitions.actions import ActionContext
from stepwell.features.definitions.router import Router, _digest
from stepwell.features.definitions.store import ContextRecord, StoredWorkflow
from stepwell.features.definitions.validation import parse_definition
from stepwell.model import ExecutionStatus, HandOff
from stepwell.wiring.entry import EntryRuntime

from .harness import DOMAIN, PINGS, Harness, envelope
from .test_examples import EXAMPLES


def inline(h: Harness) -> Router:
    return Router(h.local.engine, h.runtime, sources=h.router.sources, run_inline=True)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.put(PINGS)
    return harness


def messages_sent(h: Harness) -> int:
    """Invoke messages sent so far (wake-ups the runs schedule are not messages sent)."""
    return h.local.queue.sent


def resume_key(context: ContextRecord, event_id: str) -> str:
    return f"evt#{DOMAIN}#{_digest(event_id)}#{_digest(f'{context.context_key}/{context.instance_id}')}"


def test_an_event_runs_the_context_it_starts_and_resumes_without_a_message(h: Harness) -> None:
    router = inline(h)
    started = router.process_event(envelope("start", "u1")).started
    assert len(started) == 1 and messages_sent(h) == 0
    context = h.context("pings", "u1")
    assert [node for node, _ in context.waits_for("ping")] == ["w1"]  # ran to its first wait already

    reads = h.local.store.counters.get("get_callback_results", 0)
    assert router.process_event(envelope("ping", "u1")).resumed == started
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]
    # The run took the result the router had just completed; it read no callback record for it.
    assert h.local.store.counters.get("get_callback_results", 0) == reads
    assert router.process_event(envelope("ping", "u1")).resumed == started
    assert h.status(h.context("pings", "u1")) == "SUCCEEDED"
    assert messages_sent(h) == 0


def test_the_events_of_one_batch_read_their_domains_definitions_once(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SQS batch's events share one read of their domain's definitions (each was in the queue before
    the batch came, so a read at its first event is as new as each needs); alone, an event reads them."""
    router = inline(h)
    reads: list[str] = []
    read = h.runtime.definitions.list_for_routing

    def counted(domain: str) -> tuple[list[StoredWorkflow], frozenset[str] | None]:
        reads.append(domain)
        return read(domain)

    monkeypatch.setattr(h.runtime.definitions, "list_for_routing", counted)
    events = [envelope("start", "u1"), envelope("start", "u2"), envelope("ping", "u1")]
    records = [{"messageId": str(i), "body": json.dumps(event)} for i, event in enumerate(events)]
    entry = EntryRuntime(h.local.engine, event_router=router)

    assert entry.handle_sqs_batch(records) == {"batchItemFailures": []}
    assert reads == [DOMAIN]
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]  # started, resumed
    assert [node for node, _ in h.context("pings", "u2").waits_for("ping")] == ["w1"]
    router.process_event(envelope("ping", "u2"))
    assert reads == [DOMAIN, DOMAIN]
    assert [node for node, _ in h.context("pings", "u2").waits_for("ping")] == ["w2"]


def test_a_run_another_worker_holds_is_left_to_a_message(h: Harness) -> None:
    router = inline(h)
    execution_id = router.process_event(envelope("start", "u1")).started[0]
    store = h.local.store
    assert store.acquire_lease(execution_id, "other", h.local.clock.now(), 60) is not None
    assert router.process_event(envelope("ping", "u1")).resumed == [execution_id]
    assert messages_sent(h) == 1  # the callback is completed; its message wakes it
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w1"]
    store.release_lease(execution_id, "other", HandOff())
    h.local.run_until_idle()
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]


@pytest.mark.parametrize("run_inline", [True, False])
def test_a_redelivery_finishes_a_resume_whose_router_died_after_completing(
    h: Harness, run_inline: bool
) -> None:
    router = Router(h.local.engine, h.runtime, sources=h.router.sources, run_inline=run_inline)
    router.process_event(envelope("start", "u1"))
    h.local.run_until_idle()
    context = h.context("pings", "u1")
    ((_, callback_id),) = context.waits_for("ping")
    event = envelope("ping", "u1", event_id="p-1")
    payload = {"id": "p-1", "name": "ping", "data": None}
    # The first delivery claimed the context, completed its callback and died before any run or message.
    assert h.runtime.events.claim_for(resume_key(context, "p-1"), h.local.clock.now(), [callback_id]) is None
    h.local.engine.send_callback_success(callback_id, json.dumps(payload), wake=False)
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w1"]

    redelivered = router.process_event(event)
    h.local.run_until_idle()
    assert redelivered.resumed == [] and "already resumed" in redelivered.skipped[0]
    waits = h.context("pings", "u1").waits_for("ping")
    assert [node for node, _ in waits] == ["w2"]  # the run happened, and the wait opened since is open
    router.process_event(event)  # once more: still nothing for the second wait
    h.local.run_until_idle()
    assert h.context("pings", "u1").waits_for("ping") == waits


def test_a_redelivery_completes_what_a_router_that_died_had_claimed(h: Harness) -> None:
    router = inline(h)
    router.process_event(envelope("start", "u1"))
    context = h.context("pings", "u1")
    ((_, callback_id),) = context.waits_for("ping")
    # The first delivery claimed the context and died before completing anything.
    assert h.runtime.events.claim_for(resume_key(context, "p-1"), h.local.clock.now(), [callback_id]) is None

    router.process_event(envelope("ping", "u1", event_id="p-1"))
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]
    history = h.local.history(context.execution_id)
    assert [e["EventType"] for e in history].count("CallbackSucceeded") == 1


def test_the_client_s_router_never_runs_a_context_in_its_own_process(h: Harness) -> None:
    started = h.router.process_event(envelope("start", "u1")).started  # the harness's: not inline
    assert messages_sent(h) == 1
    assert h.local.describe(started[0])["Status"] == ExecutionStatus.RUNNING.value
    assert h.runtime.contexts.get_contexts(DOMAIN, "pings", "u1")[0].waits_for("ping") == []


def test_with_little_time_left_the_invocation_leaves_its_contexts_to_messages(h: Harness) -> None:
    router = inline(h)
    started = router.process_event(envelope("start", "u1"), time_left=lambda: 10.0).started
    assert len(started) == 1 and messages_sent(h) == 1
    assert h.context("pings", "u1").waits_for("ping") == []  # not run here
    h.local.run_until_idle()
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w1"]

    sent = messages_sent(h)
    assert router.process_event(envelope("ping", "u1"), time_left=lambda: 10.0).resumed == started
    assert messages_sent(h) == sent + 1  # the completion's message
    h.local.run_until_idle()
    assert [node for node, _ in h.context("pings", "u1").waits_for("ping")] == ["w2"]
    # With time to spare it runs here again.
    assert router.process_event(envelope("ping", "u1"), time_left=lambda: 600.0).resumed == started
    assert messages_sent(h) == sent + 1
    assert h.status(h.context("pings", "u1")) == "SUCCEEDED"


def test_the_entry_tells_the_router_the_lambda_invocation_s_time_left() -> None:
    from stepwell.wiring.entry import _time_left

    class LambdaContext:
        def get_remaining_time_in_millis(self) -> int:
            return 42_500

    time_left = _time_left(LambdaContext())
    assert time_left is not None and time_left() == 42.5
    assert _time_left(None) is None  # outside Lambda: no limit


def test_an_action_run_here_sees_the_invocation_s_time_left(h: Harness) -> None:
    """An HTTP request is cut to what the event's invocation has left, so the run must tell its actions."""
    seen: list[float | None] = []

    def timed(inputs: dict[str, Any], context: ActionContext) -> Any:
        seen.append(context.time_left() if context.time_left else None)

    h.actions.register("timed", timed)
    h.put(
        {
            "schemaVersion": 1,
            "id": "timed",
            "nodes": [
                {"id": "t", "type": "trigger", "event": "go"},
                {"id": "a", "type": "action", "action": "timed"},
                {"id": "e", "type": "end"},
            ],
            "edges": [{"from": "t", "to": "a"}, {"from": "a", "to": "e"}],
        }
    )
    inline(h).process_event(envelope("go", "u1"), time_left=lambda: 300.0)
    assert seen == [300.0]

    # A run from a message outside Lambda has the local runner's 900 s (Lambda's longest timeout).
    h.router.process_event(envelope("go", "u2"))
    h.local.run_until_idle()
    assert seen[1] == 900.0


ONBOARDING = json.loads((EXAMPLES / "onboarding.json").read_text())


def test_which_waits_an_event_resumes_once() -> None:
    """A wait is resumed once when no other wait for its event can be open with it, before it or after
    it: it is in no parallel branch, and no wait for the same event lies on its "event" branch (itself
    included: a cycle) nor has it on its own "event" branch."""
    onboarding = parse_definition(ONBOARDING)
    # Two waits for user.activated, but the second follows the first's timeout only, and each one's
    # event branch ends the context.
    assert onboarding.resumes_once("first_day") and onboarding.resumes_once("next_two_days")
    pings = parse_definition(PINGS)
    # w1's event leads to w2: a redelivery of the event that resumed w1 could find w2 open.
    assert not pings.resumes_once("w1") and not pings.resumes_once("w2")
    looping = copy.deepcopy(ONBOARDING)
    looping["edges"].append({"from": "send_reminder", "to": "first_day"})  # back to the first wait
    looping["edges"] = [e for e in looping["edges"] if e["from"] != "send_reminder" or e["to"] != "reminded"]
    looping["nodes"] = [n for n in looping["nodes"] if n["id"] != "reminded"]
    assert parse_definition(looping).resumes_once("first_day")  # the cycle goes through timeouts only
    looping["edges"] = [
        {**e, "to": "send_tips"} if e["from"] == "first_day" and e.get("branch") == "event" else e
        for e in looping["edges"]
    ]
    assert not parse_definition(looping).resumes_once("first_day")  # its event leads back to it
    fan = parse_definition(
        {
            "schemaVersion": 1,
            "id": "fan",
            "nodes": [
                {"id": "t", "type": "trigger", "event": "start"},
                {"id": "p", "type": "parallel"},
                {"id": "a", "type": "trigger_or_timeout", "event": "ping", "timeout": "1d"},
                {"id": "b", "type": "trigger_or_timeout", "event": "pong", "timeout": "1d"},
                {"id": "j", "type": "join", "mode": "all"},
                {"id": "after", "type": "trigger_or_timeout", "event": "pang", "timeout": "1d"},
                {"id": "e", "type": "end"},
            ],
            "edges": [
                {"from": "t", "to": "p"},
                {"from": "p", "to": "a"},
                {"from": "p", "to": "b"},
                {"from": "a", "to": "j", "branch": "event"},
                {"from": "a", "to": "j", "branch": "timeout"},
                {"from": "b", "to": "j", "branch": "event"},
                {"from": "b", "to": "j", "branch": "timeout"},
                {"from": "j", "to": "after"},
                {"from": "after", "to": "e", "branch": "event"},
                {"from": "after", "to": "e", "branch": "timeout"},
            ],
        }
    )
    assert not fan.resumes_once("a") and not fan.resumes_once("b")  # in parallel branches
    assert fan.resumes_once("after")


def test_a_wait_resumed_once_needs_no_claim_and_a_redelivery_changes_nothing(h: Harness) -> None:
    h.put(ONBOARDING)
    h.actions.register("onboarding.send_email", lambda inputs, context: None)
    router = inline(h)
    router.process_event(envelope("user.signed_up", "u1", {"email": "u1@example.com"}))
    context = h.context("onboarding", "u1")
    assert context.resumed_once("user.activated")
    claims = dict(h.runtime.events._claims)
    first = router.process_event(envelope("user.activated", "u1", event_id="a-1"))
    assert first.resumed == [context.execution_id]
    assert h.status(h.context("onboarding", "u1")) == "SUCCEEDED"
    assert h.runtime.events._claims == claims  # no record of the resume was written

    again = router.process_event(envelope("user.activated", "u1", event_id="a-1"))
    assert again.resumed == [] and again.status == "processed"  # the context has ended: nothing waits
    history = h.local.history(context.execution_id)
    assert [e["EventType"] for e in history].count("CallbackSucceeded") == 1


@pytest.mark.parametrize("run_inline", [True, False])
def test_a_redelivery_wakes_a_wait_resumed_once_whose_router_died_after_completing(
    h: Harness, run_inline: bool
) -> None:
    h.put(ONBOARDING)
    h.actions.register("onboarding.send_email", lambda inputs, context: None)
    router = Router(h.local.engine, h.runtime, sources=h.router.sources, run_inline=run_inline)
    router.process_event(envelope("user.signed_up", "u1", {"email": "u1@example.com"}))
    h.local.run_until_idle()
    context = h.context("onboarding", "u1")
    ((_, callback_id),) = context.waits_for("user.activated")
    # The first delivery completed the callback and died before any run or message.
    payload = {"id": "a-1", "name": "user.activated", "data": None}
    h.local.engine.send_callback_success(callback_id, json.dumps(payload), wake=False)
    h.local.run_until_idle()
    assert h.status(h.context("onboarding", "u1")) == "RUNNING"  # nobody woke it

    redelivered = router.process_event(envelope("user.activated", "u1", event_id="a-1"))
    h.local.run_until_idle()
    assert redelivered.status == "duplicate" and redelivered.resumed == []
    assert "already resumed" in redelivered.skipped[0]
    assert h.status(h.context("onboarding", "u1")) == "SUCCEEDED"
    history = h.local.history(context.execution_id)
    assert [e["EventType"] for e in history].count("CallbackSucceeded") == 1
