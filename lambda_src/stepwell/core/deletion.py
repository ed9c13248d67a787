"""The worker's side of a delete (stepwell.core.lifecycle.delete_execution): a message for a DELETING
execution removes every item and payload of it, its record last.

Under the execution's lease, so no run writes meanwhile (a run in flight settling its end finishes first:
this message finds the lease busy and comes again). First DELETING is announced (again by a retry, with the
same eventId: stepwell.core.status_events), then in order: its wake-ups (one-time schedules), its log
(batches and pending inputs), its reserved start, its payloads, its coordination record with its callbacks'
records (their ids are in its log, read first), and its record with its tag entries. The lease goes with
the coordination record; a delete that fails on the way leaves the record DELETING, and its message's retry
goes on from there. A message that comes later finds no execution.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from aws_durable_execution_sdk_python.lambda_service import OperationType

from stepwell.core.batch_body import decode_body
from stepwell.core.batch_keys import OPERATIONS
from stepwell.core.engine import Engine
from stepwell.core.metrics import Metric
from stepwell.errors import PayloadMissing
from stepwell.model import Batch, ExecutionRecord, ExecutionStatus, HandOff, OutcomeAction, WorkOutcome


class Deletion:
    """How the worker deletes a DELETING execution (one per worker)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def delete(self, record: ExecutionRecord) -> WorkOutcome:
        engine, store, execution_id = self.engine, self.engine.store, record.execution_id
        owner = uuid.uuid4().hex
        lease = store.acquire_lease(execution_id, owner, engine.clock.now(), engine.lease_seconds)
        if lease is None:
            engine.metrics.add(Metric.LEASE_BUSY, 1, record.workflow_id)
            return WorkOutcome(execution_id, OutcomeAction.BUSY, status=ExecutionStatus.DELETING)
        try:
            engine.announce_status(record, ExecutionStatus.DELETING)
            callback_ids = self._callback_ids(execution_id, lease.hand_off.carried)
            engine.timers.cancel_all(execution_id)
            items = store.delete_log(execution_id)
            store.forget_flow_start(execution_id)
            payloads = engine.payloads.delete_execution(execution_id)
            items += store.delete_coordination(execution_id, callback_ids)
            engine.journals.take(execution_id)  # this process's fold of its log, if any
            removed = store.delete_execution(execution_id)
        except BaseException:
            # The lease goes if its record is still there (a release of a deleted one changes nothing).
            store.release_lease(execution_id, owner, HandOff())
            raise
        if removed:
            engine.metrics.add(Metric.EXECUTIONS_DELETED, 1, record.workflow_id)
        return WorkOutcome(
            execution_id,
            OutcomeAction.DELETED,
            status=ExecutionStatus.DELETING,
            details={"items": items + removed, "payloads": payloads},
        )

    def _callback_ids(self, execution_id: str, carried: Batch | None) -> list[str]:
        """The ids of the callbacks the execution's log records (and the batch its coordination record
        carries). A batch whose object is gone is skipped: its callbacks' records expire on their own."""
        ids: dict[str, None] = {}
        after = -1
        while True:
            batches, last = self.engine.store.load_batches(execution_id, after_seq=after)
            for batch in [*batches, *([carried] if carried is not None and last is None else [])]:
                try:
                    text = self.engine.payloads.get(batch.body) if batch.body_is_ref else batch.body
                except PayloadMissing:
                    continue
                ids.update(dict.fromkeys(_callback_ids(decode_body(text).get(OPERATIONS, ()))))
            if last is None:
                return list(ids)
            after = last


def _callback_ids(operations: Iterable[dict[str, Any]]) -> list[str]:
    return [
        str(op["CallbackDetails"]["CallbackId"])
        for op in operations
        if op.get("Type") == OperationType.CALLBACK.value
        and isinstance(op.get("CallbackDetails"), dict)
        and op["CallbackDetails"].get("CallbackId")
    ]
