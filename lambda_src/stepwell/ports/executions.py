"""The executions port: an execution's record (created once, read, paused and resumed, ended once, deleted)
and the listings of executions (by workflow, status, domain and subject, or tag)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stepwell.model import (
    ExecutionQuery,
    ExecutionRecord,
    ExecutionStatus,
    Page,
    PauseState,
    ResumeRequest,
)


class ExecutionRecords(Protocol):
    def create_execution(self, record: ExecutionRecord) -> bool:
        """Put the record unless its id exists (conditional). True if created, False if it existed."""
        ...

    def get_execution(self, execution_id: str) -> ExecutionRecord | None: ...

    def complete_execution(
        self,
        execution_id: str,
        status: ExecutionStatus,
        now: float,
        *,
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        """Set an outcome (ExecutionStatus.is_outcome; and result or error) if the execution has not ended
        (RUNNING, PAUSING or PAUSED: a paused one may be stopped or time out; conditional), dropping its
        pause. True if this call ended it, False if it had already ended. `code_version`: the worker version
        that ran it, recorded unless it was pinned already (a run that ends the execution pins it no other
        way)."""
        ...

    def get_execution_status(self, execution_id: str) -> ExecutionStatus | None:
        """The execution's status alone (a consistent read of one attribute: a run in flight checks for a
        pause at its checkpoints); None when there is no such execution."""
        ...

    def request_pause(self, execution_id: str, pause: PauseState) -> bool:
        """RUNNING -> PAUSING with `pause` (conditional on RUNNING); updatedAt becomes its request time.
        False when the execution is not RUNNING (paused already, ended, or gone)."""
        ...

    def settle_pause(self, execution_id: str, requested_at: float, paused_at: float) -> bool:
        """PAUSING -> PAUSED, recording `paused_at`, if its pause is still the one requested at
        `requested_at` (conditional). False otherwise (resumed, ended, or PAUSED already)."""
        ...

    def end_pause(
        self, execution_id: str, requested_at: float, resumed: ResumeRequest, paused_seconds: float
    ) -> bool:
        """PAUSING or PAUSED -> RUNNING if its pause is still the one requested at `requested_at`
        (conditional): the pause goes, `resumed` and `paused_seconds` (ExecutionRecord's) are recorded.
        False when it is not paused by that pause any more."""
        ...

    def begin_deletion(self, execution_id: str, now: float) -> bool:
        """An ended execution (SUCCEEDED, FAILED, STOPPED or TIMED_OUT) -> DELETING, updatedAt `now`
        (conditional). False when it has not ended, is DELETING already, or is gone."""
        ...

    def delete_execution(self, execution_id: str) -> bool:
        """Remove a DELETING execution's record and its tag entries (the record conditional on DELETING,
        last). True if this call removed the record; False when there was none to remove."""
        ...

    def list_executions(
        self,
        query: ExecutionQuery,
        limit: int = 100,
        next_token: str | None = None,
        *,
        oldest_first: bool = False,
    ) -> Page[ExecutionRecord]:
        """Newest first for workflow (createdAt), status (updatedAt) and a tag within its domain
        (createdAt; the tag's entries are written with the record); by subject for domain. Equal times or
        subjects are ordered by execution id (ascending; a tag's: descending, its entries' order): the
        memory store's, and the DynamoDB store's across index shards (within one, its index's order).
        `oldest_first` reads the same index the other way (InvalidArgument for domain, whose order is no
        time's); a token continues only the listing and direction that returned it (on DynamoDB, under the
        same index_read_shards: stepwell.aws.dynamodb_store.shards)."""
        ...
