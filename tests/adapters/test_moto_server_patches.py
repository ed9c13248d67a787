"""The harness's moto server: its speed-ups keep SQS's retention rule and DynamoDB's item order."""

from __future__ import annotations

import time
from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table
from moto.sqs.models import Queue, SQSBackend, sqs_backends
from stepwell.testing.moto_server import (
    _check_retention_without_counting_messages,
    _sort_items_by_plain_key_values,
)

REGION = "us-east-1"


@pytest.fixture
def patched_sqs() -> Iterator[None]:
    original = SQSBackend.is_message_valid_based_on_retention_period
    _check_retention_without_counting_messages()
    try:
        with mock_aws():
            yield
    finally:
        SQSBackend.is_message_valid_based_on_retention_period = original  # type: ignore[method-assign]


def test_a_message_past_the_retention_period_is_not_received(
    patched_sqs: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName="retention", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="old")
    queue = sqs_backends["123456789012"][REGION].get_queue("retention")
    (old,) = queue._messages
    old.sent_timestamp = int((time.time() - 61) * 1000)  # sent 61 s ago: past the 60 s retention

    assert sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []) == []

    sqs.send_message(QueueUrl=url, MessageBody="fresh")

    def counted(_queue: Queue) -> int:
        raise AssertionError("a receive counted the queue's messages")

    monkeypatch.setattr(Queue, "approximate_number_of_messages", property(counted))
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    assert bodies == ["fresh"]


@pytest.fixture
def patched_dynamodb() -> Iterator[None]:
    original = Table.all_items
    _sort_items_by_plain_key_values()
    try:
        with mock_aws():
            yield
    finally:
        Table.all_items = original  # type: ignore[method-assign]


def test_index_queries_and_scans_keep_dynamodb_order(patched_dynamodb: None) -> None:
    db = boto3.client("dynamodb", region_name=REGION)
    db.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "n", "AttributeType": "N"},
            {"AttributeName": "g", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "n", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "byG",
                "KeySchema": [
                    {"AttributeName": "g", "KeyType": "HASH"},
                    {"AttributeName": "n", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    # Numbers whose text order differs from their numeric order (10 < 9 as text).
    for pk, n in [("b", "10"), ("a", "9"), ("b", "9"), ("a", "100"), ("a", "-1")]:
        db.put_item(TableName="t", Item={"pk": {"S": pk}, "n": {"N": n}, "g": {"S": "x"}})

    indexed = db.query(
        TableName="t",
        IndexName="byG",
        KeyConditionExpression="g = :g AND n >= :low",
        ExpressionAttributeValues={":g": {"S": "x"}, ":low": {"N": "0"}},
    )["Items"]
    assert [item["n"]["N"] for item in indexed] == ["9", "9", "10", "100"]

    seen: list[tuple[str, str]] = []
    start: dict[str, object] | None = None
    while True:
        page = db.scan(TableName="t", Limit=2, **({"ExclusiveStartKey": start} if start else {}))
        seen.extend((item["pk"]["S"], item["n"]["N"]) for item in page["Items"])
        start = page.get("LastEvaluatedKey")
        if not start:
            break
    assert seen == [("a", "-1"), ("a", "9"), ("a", "100"), ("b", "9"), ("b", "10")]
