"""The definitions' stores in memory (tests, the local harness): the DynamoDB stores' semantics, a lock
around dicts, copies in and out."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from stepwell.config import DEFAULT_RETENTION_DAYS
from stepwell.features.definitions.ids import StoreError, check_id
from stepwell.features.definitions.store.records import (
    DEDUP_TTL_SECONDS,
    ContextRecord,
    StoredWorkflow,
    Validator,
    WorkflowAlreadyExistsError,
    check_context_ids,
    check_limit,
    check_record_key,
    check_status,
    default_validator,
    encode_context_data,
    epoch_ms,
    event_excerpt,
    prepare_definition,
    wait_entry,
    waited_events,
)
from stepwell.model import Page


class MemoryDefinitionStore:
    def __init__(
        self,
        validator: Validator = default_validator,
        now_ms: Callable[[], int] = epoch_ms,
        retention_days: int = DEFAULT_RETENTION_DAYS,
    ) -> None:
        self._latest: dict[tuple[str, str], StoredWorkflow] = {}
        self._versions: dict[tuple[str, str], dict[int, StoredWorkflow]] = {}
        # A deleted definition's versions go at this time (epoch ms), as the DynamoDB store's `ttl` does.
        self._expires: dict[tuple[str, str], int] = {}
        # domain -> event names any version waits for. Kept for good: it is no item left behind, and
        # keeping it is what stays right for a context of a deleted definition that never ends.
        self._waited: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._validator = validator
        self._now_ms = now_ms
        self.retention_seconds = retention_days * 86400

    def _stored_versions(self, key: tuple[str, str]) -> dict[int, StoredWorkflow]:
        """The versions of a definition still stored (under the lock): a deleted one's go at their time."""
        expires = self._expires.get(key)
        if expires is not None and self._now_ms() >= expires:
            del self._expires[key]
            self._versions.pop(key, None)
        return self._versions.get(key, {})

    def _put(self, domain: str, workflow: Mapping[str, Any], create: bool) -> StoredWorkflow:
        workflow_id, document = prepare_definition(domain, workflow, self._validator, generate=create)
        with self._lock:
            current = self._latest.get((domain, workflow_id))
            if create and current is not None:
                raise WorkflowAlreadyExistsError(
                    f"workflow {workflow_id!r} already exists in domain {domain!r}"
                )
            self._stored_versions((domain, workflow_id))  # drops a deleted one's versions once due
            self._expires.pop((domain, workflow_id), None)  # set again: its versions are kept again
            versions = self._versions.setdefault((domain, workflow_id), {})
            now = self._now_ms()
            stored = StoredWorkflow(
                domain=domain,
                workflow_id=workflow_id,
                version=max(versions, default=0) + 1,
                created_at=current.created_at if current else now,
                updated_at=now,
                definition=document,
            )
            versions[stored.version] = stored
            self._latest[(domain, workflow_id)] = stored
            self._waited.setdefault(domain, set()).update(waited_events(document))
            return copy.deepcopy(stored)

    def set_workflow(self, domain: str, workflow: Mapping[str, Any]) -> StoredWorkflow:
        return self._put(domain, workflow, create=False)

    def create_workflow(self, domain: str, data: Mapping[str, Any]) -> StoredWorkflow:
        return self._put(domain, data, create=True)

    def get_workflow(
        self, domain: str, workflow_id: str, version: int | None = None
    ) -> StoredWorkflow | None:
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        with self._lock:
            if version is None:
                found = self._latest.get((domain, workflow_id))
            else:
                found = self._stored_versions((domain, workflow_id)).get(version)
            return copy.deepcopy(found)

    def list_workflows(self, domain: str) -> list[StoredWorkflow]:
        check_id("domain", domain)
        with self._lock:
            return [copy.deepcopy(w) for (d, _), w in sorted(self._latest.items()) if d == domain]

    def list_for_routing(self, domain: str) -> tuple[list[StoredWorkflow], frozenset[str] | None]:
        workflows = self.list_workflows(domain)
        with self._lock:
            return workflows, frozenset(self._waited.get(domain, set()))

    def list_versions(self, domain: str, workflow_id: str) -> list[StoredWorkflow]:
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        with self._lock:
            versions = self._stored_versions((domain, workflow_id))
            return [copy.deepcopy(versions[v]) for v in sorted(versions)]

    def delete_workflow(self, domain: str, workflow_id: str) -> bool:
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        with self._lock:
            if self._latest.pop((domain, workflow_id), None) is None:
                return False
            if (domain, workflow_id) in self._versions:
                self._expires[(domain, workflow_id)] = self._now_ms() + self.retention_seconds * 1000
            return True


class MemoryContextStore:
    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._items: dict[tuple[str, str], ContextRecord] = {}
        self._lock = threading.Lock()
        self._now = now

    @staticmethod
    def _key(record: ContextRecord) -> tuple[str, str]:
        return record.context_key, record.instance_id

    def create_context(self, record: ContextRecord) -> bool:
        check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        check_status(record.status)
        encode_context_data(record.data)  # the limit DynamoDB's store keeps, kept here too
        with self._lock:
            if self._key(record) in self._items:
                return False
            now = self._now()
            self._items[self._key(record)] = replace(copy.deepcopy(record), created_at=now, updated_at=now)
            return True

    def save_context(self, record: ContextRecord) -> None:
        check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        check_status(record.status)
        encode_context_data(record.data)
        with self._lock:
            now = self._now()
            self._items[self._key(record)] = replace(
                copy.deepcopy(record), created_at=record.created_at or now, updated_at=now
            )

    def get_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> ContextRecord | None:
        check_context_ids(domain, workflow_id, subject_id, instance_id)
        with self._lock:
            return copy.deepcopy(self._items.get((f"{domain}#{workflow_id}#{subject_id}", instance_id)))

    def get_contexts(self, domain: str, workflow_id: str, subject_id: str) -> list[ContextRecord]:
        check_context_ids(domain, workflow_id, subject_id)
        key = f"{domain}#{workflow_id}#{subject_id}"
        with self._lock:
            return [copy.deepcopy(r) for (k, _), r in sorted(self._items.items()) if k == key]

    def delete_context(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> bool:
        check_context_ids(domain, workflow_id, subject_id, instance_id)
        with self._lock:
            return self._items.pop((f"{domain}#{workflow_id}#{subject_id}", instance_id), None) is not None

    def _page(self, records: list[ContextRecord], limit: int, next_token: str | None) -> Page[ContextRecord]:
        check_limit(limit)
        start = 0
        if next_token:
            if not next_token.isdigit():
                raise StoreError(f"page token {next_token!r} is not one this store returned")
            start = int(next_token)
        chunk = records[start : start + limit]
        more = start + limit < len(records)
        return Page(items=[copy.deepcopy(r) for r in chunk], next_token=str(start + limit) if more else None)

    def get_all_contexts_for_subject(
        self, domain: str, subject_id: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        check_id("subject id", subject_id)
        with self._lock:
            records = [
                r for _, r in sorted(self._items.items()) if r.domain == domain and r.subject_id == subject_id
            ]
        return self._page(records, limit, next_token)

    def get_all_contexts(
        self, domain: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        with self._lock:
            records = sorted(
                (r for r in self._items.values() if r.domain == domain),
                key=lambda r: (r.subject_id, r.context_key, r.instance_id),
            )
        return self._page(records, limit, next_token)

    def _update(self, record: ContextRecord, change: Callable[[ContextRecord], bool]) -> bool:
        with self._lock:
            current = self._items.get(self._key(record))
            if current is None:
                return False
            if not change(current):
                return False
            current.updated_at = self._now()
            return True

    def set_waiting(
        self,
        record: ContextRecord,
        *,
        node_id: str,
        event_name: str,
        callback_id: str,
        data: Mapping[str, Any],
        once: bool = False,
    ) -> bool:
        encode_context_data(dict(data))

        def change(current: ContextRecord) -> bool:
            current.waiting[node_id] = wait_entry(event_name, callback_id, once)
            current.data = copy.deepcopy(dict(data))
            return True

        return self._update(record, change)

    def clear_waiting(self, record: ContextRecord, node_id: str, data: Mapping[str, Any]) -> bool:
        encode_context_data(dict(data))

        def change(current: ContextRecord) -> bool:
            current.waiting.pop(node_id, None)
            current.data = copy.deepcopy(dict(data))
            return True

        return self._update(record, change)

    def continue_to(self, record: ContextRecord, execution_id: str, successor_id: str) -> bool:
        def change(current: ContextRecord) -> bool:
            if current.execution_id not in (execution_id, successor_id):
                return False
            current.execution_id = successor_id
            return True

        return self._update(record, change)

    def finish(
        self,
        record: ContextRecord,
        status: str,
        data: Mapping[str, Any] | None,
        error: Mapping[str, Any] | None = None,
    ) -> bool:
        check_status(status)
        if data is not None:
            encode_context_data(dict(data))

        def change(current: ContextRecord) -> bool:
            if current.status != "RUNNING":
                return False
            current.status = status
            if data is not None:
                current.data = copy.deepcopy(dict(data))
            current.waiting = {}
            current.error = dict(error) if error is not None else None
            return True

        return self._update(record, change)


class MemoryEventLog:
    def __init__(self) -> None:
        self._claims: dict[str, float] = {}
        self._claimed_ids: dict[str, list[str]] = {}
        self._budgets: dict[str, int] = {}
        self._rejected: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def claim_for(
        self, key: str, now: float, ids: list[str], ttl_seconds: int = DEDUP_TTL_SECONDS
    ) -> list[str] | None:
        check_record_key(key)
        with self._lock:
            expires = self._claims.get(key)
            if expires is not None and expires > now:
                return list(self._claimed_ids.get(key, []))
            self._claims[key] = now + ttl_seconds
            self._claimed_ids[key] = list(ids)
            return None

    def take_from_budget(self, key: str, limit: int, expires_at: int) -> bool:
        check_record_key(key)
        with self._lock:
            used = self._budgets.get(key, 0)
            if used >= limit:
                return False
            self._budgets[key] = used + 1
            return True

    def record_rejected(
        self, event_id: str, reason: str, event: Mapping[str, Any] | None, now: float
    ) -> None:
        with self._lock:
            self._rejected.append(
                {"eventId": event_id, "reason": reason, "at": now, "event": event_excerpt(event)}
            )

    def list_rejected(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            return sorted(self._rejected, key=lambda r: -float(r["at"]))[:limit]
