"""The code versions port: which worker version each running execution is pinned to.

create_execution pins a record whose code_version is set; complete_execution records one on an unpinned
record without indexing it (stepwell.ports.executions)."""

from __future__ import annotations

from typing import Protocol

from stepwell.model import Page


class VersionPins(Protocol):
    def pin_version(self, execution_id: str, version: str, expected: str | None) -> bool:
        """Pin an execution that has not ended (RUNNING, PAUSING or PAUSED) to `version` if it is pinned to
        `expected` now (None: not pinned yet); conditional. True if this call pinned it."""
        ...

    def note_moved_version(self, execution_id: str, version: str) -> None:
        """Record on the execution's coordination record that it was moved to `version` (an upgrade, after
        pin_version): a run that takes the lease afterwards learns it (Lease.moved_to), however old the
        record it read before. Unconditional and idempotent."""
        ...

    def list_pinned(self, version: str, limit: int = 100, next_token: str | None = None) -> Page[str]:
        """Ids of the executions pinned to `version` that have not ended (paused ones too: they resume on
        it), oldest first."""
        ...

    def count_pinned(self, version: str) -> int:
        """How many executions that have not ended (paused ones too) are pinned to `version`."""
        ...
