"""The local backend: the engine over the memory store, run in-process on a virtual clock.

`LocalStepwell` plays the work queue and the timers itself (a heap of messages ordered by due time) and
drives the real Worker. `run_until_idle` processes every message due now; `run_to_completion` also skips
the virtual clock to the next wake-up whenever nothing is due, so a three-day wait takes no real time.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepwell.clock import VirtualClock
from stepwell.engine import Engine
from stepwell.memory_store import MemoryExecutionStore, MemoryPayloadStore
from stepwell.model import ExecutionRecord, ExecutionStatus, InvokeMessage, WorkOutcome
from stepwell.registry import Handler, Registry
from stepwell.worker import Worker, parse_invoke_message

# A message whose execution is busy (leased) is retried this much later, as SQS would after a visibility
# timeout.
BUSY_RETRY_SECONDS = 1.0


class ExecutionStuck(RuntimeError):
    """The execution waits for something no timer will bring (a callback nobody sends)."""


class LocalQueue:
    """WorkQueue and Timers on the virtual clock."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock
        self._heap: list[tuple[float, int, dict[str, Any]]] = []
        self._counter = itertools.count()
        self.sent = 0
        self.scheduled = 0

    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        if not 0 <= delay_seconds <= 900:
            raise ValueError(f"delay_seconds must be 0..900 (SQS), got {delay_seconds}")
        self.sent += 1
        heapq.heappush(self._heap, (self._clock.now() + delay_seconds, next(self._counter), dict(body)))

    def schedule(self, execution_id: str, due_at: float) -> None:
        self.scheduled += 1
        body = InvokeMessage(execution_id, due_at=due_at).to_body()
        heapq.heappush(self._heap, (due_at, next(self._counter), body))

    def cancel_all(self, execution_id: str) -> None:
        self._heap = [entry for entry in self._heap if entry[2].get("executionId") != execution_id]
        heapq.heapify(self._heap)

    def pop_due(self, now: float) -> dict[str, Any] | None:
        if self._heap and self._heap[0][0] <= now:
            return heapq.heappop(self._heap)[2]
        return None

    def next_due_at(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


@dataclass
class RunReport:
    invocations: int
    outcomes: list[WorkOutcome]


class LocalStepwell:
    """An in-process Stepwell: register workflows, start executions, send callbacks, read history."""

    def __init__(self, registry: Registry | None = None, inline_limit: int | None = None) -> None:
        self.clock = VirtualClock()
        self.store = MemoryExecutionStore()
        self.payloads = MemoryPayloadStore()
        self.queue = LocalQueue(self.clock)
        self.registry = registry if registry is not None else Registry()
        self.engine = Engine(
            store=self.store,
            queue=self.queue,
            timers=self.queue,
            payloads=self.payloads,
            clock=self.clock,
            registry=self.registry,
        )
        if inline_limit is not None:
            self.engine.inline_limit = inline_limit
        self.worker = Worker(self.engine)
        self.outcomes: list[WorkOutcome] = []

    # --- the engine's API, forwarded ---
    def register(self, name: str, handler: Handler) -> Handler:
        return self.registry.register(name, handler)

    def start(self, name: str, input: Any = None, **options: Any) -> str:
        return self.engine.start_execution(name, input, **options)

    def describe(self, execution_id: str) -> dict[str, Any]:
        return self.engine.describe_execution(execution_id)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        return self.engine.get_execution_history(execution_id)

    def record(self, execution_id: str) -> ExecutionRecord:
        record = self.store.get_execution(execution_id)
        if record is None:
            raise KeyError(f"no execution {execution_id!r}")
        return record

    def callback_id(self, execution_id: str, name: str | None = None) -> str:
        """The id of the execution's latest callback that is still open (named `name`, if given)."""
        events = self.history(execution_id)
        closed = {
            event.get("Id")
            for event in events
            if event["EventType"] in ("CallbackSucceeded", "CallbackFailed", "CallbackTimedOut")
        }
        names = {event.get("Id"): event.get("Name") for event in events if event.get("Id")}
        for event in reversed(events):
            if event["EventType"] != "CallbackStarted" or event.get("Id") in closed:
                continue
            # A wait_for_callback's callback is named after its parent operation.
            labels = {event.get("Name"), names.get(event.get("ParentId"))}
            if name is None or name in labels:
                callback_id: str = event["CallbackStartedDetails"]["CallbackId"]
                return callback_id
        wanted = f" named {name!r}" if name is not None else ""
        raise LookupError(f"execution {execution_id!r} has no open callback{wanted}")

    # --- driving ---
    def process_one(self, body: Mapping[str, Any]) -> WorkOutcome:
        message = parse_invoke_message(body)
        outcome = self.worker.run(message.execution_id)
        if outcome.action == "busy":
            self.queue.schedule(message.execution_id, self.clock.now() + BUSY_RETRY_SECONDS)
        self.outcomes.append(outcome)
        return outcome

    def run_until_idle(self) -> int:
        """Process every message due now (and those they cause). Returns how many were processed."""
        processed = 0
        while (body := self.queue.pop_due(self.clock.now())) is not None:
            self.process_one(body)
            processed += 1
        return processed

    def advance_to_next_wakeup(self) -> bool:
        """Skip the virtual clock to the next queued message. False when nothing is queued."""
        due_at = self.queue.next_due_at()
        if due_at is None:
            return False
        self.clock.advance_to(due_at)
        return True

    def run_to_completion(
        self,
        execution_id: str,
        on_idle: Callable[[LocalStepwell], bool] | None = None,
        max_steps: int = 100_000,
    ) -> ExecutionRecord:
        """Run until the execution ends. `on_idle` runs whenever nothing is due (e.g. to send callbacks);
        it returns True if it did something. Raises ExecutionStuck if the execution can never end."""
        for _ in range(max_steps):
            self.run_until_idle()
            record = self.record(execution_id)
            if record.status is not ExecutionStatus.RUNNING and not len(self.queue):
                return record
            if on_idle is not None and on_idle(self):
                continue
            if record.status is not ExecutionStatus.RUNNING:
                self.advance_to_next_wakeup()
                continue
            if not self.advance_to_next_wakeup():
                raise ExecutionStuck(
                    f"execution {execution_id!r} is RUNNING but nothing is scheduled: it waits for a "
                    "callback or an external event that nobody sends"
                )
        raise ExecutionStuck(f"execution {execution_id!r} did not end within {max_steps} scheduling rounds")
