"""One Stepwell deployment inside moto's in-process mock, for the adapter tests.

The tables and indexes are created exactly as docs/architecture.md describes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3
from stepwell.aws import AwsClients
from stepwell.config import StepwellConfig

NAME = "sw-test"
REGION = "us-east-1"
SUBJECT_INDEX = "domain-subjectId-index"


def _index(name: str, pk: str, sk: str) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [{"AttributeName": pk, "KeyType": "HASH"}, {"AttributeName": sk, "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "ALL"},
    }


def create_deployment(name: str = NAME, region: str = REGION) -> StepwellConfig:
    """Create the module's resources in the active moto mock; returns the deployment's config."""
    dynamodb = boto3.client("dynamodb", region_name=region)
    sqs = boto3.client("sqs", region_name=region)
    s3 = boto3.client("s3", region_name=region)
    scheduler = boto3.client("scheduler", region_name=region)
    events = boto3.client("events", region_name=region)
    iam = boto3.client("iam", region_name=region)

    def table(
        table_name: str,
        keys: list[tuple[str, str]],
        indexes: list[tuple[str, str, str]],
        attribute_types: dict[str, str],
    ) -> None:
        names = {name for name, _ in keys} | {a for _, pk, sk in indexes for a in (pk, sk)}
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": n, "KeyType": k} for n, k in keys],
            "AttributeDefinitions": [
                {"AttributeName": n, "AttributeType": attribute_types.get(n, "S")} for n in sorted(names)
            ],
        }
        if indexes:
            kwargs["GlobalSecondaryIndexes"] = [_index(*index) for index in indexes]
        dynamodb.create_table(**kwargs)

    table(f"{name}-definitions", [("domain", "HASH"), ("workflowId", "RANGE")], [], {})
    table(
        f"{name}-executions",
        [("contextKey", "HASH"), ("instanceId", "RANGE")],
        [
            (SUBJECT_INDEX, "domain", "subjectId"),
            ("status-index", "status", "updatedAt"),
            ("workflow-index", "workflowId", "createdAt"),
        ],
        {"updatedAt": "N", "createdAt": "N"},
    )
    table(f"{name}-operations", [("executionId", "HASH"), ("sk", "RANGE")], [], {})
    table(f"{name}-coordination", [("key", "HASH")], [("due-index", "dueShard", "dueAt")], {"dueAt": "N"})

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
    # The module's rule: every event on the bus goes to the work queue.
    events.put_rule(Name=f"{name}-engine", EventBusName=name, EventPattern='{"source": [{"prefix": ""}]}')
    events.put_targets(
        Rule=f"{name}-engine", EventBusName=name, Targets=[{"Id": "work-queue", "Arn": queue_arn}]
    )
    role_arn = iam.create_role(RoleName=f"{name}-scheduler", AssumeRolePolicyDocument="{}")["Role"]["Arn"]

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
        event_bus_name=name,
        event_bus_arn=bus_arn,
        schedule_group_name=name,
        scheduler_role_arn=role_arn,
        payload_bucket=f"{name}-payloads",
        worker_function_name=f"{name}-worker",
    )


@dataclass
class Deployment:
    config: StepwellConfig
    clients: AwsClients
