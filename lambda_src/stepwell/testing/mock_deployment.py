"""The module's resources inside moto's in-process mock (`moto.mock_aws`), for tests and benchmarks that
use the AWS adapters without a Terraform apply (the deployed harness applies the module itself).

The tables and indexes are created as modules/state declares them and docs/architecture.md describes them:
one table of specs here, so every in-process user (the adapter and definitions tests, `make bench`, the
definitions benchmark) runs on the same layout.
"""

from __future__ import annotations

import json
from typing import Any

import boto3

from stepwell.config import DEFAULT_SUBJECT_INDEX, StepwellConfig
from stepwell.core.status_events import STATUS_EVENT_SOURCE

NAME = "sw-test"
REGION = "us-east-1"
SUBJECT_INDEX = DEFAULT_SUBJECT_INDEX

# (index name, partition key, sort key, projection) per table; attributes named here are strings unless
# listed in _NUMBERS.
_TABLES: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]] = {
    "definitions": ([("domain", "HASH"), ("workflowId", "RANGE")], []),
    "executions": (
        [("contextKey", "HASH"), ("instanceId", "RANGE")],
        [
            ("{subject_index}", "domain", "subjectId", "ALL"),
            ("status-index", "status", "updatedAt", "KEYS_ONLY"),
            ("workflow-index", "workflowId", "createdAt", "KEYS_ONLY"),
            ("version-index", "pinnedVersion", "createdAt", "KEYS_ONLY"),
        ],
    ),
    "operations": ([("executionId", "HASH"), ("sk", "RANGE")], []),
    "coordination": ([("key", "HASH")], [("due-index", "dueShard", "dueAt", "ALL")]),
}
_NUMBERS = frozenset({"updatedAt", "createdAt", "dueAt"})


def create_tables(dynamodb: Any, name: str, subject_index: str = SUBJECT_INDEX) -> None:
    """Create `{name}-definitions`, `-executions`, `-operations` and `-coordination` (on-demand)."""
    for suffix, (keys, indexes) in _TABLES.items():
        names = [key for key, _ in keys] + [a for index in indexes for a in index[1:3]]
        request: dict[str, Any] = {
            "TableName": f"{name}-{suffix}",
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": key, "KeyType": kind} for key, kind in keys],
            "AttributeDefinitions": [
                {"AttributeName": attribute, "AttributeType": "N" if attribute in _NUMBERS else "S"}
                for attribute in sorted(set(names))
            ],
        }
        if indexes:
            request["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": index.format(subject_index=subject_index),
                    "KeySchema": [
                        {"AttributeName": partition, "KeyType": "HASH"},
                        {"AttributeName": sort, "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": projection},
                }
                for index, partition, sort, projection in indexes
            ]
        dynamodb.create_table(**request)


def create_deployment(name: str = NAME, region: str = REGION) -> StepwellConfig:
    """Create the module's resources in the active moto mock; returns the deployment's config."""
    dynamodb = boto3.client("dynamodb", region_name=region)
    sqs = boto3.client("sqs", region_name=region)
    s3 = boto3.client("s3", region_name=region)
    scheduler = boto3.client("scheduler", region_name=region)
    events = boto3.client("events", region_name=region)
    iam = boto3.client("iam", region_name=region)

    create_tables(dynamodb, name)

    dlq_url = sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName=f"{name}-work",
        Attributes={
            "VisibilityTimeout": "60",
            "RedrivePolicy": f'{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"3"}}',
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.create_bucket(Bucket=f"{name}-payloads")
    scheduler.create_schedule_group(Name=name)
    bus_arn = events.create_event_bus(Name=name)["EventBusArn"]
    # The module's rule: every event on the bus but the worker's status-change events goes to the work queue.
    pattern = json.dumps({"source": [{"anything-but": [STATUS_EVENT_SOURCE]}]})
    events.put_rule(Name=f"{name}-engine", EventBusName=name, EventPattern=pattern)
    events.put_targets(
        Rule=f"{name}-engine", EventBusName=name, Targets=[{"Id": "work-queue", "Arn": queue_arn}]
    )
    role_arn = iam.create_role(RoleName=f"{name}-scheduler", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    # The worker's alias, which the one-time wake-up schedules invoke (no function exists here: whoever
    # plays Scheduler runs the entry on their input, stepwell.testing.async_invoke).
    account = queue_arn.split(":")[4]
    wake_function_arn = f"arn:aws:lambda:{region}:{account}:function:{name}-worker:live"

    return StepwellConfig(
        name=name,
        region=region,
        definitions_table=f"{name}-definitions",
        executions_table=f"{name}-executions",
        operations_table=f"{name}-operations",
        coordination_table=f"{name}-coordination",
        subject_index_name=SUBJECT_INDEX,
        work_queue_url=queue_url,
        work_queue_arn=queue_arn,
        dlq_url=dlq_url,
        dlq_arn=dlq_arn,
        event_bus_name=name,
        event_bus_arn=bus_arn,
        schedule_group_name=name,
        scheduler_role_arn=role_arn,
        payload_bucket=f"{name}-payloads",
        worker_function_name=f"{name}-worker",
        wake_function_arn=wake_function_arn,
    )
