"""A definitions harness on the local backend: LocalStepwell (virtual clock) + memory stores + router."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from stepwell.core.registry import Registry
from stepwell.features.definitions.actions import ENGINE_EVENT_SOURCE, ActionContext, ActionRegistry
from stepwell.features.definitions.interpreter import register_interpreter
from stepwell.features.definitions.router import EventOutcome, EventSources, PathExtractor, Router
from stepwell.features.definitions.runtime import DefinitionsRuntime
from stepwell.features.definitions.store import ContextRecord
from stepwell.testing.local import LocalStepwell

DOMAIN = "acme"


def envelope(
    name: str, subject: str, data: Any = None, domain: str = DOMAIN, event_id: str | None = None
) -> dict[str, Any]:
    detail: dict[str, Any] = {"domain": domain, "subjectId": subject}
    if data is not None:
        detail["data"] = data
    return {
        "version": "0",
        "id": event_id or f"evt-{next(_ids)}",
        "detail-type": name,
        "source": "tests",
        "detail": detail,
    }


_ids = itertools.count(1)

# Two waits in a row for the same event name: a redelivered `ping` must not pass the second one.
PINGS: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "pings",
    "nodes": [
        {"id": "t", "type": "trigger", "event": "start"},
        {"id": "w1", "type": "trigger_or_timeout", "event": "ping", "timeout": "1d"},
        {"id": "w2", "type": "trigger_or_timeout", "event": "ping", "timeout": "1d"},
        {"id": "r", "type": "action", "action": "remind"},
        {"id": "e", "type": "end"},
    ],
    "edges": [
        {"from": "t", "to": "w1"},
        {"from": "w1", "to": "w2", "branch": "event"},
        {"from": "w1", "to": "e", "branch": "timeout"},
        {"from": "w2", "to": "e", "branch": "event"},
        {"from": "w2", "to": "r", "branch": "timeout"},
        {"from": "r", "to": "e"},
    ],
}


class Harness:
    def __init__(self) -> None:
        self.local = LocalStepwell(registry=Registry())
        self.actions = ActionRegistry(builtins=False)
        self.calls: list[tuple[str, dict[str, Any], ActionContext]] = []
        self.runtime = DefinitionsRuntime.in_memory(clock=self.local.clock, actions=self.actions)
        register_interpreter(self.local.registry, self.runtime)
        # The test envelopes' source and the engine's own may speak for every domain.
        sources = EventSources({"tests": ["*"], ENGINE_EVENT_SOURCE: ["*"]})
        self.router = Router(self.local.engine, self.runtime, extractor=PathExtractor(), sources=sources)
        self.start_time = self.local.clock.now()

    def recording_action(self, name: str, result: Any = None) -> None:
        def fn(inputs: dict[str, Any], context: ActionContext) -> Any:
            self.calls.append((name, inputs, context))
            return result

        self.actions.register(name, fn)

    def calls_of(self, name: str) -> list[dict[str, Any]]:
        return [inputs for called, inputs, _ in self.calls if called == name]

    def put(self, definition: Mapping[str, Any], domain: str = DOMAIN) -> None:
        self.runtime.definitions.set_workflow(domain, definition)

    def send(
        self, name: str, subject: str, data: Any = None, domain: str = DOMAIN, event_id: str | None = None
    ) -> EventOutcome:
        outcome = self.router.process_event(envelope(name, subject, data, domain, event_id))
        self.local.run_until_idle()
        return outcome

    def elapsed(self) -> float:
        return self.local.clock.now() - self.start_time

    def advance(self, seconds: float) -> None:
        """Move the virtual clock `seconds` ahead, running everything that comes due on the way."""
        target = self.local.clock.now() + seconds
        while True:
            self.local.run_until_idle()
            due = self.local.queue.next_due_at()
            if due is None or due > target:
                break
            self.local.clock.advance_to(due)
        self.local.clock.advance_to(target)
        self.local.run_until_idle()

    def run_all(self, max_rounds: int = 10_000) -> None:
        """Run until nothing is queued (every wait and timeout has fired)."""
        for _ in range(max_rounds):
            self.local.run_until_idle()
            if not self.local.advance_to_next_wakeup():
                return
        raise AssertionError("still busy after max_rounds")

    def contexts(self, subject: str, domain: str = DOMAIN) -> list[ContextRecord]:
        return self.runtime.contexts.get_all_contexts_for_subject(domain, subject, limit=1000).items

    def context(self, workflow_id: str, subject: str, domain: str = DOMAIN) -> ContextRecord:
        found = self.runtime.contexts.get_contexts(domain, workflow_id, subject)
        assert len(found) == 1, found
        return found[0]

    def status(self, record: ContextRecord) -> str:
        return str(self.local.describe(record.execution_id)["Status"])
