"""The operation log port: per execution, an append-only log of batches, and the external inputs senders
write for the next run to absorb.

Fencing: `append_batch` is a conditional put on (execution, seq). A worker holds the log's next seq in
its checkpoint token; a stale worker whose seq was taken by a newer one gets `SequenceConflict`.
"""

from __future__ import annotations

from typing import Protocol

from stepwell.model import Batch, ExternalInput


class OperationLog(Protocol):
    def append_batch(self, execution_id: str, batch: Batch) -> None:
        """Conditional put of the batch at `batch.seq`. Raises SequenceConflict if that seq exists."""
        ...

    def load_batches(
        self,
        execution_id: str,
        after_seq: int = -1,
        limit: int = 1000,
        inputs: list[ExternalInput] | None = None,
    ) -> tuple[list[Batch], int | None]:
        """Batches with seq > after_seq in order, at most `limit`; the second value is the last seq
        returned when more may follow (pass it as after_seq), else None. With `inputs`, the page that
        ends the log also appends the execution's pending inputs to it (input_id order), in the same read
        where the store can: a run needs both."""
        ...

    def put_external_input(self, execution_id: str, item: ExternalInput) -> None: ...

    def list_external_inputs(self, execution_id: str) -> list[ExternalInput]:
        """Pending inputs in input_id order."""
        ...

    def delete_external_inputs(self, execution_id: str, input_ids: list[str]) -> None:
        """Remove absorbed inputs (after the batch that absorbed them was appended)."""
        ...

    def expire_log(self, execution_id: str, count: int, ended_at: float) -> None:
        """The execution ended at `ended_at`: its log batches seq 0..count-1 expire a retention period
        later, with its item (the terminal batch, appended after, gets its expiry as it is written).
        Idempotent."""
        ...

    def delete_log(self, execution_id: str) -> int:
        """Remove every batch and pending input of the execution (deleting it): how many items went.
        Idempotent."""
        ...

    def keep_log(self, execution_id: str, count: int) -> None:
        """Take the expiry off the log batches seq 0..count-1 (Batch.expires_at): they are kept until
        expire_log, for an execution that waits past their expiry (stepwell.core.log_expiry). Idempotent."""
        ...
