"""The flow control port (stepwell.core.flow_control): per concurrency key its holders, ticket counters
and tickets, per rate key its recent starts, per rate-limited execution its reserved start, and when the
reconciler sweeps each key. `scope` is FlowLimit.scope; labels are shown, never read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from stepwell.model import FlowRate, FlowSlots

# The due-index entries the reconciler sweeps (flow control keys) are spread over this many shards.
DUE_SHARDS = 4


class FlowControlStore(Protocol):
    def get_flow_slots(self, scope: str) -> FlowSlots | None:
        """A concurrency key's state (consistent read); None when it has none yet."""
        ...

    def hold_flow_slot(
        self, scope: str, execution_id: str, *, limit: int, expires_at: float, labels: Mapping[str, str]
    ) -> bool:
        """True if `execution_id` holds a slot of the key after this call: it held one already (left as
        it is), or it took one because fewer than `limit` are held and nobody waits (head == tail).
        Creates the key's item when it has none (conditional writes: never more than `limit` holders)."""
        ...

    def take_flow_ticket(self, scope: str, sweep_at: float, labels: Mapping[str, str]) -> int:
        """Issue the key's next ticket (an atomic increment of tail; the ticket is its old value), creating
        the item when missing, and set the key's sweep entry to `sweep_at` (query_flow_sweeps)."""
        ...

    def put_flow_ticket(self, scope: str, ticket: int, execution_id: str) -> bool:
        """Write ticket `ticket` naming `execution_id` unless the ticket has an item already (conditional):
        False when a server skipped it first (claim_flow_ticket found it missing)."""
        ...

    def claim_flow_ticket(self, scope: str, ticket: int) -> str | None:
        """The execution ticket `ticket` names, for the server of the queue; a ticket with no item yet is
        marked skipped (conditional, so a late put_flow_ticket fails) and gives None, as a skipped one
        does."""
        ...

    def advance_flow(
        self, scope: str, ticket: int, *, execution_id: str | None, limit: int, expires_at: float
    ) -> bool:
        """Serve ticket `ticket` if it is the head: head becomes ticket + 1 and, with `execution_id`, that
        execution becomes a holder (only while fewer than `limit` are held and it holds none). False,
        changing nothing, when the head moved on, the slots are full or it already holds one. Removes the
        ticket's item once served (a skipped ticket's marker stays, so a late put_flow_ticket still fails;
        on DynamoDB it expires after the retention)."""
        ...

    def release_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float | None = None
    ) -> FlowSlots | None:
        """Remove `execution_id` from the holders (only if its lease still expires at `expected_expiry`,
        when given: a sweep reclaiming a dead holder). The state after, or None if it held no slot (then
        nothing changed)."""
        ...

    def renew_flow_slot(
        self, scope: str, execution_id: str, expected_expiry: float, expires_at: float
    ) -> bool:
        """Extend a holder's lease if it still expires at `expected_expiry` (conditional)."""
        ...

    def set_flow_sweep(self, scope: str, sweep_at: float | None) -> None:
        """Set (or with None clear) when the reconciler sweeps the key (shard chosen from the scope)."""
        ...

    def query_flow_sweeps(self, shard: int, now: float, limit: int = 100) -> list[str]:
        """Scopes of shard `shard` (0..DUE_SHARDS-1) whose sweep is due by `now`, oldest first."""
        ...

    def get_flow_rate(self, scope: str) -> FlowRate:
        """A rate key's recent starts (consistent read); empty, version 0, when it has none."""
        ...

    def put_flow_rate(
        self,
        scope: str,
        *,
        expected_version: int,
        starts: Sequence[float],
        labels: Mapping[str, str],
        window_ends: float | None = None,
    ) -> bool:
        """Replace the key's recent starts if its version is still `expected_version` (0: no item yet);
        the version becomes expected_version + 1. False when another writer changed it first.
        `window_ends`: when the last of `starts` leaves the window; a store with expiry keeps the key
        for its retention period after that, then lets it go (a key no longer used, say a customer's,
        does not stay; losing it then loses no start the limit still counts)."""
        ...

    def reserve_flow_start(self, execution_id: str, start_at: float) -> float:
        """Record the start time a rate limit gave the execution unless it has one (conditional); returns
        the one recorded (this one, or the earlier reservation of a duplicate message)."""
        ...

    def get_flow_start(self, execution_id: str) -> float | None:
        """The execution's reserved start time (consistent read), None when it has none."""
        ...

    def forget_flow_start(self, execution_id: str) -> None:
        """Remove the execution's reserved start time, if it has one (deleting the execution)."""
        ...

    def peek_flow_tickets(self, scope: str, first: int, count: int) -> list[str]:
        """The executions tickets `first`..`first + count - 1` name, in ticket order, skipping skipped
        and missing tickets (read-only: the status shows a key's next waiting executions)."""
        ...
