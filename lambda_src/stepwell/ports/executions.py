"""The executions port: an execution's record (created once, read, ended once) and the listings of
executions (by workflow, status, domain and subject, or tag)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from stepwell.model import ExecutionQuery, ExecutionRecord, ExecutionStatus, Page


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
        result: str | None = None,
        result_is_ref: bool = False,
        error: Mapping[str, Any] | None = None,
        code_version: str | None = None,
    ) -> bool:
        """Set a terminal status (and result or error) if the execution is still RUNNING (conditional).
        True if this call ended it, False if it had already ended. `code_version`: the worker version that
        ran it, recorded unless it was pinned already (a run that ends the execution pins it no other
        way)."""
        ...

    def list_executions(
        self, query: ExecutionQuery, limit: int = 100, next_token: str | None = None
    ) -> Page[ExecutionRecord]:
        """Newest first for workflow (createdAt), status (updatedAt) and a tag within its domain
        (createdAt; the tag's entries are written with the record); by subject for domain."""
        ...
