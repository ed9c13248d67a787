"""The records the definitions' stores keep (StoredWorkflow, ContextRecord), the Protocol of each store
(DefinitionStore, ContextStore, EventLog) and the checks and helpers both backends share."""

from __future__ import annotations

import copy
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from stepwell.features.definitions.ids import (
    MAX_CONTEXT_DATA_BYTES,
    StoreError,
    check_id,
    check_workflow_id,
)
from stepwell.features.definitions.validation import parse_storable_definition
from stepwell.model import Page

# recordType of a context item: the executions table holds the engine's items beside them.
CONTEXT_RECORD = "context"
# A context item's definition id and status: not `workflowId` and `status`, the keys of the engine's
# workflow-index and status-index, so a context is in neither (nothing lists contexts there) and its
# updates write no index partition shared by a tenant's every context. Items written before carry
# `workflowId` and `status`; readers take either, and finishing a context moves it to these names.
CONTEXT_WORKFLOW = "wf"
CONTEXT_STATUS = "cs"
# How long a de-duplication record stands (EventLog.claim_for) unless the caller says otherwise.
DEDUP_TTL_SECONDS = 7 * 86400


class ContextDataTooLarge(StoreError):
    """A context's data over MAX_CONTEXT_DATA_BYTES as JSON: nothing was written."""


class WorkflowAlreadyExistsError(StoreError):
    pass


class ConcurrentUpdate(StoreError):
    """Another writer changed the definition at the same time; try again."""


def epoch_ms() -> int:
    """Now, in epoch milliseconds (the definitions' timestamps)."""
    return int(time.time() * 1000)


# ================================================================== definitions


@dataclass(frozen=True)
class StoredWorkflow:
    domain: str
    workflow_id: str
    version: int
    created_at: int  # epoch ms
    updated_at: int  # epoch ms
    definition: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "workflowId": self.workflow_id,
            "version": self.version,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "definition": self.definition,
        }


Validator = Callable[[Mapping[str, Any]], object]


def default_validator(document: Mapping[str, Any]) -> object:
    """What a store checks before it stores a definition: the whole of validation (DefinitionInvalid)."""
    return parse_storable_definition(document)


class DefinitionStore(Protocol):
    def set_workflow(self, domain: str, workflow: Mapping[str, Any]) -> StoredWorkflow:
        """Create or update (a new version) the definition `workflow["id"]`."""
        ...

    def create_workflow(self, domain: str, data: Mapping[str, Any]) -> StoredWorkflow:
        """Create a definition under `data["id"]` or a generated id; WorkflowAlreadyExistsError if taken."""
        ...

    def get_workflow(
        self, domain: str, workflow_id: str, version: int | None = None
    ) -> StoredWorkflow | None: ...

    def list_workflows(self, domain: str) -> list[StoredWorkflow]: ...

    def list_for_routing(self, domain: str) -> tuple[list[StoredWorkflow], frozenset[str] | None]:
        """list_workflows, and in the same read every event name a context of the domain may wait for:
        those of every version ever stored, deleted definitions' too (their contexts run on). None when
        the store cannot tell (definitions an engine before this record stored, not yet seen again)."""
        ...

    def list_versions(self, domain: str, workflow_id: str) -> list[StoredWorkflow]: ...

    def delete_workflow(self, domain: str, workflow_id: str) -> bool: ...


def waited_events(document: Mapping[str, Any]) -> frozenset[str]:
    """The event names a definition's contexts wait for (its trigger_or_timeout nodes)."""
    nodes = document.get("nodes")
    return frozenset(
        node["event"]
        for node in (nodes if isinstance(nodes, list) else [])
        if isinstance(node, Mapping)
        and node.get("type") == "trigger_or_timeout"
        and isinstance(node.get("event"), str)
    )


def prepare_definition(
    domain: str, workflow: Mapping[str, Any], validator: Validator, generate: bool
) -> tuple[str, dict[str, Any]]:
    """(id, a copy to store) of a definition both stores would write: the domain and id checked (an id
    generated when `generate` and there is none), validated, JSON-serializable; StoreError if not."""
    check_id("domain", domain)
    if not isinstance(workflow, Mapping):
        raise StoreError(f"a definition must be a JSON object, got {type(workflow).__name__}")
    document = copy.deepcopy(dict(workflow))
    workflow_id = document.get("id")
    if workflow_id is None and generate:
        workflow_id = "wf-" + uuid.uuid4().hex[:20]
        document["id"] = workflow_id
    workflow_id = check_workflow_id(workflow_id)
    validator(document)
    try:
        json.dumps(document)
    except (TypeError, ValueError) as error:
        raise StoreError(f"definition {workflow_id!r} is not JSON-serializable: {error}") from error
    return workflow_id, document


# ================================================================== contexts

CONTEXT_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT")


@dataclass(kw_only=True)
class ContextRecord:
    domain: str
    workflow_id: str
    subject_id: str
    instance_id: str
    version: int
    execution_id: str
    status: str = "RUNNING"
    created_at: float = 0.0
    updated_at: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    # node id -> {"event": name, "callbackId": id}, and "once": "true" when an event resuming it can
    # never find another wait for its name open in the context (Definition.resumes_once)
    waiting: dict[str, dict[str, str]] = field(default_factory=dict)
    trigger_event_id: str | None = None
    error: dict[str, Any] | None = None

    @property
    def context_key(self) -> str:
        return f"{self.domain}#{self.workflow_id}#{self.subject_id}"

    def waits_for(self, event_name: str) -> list[tuple[str, str]]:
        """(node id, callback id) of every wait on `event_name`."""
        return [
            (node_id, wait["callbackId"])
            for node_id, wait in sorted(self.waiting.items())
            if wait.get("event") == event_name
        ]

    def resumed_once(self, event_name: str) -> bool:
        """Whether every wait on `event_name` is resumed once (see `waiting`): the router then completes
        their callbacks with no record of the resume, since no other wait can take the event later."""
        waits = [wait for wait in self.waiting.values() if wait.get("event") == event_name]
        return bool(waits) and all(wait.get("once") == "true" for wait in waits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "workflowId": self.workflow_id,
            "subjectId": self.subject_id,
            "instanceId": self.instance_id,
            "contextKey": self.context_key,
            "version": self.version,
            "executionId": self.execution_id,
            "status": self.status,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "data": self.data,
            "waiting": self.waiting,
            "triggerEventId": self.trigger_event_id,
            "error": self.error,
        }


def wait_entry(event_name: str, callback_id: str, once: bool) -> dict[str, str]:
    """A `ContextRecord.waiting` entry."""
    wait = {"event": event_name, "callbackId": callback_id}
    return {**wait, "once": "true"} if once else wait


def check_context_ids(domain: str, workflow_id: str, subject_id: str, instance_id: str | None = None) -> None:
    check_id("domain", domain)
    check_id("workflow id", workflow_id)
    check_id("subject id", subject_id)
    if instance_id is not None:
        check_id("instance id", instance_id)


def encode_context_data(data: Any) -> str:
    """A context's data as it is stored; ContextDataTooLarge naming its size when over the limit."""
    text = json.dumps(data, separators=(",", ":"), default=str)
    if len(text) > MAX_CONTEXT_DATA_BYTES:
        raise ContextDataTooLarge(
            f"context data is {len(text):,} bytes as JSON; at most {MAX_CONTEXT_DATA_BYTES:,} bytes "
            "(MAX_CONTEXT_DATA_BYTES) may be stored"
        )
    return text


def check_status(status: str) -> None:
    if status not in CONTEXT_STATUSES:
        raise StoreError(f"invalid context status {status!r}; allowed: {', '.join(CONTEXT_STATUSES)}")


class ContextStore(Protocol):
    """Every write of a context's data (create, save, set_waiting, clear_waiting, finish) refuses data
    over MAX_CONTEXT_DATA_BYTES as JSON with ContextDataTooLarge, before writing anything."""

    def create_context(self, record: ContextRecord) -> bool:
        """Put the context unless it exists (conditional). True if created."""
        ...

    def save_context(self, record: ContextRecord) -> None:
        """Put the context (updatedAt set now; createdAt kept from the record)."""
        ...

    def get_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> ContextRecord | None: ...

    def get_contexts(self, domain: str, workflow_id: str, subject_id: str) -> list[ContextRecord]:
        """All contexts of one (domain, definition, subject): one partition Query."""
        ...

    def delete_context(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> bool: ...

    def get_all_contexts_for_subject(
        self, domain: str, subject_id: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]: ...

    def get_all_contexts(
        self, domain: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]: ...

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
        """Record that the context waits for `event_name` at `node_id` (and its data); `once`: see
        ContextRecord.waiting. False if gone."""
        ...

    def clear_waiting(self, record: ContextRecord, node_id: str, data: Mapping[str, Any]) -> bool: ...

    def continue_to(self, record: ContextRecord, execution_id: str, successor_id: str) -> bool:
        """Name `successor_id` as the execution the context runs in, if its item names `execution_id` or
        `successor_id` already (a hand-off, stepwell.features.definitions.continuation: idempotent, whatever
        the status). False if gone or naming another execution."""
        ...

    def finish(
        self,
        record: ContextRecord,
        status: str,
        data: Mapping[str, Any] | None,
        error: Mapping[str, Any] | None = None,
    ) -> bool:
        """Set a final status (only while RUNNING); clears every wait. `data` None keeps the data stored
        (a context whose data cannot be stored ends with what it last stored). False if gone or already
        final. Data over MAX_CONTEXT_DATA_BYTES: ContextDataTooLarge, nothing written."""
        ...


def check_limit(limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise StoreError(f"limit must be 1..1000, got {limit!r}")


# ================================================================== event records


class EventLog(Protocol):
    def claim_for(
        self, key: str, now: float, ids: list[str], ttl_seconds: int = DEDUP_TTL_SECONDS
    ) -> list[str] | None:
        """Conditional put of a de-duplication record naming `ids` (what the claim is taken for), in one
        write: None if this call made it, else the ids the record that stands names (so a redelivery can
        finish what a claimer that died began, and nothing else; [] for a record that names none)."""
        ...

    def take_from_budget(self, key: str, limit: int, expires_at: int) -> bool:
        """Count one use of the budget `key` in one conditional write: True if fewer than `limit` were
        counted before (the count is then one higher), False once it is spent. `expires_at`: when the
        record may go (set by its first use; the caller puts the budget's period in the key, so an expired
        record that TTL has not deleted yet belongs to a period that is over)."""
        ...

    def record_rejected(
        self, event_id: str, reason: str, event: Mapping[str, Any] | None, now: float
    ) -> None: ...

    def list_rejected(self, limit: int = 100) -> list[dict[str, Any]]:
        """Rejected events, newest first."""
        ...


_KEY_TEXT = re.compile(r"^[^\x00-\x1f]{1,1024}$")


def check_record_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY_TEXT.match(key):
        raise StoreError(f"invalid record key {key!r}: 1-1024 printable characters")


def event_excerpt(event: Mapping[str, Any] | None) -> str:
    """A rejected event as its record keeps it: JSON, cut at 4,000 characters."""
    if event is None:
        return ""
    text = json.dumps(event, default=str)
    return text if len(text) <= 4000 else text[:4000] + "..."
