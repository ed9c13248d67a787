"""The coordination port: per execution one record (its lease, the wake-up its last run armed, the batch
a run carried instead of the log), and the callback records that resolve a callback id to its execution."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from stepwell.model import Batch, CallbackRef, ExternalInput, KeepWake, Lease


class Coordination(Protocol):
    def acquire_lease(self, execution_id: str, owner: str, now: float, duration: float) -> Lease | None:
        """Take the execution's lease if it is free or expired (one conditional write on its coordination
        record). None if busy. The lease carries the wake-up the last run armed, whether it was taken
        from a holder whose lease had expired, and whether any run held it before (`never_held`)."""
        ...

    def release_lease(
        self,
        execution_id: str,
        owner: str,
        wake: float | KeepWake | None = KeepWake.KEEP,
        ended_at: float | None = None,
        carried: Batch | None = None,
        log_next: int | None = None,
        log_length: int | None = None,
    ) -> None:
        """Drop the lease if `owner` still holds it, in the same write recording `wake`: the wake-up this
        run armed (its time), None when none is armed, KEEP to leave the recorded one. `ended_at`: the
        execution ended then (its record's `ended_at`, however late the run that settles it): its
        coordination record keeps the end it carries, if any, and stays for the retention period from that
        end, as the rest of the execution's items do, so `Lease.never_held` is never true for it again and
        it never outlives the execution's own item. `carried`: the
        run's last batch, kept on the record instead of the log (a small one: a suspension's events of no
        operation, or the execution's end, which the record then keeps for the retention period),
        returned by the next `acquire_lease` and `get_carried_batch`; without it a batch carried before
        stays while the execution runs (its seq tells whether the log has taken it since). `log_next`: the
        log's next seq as this run leaves it, returned by the next `acquire_lease` as `Lease.log_next`;
        None clears it. `log_length`: the batches the run knows the log holds, returned as
        `Lease.log_length` until a release gives another (None leaves the recorded one; an end clears it)."""
        ...

    def get_carried_batch(self, execution_id: str) -> Batch | None:
        """The batch the execution's coordination record carries (see release_lease), if any."""
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
