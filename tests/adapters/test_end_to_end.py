"""End to end on moto in-process: the client starts an execution, the test plays SQS's event source
mapping (and EventBridge Scheduler) and hands the messages to the Lambda entry until the execution ends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from botocore.awsrequest import AWSResponse
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.log_expiry import LOG_HORIZON_SECONDS, NAME_HOLD_SECONDS
from stepwell.core.registry import Registry
from stepwell.core.worker import Known, Worker
from stepwell.errors import ExecutionAlreadyExists, ExecutionNotFound
from stepwell.model import ExecutionId, OutcomeAction
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

CALLBACKS: list[str] = []


@durable_execution
def approval_flow(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    doubled = context.step(lambda _: event["n"] * 2, name="double")
    context.wait(Duration.from_seconds(1), name="short-pause")
    context.wait(Duration.from_seconds(3 * 3600), name="long-pause")
    approval = context.wait_for_callback(
        lambda callback_id, _: CALLBACKS.append(callback_id), name="approval"
    )
    tripled = context.step(lambda _: event["n"] * 3, name="triple")
    return {"doubled": doubled, "tripled": tripled, "approval": approval}


@durable_execution
def two_steps(event: dict[str, Any], context: DurableContext) -> int:
    first = context.step(lambda _: event["n"] + 1, name="first")
    return context.step(lambda _: first * 10, name="second")


STEP_RUNS: list[str] = []


@durable_execution
def counted_steps(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    first = context.step(lambda _: STEP_RUNS.append("first") or event["n"] + 1, name="first")
    second = context.step(lambda _: STEP_RUNS.append("second") or first * 10, name="second")
    return {"n": second, "padding": "x" * event["padding"]}


@pytest.fixture
def stack(deployment: Deployment) -> tuple[StepwellClient, EntryRuntime, QueueDriver]:
    CALLBACKS.clear()
    STEP_RUNS.clear()
    registry = Registry()
    registry.register("counted-steps", counted_steps)
    registry.register("approval-flow", approval_flow)
    registry.register("two-steps", two_steps)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return client, runtime, QueueDriver(deployment, runtime, clock)


def test_steps_waits_and_a_callback_run_to_completion(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    client, _, driver = stack
    execution_id = client.start_execution(
        "approval-flow", {"n": 7}, execution_name="order-7", subject_id="o-7"
    )
    assert client.start_execution("approval-flow", {"n": 7}, execution_name="order-7", subject_id="o-7") == (
        execution_id
    )
    driver.run_until_quiet()
    assert client.describe_execution(execution_id)["Status"] == "RUNNING"
    assert driver.schedules_created >= 1  # the three-hour wait went through EventBridge Scheduler
    assert len(CALLBACKS) == 1

    # Through the bus: the rule delivers the event to the work queue, the worker applies it.
    client.publish_callback_event("success", CALLBACKS[0], result={"approved": True})
    driver.run_until_quiet()

    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"]) == {
        "doubled": 14,
        "tripled": 21,
        "approval": '{"approved": true}',
    }
    history = client.get_execution_history(execution_id)
    types = [event["EventType"] for event in history]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"
    for expected in ("StepSucceeded", "WaitStarted", "WaitSucceeded", "CallbackStarted", "CallbackSucceeded"):
        assert expected in types
    assert [event["EventId"] for event in history] == list(range(1, len(history) + 1))
    succeeded_steps = sorted(event.get("Name") for event in history if event["EventType"] == "StepSucceeded")
    assert succeeded_steps == ["approval submitter", "double", "triple"]
    page = client.list_executions(domain="default", subject_id="o-7")
    assert [record.execution_id for record in page.items] == [execution_id]
    assert driver.failed_message_ids == []


def test_every_message_delivered_twice_changes_nothing(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver],
) -> None:
    client, _, driver = stack
    driver.duplicate_every_message = True
    execution_id = client.start_execution("two-steps", {"n": 4}, execution_name="dup")
    driver.run_until_quiet()
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == 50
    history = client.get_execution_history(execution_id)
    types = [event["EventType"] for event in history]
    assert types.count("StepSucceeded") == 2
    assert types.count("ExecutionSucceeded") == 1
    assert driver.delivered > len(driver.distinct_delivered)  # duplicates really were delivered


def test_malformed_message_fails_alone_and_reaches_the_dlq(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    client, _, driver = stack
    execution_id = client.start_execution("two-steps", {"n": 1}, execution_name="ok")
    sqs = deployment.clients.sqs
    for body in ("not json", json.dumps({"kind": "launch"}), json.dumps({"kind": "invoke"}), json.dumps([1])):
        sqs.send_message(QueueUrl=deployment.config.work_queue_url, MessageBody=body)
    # Failed messages come back (here at once) until maxReceiveCount (3); then SQS moves them to the DLQ.
    driver.run_until_quiet(redeliver_failures=True)
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"
    assert len(set(driver.failed_message_ids)) == 4
    assert len(driver.failed_message_ids) == 4 * 3
    attributes = sqs.get_queue_attributes(
        QueueUrl=deployment.config.dlq_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "4"

    redrive = client.redrive_dlq()
    assert (redrive.method, redrive.moved) == ("receive-send", 4)
    assert driver.pending_bodies() and all(
        body in ("not json", '{"kind": "launch"}', '{"kind": "invoke"}', "[1]")
        for body in driver.pending_bodies()
    )


def test_injected_throttling_is_retried(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    client, _, driver = stack
    raised: list[str] = []
    _fail_first_call(deployment.clients.dynamodb, "PutItem", "ProvisionedThroughputExceededException", raised)
    _fail_first_call(deployment.clients.sqs, "SendMessage", "ThrottlingException", raised)
    _fail_first_call(deployment.clients.dynamodb, "GetItem", "InternalServerError", raised, status=500)
    execution_id = client.start_execution("two-steps", {"n": 2}, execution_name="throttled")
    driver.run_until_quiet()
    assert sorted(raised) == [
        "InternalServerError",
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
    ]
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == 30
    retries = deployment.clients.counter.snapshot()["retries"]
    assert retries == {"dynamodb.PutItem": 1, "sqs.SendMessage": 1, "dynamodb.GetItem": 1}
    assert driver.failed_message_ids == []


@pytest.mark.parametrize("padding", [0, 4096], ids=["end-carried-on-the-lease-record", "end-in-the-log"])
def test_a_first_run_reads_no_log_and_a_late_message_with_a_stale_record_replays_nothing(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment, padding: int
) -> None:
    client, runtime, driver = stack
    execution_id = client.start_execution(
        "counted-steps", {"n": 4, "padding": padding}, execution_name="first-run"
    )
    stale = runtime.engine.store.get_execution(execution_id)  # as a slow worker read it: RUNNING
    assert stale is not None and stale.status.value == "RUNNING"
    counter = deployment.clients.counter
    counter.reset()
    driver.run_until_quiet()
    # No run held its lease before: its log is empty and is not read (no Query of the operations table).
    assert "dynamodb.Query" not in counter.snapshot()["calls"]
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"
    assert STEP_RUNS == ["first", "second"]
    history = client.get_execution_history(execution_id)

    # A duplicate of the start message whose worker read the record before the end: the ended
    # execution's coordination record outlived it, so this lease is not a first one and the log is read.
    counter.reset()
    outcome = Worker(runtime.engine).run(execution_id, known=Known(record=stale))
    assert counter.snapshot()["calls"].get("dynamodb.Query", 0) >= 1
    assert outcome.action is not OutcomeAction.FENCED
    assert STEP_RUNS == ["first", "second"]  # no step body ran again
    assert client.get_execution_history(execution_id) == history


def _fail_first_call(
    aws_client: Any, operation: str, code: str, raised: list[str], status: int = 400
) -> None:
    """Answer the client's next `operation` with an error response, below botocore's retry handler
    (moto answers in a before-send hook, so the fault goes in where the HTTP response is produced)."""
    endpoint = aws_client._endpoint
    original = endpoint._do_get_response
    armed = [True]

    def failing(request: Any, operation_model: Any, context: Any) -> Any:
        if armed[0] and operation_model.name == operation:
            armed[0] = False
            raised.append(code)
            http = AWSResponse(request.url, status, {}, _RawBody(b"{}"))
            parsed = {
                "Error": {"Code": code, "Message": "injected fault"},
                "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": {}},
            }
            return (http, parsed), None
        return original(request, operation_model, context)

    endpoint._do_get_response = failing


class _RawBody:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _operations_items(deployment: Deployment, execution_id: str) -> list[dict[str, Any]]:
    response = deployment.clients.dynamodb.query(
        TableName=deployment.config.operations_table,
        KeyConditionExpression="executionId = :e",
        ExpressionAttributeValues={":e": {"S": execution_id}},
        ConsistentRead=True,
    )
    return list(response["Items"])


def test_an_ended_executions_log_expires_with_it_and_a_running_ones_never(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    # Log batches hold step results, inputs and errors: kept past retention, they outlived the execution
    # for good (and a later execution of the same name would have replayed them).
    client, _, driver = stack
    retention = 30 * 86400
    execution_id = client.start_execution("approval-flow", {"n": 2}, execution_name="order-2")
    driver.run_until_quiet()
    waiting = _operations_items(deployment, execution_id)
    # Waiting for its callback, which has no timeout: the driver fires every schedule, so also the wake-up
    # armed for the last moment its log was safe (stepwell.core.log_expiry), which kept it: no batch expires.
    assert waiting and all("ttl" not in item for item in waiting)

    client.send_callback_success(CALLBACKS[0], json.dumps("ok"))
    driver.run_until_quiet()
    record = client.engine.store.get_execution(execution_id)
    assert record is not None and record.ended_at is not None
    items = _operations_items(deployment, execution_id)
    assert {item["sk"]["S"] for item in items} >= {item["sk"]["S"] for item in waiting}
    expiries = {item["sk"]["S"]: int(item["ttl"]["N"]) for item in items if "ttl" in item}
    assert set(expiries) == {item["sk"]["S"] for item in items}  # every batch, the terminal one too
    # A retention period after the end, at most the horizon later (the batches written with an expiry).
    assert all(
        record.ended_at + retention - 1 <= expiry <= record.ended_at + retention + LOG_HORIZON_SECONDS
        for expiry in expiries.values()
    )


def test_an_execution_past_its_retention_is_gone_from_the_api_before_the_ttl_deletes_it(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver],
) -> None:
    """On DynamoDB: the record's `ttl` and the engine's expiry agree (tests/engine/test_expired_executions.py
    has the rest)."""
    client, _, driver = stack
    execution_id = client.start_execution("two-steps", {"n": 1}, execution_name="kept", subject_id="k-1")
    driver.run_until_quiet()
    record = client.engine.store.get_execution(execution_id)
    assert record is not None and record.ended_at is not None
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"

    stored = client.engine.store.get_execution(execution_id)
    client.engine.clock.advance_to(int(record.ended_at) + 30 * 86400)
    with pytest.raises(ExecutionNotFound):
        client.describe_execution(execution_id)
    with pytest.raises(ExecutionNotFound):
        client.get_execution_history(execution_id)
    assert client.list_executions(domain="default", subject_id="k-1").items == []
    assert client.list_executions(workflow="two-steps").items == []
    with pytest.raises(ExecutionAlreadyExists, match="retention"):
        client.start_execution("two-steps", {"n": 1}, execution_name="kept", subject_id="k-1")
    assert client.engine.store.get_execution(execution_id) == stored  # left for the TTL


def test_an_ended_executions_own_item_expires_days_after_every_other_item_of_it(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    """DynamoDB's TTL deletes expired items lazily and in no set order: while the execution's item is there
    its name stays taken, so its other items (the log, the coordination record, the tag entries), which a
    new execution under the name would meet, must expire first, by days."""
    client, _, driver = stack
    execution_id = client.start_execution(
        "approval-flow", {"n": 3}, execution_name="order-3", tags={"team": "billing"}
    )
    driver.run_until_quiet()
    client.send_callback_success(CALLBACKS[0], json.dumps("ok"))
    driver.run_until_quiet()
    record = client.engine.store.get_execution(execution_id)
    assert record is not None and record.ended_at is not None

    own_ttl, others = _ttls(deployment, execution_id, tag_partition="default#~tag#team#billing")
    assert own_ttl == int(record.ended_at) + 30 * 86400 + NAME_HOLD_SECONDS
    assert len(others) >= 4
    # The API hides the execution a retention period after its end; its item goes five days after the last.
    assert max(others) <= int(record.ended_at) + 30 * 86400 + LOG_HORIZON_SECONDS
    assert own_ttl - max(others) >= 5 * 86400


def test_an_end_settled_days_late_leaves_no_item_that_outlives_the_executions_own(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    """A stop's message that comes days late (a redrive from the DLQ) logs the end and releases the
    coordination record then: both expire a retention period after the stop, not after that late run."""
    client, _, driver = stack
    execution_id = client.start_execution("approval-flow", {"n": 4}, execution_name="order-4")
    driver.run_until_quiet(fire_schedules=False)
    driver.run_until_quiet()  # to its callback
    assert client.stop_execution(execution_id) is True
    record = client.engine.store.get_execution(execution_id)
    assert record is not None and record.ended_at is not None
    client.engine.clock.advance_to(record.ended_at + 10 * 86400)
    driver.run_until_quiet(fire_schedules=False)  # the stop's message, ten days on

    assert client.get_execution_history(execution_id)[-1]["EventType"] == "ExecutionStopped"
    own_ttl, others = _ttls(deployment, execution_id)
    coordination = deployment.clients.dynamodb.get_item(
        TableName=deployment.config.coordination_table,
        Key={"key": {"S": "lease#" + execution_id}},
        ConsistentRead=True,
    )["Item"]
    assert int(coordination["ttl"]["N"]) == int(record.ended_at) + 30 * 86400
    # The callback the stop left open closes at the stop, not at the late run.
    callbacks = [
        item
        for item in deployment.clients.dynamodb.scan(TableName=deployment.config.coordination_table)["Items"]
        if item["key"]["S"].startswith("cb#") and item.get("eid", {}).get("S") == execution_id
    ]
    assert len(callbacks) == 1
    assert int(callbacks[0]["ttl"]["N"]) == int(record.ended_at) + 30 * 86400
    assert max(others) <= int(record.ended_at) + 30 * 86400 + LOG_HORIZON_SECONDS
    assert own_ttl - max(others) >= 5 * 86400


def _ttls(
    deployment: Deployment, execution_id: str, tag_partition: str | None = None
) -> tuple[int, list[int]]:
    """The `ttl` of the execution's own item, and those of its other items: its log batches, its
    coordination record and the tag entries in `tag_partition` (every one of them must have one)."""
    dynamodb, config = deployment.clients.dynamodb, deployment.config
    parts = ExecutionId.parse(execution_id)
    own = dynamodb.get_item(
        TableName=config.executions_table,
        Key={"contextKey": {"S": parts.context_key}, "instanceId": {"S": parts.instance_id}},
        ConsistentRead=True,
    )["Item"]
    others = _operations_items(deployment, execution_id)
    others.append(
        dynamodb.get_item(
            TableName=config.coordination_table,
            Key={"key": {"S": "lease#" + execution_id}},
            ConsistentRead=True,
        )["Item"]
    )
    if tag_partition is not None:
        others += dynamodb.query(
            TableName=config.executions_table,
            KeyConditionExpression="contextKey = :k",
            ExpressionAttributeValues={":k": {"S": tag_partition}},
            ConsistentRead=True,
        )["Items"]
    assert all("ttl" in item for item in others), others
    return int(own["ttl"]["N"]), [int(item["ttl"]["N"]) for item in others]


def test_a_new_execution_meeting_an_earlier_ones_items_fails_its_run_instead_of_replaying_them(
    stack: tuple[StepwellClient, EntryRuntime, QueueDriver], deployment: Deployment
) -> None:
    """On DynamoDB the ended execution's coordination record stays too, so the new execution's run reads the
    log (it is not its first lease): it finds the earlier execution's batches by their age and fails, its
    message left to the DLQ, instead of replaying them. The other path (nothing read, fenced at seq 0) is
    in tests/engine/test_expired_executions.py."""
    client, _, driver = stack
    execution_id = client.start_execution("two-steps", {"n": 1}, execution_name="again")
    driver.run_until_quiet()
    record = client.engine.store.get_execution(execution_id)
    assert record is not None and record.ended_at is not None
    left = _operations_items(deployment, execution_id)
    assert left

    # The TTL removed the record first, against the odds NAME_HOLD_SECONDS gives.
    client.engine.clock.advance_to(int(record.ended_at) + 30 * 86400 + NAME_HOLD_SECONDS)
    parts = ExecutionId.parse(execution_id)
    deployment.clients.dynamodb.delete_item(
        TableName=deployment.config.executions_table,
        Key={"contextKey": {"S": parts.context_key}, "instanceId": {"S": parts.instance_id}},
    )
    assert client.start_execution("two-steps", {"n": 5}, execution_name="again") == execution_id
    driver.run_until_quiet()

    assert driver.failed_message_ids  # its run failed: the message goes back to the queue, then the DLQ
    assert client.describe_execution(execution_id)["Status"] == "RUNNING"
    assert [event["EventType"] for event in client.get_execution_history(execution_id)] == []
    assert _operations_items(deployment, execution_id) == left  # nothing written over the earlier log
