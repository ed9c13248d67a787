"""What tests/adapters/test_nothing_left_behind.py and the soak (tools/soak.py) share: the workflows of their
mixes, reading every item of a table, and delivering one occurrence of a user schedule as Scheduler does."""

from __future__ import annotations

from typing import Any

from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.features.schedules import SCHEDULE_NAME_PREFIX, SCHEDULED_TIME_KEYWORD

from .deployment import Deployment


@durable_execution
def waits_long(event: dict[str, Any], context: DurableContext) -> dict[str, Any]:
    context.wait(Duration.from_seconds(2 * 3600), name="long-pause")  # over 900 s: a Scheduler wake-up
    return {"n": event.get("n"), "echo": "y" * int(event.get("big", 0))}


@durable_execution
def asks(event: dict[str, Any], context: DurableContext) -> Any:
    return context.wait_for_callback(lambda _id, _: None, name="approval")


@durable_execution
def asks_small(event: dict[str, Any], context: DurableContext) -> int:
    # A large callback result read, a small result returned: the result's object is the only one.
    return len(str(context.wait_for_callback(lambda _id, _: None, name="approval")))


@durable_execution
def fails_open(event: dict[str, Any], context: DurableContext) -> None:
    context.create_callback(name="never")  # still open when the execution fails
    context.step(lambda _: 1, name="one")
    raise ValueError("boom")


def all_items(deployment: Deployment, table: str) -> list[dict[str, Any]]:
    """Every item of a table (a Scan: tests and tools only; the engine never scans)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = deployment.clients.dynamodb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def fire_occurrence(deployment: Deployment, name: str, fired_at: str) -> None:
    """Deliver one occurrence of a user schedule as Scheduler does (its time in place of the keyword)."""
    schedule = deployment.clients.scheduler.get_schedule(
        Name=SCHEDULE_NAME_PREFIX + name, GroupName=deployment.config.schedule_group_name
    )
    body = schedule["Target"]["Input"].replace(SCHEDULED_TIME_KEYWORD, fired_at)
    deployment.clients.sqs.send_message(QueueUrl=deployment.config.work_queue_url, MessageBody=body)
