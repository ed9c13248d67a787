"""The engine's log I/O: reading an execution's log batches and folding them into its journal (through the
per-process cache of folds), writing a run's changes as the next batch or carrying it on the lease's
release, keeping the log from expiring while the execution waits, and the payload store's objects for
text too large for an item (batches, inputs, results).

LogIO is a base of stepwell.core.engine.Engine (whose fields it reads: the ports, the cache, the metrics,
the inline limit and the worker version), so its methods are the engine's: Engine.append_journal, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from stepwell.core.batch_body import decode_body, encode_body, restore_execution_input
from stepwell.core.batch_codec import packed_size
from stepwell.core.batch_keys import INPUT_REF
from stepwell.core.journal import Journal
from stepwell.core.journal_cache import FoldedLog, JournalCache, copy_journal
from stepwell.core.journal_state import ChildStart, FlushedBatch
from stepwell.core.log_expiry import LOG_DECISION_SLACK_SECONDS
from stepwell.core.metrics import Metric, Metrics
from stepwell.errors import LogIncomplete
from stepwell.model import Batch, CallbackRef, ExecutionId, ExecutionRecord, ExternalInput
from stepwell.ports import Clock, ExecutionStore, PayloadStore

# A suspending run's last batch rides on the lease's release only while the coordination record stays
# within one write unit (1 KB): the record holds the execution id twice (its key and eid) and up to this
# many bytes of other attribute names and values besides the batch (packed: stepwell.core.batch_codec).
CARRIED_RECORD_OVERHEAD_BYTES = 128
# An end rides on the release up to this size, packed (the record's own attributes take the rest of 3 KB): the
# release then costs at most 3 write units, never more than writing the batch to the log and deleting the
# record would.
CARRIED_END_MAX_BYTES = 3 * 1024 - 512
# The starters' and the workers' clocks differ by far less than this, and a name is free again only days
# after its execution ended (its retention period and NAME_HOLD_SECONDS).
CLOCK_SKEW_SECONDS = 3600.0


def predates(record: ExecutionRecord, written_at: float) -> bool:
    """Whether a batch written at `written_at` is older than the execution `record`: an earlier execution
    under its name left it, whose record the table's TTL removed before the rest of its items. A time the
    store does not know (0, for an item without one) never predates."""
    return 0 < written_at < record.created_at - CLOCK_SKEW_SECONDS


def carried_batch_max_bytes(execution_id: str) -> int:
    """The largest batch a suspending run carries on its lease's release (a record of one write unit)."""
    return 1024 - 2 * len(execution_id.encode()) - CARRIED_RECORD_OVERHEAD_BYTES


class LogIO:
    """The log and the payload store, for the Engine that derives from it."""

    # The Engine's fields and method this class uses (stepwell.core.engine.Engine).
    store: ExecutionStore
    payloads: PayloadStore
    clock: Clock
    metrics: Metrics
    journals: JournalCache
    inline_limit: int
    code_version: str | None
    start_child: Callable[[ExecutionRecord, ChildStart], None]

    # ------------------------------------------------------------------ payloads

    def offload(self, execution_id: str, label: str, text: str | None) -> tuple[str | None, bool]:
        stored, is_ref = self.offload_reference(execution_id, label, text)
        if is_ref:
            self.put_offloaded(execution_id, label, text)
        return stored, is_ref

    def offload_reference(self, execution_id: str, label: str, text: str | None) -> tuple[str | None, bool]:
        """What `offload` stores in an item for `text` (its reference when offloaded), writing nothing."""
        if text is None or len(text.encode("utf-8")) <= self.inline_limit:
            return text, False
        return self.payloads.reference(execution_id, label, text), True

    def put_offloaded(self, execution_id: str, label: str, text: str | None) -> None:
        """Put the object `offload_reference` named (the same object again, when it exists)."""
        assert text is not None
        self.payloads.put(execution_id, label, text)
        size = len(text.encode("utf-8"))
        self.metrics.add(Metric.PAYLOAD_BYTES_OFFLOADED, size, ExecutionId.parse(execution_id).workflow_id)

    def resolve(self, text: str | None, is_ref: bool) -> str | None:
        if text is None or not is_ref:
            return text
        return self.payloads.get(text)

    # ------------------------------------------------------------------ the log

    def load_journal(self, execution_id: str) -> Journal:
        """The execution's journal, the whole log folded: from the cache's fold when it has one (taken out
        of it: the caller owns the journal), reading only the batches from its last one on."""
        return self._load(execution_id).journal

    def open_journal(
        self,
        execution_id: str,
        pending: list[ExternalInput] | None = None,
        empty: bool = False,
        log_next: int | None = None,
    ) -> Journal:
        """load_journal for a worker's run, which ends it with close_journal: the run works on a copy, and
        the batches it writes are noted for the fold close_journal may cache. With `pending`, the
        execution's pending inputs (payloads as stored) are appended to it, read with the log. Nothing is
        read when the caller knows the log is `empty` (it created the execution this moment), nor when it
        knows the log's next seq (`log_next`, HandOff.log_next: no input is pending) and the cache holds the
        fold of exactly that much of it."""
        if empty:
            folded = FoldedLog(Journal(execution_id))
            folded.journal.finish_loading()
        else:
            folded = self._load(execution_id, pending, log_next)
        if not self.journals.enabled:
            return folded.journal
        live = copy_journal(folded.journal)
        self.journals.open(live, folded)
        return live

    def close_journal(self, journal: Journal, keep: bool) -> None:
        """With `keep` (the run flushed everything and was not fenced), cache the fold of the execution's
        log with the batches the run wrote, for its next message; otherwise the next load reads the whole
        log. Each written batch is folded from a fresh decode of its text, as a load would fold it."""
        run = self.journals.close(journal)
        if run is None or not keep:
            return
        for batch, text in run.written:
            body = decode_body(text)
            if INPUT_REF in body:  # folding it as a load does reads the input back: left to the next load
                return
            self._fold(run.folded, batch, body, len(text))
        if run.folded.journal.next_seq == journal.next_seq:  # it holds every batch the run wrote
            self.journals.put(journal.execution_id, run.folded)

    def _load(
        self, execution_id: str, pending: list[ExternalInput] | None = None, log_next: int | None = None
    ) -> FoldedLog:
        inputs: dict[str, str] = {}
        cached = self.journals.take(execution_id) if self.journals.enabled else None
        if cached is not None and log_next is not None and cached.journal.next_seq == log_next:
            folded: FoldedLog | None = cached  # the log has nothing the fold lacks
        else:
            folded = self._fold_after(cached, inputs, pending) if cached is not None else None
        if folded is None:
            if pending is not None:
                pending.clear()  # read again with the whole log
            folded = FoldedLog(Journal(execution_id))
            for batch in self._batches(execution_id, after_seq=-1, pending=pending):
                self._fold_read(folded, batch, inputs)
        folded.journal.finish_loading()
        return folded

    def _fold_after(
        self, cached: FoldedLog, inputs: dict[str, str], pending: list[ExternalInput] | None
    ) -> FoldedLog | None:
        """`cached` with the batches written after it folded on top; None when its last batch is not in
        the log as it was (the execution was created again after its items expired)."""
        last = cached.last_batch
        if last is None:
            return None
        batches = self._batches(cached.journal.execution_id, after_seq=last.seq - 1, pending=pending)
        first = next(batches, None)
        if first is None or not _same_batch(first, last):
            return None
        for batch in batches:
            self._fold_read(cached, batch, inputs)
        return cached

    def _fold(self, folded: FoldedLog, batch: Batch, body: dict[str, Any], size: int) -> None:
        """Fold one batch as the store holds it (`body`: its body as written, `size`: its stored text)."""
        if batch.seq != folded.journal.next_seq:
            raise LogIncomplete(
                f"execution {folded.journal.execution_id!r}: its log has batch {batch.seq} but not batch "
                f"{folded.journal.next_seq} (expired under the table's TTL)"
            )
        folded.journal.fold(batch.seq, body)
        folded.journal.offloaded_batches |= batch.body_is_ref
        folded.journal.log_expiry.note(batch.expires_at)
        oldest = folded.journal.oldest_batch_at
        if oldest is None or batch.created_at < oldest:
            folded.journal.oldest_batch_at = batch.created_at
        folded.last_batch = batch
        folded.size += size

    def _fold_read(self, folded: FoldedLog, batch: Batch, inputs: dict[str, str]) -> None:
        text = self._batch_text(batch)
        self._fold(folded, batch, self._stored_body(text, inputs), len(text))

    def _batches(
        self, execution_id: str, after_seq: int, pending: list[ExternalInput] | None = None
    ) -> Iterator[Batch]:
        """The execution's batches with seq > after_seq in order (one paginated Query), and with
        `pending` its pending inputs appended to it by the same Query."""
        after = after_seq
        while True:
            batches, last = self.store.load_batches(execution_id, after_seq=after, inputs=pending)
            yield from batches
            if last is None:
                return
            after = last

    def _batch_bodies(self, record: ExecutionRecord) -> Iterator[dict[str, Any]]:
        """The bodies of the execution's batches in order, as written, and last the batch its
        coordination record carries while the log has not taken it in (see carry_or_append_journal).
        Batches an earlier execution under its name left (`predates`) are not its own: left out."""
        execution_id = record.execution_id
        # Read before the log: a run that writes the carried batch meanwhile makes the log longer, so the
        # carried one is then not the log's next and is left out (the log holds it).
        carried = self.store.get_carried_batch(execution_id)
        inputs: dict[str, str] = {}
        count = 0
        for batch in self._batches(execution_id, after_seq=-1):
            if predates(record, batch.created_at):
                continue
            count += 1
            yield self._stored_body(self._batch_text(batch), inputs)
        if carried is not None and carried.seq == count and not predates(record, carried.created_at):
            yield self._stored_body(carried.body, inputs)

    def _batch_text(self, batch: Batch) -> str:
        return self.payloads.get(batch.body) if batch.body_is_ref else batch.body

    def _stored_body(self, text: str, inputs: dict[str, str]) -> dict[str, Any]:
        """A batch body as written: an offloaded execution input is read back once per load however many
        batches refer to it (`inputs`: those this load has read so far, by reference)."""
        body = decode_body(text)
        input_ref = body.get(INPUT_REF)
        if isinstance(input_ref, str):
            if input_ref not in inputs:
                inputs[input_ref] = self.payloads.get(input_ref)
            restore_execution_input(body, inputs[input_ref])
        return body

    def expire_log(self, journal: Journal, ended_at: float) -> None:
        """The execution ended at `ended_at`: its log expires a retention period after (before the end is
        logged, see Endings.end). No write when every batch already expires late enough
        (stepwell.core.log_expiry)."""
        if not journal.log_expiry.lasts_past(ended_at, self.store.retention_seconds):
            self.store.expire_log(journal.execution_id, journal.next_seq, ended_at)

    def keep_log_until(self, journal: Journal, now: float, wake_at: float | None) -> float | None:
        """The execution suspends until `wake_at` (None: until an input comes): the wake-up to arm, so that
        its next run still finds the whole log with a retention period to spare (stepwell.core.log_expiry). A
        wake-up later than that keeps the log now, a write per batch. None at all gets one at the last
        safe moment, which keeps the log if the execution still waits then."""
        safe_until = journal.log_expiry.safe_until(self.store.retention_seconds)
        if safe_until is None or (wake_at is not None and wake_at <= safe_until):
            return wake_at
        if wake_at is None and now < safe_until - LOG_DECISION_SLACK_SECONDS:
            return safe_until
        self.keep_log(journal)
        return wake_at

    def keep_log(self, journal: Journal) -> None:
        """Keep the execution's log until it ends (no batch expires): for a next run that may come at any
        time. A write per batch, none when no batch of it expires."""
        if journal.log_expiry.earliest is not None:
            self.store.keep_log(journal.execution_id, journal.next_seq)
            journal.log_expiry.made_kept()

    def keep_log_of(self, execution_id: str) -> None:
        """keep_log for an execution this process has not loaded (reads its log)."""
        self.keep_log(self.load_journal(execution_id))

    def append_journal(
        self, record: ExecutionRecord, journal: Journal, terminal: bool = False
    ) -> FlushedBatch:
        """Write the journal's unflushed changes as its next batch. Raises SequenceConflict when fenced."""
        return self._append_flushed(record, journal, journal.flush(), terminal)

    def carry_or_append_journal(
        self, record: ExecutionRecord, journal: Journal, terminal: bool = False
    ) -> Batch | None:
        """The last batch of a run, to carry on the lease's release instead of writing it when it is small
        and nothing waits for it to be stored, saving a write; otherwise written as append_journal does,
        and None. A run that suspends the execution: its InvocationCompleted and what a replay would
        record again (FlushedBatch.carriable: the wait it suspends on), which the execution's next batch
        takes in (Journal.carry). `terminal`: the execution's end (not its first batch), which the record
        keeps for the retention period."""
        flushed = journal.flush()
        if terminal:
            may_carry, limit = flushed.carriable_at_end, CARRIED_END_MAX_BYTES
        else:
            may_carry, limit = flushed.carriable, carried_batch_max_bytes(record.execution_id)
        if may_carry:
            text = encode_body(flushed.body)
            if packed_size(text) <= limit:  # as the record keeps it
                if journal.next_seq == 0 and not flushed.took_carried:
                    # A first run that suspended at once: it started now. A later run that carries again
                    # (it suspended at once too) holds the start the first one counted.
                    self.metrics.add(Metric.EXECUTIONS_STARTED, 1, record.workflow_id)
                self._count_recorded(record, flushed)
                return Batch(seq=journal.next_seq, body=text, created_at=self.clock.now(), terminal=terminal)
        self._append_flushed(record, journal, flushed, terminal)
        return None

    def resolve_callbacks(self, record: ExecutionRecord, callbacks: list[tuple[str, str]]) -> int:
        """Write the records that resolve new callback ids (callback id, operation id) to their execution
        and operation. A record that exists already (an earlier run made the same derived id) is kept,
        with the completion it may hold: returns how many did, whose run must go again to read them."""
        found = 0
        for callback_id, operation_id in callbacks:
            ref = CallbackRef(callback_id, record.execution_id, operation_id, version=self.code_version)
            found += not self.store.put_callback(ref)
        return found

    def _append_flushed(
        self, record: ExecutionRecord, journal: Journal, flushed: FlushedBatch, terminal: bool
    ) -> FlushedBatch:
        seq = journal.next_seq
        # Callback ids must resolve before the SDK hands them to user code (right after this returns).
        self.resolve_callbacks(record, flushed.new_callbacks)
        text = encode_body(flushed.body)
        body, is_ref = self.offload(record.execution_id, f"batch-{seq}", text)
        journal.offloaded_batches |= is_ref
        now = self.clock.now()
        retention = self.store.retention_seconds
        # The end's batch expires a retention period after the end (an ended record's own time when a late
        # run settles it: never after the execution's item); the others as stepwell.core.log_expiry says.
        if terminal:
            expires_at: float | None = (now if record.ended_at is None else record.ended_at) + retention
        else:
            expires_at = journal.log_expiry.expiry_for(now, retention)
        stored = Batch(
            seq=seq,
            body=body or "",
            created_at=now,
            body_is_ref=is_ref,
            terminal=terminal,
            expires_at=None if expires_at is None else float(int(expires_at)),
        )
        self.store.append_batch(record.execution_id, stored)
        journal.next_seq = seq + 1
        journal.log_expiry.note(stored.expires_at)
        self.journals.written(journal, stored, text)
        # Counted once written: a fenced worker's batch is not, and seq 0 (only one worker writes it)
        # holds the execution's start, unless the run that carried it counted it.
        if seq == 0 and not flushed.took_carried:
            self.metrics.add(Metric.EXECUTIONS_STARTED, 1, record.workflow_id)
        self._count_recorded(record, flushed)
        if flushed.absorbed_input_ids:
            self.store.delete_external_inputs(record.execution_id, flushed.absorbed_input_ids)
        # Callbacks the end closes are done at the end, so a stop settled days late (a redrive) leaves no
        # record that outlives the execution's own item (their ttl counts from this time).
        closed_at = record.ended_at if terminal and record.ended_at is not None else self.clock.now()
        for callback_id in flushed.timed_out_callbacks:
            self.store.complete_callback(callback_id, closed_at)
        for child in flushed.child_starts:
            self.start_child(record, child)
        return flushed

    def _count_recorded(self, record: ExecutionRecord, flushed: FlushedBatch) -> None:
        if flushed.operations:
            self.metrics.add(Metric.OPERATIONS_RECORDED, len(flushed.operations), record.workflow_id)


def _same_batch(found: Batch, kept: Batch) -> bool:
    """Whether the store still holds the batch a fold ended with (its time compared to the millisecond:
    a store may write the number in another form)."""
    return (
        found.seq == kept.seq
        and found.body == kept.body
        and found.body_is_ref == kept.body_is_ref
        and abs(found.created_at - kept.created_at) < 0.001
        # Not when the log was kept since (ExecutionStore.keep_log): the fold's expiries are out of date.
        and found.expires_at == kept.expires_at
    )
