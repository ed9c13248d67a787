"""The small ports beside the store: the clock, the work queue, timers, the worker function's versions,
status events and the payload store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from stepwell.model import FunctionVersion


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds."""
        ...


class WorkQueue(Protocol):
    def enqueue(self, body: Mapping[str, Any], delay_seconds: int = 0) -> None:
        """Send one engine message (see docs/architecture.md) after `delay_seconds` (0..900)."""
        ...


class Timers(Protocol):
    def schedule(self, execution_id: str, due_at: float) -> None:
        """Deliver {"kind": "invoke", "executionId": ..., "dueAt": due_at} at (never before) due_at."""
        ...

    def cancel_all(self, execution_id: str) -> None:
        """Delete the execution's pending one-time schedules (on stop)."""
        ...

    def withdraw(self, execution_id: str, due_at: float, keep: float | None = None) -> None:
        """The wake-up scheduled for `due_at` is no longer needed (the execution ended, or its next one is
        `keep`): drop it where that is possible (a one-time schedule), best effort. One left in place finds
        nothing due when it comes."""
        ...


class FunctionVersions(Protocol):
    """The published versions of the worker function (Lambda versions and the alias the queue invokes)."""

    def current_version(self) -> str | None:
        """The version the alias points to (None when it has none)."""
        ...

    def list_versions(self) -> list[FunctionVersion]:
        """Published versions in numeric order, each with the aliases pointing at it."""
        ...

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        """Run `event` synchronously on `version` and return its answer; ForwardFailed when the version is
        missing or the invocation failed."""
        ...

    def delete_version(self, version: str) -> None: ...


class StatusEvents(Protocol):
    """Where executions' status-change events go (stepwell.core.status_events: the bus, memory, or
    nowhere)."""

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        """Put one event per detail, in one request; raises when any of them was not put."""
        ...


class PayloadStore(Protocol):
    def put(self, execution_id: str, label: str, data: str) -> str:
        """Store `data` and return a reference string to keep in its place."""
        ...

    def get(self, reference: str) -> str:
        """The data a reference names; PayloadMissing when its object is gone."""
        ...

    def reference(self, execution_id: str, label: str, data: str) -> str:
        """The reference `put` returns for `data`, writing nothing (the name is the content's digest): a
        start names its input's object in the record it creates, and puts it only once that record is its
        own, so a refused start writes nothing."""
        ...

    def retire(self, execution_id: str) -> int:
        """The execution has ended: start its payloads' retention (until now they never expire).
        Idempotent; returns how many payloads were retired."""
        ...

    def delete_execution(self, execution_id: str) -> int:
        """Delete every payload of the execution (deleting it; a listing of its folder). Idempotent;
        returns how many were deleted."""
        ...
