"""The definitions on DynamoDB (the definitions table): each definition's latest item, its versions and
the domain's waits record (the layout and the rules of a delete: the package's docstring). Queries, Gets
and conditional writes only."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from stepwell.config import DEFAULT_RETENTION_DAYS, DEFAULT_SUBJECT_INDEX
from stepwell.features.definitions.ids import StoreError, check_id
from stepwell.features.definitions.model import encode_definition
from stepwell.features.definitions.store.records import (
    CONTEXT_RECORD,
    CONTEXT_STATUS,
    CONTEXT_WORKFLOW,
    ConcurrentUpdate,
    StoredWorkflow,
    Validator,
    WorkflowAlreadyExistsError,
    default_validator,
    epoch_ms,
    prepare_definition,
    waited_events,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
VERSIONS_SUFFIX = "#versions"
# Sort keys of a domain's own records beside its definitions (no workflow id starts with "~").
RECORD_PREFIX = "~"
# The domain's waits record: `ev`, every event name a version of its definitions waits for, and
# `complete` once it holds those of every version stored before it.
WAITS_KEY = RECORD_PREFIX + "waits"
TTL_ATTRIBUTE = "ttl"


def _version_key(workflow_id: str, version: int) -> str:
    return f"{workflow_id}#{version:06d}"


class DynamoDbDefinitionStore:
    def __init__(
        self,
        dynamodb: DynamoDBClient,
        table: str,
        *,
        validator: Validator = default_validator,
        now_ms: Callable[[], int] = epoch_ms,
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
        workflow_id, document = prepare_definition(domain, workflow, self._validator, generate=create)
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
            "FilterExpression": "recordType = :r AND (#cs = :running OR #s = :running)",
            "ExpressionAttributeNames": {
                "#d": "domain",
                "#s": "status",
                "#cs": CONTEXT_STATUS,
                "#w": "workflowId",
                "#cw": CONTEXT_WORKFLOW,
                "#v": "ver",
            },
            "ExpressionAttributeValues": {
                ":d": {"S": domain},
                ":r": {"S": CONTEXT_RECORD},
                ":running": {"S": "RUNNING"},
            },
            "ProjectionExpression": "#w, #cw, #v",
        }
        running: set[tuple[str, int]] = set()
        while True:
            response = self._db.query(**kwargs)
            running.update(
                ((i.get(CONTEXT_WORKFLOW) or i["workflowId"])["S"], int(i["ver"]["N"]))
                for i in response.get("Items", [])
            )
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
