"""The schedule pointers port (stepwell.features.schedules): per SKIP schedule, the last execution it
started, moved only by a conditional write from the value read."""

from __future__ import annotations

from typing import Protocol

from stepwell.errors import InvalidArgument
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, ExecutionId

# How long a schedule pointer is kept after the occurrence that last wrote or read it (its `ttl`): longer
# than the period of a yearly schedule (366 days), so a pointer naming a running execution is kept again by
# the next occurrence before it expires; a deleted schedule's pointer goes within this time.
SCHEDULE_POINTER_HOLD_SECONDS = 400 * 86_400


def check_schedule_pointer(domain: str, schedule: str, execution_id: str | None = None) -> None:
    """InvalidArgument unless `domain` and `schedule` are key parts and `execution_id` (when given) is an
    execution id: a schedule pointer's key and value (ExecutionStore.claim_schedule_pointer)."""
    for label, value in (("domain", domain), ("schedule", schedule)):
        if not isinstance(value, str) or not KEY_PART_PATTERN.match(value):
            raise InvalidArgument(f"invalid {label} {value!r} of a schedule pointer: {KEY_PART_RULE}")
    if execution_id is not None:
        try:
            ExecutionId.parse(execution_id)
        except ValueError as error:
            raise InvalidArgument(f"a schedule pointer names an execution: {error}") from None


class SchedulePointers(Protocol):
    def get_schedule_pointer(self, domain: str, schedule: str) -> str | None:
        """The execution id the schedule's pointer names (consistent read); None when it has none."""
        ...

    def claim_schedule_pointer(
        self,
        domain: str,
        schedule: str,
        *,
        expected: str | None,
        execution_id: str,
        now: float | None = None,
    ) -> bool:
        """Point the schedule at `execution_id` if its pointer still names `expected` (None: it has no
        pointer yet); conditional, so of claims from the same value exactly one wins. True if this call
        set it. `now`: the occurrence's time; a store with expiry keeps the pointer until `now` plus
        SCHEDULE_POINTER_HOLD_SECONDS (None: the store's own clock). InvalidArgument for a domain or
        schedule that is no key part, or an id that is no execution id."""
        ...

    def keep_schedule_pointer(self, domain: str, schedule: str, execution_id: str, now: float) -> None:
        """An occurrence found the pointer naming `execution_id`, still running: a store with expiry keeps
        the pointer until `now` plus SCHEDULE_POINTER_HOLD_SECONDS (only while it still names that
        execution), so it never expires under a running execution a later occurrence must skip for."""
        ...
