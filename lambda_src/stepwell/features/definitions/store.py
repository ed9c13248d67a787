"""Where definitions, contexts and event records live: one Protocol each, a memory and a DynamoDB
implementation of each (the DynamoDB ones take a boto3 client; Queries, Gets, conditional writes only).

Definitions (the definitions table, PK `domain`, SK `workflowId`), the semantics of omega-flow's store:
- the latest version of a definition is the item (domain, workflowId): `definition` (JSON text),
  `version` (N), `createdAt` (N, epoch ms, first write) and `updatedAt` (N, epoch ms, every write);
- every version is also kept as (domain + "#versions", workflowId + "#" + zero-padded version), for the
  operator (get a version, list them: the version a context names), the numbering and the waits record;
- the domain's waits record (domain, "~waits"): every event name a version of its definitions waits for.

Deleting a definition (`delete_workflow`) removes its latest item at once and gives its version items a
`ttl` of the retention period ahead (and the waits record too, when no definition of the domain is left),
so nothing it wrote stays for ever. A context of a deleted definition runs on regardless: nothing bounds
its life (a cycle through a wait is allowed, and the interpreter has no execution timeout), so nothing it
needs may depend on a horizon. It needs no version item (its definition travels in its execution's input)
and, for its events to resume it, only that a waits record that says it is complete names its events:
the record only grows while it stands, a missing one means "every event reads the subject's contexts",
and one written afresh is complete only if every RUNNING context of the domain has its version item
(else it is written incomplete, and every later write checks again). Each finished context that names a
version expired at most the retention period after the delete, as its version item does. Setting the id
again continues the numbering from the versions still stored and removes their `ttl` (and the waits
record's) again.

Contexts (the executions table, PK `contextKey` = domain#workflowId#subjectId, SK `instanceId`), the
semantics of omega-flow's workflow memory. A context item carries recordType = "context", domain,
subjectId, workflowId (the definition id), status, createdAt/updatedAt (N, epoch seconds like the
engine's items on this table), nm (= instanceId), ver (definition version), eid (the id of the engine
execution that runs it), dt (context data, JSON), wt (a map: node id -> {e: event name, cb: callback id}
for every event the context waits for), tev (the id of the event that started it), er (error JSON).
Listing by subject or by domain uses the (domain, subjectId) GSI, filtered to recordType = "context".

Event records (the coordination table, PK `key`): `evt#...` de-duplication records (conditional puts,
expiring through `ttl`), and rejected events `rejected#<event id>` with dueShard = "rejected" and
dueAt = when, so `list_rejected` is a Query on the due-index.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from stepwell.config import DEFAULT_RETENTION_DAYS, DEFAULT_SUBJECT_INDEX
from stepwell.features.definitions.model import encode_definition
from stepwell.model import KEY_PART_PATTERN, KEY_PART_RULE, Page

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
MAX_ID_LENGTH = 128
RESERVED_PREFIX = "stepwell."
VERSIONS_SUFFIX = "#versions"
# Sort keys of a domain's own records beside its definitions (no workflow id starts with "~").
RECORD_PREFIX = "~"
# The domain's waits record: `ev`, every event name a version of its definitions waits for, and
# `complete` once it holds those of every version stored before it.
WAITS_KEY = RECORD_PREFIX + "waits"
CONTEXT_RECORD = "context"
TTL_ATTRIBUTE = "ttl"
REJECTED_SHARD = "rejected"
DEDUP_TTL_SECONDS = 7 * 86400
REJECTED_TTL_SECONDS = 14 * 86400
# A context's data as stored (compact JSON in ASCII, so its length is its size in bytes): the item holds it
# beside its waits, error and keys within DynamoDB's 400 KB, so it is checked before any write (both
# stores), and a too large value fails its context with this limit named, never DynamoDB's raw refusal.
MAX_CONTEXT_DATA_BYTES = 256 * 1024


class StoreError(ValueError):
    pass


class ContextDataTooLarge(StoreError):
    """A context's data over MAX_CONTEXT_DATA_BYTES as JSON: nothing was written."""


class InvalidId(StoreError):
    """An id that is empty, too long, contains '#', or has characters the keys do not allow."""


class WorkflowAlreadyExistsError(StoreError):
    pass


class ConcurrentUpdate(StoreError):
    """Another writer changed the definition at the same time; try again."""


def check_id(label: str, value: object) -> str:
    """Refuse ids that cannot be key parts, with a message naming the value and the rule."""
    if not isinstance(value, str):
        raise InvalidId(f"invalid {label} {value!r}: must be a string")
    if not value:
        raise InvalidId(f"invalid {label}: empty; {KEY_PART_RULE}")
    if "#" in value:
        raise InvalidId(f"invalid {label} {value!r}: must not contain '#' (it separates key parts)")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidId(
            f"invalid {label} {value[:40]!r}...: {len(value)} characters; at most {MAX_ID_LENGTH}"
        )
    if not KEY_PART_PATTERN.match(value):
        raise InvalidId(f"invalid {label} {value!r}: {KEY_PART_RULE}")
    return value


def encode_token(listing: str, last_key: Mapping[str, Any]) -> str:
    """An opaque page token: the listing it continues and DynamoDB's LastEvaluatedKey."""
    data = json.dumps({"l": listing, "k": last_key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def decode_token(listing: str, token: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode()))
    except (ValueError, binascii.Error, RecursionError):  # RecursionError: JSON nested too deeply
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("k"), dict):
        raise StoreError(f"page token {token!r} is not one this store returned")
    if value.get("l") != listing:
        raise StoreError(
            f"page token {token!r} belongs to another listing; pass the token this query returned"
        )
    start_key: dict[str, Any] = value["k"]
    return start_key


def _now_ms() -> int:
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


def _default_validator(document: Mapping[str, Any]) -> object:
    from stepwell.features.definitions.validation import parse_storable_definition

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


def check_workflow_id(value: object) -> str:
    """A definition's id: a key part (see check_id), not under the reserved prefix."""
    workflow_id = check_id("workflow id", value)
    if workflow_id.lower().startswith(RESERVED_PREFIX):
        # Contexts share the executions table with the interpreter's executions (workflow
        # "stepwell.definition"): a definition under that name would collide with them.
        raise InvalidId(
            f"invalid workflow id {workflow_id!r}: ids starting with {RESERVED_PREFIX!r} are reserved"
        )
    return workflow_id


def _prepare(
    domain: str, workflow: Mapping[str, Any], validator: Validator, generate: bool
) -> tuple[str, dict[str, Any]]:
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


class MemoryDefinitionStore:
    def __init__(
        self,
        validator: Validator = _default_validator,
        now_ms: Callable[[], int] = _now_ms,
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
        workflow_id, document = _prepare(domain, workflow, self._validator, generate=create)
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


def _version_key(workflow_id: str, version: int) -> str:
    return f"{workflow_id}#{version:06d}"


class DynamoDbDefinitionStore:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        validator: Validator = _default_validator,
        now_ms: Callable[[], int] = _now_ms,
        retention_days: int = DEFAULT_RETENTION_DAYS,
        contexts_table: str | None = None,
        subject_index: str = DEFAULT_SUBJECT_INDEX,
    ) -> None:
        """`retention_days`: how long a deleted definition's versions stay (its contexts' retention).
        `contexts_table` (the executions table) and its `subject_index`: where a waits record written
        afresh finds the domain's RUNNING contexts (see the module's docstring); without it, a store
        takes the versions stored for all there is (as before the record could expire)."""
        self._db = dynamodb
        self.table = table
        self._validator = validator
        self._now_ms = now_ms
        self.retention_seconds = retention_days * 86400
        self.contexts_table = contexts_table
        self.subject_index = subject_index

    def _item(self, pk: str, sk: str, stored: StoredWorkflow) -> Item:
        return {
            "domain": {"S": pk},
            "workflowId": {"S": sk},
            "wid": {"S": stored.workflow_id},
            "version": {"N": str(stored.version)},
            "createdAt": {"N": str(stored.created_at)},
            "updatedAt": {"N": str(stored.updated_at)},
            "definition": {"S": encode_definition(stored.definition)},
        }

    def _stored(self, domain: str, item: Item) -> StoredWorkflow:
        return StoredWorkflow(
            domain=domain,
            workflow_id=(item["wid"] if "wid" in item else item["workflowId"])["S"],
            version=int(item["version"]["N"]),
            created_at=int(item["createdAt"]["N"]),
            updated_at=int(item["updatedAt"]["N"]),
            definition=json.loads(item["definition"]["S"]),
        )

    def _last_version(self, domain: str, workflow_id: str) -> int:
        response = self._db.query(
            TableName=self.table,
            KeyConditionExpression="#d = :d AND begins_with(#w, :p)",
            ExpressionAttributeNames={"#d": "domain", "#w": "workflowId"},
            ExpressionAttributeValues={":d": {"S": domain + VERSIONS_SUFFIX}, ":p": {"S": workflow_id + "#"}},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = response.get("Items", [])
        return int(items[0]["version"]["N"]) if items else 0

    def _put(self, domain: str, workflow: Mapping[str, Any], create: bool) -> StoredWorkflow:
        workflow_id, document = _prepare(domain, workflow, self._validator, generate=create)
        for _ in range(5):
            current = self._get_item(domain, workflow_id)
            if create and current is not None:
                raise WorkflowAlreadyExistsError(
                    f"workflow {workflow_id!r} already exists in domain {domain!r}"
                )
            previous = current.version if current else self._last_version(domain, workflow_id)
            waits_update = self._waits_update(domain, document)
            now = self._now_ms()
            stored = StoredWorkflow(
                domain=domain,
                workflow_id=workflow_id,
                version=previous + 1,
                created_at=current.created_at if current else now,
                updated_at=now,
                definition=document,
            )
            latest: dict[str, Any] = {
                "TableName": self.table,
                # wv: the domain's waits record holds this version's event names.
                "Item": {**self._item(domain, workflow_id, stored), "wv": {"BOOL": True}},
            }
            if current is None:
                latest["ConditionExpression"] = "attribute_not_exists(workflowId)"
            else:
                latest["ConditionExpression"] = "version = :v"
                latest["ExpressionAttributeValues"] = {":v": {"N": str(current.version)}}
            try:
                self._db.transact_write_items(
                    TransactItems=[
                        {"Put": latest},  # type: ignore[typeddict-item]
                        {
                            "Put": {
                                "TableName": self.table,
                                "Item": self._item(
                                    domain + VERSIONS_SUFFIX,
                                    _version_key(workflow_id, stored.version),
                                    stored,
                                ),
                                "ConditionExpression": "attribute_not_exists(workflowId)",
                            }
                        },
                        *waits_update,  # type: ignore[list-item]
                    ]
                )
            except self._db.exceptions.TransactionCanceledException:
                if create and self._get_item(domain, workflow_id) is not None:
                    raise WorkflowAlreadyExistsError(
                        f"workflow {workflow_id!r} already exists in domain {domain!r}"
                    ) from None
                continue  # someone else wrote a version meanwhile: read again
            if current is None and previous:
                self._keep_versions(domain, workflow_id)
            return stored
        raise ConcurrentUpdate(f"workflow {workflow_id!r} in domain {domain!r} kept changing; try again")

    def set_workflow(self, domain: str, workflow: Mapping[str, Any]) -> StoredWorkflow:
        return self._put(domain, workflow, create=False)

    def create_workflow(self, domain: str, data: Mapping[str, Any]) -> StoredWorkflow:
        return self._put(domain, data, create=True)

    def _waits_update(self, domain: str, document: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The write (in the new version's transaction) that adds its event names to the domain's waits
        record (WAITS_KEY; none when they are in it already) and removes the `ttl` a delete gave it. One
        written afresh (or still incomplete) is made complete from every version stored (deleted
        definitions' too), unless a RUNNING context's version is no longer stored: its events are then
        unknown, so the record stays incomplete (routing reads the subject's contexts for every event)."""
        response = self._db.get_item(
            TableName=self.table,
            Key={"domain": {"S": domain}, "workflowId": {"S": WAITS_KEY}},
            ConsistentRead=True,
        )
        record = response.get("Item") or {}
        known = set(record.get("ev", {}).get("SS", []))
        names = set(waited_events(document))
        complete = bool(record.get("complete", {}).get("BOOL"))
        expiring = TTL_ATTRIBUTE in record
        if not complete:
            stored_names, stored_versions = self._every_version(domain)
            names |= stored_names
            complete = self._running_versions(domain) <= stored_versions
        elif names <= known and not expiring:
            return []
        update: dict[str, Any] = {
            "TableName": self.table,
            "Key": {"domain": {"S": domain}, "workflowId": {"S": WAITS_KEY}},
            "UpdateExpression": "SET complete = :yes",
            "ExpressionAttributeValues": {":yes": {"BOOL": complete}},
            # The record as read: one its `ttl` removed meanwhile must not come back holding only these
            # names and called complete (the transaction fails, and the write is made again).
            "ConditionExpression": "attribute_exists(workflowId)"
            if record
            else "attribute_not_exists(workflowId)",
        }
        if expiring:
            update["UpdateExpression"] += " REMOVE #t"
            update["ExpressionAttributeNames"] = {"#t": TTL_ATTRIBUTE}
        if names:
            update["UpdateExpression"] += " ADD ev :names"
            update["ExpressionAttributeValues"][":names"] = {"SS": sorted(names)}
        return [{"Update": update}]

    def _every_version(self, domain: str) -> tuple[set[str], set[tuple[str, int]]]:
        """The event names every stored version of the domain's definitions waits for, and those versions."""
        names: set[str] = set()
        versions: set[tuple[str, int]] = set()
        for item in self._query_all(
            KeyConditionExpression="#d = :d",
            ExpressionAttributeNames={"#d": "domain", "#def": "definition", "#w": "workflowId"},
            ExpressionAttributeValues={":d": {"S": domain + VERSIONS_SUFFIX}},
            ProjectionExpression="#w, #def",
            ConsistentRead=True,
        ):
            workflow_id, _, version = item["workflowId"]["S"].rpartition("#")
            if version.isdigit():
                versions.add((workflow_id, int(version)))
            try:
                names |= waited_events(json.loads(item["definition"]["S"]))
            except (KeyError, ValueError):
                continue  # not a definition this engine can read: it names no event it could wait for
        return names, versions

    def _running_versions(self, domain: str) -> set[tuple[str, int]]:
        """(definition id, version) of every RUNNING context of the domain (one Query on the subject index
        of the executions table, paged; none when the store was not told the table). Only a waits record
        written afresh reads them: the first definition of a domain, or one set after its last was deleted
        and the record expired."""
        if self.contexts_table is None:
            return set()
        kwargs: dict[str, Any] = {
            "TableName": self.contexts_table,
            "IndexName": self.subject_index,
            "KeyConditionExpression": "#d = :d",
            "FilterExpression": "recordType = :r AND #s = :running",
            "ExpressionAttributeNames": {"#d": "domain", "#s": "status", "#w": "workflowId", "#v": "ver"},
            "ExpressionAttributeValues": {
                ":d": {"S": domain},
                ":r": {"S": CONTEXT_RECORD},
                ":running": {"S": "RUNNING"},
            },
            "ProjectionExpression": "#w, #v",
        }
        running: set[tuple[str, int]] = set()
        while True:
            response = self._db.query(**kwargs)
            running.update((i["workflowId"]["S"], int(i["ver"]["N"])) for i in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return running
            kwargs["ExclusiveStartKey"] = last

    def _version_keys(self, domain: str, workflow_id: str, expiring_only: bool = False) -> list[Item]:
        """The keys of a definition's version items (those with a `ttl` only, if `expiring_only`)."""
        query: dict[str, Any] = {
            "KeyConditionExpression": "#d = :d AND begins_with(#w, :p)",
            "ExpressionAttributeNames": {"#d": "domain", "#w": "workflowId"},
            "ExpressionAttributeValues": {
                ":d": {"S": domain + VERSIONS_SUFFIX},
                ":p": {"S": workflow_id + "#"},
            },
            "ProjectionExpression": "#d, #w",
            "ConsistentRead": True,
        }
        if expiring_only:
            query["FilterExpression"] = "attribute_exists(#t)"
            query["ExpressionAttributeNames"]["#t"] = TTL_ATTRIBUTE
        return [{"domain": i["domain"], "workflowId": i["workflowId"]} for i in self._query_all(**query)]

    def _keep_versions(self, domain: str, workflow_id: str) -> None:
        """A definition set again after a delete: its versions' `ttl` goes. Read after the new version's
        write, so a delete's `ttl` written before it (its condition: no latest item) is seen here, and one
        after it fails on that condition."""
        for key in self._version_keys(domain, workflow_id, expiring_only=True):
            try:
                self._db.update_item(
                    TableName=self.table,
                    Key=key,
                    UpdateExpression="REMOVE #t",
                    ConditionExpression="attribute_exists(workflowId)",  # expired meanwhile: gone, not remade
                    ExpressionAttributeNames={"#t": TTL_ATTRIBUTE},
                )
            except self._db.exceptions.ConditionalCheckFailedException:
                continue

    def _get_item(self, domain: str, workflow_id: str) -> StoredWorkflow | None:
        response = self._db.get_item(
            TableName=self.table,
            Key={"domain": {"S": domain}, "workflowId": {"S": workflow_id}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else self._stored(domain, item)

    def get_workflow(
        self, domain: str, workflow_id: str, version: int | None = None
    ) -> StoredWorkflow | None:
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        if version is None:
            return self._get_item(domain, workflow_id)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise StoreError(f"invalid version {version!r}: a whole number from 1")
        response = self._db.get_item(
            TableName=self.table,
            Key={
                "domain": {"S": domain + VERSIONS_SUFFIX},
                "workflowId": {"S": _version_key(workflow_id, version)},
            },
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else self._stored(domain, item)

    def _query_all(self, **kwargs: Any) -> list[Item]:
        items: list[Item] = []
        while True:
            response = self._db.query(TableName=self.table, **kwargs)
            items.extend(response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            kwargs["ExclusiveStartKey"] = last

    def list_workflows(self, domain: str) -> list[StoredWorkflow]:
        return self.list_for_routing(domain)[0]

    def list_for_routing(self, domain: str) -> tuple[list[StoredWorkflow], frozenset[str] | None]:
        check_id("domain", domain)
        items = self._query_all(
            KeyConditionExpression="#d = :d",
            ExpressionAttributeNames={"#d": "domain"},
            ExpressionAttributeValues={":d": {"S": domain}},
        )
        waits = next((item for item in items if item["workflowId"]["S"] == WAITS_KEY), None)
        latest = [item for item in items if not item["workflowId"]["S"].startswith(RECORD_PREFIX)]
        # A definition an engine before the waits record stored (no wv) may wait for anything.
        known = (
            waits is not None
            and bool(waits.get("complete", {}).get("BOOL"))
            and all("wv" in item for item in latest)
        )
        names = frozenset(waits.get("ev", {}).get("SS", [])) if known and waits is not None else None
        return [self._stored(domain, item) for item in latest], names

    def list_versions(self, domain: str, workflow_id: str) -> list[StoredWorkflow]:
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        items = self._query_all(
            KeyConditionExpression="#d = :d AND begins_with(#w, :p)",
            ExpressionAttributeNames={"#d": "domain", "#w": "workflowId"},
            ExpressionAttributeValues={":d": {"S": domain + VERSIONS_SUFFIX}, ":p": {"S": workflow_id + "#"}},
        )
        return [self._stored(domain, item) for item in items]

    def delete_workflow(self, domain: str, workflow_id: str) -> bool:
        """Delete the latest item; its version items, and the domain's waits record once no definition is
        left, get a `ttl` of the retention period ahead (see the module's docstring). The requests this
        adds are on the delete only: a Query of the versions, a transaction per 99 of them, a Query of one
        item of the domain and an UpdateItem."""
        check_id("domain", domain)
        check_id("workflow id", workflow_id)
        response = self._db.delete_item(
            TableName=self.table,
            Key={"domain": {"S": domain}, "workflowId": {"S": workflow_id}},
            ReturnValues="ALL_OLD",
        )
        if not response.get("Attributes"):
            return False
        expires = {"N": str(self._now_ms() // 1000 + self.retention_seconds)}
        self._expire_versions(domain, workflow_id, expires)
        self._expire_waits_if_last(domain, expires)
        return True

    def _expire_versions(self, domain: str, workflow_id: str, expires: dict[str, str]) -> None:
        # Each transaction checks that no latest item is back: a definition set again meanwhile keeps its
        # versions (and its write's _keep_versions removes any `ttl` written before it).
        absent = {
            "ConditionCheck": {
                "TableName": self.table,
                "Key": {"domain": {"S": domain}, "workflowId": {"S": workflow_id}},
                "ConditionExpression": "attribute_not_exists(workflowId)",
            }
        }
        keys = self._version_keys(domain, workflow_id)
        while keys:
            chunk, keys = keys[:99], keys[99:]
            for _ in range(3):
                updates = [
                    {
                        "Update": {
                            "TableName": self.table,
                            "Key": key,
                            "UpdateExpression": "SET #t = :t",
                            "ConditionExpression": "attribute_exists(workflowId)",
                            "ExpressionAttributeNames": {"#t": TTL_ATTRIBUTE},
                            "ExpressionAttributeValues": {":t": expires},
                        }
                    }
                    for key in chunk
                ]
                try:
                    self._db.transact_write_items(TransactItems=[absent, *updates])  # type: ignore[list-item]
                    break
                except self._db.exceptions.TransactionCanceledException as error:
                    reasons = error.response.get("CancellationReasons", [])
                    failed = [r.get("Code") == "ConditionalCheckFailed" for r in reasons]
                    if not failed or failed[0]:
                        return  # set again meanwhile (or not known why): its versions stay
                    # Version items that expired meanwhile (an earlier delete's `ttl`): the others again.
                    chunk = [key for key, gone in zip(chunk, failed[1:], strict=False) if not gone]
                    if not chunk:
                        break

    def _expire_waits_if_last(self, domain: str, expires: dict[str, str]) -> None:
        # Definitions' ids sort before "~" (they start with a letter or digit): the first item of the
        # domain is a definition if any is left. A definition set between this read and the write below
        # finds the `ttl` and removes it; one whose write found no waits update to make leaves a record
        # that may expire under it: routing then reads the subject's contexts for every event (right,
        # only slower) until a definition of the domain is set again and writes it afresh.
        first = self._db.query(
            TableName=self.table,
            KeyConditionExpression="#d = :d",
            ExpressionAttributeNames={"#d": "domain", "#w": "workflowId"},
            ExpressionAttributeValues={":d": {"S": domain}},
            ProjectionExpression="#w",
            Limit=1,
            ConsistentRead=True,
        ).get("Items", [])
        if first and not first[0]["workflowId"]["S"].startswith(RECORD_PREFIX):
            return
        # No record (an older engine's domain): nothing to expire.
        with contextlib.suppress(self._db.exceptions.ConditionalCheckFailedException):
            self._db.update_item(
                TableName=self.table,
                Key={"domain": {"S": domain}, "workflowId": {"S": WAITS_KEY}},
                UpdateExpression="SET #t = :t",
                ConditionExpression="attribute_exists(workflowId)",
                ExpressionAttributeNames={"#t": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":t": expires},
            )


# ================================================================== contexts

CONTEXT_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT")


@dataclass
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


def _wait(event_name: str, callback_id: str, once: bool) -> dict[str, str]:
    """A `ContextRecord.waiting` entry."""
    wait = {"event": event_name, "callbackId": callback_id}
    return {**wait, "once": "true"} if once else wait


def _wait_attribute(wait: Mapping[str, str]) -> dict[str, Any]:
    """A `waiting` entry as the item's `wt` map holds it."""
    attribute: dict[str, Any] = {"e": {"S": wait["event"]}, "cb": {"S": wait["callbackId"]}}
    if wait.get("once") == "true":
        attribute["o"] = {"BOOL": True}
    return {"M": attribute}


def _check_context_ids(
    domain: str, workflow_id: str, subject_id: str, instance_id: str | None = None
) -> None:
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


def _check_status(status: str) -> None:
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


def _check_limit(limit: int) -> None:
    if not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise StoreError(f"limit must be 1..1000, got {limit!r}")


class MemoryContextStore:
    def __init__(self, now: Callable[[], float] = time.time) -> None:
        self._items: dict[tuple[str, str], ContextRecord] = {}
        self._lock = threading.Lock()
        self._now = now

    @staticmethod
    def _key(record: ContextRecord) -> tuple[str, str]:
        return record.context_key, record.instance_id

    def create_context(self, record: ContextRecord) -> bool:
        _check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        _check_status(record.status)
        encode_context_data(record.data)  # the limit DynamoDB's store keeps, kept here too
        with self._lock:
            if self._key(record) in self._items:
                return False
            now = self._now()
            self._items[self._key(record)] = replace(copy.deepcopy(record), created_at=now, updated_at=now)
            return True

    def save_context(self, record: ContextRecord) -> None:
        _check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        _check_status(record.status)
        encode_context_data(record.data)
        with self._lock:
            now = self._now()
            self._items[self._key(record)] = replace(
                copy.deepcopy(record), created_at=record.created_at or now, updated_at=now
            )

    def get_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> ContextRecord | None:
        _check_context_ids(domain, workflow_id, subject_id, instance_id)
        with self._lock:
            return copy.deepcopy(self._items.get((f"{domain}#{workflow_id}#{subject_id}", instance_id)))

    def get_contexts(self, domain: str, workflow_id: str, subject_id: str) -> list[ContextRecord]:
        _check_context_ids(domain, workflow_id, subject_id)
        key = f"{domain}#{workflow_id}#{subject_id}"
        with self._lock:
            return [copy.deepcopy(r) for (k, _), r in sorted(self._items.items()) if k == key]

    def delete_context(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> bool:
        _check_context_ids(domain, workflow_id, subject_id, instance_id)
        with self._lock:
            return self._items.pop((f"{domain}#{workflow_id}#{subject_id}", instance_id), None) is not None

    def _page(self, records: list[ContextRecord], limit: int, next_token: str | None) -> Page[ContextRecord]:
        _check_limit(limit)
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
        node_id: str,
        event_name: str,
        callback_id: str,
        data: Mapping[str, Any],
        once: bool = False,
    ) -> bool:
        encode_context_data(dict(data))

        def change(current: ContextRecord) -> bool:
            current.waiting[node_id] = _wait(event_name, callback_id, once)
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

    def finish(
        self,
        record: ContextRecord,
        status: str,
        data: Mapping[str, Any] | None,
        error: Mapping[str, Any] | None = None,
    ) -> bool:
        _check_status(status)
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


def _json(value: Any) -> dict[str, str]:
    return {"S": json.dumps(value, separators=(",", ":"), default=str)}


def _data(value: Mapping[str, Any]) -> dict[str, str]:
    return {"S": encode_context_data(dict(value))}


class DynamoDbContextStore:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        subject_index: str,
        now: Callable[[], float] = time.time,
        retention_days: int = 30,
    ) -> None:
        self._db = dynamodb
        self.table = table
        self.subject_index = subject_index
        self._now = now
        # A finished context expires (TTL attribute `ttl`) with the engine's finished executions.
        self.retention_seconds = retention_days * 86400

    def _key(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> Item:
        return {"contextKey": {"S": f"{domain}#{workflow_id}#{subject_id}"}, "instanceId": {"S": instance_id}}

    def _item(self, record: ContextRecord) -> Item:
        item = self._key(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        item.update(
            {
                "recordType": {"S": CONTEXT_RECORD},
                "domain": {"S": record.domain},
                "workflowId": {"S": record.workflow_id},
                "subjectId": {"S": record.subject_id},
                "status": {"S": record.status},
                "createdAt": {"N": repr(float(record.created_at))},
                "updatedAt": {"N": repr(float(record.updated_at))},
                "nm": {"S": record.instance_id},
                "ver": {"N": str(record.version)},
                "eid": {"S": record.execution_id},
                "dt": _data(record.data),
                "wt": {"M": {node_id: _wait_attribute(wait) for node_id, wait in record.waiting.items()}},
            }
        )
        if record.trigger_event_id is not None:
            item["tev"] = {"S": record.trigger_event_id}
        if record.error is not None:
            item["er"] = _json(record.error)
        return item

    @staticmethod
    def _record(item: Item) -> ContextRecord:
        waits = item.get("wt", {}).get("M", {})
        error = item.get("er")
        return ContextRecord(
            domain=item["domain"]["S"],
            workflow_id=item["workflowId"]["S"],
            subject_id=item["subjectId"]["S"],
            instance_id=item["instanceId"]["S"],
            version=int(item["ver"]["N"]),
            execution_id=item["eid"]["S"],
            status=item["status"]["S"],
            created_at=float(item["createdAt"]["N"]),
            updated_at=float(item["updatedAt"]["N"]),
            data=json.loads(item["dt"]["S"]) if "dt" in item else {},
            waiting={
                node_id: _wait(
                    wait["M"]["e"]["S"], wait["M"]["cb"]["S"], wait["M"].get("o", {}).get("BOOL", False)
                )
                for node_id, wait in waits.items()
            },
            trigger_event_id=item["tev"]["S"] if "tev" in item else None,
            error=json.loads(error["S"]) if error else None,
        )

    def create_context(self, record: ContextRecord) -> bool:
        _check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        _check_status(record.status)
        now = self._now()
        try:
            self._db.put_item(
                TableName=self.table,
                Item=self._item(replace(record, created_at=now, updated_at=now)),
                ConditionExpression="attribute_not_exists(contextKey)",
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def save_context(self, record: ContextRecord) -> None:
        _check_context_ids(record.domain, record.workflow_id, record.subject_id, record.instance_id)
        _check_status(record.status)
        now = self._now()
        self._db.put_item(
            TableName=self.table,
            Item=self._item(replace(record, created_at=record.created_at or now, updated_at=now)),
        )

    def get_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> ContextRecord | None:
        _check_context_ids(domain, workflow_id, subject_id, instance_id)
        response = self._db.get_item(
            TableName=self.table,
            Key=self._key(domain, workflow_id, subject_id, instance_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None or item.get("recordType", {}).get("S") != CONTEXT_RECORD:
            return None
        return self._record(item)

    def get_contexts(self, domain: str, workflow_id: str, subject_id: str) -> list[ContextRecord]:
        _check_context_ids(domain, workflow_id, subject_id)
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "contextKey = :k",
            "FilterExpression": "recordType = :r",
            "ExpressionAttributeValues": {
                ":k": {"S": f"{domain}#{workflow_id}#{subject_id}"},
                ":r": {"S": CONTEXT_RECORD},
            },
            "ConsistentRead": True,
        }
        records: list[ContextRecord] = []
        while True:
            response = self._db.query(**kwargs)
            records.extend(self._record(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return records
            kwargs["ExclusiveStartKey"] = last

    def delete_context(self, domain: str, workflow_id: str, subject_id: str, instance_id: str) -> bool:
        _check_context_ids(domain, workflow_id, subject_id, instance_id)
        try:
            self._db.delete_item(
                TableName=self.table,
                Key=self._key(domain, workflow_id, subject_id, instance_id),
                ConditionExpression="recordType = :r",
                ExpressionAttributeValues={":r": {"S": CONTEXT_RECORD}},
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def _index_page(
        self, condition: str, values: Item, limit: int, next_token: str | None
    ) -> Page[ContextRecord]:
        _check_limit(limit)
        values = {**values, ":r": {"S": CONTEXT_RECORD}}
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": self.subject_index,
            "KeyConditionExpression": condition,
            "FilterExpression": "recordType = :r",
            "ExpressionAttributeNames": {"#d": "domain", **({"#s": "subjectId"} if ":s" in values else {})},
            "ExpressionAttributeValues": values,
            "Limit": limit,
        }
        listing = json.dumps(values, sort_keys=True)
        if next_token:
            kwargs["ExclusiveStartKey"] = decode_token(listing, next_token)
        records: list[ContextRecord] = []
        # The filter can leave a page short: read on until `limit` contexts or the end.
        while True:
            response = self._db.query(**kwargs)
            records.extend(self._record(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or len(records) >= limit:
                break
            kwargs["ExclusiveStartKey"] = last
            kwargs["Limit"] = limit - len(records)
        return Page(items=records, next_token=encode_token(listing, last) if last else None)

    def get_all_contexts_for_subject(
        self, domain: str, subject_id: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        check_id("subject id", subject_id)
        return self._index_page(
            "#d = :d AND #s = :s", {":d": {"S": domain}, ":s": {"S": subject_id}}, limit, next_token
        )

    def get_all_contexts(
        self, domain: str, limit: int = 100, next_token: str | None = None
    ) -> Page[ContextRecord]:
        check_id("domain", domain)
        return self._index_page("#d = :d", {":d": {"S": domain}}, limit, next_token)

    def _update(
        self, record: ContextRecord, expression: str, names: dict[str, str], values: Item, condition: str
    ) -> bool:
        values = {**values, ":u": {"N": repr(float(self._now()))}, ":r": {"S": CONTEXT_RECORD}}
        try:
            self._db.update_item(
                TableName=self.table,
                Key=self._key(record.domain, record.workflow_id, record.subject_id, record.instance_id),
                UpdateExpression=expression + ", updatedAt = :u",
                ConditionExpression="recordType = :r" + (f" AND {condition}" if condition else ""),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def set_waiting(
        self,
        record: ContextRecord,
        node_id: str,
        event_name: str,
        callback_id: str,
        data: Mapping[str, Any],
        once: bool = False,
    ) -> bool:
        wait = _wait_attribute(_wait(event_name, callback_id, once))
        return self._update(
            record, "SET wt.#n = :w, dt = :dt", {"#n": node_id}, {":w": wait, ":dt": _data(data)}, ""
        )

    def clear_waiting(self, record: ContextRecord, node_id: str, data: Mapping[str, Any]) -> bool:
        return self._update(record, "REMOVE wt.#n SET dt = :dt", {"#n": node_id}, {":dt": _data(data)}, "")

    def finish(
        self,
        record: ContextRecord,
        status: str,
        data: Mapping[str, Any] | None,
        error: Mapping[str, Any] | None = None,
    ) -> bool:
        _check_status(status)
        values: Item = {
            ":st": {"S": status},
            ":empty": {"M": {}},
            ":running": {"S": "RUNNING"},
            ":ttl": {"N": str(int(self._now()) + self.retention_seconds)},
        }
        expression = "SET #st = :st, wt = :empty, #ttl = :ttl"
        if data is not None:
            expression += ", dt = :dt"
            values[":dt"] = _data(data)
        if error is not None:
            expression += ", er = :er"
            values[":er"] = _json(dict(error))
        return self._update(record, expression, {"#st": "status", "#ttl": "ttl"}, values, "#st = :running")


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


def _check_record_key(key: str) -> None:
    if not isinstance(key, str) or not _KEY_TEXT.match(key):
        raise StoreError(f"invalid record key {key!r}: 1-1024 printable characters")


def _event_excerpt(event: Mapping[str, Any] | None) -> str:
    if event is None:
        return ""
    text = json.dumps(event, default=str)
    return text if len(text) <= 4000 else text[:4000] + "..."


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
        _check_record_key(key)
        with self._lock:
            expires = self._claims.get(key)
            if expires is not None and expires > now:
                return list(self._claimed_ids.get(key, []))
            self._claims[key] = now + ttl_seconds
            self._claimed_ids[key] = list(ids)
            return None

    def take_from_budget(self, key: str, limit: int, expires_at: int) -> bool:
        _check_record_key(key)
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
                {"eventId": event_id, "reason": reason, "at": now, "event": _event_excerpt(event)}
            )

    def list_rejected(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._lock:
            return sorted(self._rejected, key=lambda r: -float(r["at"]))[:limit]


class DynamoDbEventLog:
    def __init__(self, dynamodb: DynamoDBClient, table: str) -> None:
        self._db = dynamodb
        self.table = table

    def claim_for(
        self, key: str, now: float, ids: list[str], ttl_seconds: int = DEDUP_TTL_SECONDS
    ) -> list[str] | None:
        _check_record_key(key)
        item: dict[str, Any] = {
            "key": {"S": key},
            "at": {"N": repr(float(now))},
            "ttl": {"N": str(int(now) + ttl_seconds)},
        }
        if ids:
            item["ids"] = {"L": [{"S": value} for value in ids]}
        try:
            self._db.put_item(
                TableName=self.table,
                Item=item,
                # An expired record (TTL deletion is lazy) counts as absent.
                ConditionExpression="attribute_not_exists(#k) OR #t < :now",
                ExpressionAttributeNames={"#k": "key", "#t": "ttl"},
                ExpressionAttributeValues={":now": {"N": str(int(now))}},
                # The standing record comes back with the refusal: no read to learn what it names.
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self._db.exceptions.ConditionalCheckFailedException as error:
            standing: Item = error.response.get("Item") or {}  # type: ignore[assignment]
            named = standing.get("ids", {}).get("L", [])
            return [value["S"] for value in named if "S" in value]
        return None

    def take_from_budget(self, key: str, limit: int, expires_at: int) -> bool:
        _check_record_key(key)
        try:
            self._db.update_item(
                TableName=self.table,
                Key={"key": {"S": key}},
                UpdateExpression="ADD #n :one SET #t = if_not_exists(#t, :ttl)",
                ConditionExpression="attribute_not_exists(#n) OR #n < :limit",
                ExpressionAttributeNames={"#n": "used", "#t": "ttl"},
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":ttl": {"N": str(int(expires_at))},
                },
            )
        except self._db.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def record_rejected(
        self, event_id: str, reason: str, event: Mapping[str, Any] | None, now: float
    ) -> None:
        self._db.put_item(
            TableName=self.table,
            Item={
                "key": {"S": f"rejected#{event_id}"[:1024]},
                "dueShard": {"S": REJECTED_SHARD},
                "dueAt": {"N": repr(float(now))},
                "eventId": {"S": event_id or "-"},
                "reason": {"S": reason[:2000] or "-"},
                "event": {"S": _event_excerpt(event) or "-"},
                "ttl": {"N": str(int(now) + REJECTED_TTL_SECONDS)},
            },
        )

    def list_rejected(self, limit: int = 100) -> list[dict[str, Any]]:
        _check_limit(limit)
        response = self._db.query(
            TableName=self.table,
            IndexName="due-index",
            KeyConditionExpression="dueShard = :s",
            ExpressionAttributeValues={":s": {"S": REJECTED_SHARD}},
            ScanIndexForward=False,
            Limit=limit,
        )
        return [
            {
                "eventId": item["eventId"]["S"],
                "reason": item["reason"]["S"],
                "at": float(item["dueAt"]["N"]),
                "event": item["event"]["S"],
            }
            for item in response.get("Items", [])
        ]
