"""Status-change events: every change of an execution's status (RUNNING, then SUCCEEDED, FAILED, STOPPED
or TIMED_OUT; PAUSED and RUNNING again around a pause; DELETING) as an event on the deployment's bus, so
users react to them with their own rules.

The event (docs/reference/status-events.md): source `stepwell.executions`, detail-type "Stepwell Execution
Status Change", detail {executionId, executionName, workflow, domain, subjectId, status, startTime,
endTime, errorType, version, eventId}. The worker announces a change right before the log write only one
worker can make (the first batch, the terminal batch, the batch logging ExecutionPaused or
ExecutionResumed), so a duplicated message finds the change written and announces nothing; a worker that
dies between the announcement and the write leaves it to the retry, which announces it again with the same
`eventId` (at least once). DELETING is announced by the worker that deletes the execution, before it removes
anything (again, with the same `eventId`, by a retry).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from stepwell.errors import StepwellError
from stepwell.model import ExecutionRecord, ExecutionStatus

STATUS_EVENT_SOURCE = "stepwell.executions"
STATUS_EVENT_DETAIL_TYPE = "Stepwell Execution Status Change"


class StatusEventNotPut(StepwellError):
    """The bus refused a status-change event: the message fails, so its retry announces it again."""


def status_event_id(execution_id: str, status: ExecutionStatus, occurrence: float | None = None) -> str:
    """The same for the same execution and status, however often the change is announced. A status an
    execution may reach more than once (PAUSED, and RUNNING after a resume) is told apart by `occurrence`:
    the time of the request that made it (the pause's or the resume's, in epoch milliseconds)."""
    text = f"{execution_id}|{status.value}"
    if occurrence is not None:
        text += f"|{round(occurrence * 1000)}"
    return hashlib.sha256(text.encode()).hexdigest()


def iso_timestamp(epoch_seconds: float | None) -> str | None:
    """An epoch time as ISO 8601 in UTC with milliseconds (`2026-11-25T21:40:00.000Z`)."""
    if epoch_seconds is None:
        return None
    moment = datetime.fromtimestamp(epoch_seconds, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def status_change_detail(
    record: ExecutionRecord, status: ExecutionStatus, occurrence: float | None = None
) -> dict[str, Any]:
    """The event detail of `record` reaching `status` (for a terminal status, the record has ended);
    `occurrence`: status_event_id's."""
    ended = status.is_terminal
    error_type = record.error.get("ErrorType") if ended and record.error else None
    return {
        "executionId": record.execution_id,
        "executionName": record.execution_name,
        "workflow": record.workflow_id,
        "domain": record.domain,
        "subjectId": record.subject_id,
        "status": status.value,
        "startTime": iso_timestamp(record.created_at),
        "endTime": iso_timestamp(record.ended_at) if ended else None,
        "errorType": error_type if isinstance(error_type, str) else None,
        "version": record.code_version,
        "eventId": status_event_id(record.execution_id, status, occurrence),
    }


class NoStatusEvents:
    """StatusEvents switched off (STEPWELL_STATUS_EVENTS=false, or no bus): nothing is put."""

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        return None


class MemoryStatusEvents:
    """StatusEvents kept in memory (the local backend): `published` lists the details in order."""

    def __init__(self) -> None:
        self.published: list[dict[str, Any]] = []

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        self.published.extend(dict(detail) for detail in details)

    def statuses(self, execution_id: str) -> list[str]:
        """The statuses announced for one execution, in order."""
        return [str(d["status"]) for d in self.published if d["executionId"] == execution_id]
