"""The harness's moto server: its speed-ups keep SQS's retention rule and DynamoDB's item order; a queue
policy survives an update of another attribute that runs at the same time; a bucket lifecycle configuration
reads back with the TransitionDefaultMinimumObjectSize it was put with (Terraform's AWS provider reads both
back until they match what it wrote)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table
from moto.s3.responses import S3Response
from moto.sqs.models import Queue, SQSBackend, sqs_backends
from stepwell.testing.moto_server import (
    _check_retention_without_counting_messages,
    _echo_transition_default_minimum_object_size,
    _keep_queue_policy_on_other_updates,
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


@pytest.fixture
def patched_queue_updates() -> Iterator[None]:
    original = Queue._set_attributes
    _keep_queue_policy_on_other_updates()
    try:
        with mock_aws():
            yield
    finally:
        Queue._set_attributes = original  # type: ignore[method-assign]


def test_a_policy_set_while_the_redrive_policy_is_set_is_kept(
    patched_queue_updates: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Terraform sets a queue's redrive policy and its policy at the same time (two resources)."""
    sqs = boto3.client("sqs", region_name=REGION)
    sqs.create_queue(QueueName="dlq")
    url = sqs.create_queue(QueueName="work")["QueueUrl"]
    backend = sqs_backends["123456789012"][REGION]
    dlq_arn, queue = backend.get_queue("dlq").queue_arn, backend.get_queue("work")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "RuleSends",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue.queue_arn,
            }
        ],
    }
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5}
    original_setup_dlq = Queue._setup_dlq
    policy_update: list[threading.Thread] = []

    def set_the_policy_meanwhile(self: Queue, redrive_policy: Any) -> None:
        # The redrive update is under way: the policy update starts now and may finish first.
        thread = threading.Thread(target=queue._set_attributes, args=({"Policy": json.dumps(policy)},))
        thread.start()
        policy_update.append(thread)
        thread.join(timeout=0.5)
        original_setup_dlq(self, redrive_policy)

    monkeypatch.setattr(Queue, "_setup_dlq", set_the_policy_meanwhile)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": json.dumps(redrive)})
    policy_update[0].join(timeout=10)

    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert json.loads(attributes["Policy"]) == policy
    assert json.loads(attributes["RedrivePolicy"]) == redrive


@pytest.fixture
def patched_lifecycle() -> Iterator[None]:
    original_put, original_get = S3Response._bucket_response_put, S3Response.get_bucket_lifecycle
    _echo_transition_default_minimum_object_size()
    try:
        with mock_aws():
            yield
    finally:
        S3Response._bucket_response_put = original_put  # type: ignore[method-assign]
        S3Response.get_bucket_lifecycle = original_get  # type: ignore[method-assign]


# The payload bucket's rules, as the module puts them.
PAYLOAD_RULES: list[dict[str, Any]] = [
    {
        "ID": "expire-ended-executions",
        "Status": "Enabled",
        "Filter": {"Tag": {"Key": "stepwell-retention", "Value": "ended"}},
        "Expiration": {"Days": 30},
    },
    {
        "ID": "abort-incomplete-uploads",
        "Status": "Enabled",
        "Filter": {"Prefix": ""},
        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
    },
]


def test_a_lifecycle_configuration_reads_back_with_the_transition_size_it_was_put_with(
    patched_lifecycle: None,
) -> None:
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="payloads")
    put = s3.put_bucket_lifecycle_configuration(
        Bucket="payloads",
        LifecycleConfiguration={"Rules": PAYLOAD_RULES},
        TransitionDefaultMinimumObjectSize="varies_by_storage_class",
    )
    assert put["TransitionDefaultMinimumObjectSize"] == "varies_by_storage_class"
    answer = s3.get_bucket_lifecycle_configuration(Bucket="payloads")
    assert answer["TransitionDefaultMinimumObjectSize"] == "varies_by_storage_class"
    assert answer["Rules"] == PAYLOAD_RULES

    # Put again without the header: S3's default applies to the new configuration.
    s3.put_bucket_lifecycle_configuration(Bucket="payloads", LifecycleConfiguration={"Rules": PAYLOAD_RULES})
    answer = s3.get_bucket_lifecycle_configuration(Bucket="payloads")
    assert answer["TransitionDefaultMinimumObjectSize"] == "all_storage_classes_128K"
