"""The coordination port: per execution one record (its lease, the wake-up its last run armed, the batch
a run carried instead of the log), and the callback records that resolve a callback id to its execution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stepwell.model import Batch, CallbackRef, ExternalInput, HandOff, Lease


class Coordination(Protocol):
    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        """Take the execution's lease if it is free or expired (one conditional write on its coordination
        record). None if busy. The lease carries what the last run handed on (Lease.hand_off), whether it
        was taken from a holder whose lease had expired, and whether any run held it before (`never_held`)."""
        ...

    def release_lease(self, execution_id: str, owner: str, hand_off: HandOff) -> None:
        """Drop the lease if `owner` still holds it, in the same write recording what the run hands on to
        the next (HandOff's fields say what each records, and which ones a release leaves as they are)."""
        ...

    def resume_lease(
        self, execution_id: str, owner: str, *, successor: str, now: float, duration: float
    ) -> Lease | None:
        """Hand the execution's lease from `owner` to `successor` only if `owner` still holds it unexpired,
        until now + duration (one conditional write): a run that ended without releasing it (a remote
        function's invocation, stepwell.core.remote_runs) is taken over by the one that acts on its end,
        and only once (a second hand-over from the same owner finds it gone). None when the lease was
        released, expired or is another's: never taken from a free record, unlike acquire_lease."""
        ...

    def lease_holder(self, execution_id: str, now: float) -> str | None:
        """The owner holding the execution's lease unexpired at `now` (a consistent read), else None."""
        ...

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        """The batch the execution's coordination record carries (HandOff.carried), if any."""
        ...

    def put_callback(self, ref: CallbackRef) -> bool:
        """Resolve the callback id to its execution and operation, unless its record exists already: a
        replay makes a derived id again (stepwell.core.journal.derived_callback_id), and the record an earlier
        run wrote may hold a completion, which must stay (conditional). True if this call wrote it."""
        ...

    def get_callback(self, callback_id: str) -> CallbackRef | None: ...

    def complete_callback(
        self, callback_id: str, now: float, result: ExternalInput | None = None, execution_id: str = ""
    ) -> bool:
        """Mark the callback completed unless it already is (conditional): True if this call did, so
        of two completions exactly one wins. `result` (its kind, payload or error) is kept on the record
        in the same write, for get_callback_results; a timeout passes none. `execution_id` (the
        callback's) names where a value too large for the record is put."""
        ...

    def complete_callback_once(
        self, callback_id: str, now: float, result: ExternalInput
    ) -> CallbackRef | None:
        """complete_callback for a sender that has not read the record (a small result, kept on the record
        as it is): the same one conditional write, answering with the record as it was before it, whose
        `completed` says whether it had already completed (then nothing changed); None when there is no
        such callback."""
        ...

    def reopen_callback(self, callback_id: str) -> None:
        """Undo complete_callback (and drop its result) when the execution could not be woken (the sender
        may retry)."""
        ...

    def get_callback_results(self, callback_ids: Sequence[str]) -> list[ExternalInput]:
        """The results completions left on these callbacks' records (consistent reads; a callback with
        none, unknown or timed out, is left out), as inputs of their operations, `on_callback_record`."""
        ...

    def delete_coordination(self, execution_id: str, callback_ids: Sequence[str]) -> int:
        """Remove the execution's coordination record and these callbacks' records (deleting it; its
        callback ids are in its log): how many items went. Idempotent. A lease held on the record goes with
        it, so a release after this changes nothing."""
        ...
