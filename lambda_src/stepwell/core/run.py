"""One run of one execution: what the worker's steps share (stepwell.core.worker, stepwell.core.endings)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stepwell.core.journal import Journal
from stepwell.model import ExecutionRecord, ExternalInput, Lease


@dataclass(frozen=True)
class Known:
    """What a caller of Worker.run in this process knows already, so the run does not read it again."""

    # The execution as the caller just read or wrote it (a sender that woke it, its start).
    record: ExecutionRecord | None = None
    # The caller created it this moment and sent no message: its log is empty and is not read (were it
    # not, the run's first batch would find its seq taken and the run be fenced).
    fresh: bool = False
    # Results of callbacks the caller completed, by callback id, as their records keep them.
    callback_results: Mapping[str, ExternalInput] = field(default_factory=dict)
    # No input is pending that this run must read (the caller completed callbacks, whose results are on
    # their records, and sent no message): the lease's word on the log's length may spare the read.
    no_inputs: bool = False


@dataclass(frozen=True)
class Run:
    """One run of one execution, from the moment its log and pending inputs are read: what the steps of
    the run share (the worker makes one per message that took the lease)."""

    record: ExecutionRecord
    journal: Journal  # the fold of its log, which the run extends
    lease: Lease
    known: Known
    lambda_context: Any | None
    # The inputs pending for it, their payloads read back (`offloaded` keeps that they were).
    inputs: list[ExternalInput]
    # The run's time: its inputs and due timers are absorbed, and a first run's start is logged, at it.
    now: float

    def of(self, record: ExecutionRecord) -> Run:
        """The same run of the execution as `record` has it (read again: it ended or moved meanwhile)."""
        return dataclasses.replace(self, record=record)


@dataclass(frozen=True)
class Invocation:
    """One call of the workflow's handler within a run: its InvocationCompleted is logged with these."""

    request_id: str
    started_at: float
