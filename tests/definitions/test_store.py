"""The definition, context and event-record stores: the same tests on memory and on DynamoDB (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stepwell.features.definitions.model import DefinitionInvalid
from stepwell.features.definitions.store import (
    ContextRecord,
    ContextStore,
    DefinitionStore,
    DynamoDbContextStore,
    DynamoDbDefinitionStore,
    DynamoDbEventLog,
    EventLog,
    InvalidId,
    MemoryContextStore,
    MemoryDefinitionStore,
    MemoryEventLog,
    StoreError,
    WorkflowAlreadyExistsError,
)
from stepwell.testing.mock_deployment import create_tables as create_deployment_tables

SUBJECT_INDEX = "domain-subjectId-index"
REGION = "us-east-1"


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def now(self) -> float:
        return self.t

    def now_ms(self) -> int:
        return int(self.t * 1000)


@dataclass
class Stores:
    definitions: DefinitionStore
    contexts: ContextStore
    events: EventLog
    clock: Clock
    dynamodb: Any = None


def create_tables(dynamodb: Any, name: str = "sw") -> None:
    """The tables exactly as docs/architecture.md describes them."""
    create_deployment_tables(dynamodb, name, SUBJECT_INDEX)


@pytest.fixture(params=["memory", "dynamodb"])
def stores(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stores]:
    clock = Clock()
    if request.param == "memory":
        yield Stores(
            MemoryDefinitionStore(now_ms=clock.now_ms),
            MemoryContextStore(now=clock.now),
            MemoryEventLog(),
            clock,
        )
        return
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        db = boto3.client("dynamodb", region_name=REGION)
        create_tables(db)
        yield Stores(
            DynamoDbDefinitionStore(db, "sw-definitions", now_ms=clock.now_ms),
            DynamoDbContextStore(db, "sw-executions", SUBJECT_INDEX, now=clock.now),
            DynamoDbEventLog(db, "sw-coordination"),
            clock,
            db,
        )


def definition(workflow_id: str | None = "onboarding", event: str = "signed_up") -> dict[str, Any]:
    document: dict[str, Any] = {
        "schemaVersion": 1,
        "nodes": [{"id": "start", "type": "trigger", "event": event}, {"id": "end", "type": "end"}],
        "edges": [{"from": "start", "to": "end"}],
    }
    if workflow_id is not None:
        document["id"] = workflow_id
    return document


def waiting(workflow_id: str, *events: str) -> dict[str, Any]:
    """A definition that waits for `events` in turn after its trigger."""
    nodes: list[dict[str, Any]] = [{"id": "t", "type": "trigger", "event": "begin"}]
    nodes += [
        {"id": f"w{index}", "type": "trigger_or_timeout", "event": event, "timeout": "1h"}
        for index, event in enumerate(events)
    ]
    nodes.append({"id": "e", "type": "end"})
    edges = [
        {"from": nodes[i]["id"], "to": nodes[i + 1]["id"], "branch": "event"}
        for i in range(1, len(nodes) - 1)
    ]
    edges += [{"from": node["id"], "to": "e", "branch": "timeout"} for node in nodes[1:-1]]
    edges.insert(0, {"from": "t", "to": nodes[1]["id"]})
    return {"schemaVersion": 1, "id": workflow_id, "nodes": nodes, "edges": edges}


# --- definitions ---


def test_routing_knows_every_event_any_version_ever_waited_for(stores: Stores) -> None:
    store = stores.definitions
    assert store.list_for_routing("acme")[0] == []
    store.set_workflow("acme", waiting("a", "paid", "shipped"))
    store.set_workflow("acme", waiting("a", "paid"))  # version 2 no longer waits for shipped
    store.set_workflow("acme", waiting("b", "approved"))
    store.set_workflow("other", waiting("c", "elsewhere"))
    assert store.delete_workflow("acme", "b")  # its running contexts still wait for approved
    workflows, waited = store.list_for_routing("acme")
    assert (
        [w.workflow_id for w in workflows] == ["a"] == [w.workflow_id for w in store.list_workflows("acme")]
    )
    assert waited == frozenset({"paid", "shipped", "approved"})
    assert store.list_for_routing("other")[1] == frozenset({"elsewhere"})


@pytest.mark.parametrize("stores", ["dynamodb"], indirect=True)  # only a table holds an older engine's
def test_routing_cannot_tell_for_definitions_an_older_engine_stored_until_one_is_stored_again(
    stores: Stores,
) -> None:
    store = stores.definitions
    store.set_workflow("acme", waiting("a", "paid"))
    store.set_workflow("acme", waiting("gone", "refunded"))
    store.delete_workflow("acme", "gone")
    # As an engine before the waits record left the table: no record, latest items without their mark.
    db = stores.dynamodb
    db.delete_item(TableName="sw-definitions", Key={"domain": {"S": "acme"}, "workflowId": {"S": "~waits"}})
    db.update_item(
        TableName="sw-definitions",
        Key={"domain": {"S": "acme"}, "workflowId": {"S": "a"}},
        UpdateExpression="REMOVE wv",
    )
    assert store.list_for_routing("acme")[1] is None  # every event must read the subject's contexts
    store.set_workflow("acme", waiting("b", "approved"))
    assert store.list_for_routing("acme")[1] is None  # "a" is still an older engine's
    store.set_workflow("acme", waiting("a", "paid"))
    # Made complete from every stored version, the deleted definition's too.
    assert store.list_for_routing("acme")[1] == frozenset({"paid", "refunded", "approved"})


RETENTION_SECONDS = 30 * 86400  # the stores' default retention_days


def apply_ttl(stores: Stores) -> None:
    """DynamoDB's TTL at the clock's time: every definitions item whose `ttl` has passed goes (the memory
    store drops a deleted definition's versions by itself once their time has come)."""
    if stores.dynamodb is None:
        return
    for item in stores.dynamodb.scan(TableName="sw-definitions")["Items"]:
        if "ttl" in item and float(item["ttl"]["N"]) <= stores.clock.now():
            key = {"domain": item["domain"], "workflowId": item["workflowId"]}
            stores.dynamodb.delete_item(TableName="sw-definitions", Key=key)


def ttls(stores: Stores, domain: str) -> dict[str, int | None]:
    """Sort key -> `ttl` of the domain's items and its versions (DynamoDB only)."""
    found: dict[str, int | None] = {}
    for item in stores.dynamodb.scan(TableName="sw-definitions")["Items"]:
        if item["domain"]["S"] in (domain, domain + "#versions"):
            found[item["workflowId"]["S"]] = int(item["ttl"]["N"]) if "ttl" in item else None
    return found


def test_a_deleted_definitions_versions_and_last_waits_record_expire_after_the_retention(
    stores: Stores,
) -> None:
    store = stores.definitions
    store.set_workflow("acme", waiting("a", "paid"))
    store.set_workflow("acme", waiting("a", "shipped"))
    store.set_workflow("acme", waiting("b", "approved"))
    deleted_at = int(stores.clock.now())
    assert store.delete_workflow("acme", "a")
    if stores.dynamodb is not None:
        # Its versions expire with the contexts that finished before the delete; the waits record
        # stays while "b" is left (it only grows: "a"'s contexts still running are routed).
        assert ttls(stores, "acme") == {
            "a#000001": deleted_at + RETENTION_SECONDS,
            "a#000002": deleted_at + RETENTION_SECONDS,
            "b#000001": None,
            "b": None,
            "~waits": None,
        }
    stores.clock.t += RETENTION_SECONDS - 1
    apply_ttl(stores)
    assert [v.version for v in store.list_versions("acme", "a")] == [1, 2]
    stores.clock.t += 1
    apply_ttl(stores)
    assert store.list_versions("acme", "a") == [] and store.get_workflow("acme", "a", 1) is None
    assert [v.version for v in store.list_versions("acme", "b")] == [1]
    assert store.list_for_routing("acme")[1] == frozenset({"paid", "shipped", "approved"})

    deleted_at = int(stores.clock.now())
    assert store.delete_workflow("acme", "b")
    if stores.dynamodb is not None:  # the domain's last definition: its waits record goes too
        expires = deleted_at + RETENTION_SECONDS
        assert ttls(stores, "acme") == {"b#000001": expires, "~waits": expires}
    stores.clock.t += RETENTION_SECONDS
    apply_ttl(stores)
    assert store.list_versions("acme", "b") == []
    if stores.dynamodb is not None:
        assert ttls(stores, "acme") == {}
        # No record: every event reads the subject's contexts (a context of "a" or "b" may run on).
        assert store.list_for_routing("acme") == ([], None)


def test_setting_a_deleted_definition_again_continues_its_numbering_and_keeps_its_versions(
    stores: Stores,
) -> None:
    store = stores.definitions
    store.set_workflow("acme", waiting("a", "paid"))
    store.set_workflow("acme", waiting("a", "shipped"))
    assert store.delete_workflow("acme", "a")  # the domain's last: the waits record would expire too
    stores.clock.t += 3600
    assert store.set_workflow("acme", waiting("a", "returned")).version == 3
    if stores.dynamodb is not None:
        assert set(ttls(stores, "acme").values()) == {None}
    stores.clock.t += 2 * RETENTION_SECONDS
    apply_ttl(stores)
    assert [v.version for v in store.list_versions("acme", "a")] == [1, 2, 3]
    assert store.list_for_routing("acme")[1] == frozenset({"paid", "shipped", "returned"})
    assert store.set_workflow("acme", waiting("a", "paid")).version == 4


@pytest.mark.parametrize("stores", ["dynamodb"], indirect=True)
def test_a_waits_record_written_afresh_is_complete_only_if_every_running_contexts_version_is_stored(
    stores: Stores,
) -> None:
    db = stores.dynamodb
    store = DynamoDbDefinitionStore(
        db, "sw-definitions", now_ms=stores.clock.now_ms, contexts_table="sw-executions"
    )
    store.set_workflow("acme", waiting("a", "paid"))
    context = ContextRecord(
        domain="acme", workflow_id="a", subject_id="u1", instance_id="i1", version=1, execution_id="x1"
    )
    assert stores.contexts.create_context(context)  # RUNNING on version 1; nothing bounds its life
    assert store.delete_workflow("acme", "a")
    stores.clock.t += RETENTION_SECONDS
    apply_ttl(stores)  # "a"'s versions and the waits record go; the context runs on
    assert ttls(stores, "acme") == {} and store.list_for_routing("acme") == ([], None)
    # Written afresh, the record cannot name what the running context waits for ("paid"): it stays
    # incomplete, so routing reads the subject's contexts for every event.
    store.set_workflow("acme", waiting("b", "approved"))
    assert store.list_for_routing("acme")[1] is None
    assert stores.contexts.finish(context, "SUCCEEDED", None)
    store.set_workflow("acme", waiting("b", "approved"))
    assert store.list_for_routing("acme")[1] == frozenset({"approved"})


def test_set_get_list_delete_with_timestamps(stores: Stores) -> None:
    store = stores.definitions
    first = store.set_workflow("acme", definition())
    assert (first.version, first.created_at, first.updated_at) == (1, 1_700_000_000_000, 1_700_000_000_000)
    stores.clock.t += 5
    second = store.set_workflow("acme", definition(event="registered"))
    assert second.version == 2
    assert second.created_at == first.created_at
    assert second.updated_at == 1_700_000_005_000
    latest = store.get_workflow("acme", "onboarding")
    assert latest is not None and latest.version == 2
    assert latest.definition["nodes"][0]["event"] == "registered"
    old = store.get_workflow("acme", "onboarding", version=1)
    assert old is not None and old.definition["nodes"][0]["event"] == "signed_up"
    assert [v.version for v in store.list_versions("acme", "onboarding")] == [1, 2]
    store.set_workflow("acme", definition("orders"))
    store.set_workflow("other", definition("billing"))
    assert sorted(w.workflow_id for w in store.list_workflows("acme")) == ["onboarding", "orders"]
    assert [w.workflow_id for w in store.list_workflows("other")] == ["billing"]
    assert store.delete_workflow("acme", "onboarding") is True
    assert store.delete_workflow("acme", "onboarding") is False
    assert store.get_workflow("acme", "onboarding") is None
    # Versions stay (until the retention period has passed), and the numbering goes on.
    assert store.get_workflow("acme", "onboarding", version=2) is not None
    again = store.set_workflow("acme", definition())
    assert again.version == 3 and again.created_at == stores.clock.now_ms()


def test_create_workflow_generates_ids_and_refuses_collisions(stores: Stores) -> None:
    store = stores.definitions
    created = store.create_workflow("acme", definition(None))
    assert created.workflow_id.startswith("wf-") and created.definition["id"] == created.workflow_id
    other = store.create_workflow("acme", definition(None))
    assert other.workflow_id != created.workflow_id
    store.create_workflow("acme", definition("fixed"))
    with pytest.raises(WorkflowAlreadyExistsError, match="'fixed' already exists in domain 'acme'"):
        store.create_workflow("acme", definition("fixed"))
    stored = store.get_workflow("acme", "fixed")
    assert stored is not None and stored.version == 1


def test_invalid_definitions_and_ids_are_refused_and_nothing_is_stored(stores: Stores) -> None:
    store = stores.definitions
    broken = definition()
    broken["edges"] = [{"from": "start", "to": "nowhere"}]
    with pytest.raises(DefinitionInvalid, match="dangling edge"):
        store.set_workflow("acme", broken)
    assert store.get_workflow("acme", "onboarding") is None
    store.set_workflow("acme", definition())
    with pytest.raises(DefinitionInvalid):
        store.set_workflow("acme", broken)
    kept = store.get_workflow("acme", "onboarding")
    assert kept is not None and kept.version == 1
    with pytest.raises(InvalidId, match="must not contain '#'"):
        store.set_workflow("ac#me", definition())
    with pytest.raises(InvalidId, match="empty"):
        store.get_workflow("", "onboarding")
    with pytest.raises(InvalidId, match="at most 128"):
        store.set_workflow("acme", definition("x" * 129))
    with pytest.raises(InvalidId, match="must not contain '#'"):
        store.set_workflow("acme", definition("a#b"))
    with pytest.raises(InvalidId, match=r"ids starting with 'stepwell\.' are reserved"):
        store.set_workflow("acme", definition("stepwell.definition"))


# --- contexts ---


def context(
    subject: str, instance: str, workflow_id: str = "onboarding", domain: str = "acme"
) -> ContextRecord:
    return ContextRecord(
        domain=domain,
        workflow_id=workflow_id,
        subject_id=subject,
        instance_id=instance,
        version=1,
        execution_id=f"{domain}#stepwell.definition#{subject}/{instance}",
        data={"email": f"{subject}@example.com"},
    )


def test_contexts_save_get_query_delete(stores: Stores) -> None:
    store = stores.contexts
    assert store.create_context(context("u1", "i1")) is True
    assert store.create_context(context("u1", "i1")) is False
    store.create_context(context("u1", "i2"))
    store.create_context(context("u1", "i3", workflow_id="orders"))
    store.create_context(context("u2", "i4"))
    store.create_context(context("u1", "i5", domain="globex"))
    found = store.get_context("acme", "onboarding", "u1", "i1")
    assert (
        found is not None and found.data == {"email": "u1@example.com"} and found.created_at == stores.clock.t
    )
    assert [c.instance_id for c in store.get_contexts("acme", "onboarding", "u1")] == ["i1", "i2"]
    subject = store.get_all_contexts_for_subject("acme", "u1")
    assert sorted(c.instance_id for c in subject.items) == ["i1", "i2", "i3"]
    assert sorted(c.instance_id for c in store.get_all_contexts("acme").items) == ["i1", "i2", "i3", "i4"]
    assert [c.instance_id for c in store.get_all_contexts("globex").items] == ["i5"]
    stores.clock.t += 10
    found.data["step"] = 2
    store.save_context(found)
    saved = store.get_context("acme", "onboarding", "u1", "i1")
    assert saved is not None and saved.data["step"] == 2
    assert saved.created_at == 1_700_000_000.0 and saved.updated_at == 1_700_000_010.0
    assert store.delete_context("acme", "onboarding", "u1", "i1") is True
    assert store.delete_context("acme", "onboarding", "u1", "i1") is False
    assert store.get_context("acme", "onboarding", "u1", "i1") is None


def test_context_queries_paginate(stores: Stores) -> None:
    store = stores.contexts
    for index in range(7):
        store.create_context(context(f"s{index % 2}", f"i{index}"))
    seen: list[str] = []
    token: str | None = None
    while True:
        page = store.get_all_contexts("acme", limit=3, next_token=token)
        assert len(page.items) <= 3
        seen.extend(c.instance_id for c in page.items)
        token = page.next_token
        if not token:
            break
    assert sorted(seen) == [f"i{index}" for index in range(7)]
    first = store.get_all_contexts_for_subject("acme", "s0", limit=2)
    assert len(first.items) == 2 and first.next_token
    rest = store.get_all_contexts_for_subject("acme", "s0", limit=10, next_token=first.next_token)
    assert sorted(c.instance_id for c in first.items + rest.items) == ["i0", "i2", "i4", "i6"]


def test_a_context_listing_refuses_a_token_it_did_not_return(stores: Stores) -> None:
    store = stores.contexts
    for index in range(4):
        store.create_context(context(f"s{index % 2}", f"i{index}"))
    with pytest.raises(StoreError, match="page token 'garbage!' is not one this store returned"):
        store.get_all_contexts("acme", limit=2, next_token="garbage!")
    if stores.dynamodb is None:
        return  # the memory store's token is an offset into any listing
    subject_token = store.get_all_contexts_for_subject("acme", "s0", limit=1).next_token
    assert subject_token
    with pytest.raises(StoreError, match="does not belong to this listing"):
        store.get_all_contexts("acme", limit=2, next_token=subject_token)
    with pytest.raises(StoreError, match="does not belong to this listing"):
        store.get_all_contexts_for_subject("acme", "s1", limit=2, next_token=subject_token)


def test_waiting_and_finish(stores: Stores) -> None:
    store = stores.contexts
    record = context("u1", "i1")
    store.create_context(record)
    assert store.set_waiting(record, node_id="act", event_name="activated", callback_id="cb-1", data={"n": 1})
    assert store.set_waiting(
        record, node_id="paid", event_name="paid", callback_id="cb-2", data={"n": 2}, once=True
    )
    found = store.get_context("acme", "onboarding", "u1", "i1")
    assert found is not None
    assert found.waits_for("activated") == [("act", "cb-1")] and found.data == {"n": 2}
    assert found.resumed_once("paid") and not found.resumed_once("activated")
    assert not found.resumed_once("shipped")  # nothing waits for it
    saved = store.get_context("acme", "onboarding", "u1", "i1")
    assert saved is not None
    store.save_context(saved)  # a whole put keeps the marks too
    again = store.get_context("acme", "onboarding", "u1", "i1")
    assert again is not None and again.waiting == found.waiting
    assert store.clear_waiting(record, "act", {"n": 3})
    found = store.get_context("acme", "onboarding", "u1", "i1")
    assert (
        found is not None
        and found.waits_for("activated") == []
        and found.waits_for("paid") == [("paid", "cb-2")]
    )
    assert store.finish(record, "SUCCEEDED", {"n": 4}) is True
    assert store.finish(record, "FAILED", {"n": 5}, {"ErrorType": "X"}) is False
    found = store.get_context("acme", "onboarding", "u1", "i1")
    assert (
        found is not None and found.status == "SUCCEEDED" and found.waiting == {} and found.data == {"n": 4}
    )
    if stores.dynamodb is not None:
        item = stores.dynamodb.get_item(
            TableName="sw-executions",
            Key={"contextKey": {"S": "acme#onboarding#u1"}, "instanceId": {"S": "i1"}},
        )["Item"]
        assert int(item["ttl"]["N"]) == int(stores.clock.t) + 30 * 86400
    missing = context("u9", "gone")
    assert (
        store.set_waiting(missing, node_id="act", event_name="activated", callback_id="cb", data={}) is False
    )
    assert store.get_context("acme", "onboarding", "u9", "gone") is None
    with pytest.raises(ValueError, match="invalid context status 'DONE'"):
        store.finish(record, "DONE", {})


def test_a_hand_off_names_the_next_execution_only_from_the_one_it_names(stores: Stores) -> None:
    store = stores.contexts
    record = context("u1", "i1")
    store.create_context(record)
    first = record.execution_id
    assert store.continue_to(record, first, "next-1") is True
    assert store.continue_to(record, first, "next-1") is True  # a retry of the hand-off: the same
    assert store.continue_to(record, first, "next-2") is False  # it no longer names the first
    found = store.get_context("acme", "onboarding", "u1", "i1")
    assert found is not None and found.execution_id == "next-1" and found.status == "RUNNING"
    assert store.finish(found, "SUCCEEDED", None) is True
    assert store.continue_to(found, "next-1", "next-2") is True  # whatever the status: idempotent
    assert store.continue_to(context("u9", "gone"), "a", "b") is False


def test_context_ids_are_checked(stores: Stores) -> None:
    store = stores.contexts
    with pytest.raises(InvalidId, match="invalid subject id 'a#b': must not contain '#'"):
        store.create_context(context("a#b", "i1"))
    with pytest.raises(InvalidId, match="invalid subject id: empty"):
        store.get_contexts("acme", "onboarding", "")
    with pytest.raises(InvalidId, match="at most 128"):
        store.get_all_contexts_for_subject("acme", "s" * 200)
    with pytest.raises(InvalidId, match="invalid domain"):
        store.get_all_contexts("a#")
    assert store.get_all_contexts("acme").items == []


@pytest.mark.parametrize("stores", ["dynamodb"], indirect=True)
def test_contexts_share_the_executions_table_with_engine_items(stores: Stores) -> None:
    from stepwell.aws.dynamodb_store import DynamoDbExecutionStore
    from stepwell.model import ExecutionQuery, ExecutionRecord, ExecutionStatus

    engine_store = DynamoDbExecutionStore(
        stores.dynamodb,
        executions_table="sw-executions",
        operations_table="sw-operations",
        coordination_table="sw-coordination",
        subject_index=SUBJECT_INDEX,
    )
    engine_store.create_execution(
        ExecutionRecord(
            execution_id="acme#stepwell.definition#u1/i1",
            domain="acme",
            workflow_id="stepwell.definition",
            subject_id="u1",
            instance_id="i1",
            execution_name="i1",
            status=ExecutionStatus.RUNNING,
            created_at=1.0,
            updated_at=1.0,
        )
    )
    stores.contexts.create_context(context("u1", "i1"))
    # Each store sees only its own items: a context is never listed or found as an execution.
    assert [c.instance_id for c in stores.contexts.get_all_contexts_for_subject("acme", "u1").items] == ["i1"]
    assert stores.contexts.get_context("acme", "stepwell.definition", "u1", "i1") is None
    listed = engine_store.list_executions(ExecutionQuery(domain="acme", subject_id="u1")).items
    assert [r.workflow_id for r in listed] == ["stepwell.definition"]
    assert engine_store.get_execution("acme#onboarding#u1/i1") is None


# --- event records ---


def test_a_claim_names_what_it_is_for_and_a_refused_one_learns_it(stores: Stores) -> None:
    log = stores.events
    assert log.claim_for("evt#acme#r1", stores.clock.t, ["cbA", "cbB"]) is None  # this call made it
    assert log.claim_for("evt#acme#r1", stores.clock.t, ["cbC"]) == ["cbA", "cbB"]  # the standing one's
    assert log.claim_for("evt#acme#r2", stores.clock.t, []) is None
    assert log.claim_for("evt#acme#r2", stores.clock.t, ["cbA"]) == []  # it names none


def test_a_budget_counts_its_uses_up_to_its_limit(stores: Stores) -> None:
    log = stores.events
    expires = int(stores.clock.t) + 86400
    assert [log.take_from_budget("chain#acme#c1#1", 3, expires) for _ in range(5)] == [True] * 3 + [False] * 2
    assert log.take_from_budget("chain#acme#c2#1", 3, expires)  # each key has its own
    assert not log.take_from_budget("chain#acme#c1#1", 3, expires)
    assert log.take_from_budget("chain#acme#c1#1", 4, expires)  # a higher limit allows one more
    with pytest.raises(StoreError, match="invalid record key"):
        log.take_from_budget("", 3, expires)


def test_event_log_claims_once_and_records_rejections(stores: Stores) -> None:
    log = stores.events
    assert log.claim_for("evt#acme#1", stores.clock.t, [], ttl_seconds=60) is None
    assert log.claim_for("evt#acme#1", stores.clock.t + 59, []) == []
    log.record_rejected("e1", "the event maps to no subject", {"id": "e1"}, 10.0)
    log.record_rejected("e2", "extractor failed: boom", None, 20.0)
    rejected = log.list_rejected()
    assert [(r["eventId"], r["reason"]) for r in rejected] == [
        ("e2", "extractor failed: boom"),
        ("e1", "the event maps to no subject"),
    ]


@pytest.fixture
def dynamodb_stores(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stores]:
    """The DynamoDB stores alone (for what only DynamoDB's indexes show)."""
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    clock = Clock()
    with mock_aws():
        db = boto3.client("dynamodb", region_name=REGION)
        create_tables(db)
        yield Stores(
            DynamoDbDefinitionStore(db, "sw-definitions", now_ms=clock.now_ms),
            DynamoDbContextStore(db, "sw-executions", SUBJECT_INDEX, now=clock.now),
            DynamoDbEventLog(db, "sw-coordination"),
            clock,
            db,
        )


def test_a_context_is_in_none_of_the_engines_shared_indexes_and_an_older_item_leaves_them_when_it_ends(
    dynamodb_stores: Stores,
) -> None:
    """workflow-index and status-index are keyed by workflowId and status: a context item holding them
    would write the partition its tenant's every context shares on every update (make scale)."""
    db, store = dynamodb_stores.dynamodb, dynamodb_stores.contexts
    running = context("u1", "i1")
    assert store.create_context(running)
    assert store.set_waiting(running, node_id="w", event_name="paid", callback_id="cb", data={})

    def indexed(index: str, value: str) -> list[str]:
        response = db.query(
            TableName="sw-executions",
            IndexName=index,
            KeyConditionExpression="#k = :v",
            ExpressionAttributeNames={"#k": "workflowId" if index == "workflow-index" else "status"},
            ExpressionAttributeValues={":v": {"S": value}},
        )
        return [item["instanceId"]["S"] for item in response["Items"]]

    assert indexed("workflow-index", "onboarding") == [] and indexed("status-index", "RUNNING") == []
    assert (
        store.get_context("acme", "onboarding", "u1", "i1")
        == store.get_contexts("acme", "onboarding", "u1")[0]
    )
    # An item an earlier release wrote: still read, and finishing it takes it out of both indexes.
    older = context("u2", "i2")
    item = {
        "contextKey": {"S": "acme#onboarding#u2"},
        "instanceId": {"S": "i2"},
        "recordType": {"S": "context"},
        "domain": {"S": "acme"},
        "workflowId": {"S": "onboarding"},
        "subjectId": {"S": "u2"},
        "status": {"S": "RUNNING"},
        "createdAt": {"N": "1"},
        "updatedAt": {"N": "1"},
        "nm": {"S": "i2"},
        "ver": {"N": "1"},
        "eid": {"S": older.execution_id},
        "wt": {"M": {}},
    }
    db.put_item(TableName="sw-executions", Item=item)
    found = store.get_context("acme", "onboarding", "u2", "i2")
    assert found is not None and (found.workflow_id, found.status) == ("onboarding", "RUNNING")
    assert indexed("workflow-index", "onboarding") == ["i2"] == indexed("status-index", "RUNNING")
    assert store.finish(older, "SUCCEEDED", None)
    assert not store.finish(older, "FAILED", None)  # ended once
    assert indexed("workflow-index", "onboarding") == [] and indexed("status-index", "SUCCEEDED") == []
    ended = store.get_context("acme", "onboarding", "u2", "i2")
    assert ended is not None and (ended.workflow_id, ended.status) == ("onboarding", "SUCCEEDED")
