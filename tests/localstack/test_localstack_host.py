"""LocalStack on the host (tools/localstack, plugins/localstack, stepwell.testing.localstack).

One LocalStack for this module, started through the harness module. Where it cannot start,
the tests skip with the reason, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import base64
import io
import json
import os
import textwrap
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from localstack_client.session import Session
from stepwell.testing.localstack import LocalStackProcess, LocalStackUnavailable, start_localstack

pytestmark = pytest.mark.localstack

REGION = "us-east-1"
ACCOUNT_ID = "000000000000"
# How long to wait for LocalStack's event source mapping to finish its work. Only an upper
# bound for polling: nothing asserts on elapsed time.
MAPPING_WAIT_SECONDS = 120.0

HANDLER_SOURCE = textwrap.dedent(
    """
    import os
    import sys
    import time

    import boto3

    def handler(event, context):
        if event.get("fail"):
            raise ValueError("asked to fail: " + str(event["fail"]))
        if event.get("sleep"):
            time.sleep(event["sleep"])
        try:
            import localstack  # noqa: F401  (must not be importable: Lambda has only boto3)
            localstack_importable = True
        except ImportError:
            localstack_importable = False
        print("handled", event)
        return {
            "echo": event,
            "function_name": context.function_name,
            "request_id": context.aws_request_id,
            "remaining_ms_positive": context.get_remaining_time_in_millis() > 0,
            "endpoint": os.environ.get("AWS_ENDPOINT_URL"),
            "custom": os.environ.get("STEPWELL_NAME"),
            "python": "%d.%d" % sys.version_info[:2],
            "boto3": boto3.__version__,
            "localstack_importable": localstack_importable,
        }
    """
)

# An SQS batch handler like Stepwell's worker: counts each attempt per message body in
# DynamoDB (through AWS_ENDPOINT_URL, so it also proves the handler reaches LocalStack) and
# reports bodies starting with "bad" as batch item failures.
BATCH_HANDLER_SOURCE = textwrap.dedent(
    """
    import os

    import boto3

    TABLE = os.environ["ATTEMPTS_TABLE"]
    dynamodb = boto3.client("dynamodb")

    def handler(event, context):
        failures = []
        for record in event["Records"]:
            body = record["body"]
            dynamodb.update_item(
                TableName=TABLE,
                Key={"body": {"S": body}},
                UpdateExpression="ADD attempts :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
            if body.startswith("bad"):
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}
    """
)


@pytest.fixture(scope="module")
def localstack_process() -> Iterator[LocalStackProcess]:
    try:
        handle = start_localstack()
    except LocalStackUnavailable as error:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"LocalStack must run in CI but could not start: {error}")
        pytest.skip(f"LocalStack could not start on this host: {error}")
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def session(localstack_process: LocalStackProcess) -> Session:
    host = localstack_process.endpoint.split("://", 1)[1]
    return Session(
        aws_access_key_id="test", aws_secret_access_key="test", region_name=REGION, localstack_host=host
    )


@pytest.fixture(scope="module")
def role_arn(session: Session) -> str:
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role = session.client("iam").create_role(
        RoleName=f"lambda-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=json.dumps(trust)
    )
    return str(role["Role"]["Arn"])


def zip_of(source: str, module: str = "app") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{module}.py", source)
    return buffer.getvalue()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_function(
    session: Session,
    role_arn: str,
    source: str,
    *,
    timeout: int = 10,
    environment: dict[str, str] | None = None,
) -> str:
    lambda_client = session.client("lambda")
    name = unique("fn")
    lambda_client.create_function(
        FunctionName=name,
        Runtime="python3.13",
        Role=role_arn,
        Handler="app.handler",
        Code={"ZipFile": zip_of(source)},
        Timeout=timeout,
        Environment={"Variables": environment or {}},
    )
    lambda_client.get_waiter("function_active_v2").wait(FunctionName=name)
    return name


def invoke(session: Session, name: str, event: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    response = session.client("lambda").invoke(FunctionName=name, Payload=json.dumps(event))
    return response, json.loads(response["Payload"].read())


def wait_for(condition: Callable[[], bool], what: str, timeout: float = MAPPING_WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture(scope="module")
def echo_function(session: Session, role_arn: str) -> str:
    return create_function(session, role_arn, HANDLER_SOURCE, environment={"STEPWELL_NAME": "demo"})


def test_python_function_becomes_active(session: Session, echo_function: str) -> None:
    configuration = session.client("lambda").get_function(FunctionName=echo_function)["Configuration"]

    assert configuration["State"] == "Active"
    assert configuration["LastUpdateStatus"] == "Successful"


def test_invoke_runs_the_deployed_handler_with_lambda_environment(
    session: Session, echo_function: str, localstack_process: LocalStackProcess
) -> None:
    response, result = invoke(session, echo_function, {"n": 1})

    assert "FunctionError" not in response
    assert result["echo"] == {"n": 1}
    assert result["function_name"] == echo_function
    assert result["remaining_ms_positive"] is True
    assert result["custom"] == "demo"
    # boto3 in the handler reaches this LocalStack without any configuration.
    assert result["endpoint"] == localstack_process.endpoint
    # The module's default runtime, with boto3 and nothing of LocalStack's own packages.
    assert result["python"] == "3.13"
    assert result["boto3"]
    assert result["localstack_importable"] is False


def test_invoke_reports_a_handler_exception_as_function_error(session: Session, echo_function: str) -> None:
    response, error = invoke(session, echo_function, {"fail": "boom"})

    assert response["FunctionError"] == "Unhandled"
    assert error["errorType"] == "ValueError"
    assert error["errorMessage"] == "asked to fail: boom"
    assert any("raise ValueError" in line for line in error["stackTrace"])


def test_invoke_logs_come_back_with_the_invocation(session: Session, role_arn: str) -> None:
    source = 'print("cold start")\n' + HANDLER_SOURCE
    name = create_function(session, role_arn, source)

    def logs_of(event: dict[str, Any]) -> str:
        response = session.client("lambda").invoke(
            FunctionName=name, Payload=json.dumps(event), LogType="Tail"
        )
        return base64.b64decode(response["LogResult"]).decode()

    first, second = logs_of({"log": "first"}), logs_of({"log": "second"})

    # The init output belongs to the first invocation only, as on AWS.
    assert "cold start" in first
    assert "cold start" not in second
    assert "handled {'log': 'first'}" in first
    assert "handled {'log': 'second'}" in second and "first" not in second
    assert second.startswith("START RequestId:")
    assert "REPORT RequestId:" in second


def test_the_function_timeout_is_enforced_and_the_next_invoke_works(session: Session, role_arn: str) -> None:
    name = create_function(session, role_arn, HANDLER_SOURCE, timeout=1)

    response, error = invoke(session, name, {"sleep": 30})
    assert response["FunctionError"] == "Unhandled"
    assert error["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 1.00 seconds" in error["errorMessage"]

    response, result = invoke(session, name, {"after": "timeout"})
    assert "FunctionError" not in response
    assert result["echo"] == {"after": "timeout"}


def test_an_unsupported_runtime_fails_the_function_with_a_reason(session: Session, role_arn: str) -> None:
    lambda_client = session.client("lambda")
    name = unique("java")
    lambda_client.create_function(
        FunctionName=name,
        Runtime="java21",
        Role=role_arn,
        Handler="example.Handler::handleRequest",
        Code={"ZipFile": zip_of("class Handler {}", module="Handler")},
    )

    def settled() -> bool:
        return lambda_client.get_function(FunctionName=name)["Configuration"]["State"] != "Pending"

    wait_for(settled, "the function to leave Pending")
    configuration = lambda_client.get_function(FunctionName=name)["Configuration"]
    assert configuration["State"] == "Failed"
    assert "java21" in configuration["StateReason"]


def test_sqs_mapping_retries_only_failed_items_and_redrives_them(session: Session, role_arn: str) -> None:
    sqs = session.client("sqs")
    dynamodb = session.client("dynamodb")
    lambda_client = session.client("lambda")
    max_receive_count = 2

    attempts_table = unique("attempts")
    dynamodb.create_table(
        TableName=attempts_table,
        KeySchema=[{"AttributeName": "body", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "body", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dlq_url = sqs.create_queue(QueueName=unique("dlq"))["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue_url = sqs.create_queue(
        QueueName=unique("work"),
        Attributes={
            # Short, so a failed item returns quickly; the function's timeout is longer than AWS
            # would allow with this queue (LocalStack does not check), so a slow cold start on a
            # busy machine cannot time out and fail the whole batch.
            "VisibilityTimeout": "3",
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count}
            ),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    function = create_function(
        session, role_arn, BATCH_HANDLER_SOURCE, timeout=30, environment={"ATTEMPTS_TABLE": attempts_table}
    )
    # Warm the environment (imports, first DynamoDB call) before the mapping's first batch.
    response, result = invoke(session, function, {"Records": []})
    assert "FunctionError" not in response and result == {"batchItemFailures": []}
    mapping = lambda_client.create_event_source_mapping(
        EventSourceArn=queue_arn,
        FunctionName=function,
        BatchSize=10,
        FunctionResponseTypes=["ReportBatchItemFailures"],
    )

    sqs.send_message_batch(
        QueueUrl=queue_url,
        Entries=[
            {"Id": str(index), "MessageBody": body}
            for index, body in enumerate(["good-1", "bad-1", "good-2"])
        ],
    )

    dead_letters: list[dict[str, Any]] = []

    def redriven() -> bool:
        received = sqs.receive_message(
            QueueUrl=dlq_url, MaxNumberOfMessages=10, AttributeNames=["ApproximateReceiveCount"]
        )
        dead_letters.extend(received.get("Messages", []))
        return bool(dead_letters)

    wait_for(redriven, "the failed message in the DLQ")
    lambda_client.delete_event_source_mapping(UUID=mapping["UUID"])

    assert [message["Body"] for message in dead_letters] == ["bad-1"]
    attempts = {
        item["body"]["S"]: int(item["attempts"]["N"])
        for item in dynamodb.scan(TableName=attempts_table, ConsistentRead=True)["Items"]
    }
    # Succeeded items are deleted after their first batch; the failed one is retried until
    # SQS moves it to the DLQ after maxReceiveCount receives.
    assert attempts == {"good-1": 1, "good-2": 1, "bad-1": max_receive_count}
    remaining = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    assert remaining == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"}


def test_dynamodb_local_serves_tables(session: Session) -> None:
    dynamodb = session.client("dynamodb")
    table = unique("items")
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "a"}, "sk": {"S": "1"}, "value": {"N": "42"}})

    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "a"}, "sk": {"S": "1"}}, ConsistentRead=True)

    assert item["Item"] == {"pk": {"S": "a"}, "sk": {"S": "1"}, "value": {"N": "42"}}


# What the Terraform module creates, service by service: LocalStack must accept each call
# and report the setting back.


def test_scheduler_groups_and_schedules(session: Session, role_arn: str) -> None:
    scheduler = session.client("scheduler")
    sqs = session.client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("sched"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    group = unique("group")
    scheduler.create_schedule_group(Name=group)
    target = {"Arn": queue_arn, "RoleArn": role_arn, "Input": json.dumps({"kind": "reconcile"})}
    scheduler.create_schedule(
        Name="reconciler",
        GroupName=group,
        ScheduleExpression="rate(5 minutes)",
        FlexibleTimeWindow={"Mode": "OFF"},
        Target=target,
    )
    scheduler.create_schedule(
        Name="timer-1",
        GroupName=group,
        ScheduleExpression="at(2030-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target=target,
    )

    recurring = scheduler.get_schedule(Name="reconciler", GroupName=group)
    one_time = scheduler.get_schedule(Name="timer-1", GroupName=group)
    names = {schedule["Name"] for schedule in scheduler.list_schedules(GroupName=group)["Schedules"]}

    assert scheduler.get_schedule_group(Name=group)["State"] == "ACTIVE"
    assert recurring["ScheduleExpression"] == "rate(5 minutes)"
    assert recurring["Target"]["Arn"] == queue_arn
    assert one_time["ActionAfterCompletion"] == "DELETE"
    assert names == {"reconciler", "timer-1"}


def test_dynamodb_indexes_ttl_pitr_encryption_and_deletion_protection(session: Session) -> None:
    dynamodb = session.client("dynamodb")
    key_id = session.client("kms").create_key(Description="stepwell test")["KeyMetadata"]["Arn"]
    table = unique("executions")
    dynamodb.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "contextKey", "KeyType": "HASH"},
            {"AttributeName": "instanceId", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "contextKey", "AttributeType": "S"},
            {"AttributeName": "instanceId", "AttributeType": "S"},
            {"AttributeName": "domain", "AttributeType": "S"},
            {"AttributeName": "subjectId", "AttributeType": "S"},
            {"AttributeName": "status", "AttributeType": "S"},
            {"AttributeName": "updatedAt", "AttributeType": "N"},
            {"AttributeName": "pinnedVersion", "AttributeType": "S"},
            {"AttributeName": "createdAt", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "domain-subjectId-index",
                "KeySchema": [
                    {"AttributeName": "domain", "KeyType": "HASH"},
                    {"AttributeName": "subjectId", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "status-index",
                "KeySchema": [
                    {"AttributeName": "status", "KeyType": "HASH"},
                    {"AttributeName": "updatedAt", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "version-index",
                "KeySchema": [
                    {"AttributeName": "pinnedVersion", "KeyType": "HASH"},
                    {"AttributeName": "createdAt", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
        SSESpecification={"Enabled": True, "SSEType": "KMS", "KMSMasterKeyId": key_id},
        DeletionProtectionEnabled=True,
    )
    dynamodb.update_time_to_live(
        TableName=table, TimeToLiveSpecification={"Enabled": True, "AttributeName": "ttl"}
    )
    dynamodb.update_continuous_backups(
        TableName=table, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    dynamodb.put_item(
        TableName=table,
        Item={
            "contextKey": {"S": "orders#ship#o-1"},
            "instanceId": {"S": "i-1"},
            "domain": {"S": "orders"},
            "subjectId": {"S": "o-1"},
        },
    )
    # The version index is sparse: only items carrying pinnedVersion (running executions) are in it.
    for instance, pinned in (("i-2", True), ("i-3", True), ("i-4", False)):
        item = {
            "contextKey": {"S": "orders#ship#o-2"},
            "instanceId": {"S": instance},
            "createdAt": {"N": "1"},
        }
        dynamodb.put_item(TableName=table, Item=item | ({"pinnedVersion": {"S": "3"}} if pinned else {}))
    dynamodb.update_item(
        TableName=table,
        Key={"contextKey": {"S": "orders#ship#o-2"}, "instanceId": {"S": "i-3"}},
        UpdateExpression="REMOVE pinnedVersion",
    )
    pinned = dynamodb.query(
        TableName=table,
        IndexName="version-index",
        KeyConditionExpression="pinnedVersion = :v",
        ExpressionAttributeValues={":v": {"S": "3"}},
    )

    description = dynamodb.describe_table(TableName=table)["Table"]
    ttl = dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]
    backups = dynamodb.describe_continuous_backups(TableName=table)["ContinuousBackupsDescription"]
    by_subject = dynamodb.query(
        TableName=table,
        IndexName="domain-subjectId-index",
        KeyConditionExpression="#d = :d AND subjectId = :s",
        ExpressionAttributeNames={"#d": "domain"},
        ExpressionAttributeValues={":d": {"S": "orders"}, ":s": {"S": "o-1"}},
    )

    assert {index["IndexName"] for index in description["GlobalSecondaryIndexes"]} == {
        "domain-subjectId-index",
        "status-index",
        "version-index",
    }
    assert [item["instanceId"]["S"] for item in pinned["Items"]] == ["i-2"]
    assert set(pinned["Items"][0]) == {"contextKey", "instanceId", "pinnedVersion", "createdAt"}  # KEYS_ONLY
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": "ttl"}
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    assert description["SSEDescription"]["Status"] == "ENABLED"
    assert description["DeletionProtectionEnabled"] is True
    assert by_subject["Count"] == 1
    with pytest.raises(dynamodb.exceptions.ClientError, match="deletion protection"):
        dynamodb.delete_table(TableName=table)


def test_s3_bucket_policy_access_block_encryption_lifecycle(session: Session) -> None:
    s3 = session.client("s3")
    bucket = unique("payloads")
    s3.create_bucket(Bucket=bucket)
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_ownership_controls(
        Bucket=bucket, OwnershipControls={"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    )
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )
    tls_only = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(tls_only))
    s3.put_bucket_lifecycle_configuration(
        Bucket=bucket,
        LifecycleConfiguration={
            "Rules": [
                {"ID": "retention", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 30}}
            ]
        },
    )

    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"]) == tls_only
    assert all(s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"].values())
    ownership = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert ownership == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    rules = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert rules[0]["Expiration"] == {"Days": 30}
    # LocalStack does not enforce bucket policies (no IAM enforcement): plain-HTTP tests still work.
    s3.put_object(Bucket=bucket, Key="payload", Body=b"{}")
    assert s3.get_object(Bucket=bucket, Key="payload")["Body"].read() == b"{}"


def test_sqs_redrive_encryption_and_queue_policy(
    session: Session, localstack_process: LocalStackProcess
) -> None:
    sqs = session.client("sqs")
    dlq_url = sqs.create_queue(QueueName=unique("dlq"))["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 5}
    queue_url = sqs.create_queue(
        QueueName=unique("work"),
        Attributes={
            "RedrivePolicy": json.dumps(redrive),
            "SqsManagedSseEnabled": "true",
            "VisibilityTimeout": "360",
            "MessageRetentionPeriod": "345600",
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"ArnEquals": {"aws:SourceArn": f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/x"}},
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(policy)})

    attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]

    # On the gateway itself (the host-style default would need DNS), in the shape the AWS
    # provider accepts: <endpoint>/<account>/<name>.
    assert queue_url.startswith(f"{localstack_process.endpoint}/{ACCOUNT_ID}/")
    assert json.loads(attributes["RedrivePolicy"]) == redrive
    assert attributes["SqsManagedSseEnabled"] == "true"
    assert attributes["VisibilityTimeout"] == "360"
    assert json.loads(attributes["Policy"]) == policy


def test_iam_roles_inline_policies_and_boundaries(session: Session) -> None:
    iam = session.client("iam")
    boundary = iam.create_policy(
        PolicyName=unique("boundary"),
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}]}
        ),
    )["Policy"]["Arn"]
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "scheduler.amazonaws.com"},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}},
            }
        ],
    }
    role = unique("scheduler")
    iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust), PermissionsBoundary=boundary)
    inline = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "arn:aws:sqs:us-east-1:0:q"}
        ],
    }
    iam.put_role_policy(RoleName=role, PolicyName="send", PolicyDocument=json.dumps(inline))

    described = iam.get_role(RoleName=role)["Role"]
    stored = iam.get_role_policy(RoleName=role, PolicyName="send")["PolicyDocument"]

    assert described["AssumeRolePolicyDocument"] == trust
    assert described["PermissionsBoundary"]["PermissionsBoundaryArn"] == boundary
    assert (json.loads(stored) if isinstance(stored, str) else stored) == inline


def test_cloudwatch_log_groups_with_retention(session: Session) -> None:
    logs = session.client("logs")
    group = f"/aws/lambda/{unique('worker')}"
    logs.create_log_group(logGroupName=group)
    logs.put_retention_policy(logGroupName=group, retentionInDays=14)

    described = logs.describe_log_groups(logGroupNamePrefix=group)["logGroups"]

    assert [(entry["logGroupName"], entry["retentionInDays"]) for entry in described] == [(group, 14)]


def test_eventbridge_bus_rule_and_queue_target(session: Session) -> None:
    events = session.client("events")
    sqs = session.client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("events"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    bus = unique("bus")
    events.create_event_bus(Name=bus)
    pattern = {"source": ["stepwell"], "detail-type": [{"prefix": "order."}]}
    events.put_rule(Name="to-queue", EventBusName=bus, EventPattern=json.dumps(pattern))
    events.put_targets(Rule="to-queue", EventBusName=bus, Targets=[{"Id": "work", "Arn": queue_arn}])

    events.put_events(
        Entries=[{"EventBusName": bus, "Source": "stepwell", "DetailType": "order.placed", "Detail": "{}"}]
    )
    delivered: list[dict[str, Any]] = []

    def arrived() -> bool:
        delivered.extend(sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", []))
        return bool(delivered)

    wait_for(arrived, "the event on the queue")

    assert json.loads(events.describe_rule(Name="to-queue", EventBusName=bus)["EventPattern"]) == pattern
    assert json.loads(delivered[0]["Body"])["detail-type"] == "order.placed"


def test_lambda_settings_the_module_uses(session: Session, role_arn: str) -> None:
    lambda_client = session.client("lambda")
    name = unique("arm")
    lambda_client.create_function(
        FunctionName=name,
        Runtime="python3.13",
        Architectures=["arm64"],
        Role=role_arn,
        Handler="app.handler",
        Code={"ZipFile": zip_of(HANDLER_SOURCE)},
        MemorySize=512,
        Timeout=60,
        Environment={"Variables": {"STEPWELL_NAME": "arm"}},
    )
    lambda_client.get_waiter("function_active_v2").wait(FunctionName=name)
    lambda_client.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=2)

    response, result = invoke(session, name, {"arch": "arm64"})

    assert lambda_client.get_function_concurrency(FunctionName=name)["ReservedConcurrentExecutions"] == 2
    assert "FunctionError" not in response
    assert result["custom"] == "arm"
