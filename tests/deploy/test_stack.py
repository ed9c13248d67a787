"""examples/complete applied to each backend: every resource checked through the AWS API, and a second
plan with no changes. (The stack is destroyed at the end of the session; that teardown fails the run
when anything is left.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from stepwell.testing.deployed_fixtures import DeployedStack, event_source_mappings_for

# Settings examples/complete passes to the module.
EXPECTED = {
    "max_receive_count": 5,
    "reconcile_interval_minutes": 5,
    "runtime": "python3.13",
    "architecture": "arm64",
    "memory_size": 512,
    "timeout": 60,
    "visibility_timeout": 360,
    "queue_retention": 345600,
    "dlq_retention": 1209600,
    "log_retention_days": 14,
    "batch_size": 10,
    "batching_window": 1,
    "retention_days": 30,
}

TABLE_KEYS = {
    "definitions_table": ([("domain", "HASH"), ("workflowId", "RANGE")], {}),
    "executions_table": (
        [("contextKey", "HASH"), ("instanceId", "RANGE")],
        {
            "domain-subjectId-index": ([("domain", "HASH"), ("subjectId", "RANGE")], "ALL"),
            "status-index": ([("status", "HASH"), ("updatedAt", "RANGE")], "KEYS_ONLY"),
            "workflow-index": ([("workflowId", "HASH"), ("createdAt", "RANGE")], "KEYS_ONLY"),
            "version-index": ([("pinnedVersion", "HASH"), ("createdAt", "RANGE")], "KEYS_ONLY"),
        },
    ),
    "operations_table": ([("executionId", "HASH"), ("sk", "RANGE")], {}),
    "coordination_table": (
        [("key", "HASH")],
        {"due-index": ([("dueShard", "HASH"), ("dueAt", "RANGE")], "ALL")},
    ),
}
NUMBER_ATTRIBUTES = {"updatedAt", "createdAt", "dueAt"}

# The alarms examples/complete sets: key -> (namespace, metric, dimension, threshold, period seconds).
# The dimension's value comes from client_config (queue names, the worker, the deployment's name).
EXPECTED_ALARMS = {
    "dlq_messages": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", 0, 60),
    "oldest_message_age": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", 900, 300),
    "worker_errors": ("AWS/Lambda", "Errors", "FunctionName", 0, 300),
    "worker_throttles": ("AWS/Lambda", "Throttles", "FunctionName", 0, 300),
    "failed_executions": ("Stepwell", "ExecutionsFailed", "Deployment", 0, 300),
    "stalled_executions": ("Stepwell", "StalledExecutions", "Deployment", 0, 900),
    "wake_up_lag": ("Stepwell", "WakeUpLag", "Deployment", 300000, 300),
}


def _keys(schema: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(key["AttributeName"], key["KeyType"]) for key in schema]


def _statements(document: Any) -> list[dict[str, Any]]:
    parsed = json.loads(document) if isinstance(document, str) else document
    statements = parsed["Statement"]
    return statements if isinstance(statements, list) else [statements]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _actions(statements: list[dict[str, Any]]) -> list[str]:
    return [action for statement in statements for action in _as_list(statement.get("Action", []))]


@pytest.fixture(scope="module")
def config(deployed_stack: DeployedStack) -> dict[str, Any]:
    return deployed_stack.client_config


@pytest.mark.parametrize("table_key", sorted(TABLE_KEYS))
def test_tables_keys_indexes_ttl_and_recovery(
    deployed_stack: DeployedStack, config: dict[str, Any], table_key: str
) -> None:
    dynamodb = deployed_stack.backend.client("dynamodb")
    table_name = config[table_key]
    description = dynamodb.describe_table(TableName=table_name)["Table"]
    primary, indexes = TABLE_KEYS[table_key]
    assert _keys(description["KeySchema"]) == primary
    assert description["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert description.get("DeletionProtectionEnabled", False) is False
    found = {index["IndexName"]: index for index in description.get("GlobalSecondaryIndexes", [])}
    assert set(found) == set(indexes)
    for index_name, (keys, projection) in indexes.items():
        assert _keys(found[index_name]["KeySchema"]) == keys
        assert found[index_name]["Projection"]["ProjectionType"] == projection
    attribute_types = {
        item["AttributeName"]: item["AttributeType"] for item in description["AttributeDefinitions"]
    }
    for name, attribute_type in attribute_types.items():
        assert attribute_type == ("N" if name in NUMBER_ATTRIBUTES else "S"), name
    # No customer key in the example: DynamoDB's always-on encryption with an AWS-owned key, which
    # DescribeTable reports as no SSEDescription (or ENABLED on emulators that echo it).
    assert description.get("SSEDescription", {"Status": "ENABLED"})["Status"] in ("ENABLED", "ENABLING")
    ttl = dynamodb.describe_time_to_live(TableName=table_name)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    assert ttl["AttributeName"] == "ttl"
    backups = dynamodb.describe_continuous_backups(TableName=table_name)["ContinuousBackupsDescription"]
    assert backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"


def test_queues_redrive_encryption_retention_and_visibility(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    sqs = deployed_stack.backend.client("sqs")
    work = sqs.get_queue_attributes(QueueUrl=config["work_queue_url"], AttributeNames=["All"])["Attributes"]
    dlq = sqs.get_queue_attributes(QueueUrl=config["dlq_url"], AttributeNames=["All"])["Attributes"]
    assert work["QueueArn"] == config["work_queue_arn"]
    redrive = json.loads(work["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == dlq["QueueArn"]
    assert int(redrive["maxReceiveCount"]) == EXPECTED["max_receive_count"]
    assert int(work["VisibilityTimeout"]) == EXPECTED["visibility_timeout"]
    assert int(work["VisibilityTimeout"]) >= 6 * EXPECTED["timeout"]
    assert int(work["MessageRetentionPeriod"]) == EXPECTED["queue_retention"]
    assert int(dlq["MessageRetentionPeriod"]) == EXPECTED["dlq_retention"]
    for attributes in (work, dlq):
        assert attributes.get("SqsManagedSseEnabled") == "true" or attributes.get("KmsMasterKeyId")


def test_queue_policy_admits_only_the_engine_rule(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    sqs = deployed_stack.backend.client("sqs")
    events = deployed_stack.backend.client("events")
    rule_name = deployed_stack.outputs["event_rule_name"]
    rule_arn = events.describe_rule(Name=rule_name, EventBusName=config["event_bus_name"])["Arn"]
    policy = sqs.get_queue_attributes(QueueUrl=config["work_queue_url"], AttributeNames=["Policy"])[
        "Attributes"
    ]["Policy"]
    statements = _statements(policy)
    assert all(statement["Effect"] == "Allow" for statement in statements)
    assert set(_actions(statements)) == {"sqs:SendMessage"}
    assert all(statement["Resource"] == config["work_queue_arn"] for statement in statements)
    rule_statements = [s for s in statements if s["Principal"] == {"Service": "events.amazonaws.com"}]
    assert len(rule_statements) == 1
    assert rule_statements[0]["Condition"] == {"ArnEquals": {"aws:SourceArn": rule_arn}}


def test_bus_rule_pattern_and_target(deployed_stack: DeployedStack, config: dict[str, Any]) -> None:
    events = deployed_stack.backend.client("events")
    bus = events.describe_event_bus(Name=config["event_bus_name"])
    assert bus["Arn"] == config["event_bus_arn"]
    rule_name = deployed_stack.outputs["event_rule_name"]
    rule = events.describe_rule(Name=rule_name, EventBusName=config["event_bus_name"])
    assert rule["State"] == "ENABLED"
    pattern = json.loads(rule["EventPattern"])
    assert isinstance(pattern, dict) and pattern
    targets = events.list_targets_by_rule(Rule=rule_name, EventBusName=config["event_bus_name"])["Targets"]
    assert [target["Arn"] for target in targets] == [config["work_queue_arn"]]


def test_schedule_group_and_reconciler_schedule(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    scheduler = deployed_stack.backend.client("scheduler")
    group = scheduler.get_schedule_group(Name=config["schedule_group_name"])
    assert group["Name"] == config["schedule_group_name"]
    schedule = scheduler.get_schedule(
        GroupName=config["schedule_group_name"], Name=deployed_stack.outputs["reconcile_schedule_name"]
    )
    assert schedule["ScheduleExpression"] == f"rate({EXPECTED['reconcile_interval_minutes']} minutes)"
    assert schedule["State"] == "ENABLED"
    assert schedule["Target"]["Arn"] == config["work_queue_arn"]
    assert schedule["Target"]["RoleArn"] == config["scheduler_role_arn"]
    assert json.loads(schedule["Target"]["Input"]) == {"kind": "reconcile"}


def test_scheduler_role_trust_and_least_privilege(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    iam = deployed_stack.backend.client("iam")
    role_name = config["scheduler_role_arn"].rsplit("/", 1)[-1]
    role = iam.get_role(RoleName=role_name)["Role"]
    trust = _statements(role["AssumeRolePolicyDocument"])
    assert [statement["Principal"] for statement in trust] == [{"Service": "scheduler.amazonaws.com"}]
    assert "aws:SourceAccount" in trust[0]["Condition"]["StringEquals"]
    _, partition, _, _, account, _ = config["scheduler_role_arn"].split(":")
    region, group = deployed_stack.backend.region, config["schedule_group_name"]
    source_arn = f"arn:{partition}:scheduler:{region}:{account}:schedule-group/{group}"
    assert trust[0]["Condition"]["ArnEquals"] == {"aws:SourceArn": source_arn}  # only this group's schedules
    statements = [
        statement
        for policy_name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]
        for statement in _statements(
            iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
        )
    ]
    grants = {
        (action, statement["Resource"])
        for statement in statements
        for action in _as_list(statement["Action"])
    }
    assert grants == {
        ("sqs:SendMessage", config["work_queue_arn"]),
        ("sqs:SendMessage", config["dlq_arn"]),  # every schedule's dead-letter queue
        ("lambda:InvokeFunction", config["wake_function_arn"]),  # the engine's one-time wake-ups
        ("events:PutEvents", config["event_bus_arn"]),
    }
    assert iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"] == []


def test_worker_function_environment_and_role(deployed_stack: DeployedStack, config: dict[str, Any]) -> None:
    lam = deployed_stack.backend.client("lambda")
    function = lam.get_function_configuration(FunctionName=config["worker_function_name"])
    assert function["Handler"] == "stepwell.wiring.entry.handler"
    assert function["Runtime"] == EXPECTED["runtime"]
    assert function["Architectures"] == [EXPECTED["architecture"]]
    assert function["MemorySize"] == EXPECTED["memory_size"]
    assert function["Timeout"] == EXPECTED["timeout"]
    environment = function["Environment"]["Variables"]
    assert all(isinstance(value, str) for value in environment.values())
    expected_environment = {
        "STEPWELL_NAME": config["name"],
        "STEPWELL_DEFINITIONS_TABLE": config["definitions_table"],
        "STEPWELL_EXECUTIONS_TABLE": config["executions_table"],
        "STEPWELL_OPERATIONS_TABLE": config["operations_table"],
        "STEPWELL_COORDINATION_TABLE": config["coordination_table"],
        "STEPWELL_SUBJECT_INDEX": config["subject_index_name"],
        "STEPWELL_WORK_QUEUE_URL": config["work_queue_url"],
        "STEPWELL_WORK_QUEUE_ARN": config["work_queue_arn"],
        "STEPWELL_DLQ_URL": config["dlq_url"],
        "STEPWELL_EVENT_BUS_NAME": config["event_bus_name"],
        "STEPWELL_EVENT_BUS_ARN": config["event_bus_arn"],
        "STEPWELL_SCHEDULE_GROUP": config["schedule_group_name"],
        "STEPWELL_SCHEDULER_ROLE_ARN": config["scheduler_role_arn"],
        "STEPWELL_PAYLOAD_BUCKET": config["payload_bucket"],
        "STEPWELL_RETENTION_DAYS": str(EXPECTED["retention_days"]),
        "STEPWELL_WORKFLOW_MODULES": ",".join(deployed_stack.outputs["workflow_modules"]),
        "STEPWELL_WORKER_FUNCTION_NAME": config["worker_function_name"],
        "STEPWELL_WORKER_ALIAS": config["worker_alias"],
        "STEPWELL_WAKE_FUNCTION_ARN": config["wake_function_arn"],
        "STEPWELL_KEEP_VERSIONS": "3",
        "STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS": str(EXPECTED["visibility_timeout"]),
    }
    assert {key: environment.get(key) for key in expected_environment} == expected_environment
    for key in ("STEPWELL_EVENT_EXTRACTOR", "STEPWELL_LOG_LEVEL"):
        assert key in environment

    iam = deployed_stack.backend.client("iam")
    role_name = function["Role"].rsplit("/", 1)[-1]
    trust = _statements(iam.get_role(RoleName=role_name)["Role"]["AssumeRolePolicyDocument"])
    assert [statement["Principal"] for statement in trust] == [{"Service": "lambda.amazonaws.com"}]
    statements = [
        statement
        for policy_name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]
        for statement in _statements(
            iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
        )
    ]
    actions = _actions(statements)
    assert actions, "the worker role has no inline policy"
    assert not [action for action in actions if "*" in action], "a wildcard action in the worker role"
    resources = [str(resource) for statement in statements for resource in _as_list(statement["Resource"])]
    for table_key in ("executions_table", "operations_table", "coordination_table", "definitions_table"):
        assert any(resource.endswith(f":table/{config[table_key]}") for resource in resources), table_key
    assert config["work_queue_arn"] in resources
    # Delete: the worker's own qualified ARNs (versions, alias) only, never the function. Invoke: those,
    # and the functions context.invoke may call (invoke_function_arns: the example's greeter).
    function_arn = deployed_stack.outputs["worker_function_arn"]
    greeter_arn = deployed_stack.outputs["greeter_function_arn"]

    def resources_of(action: str) -> set[str]:
        return {
            str(resource)
            for statement in statements
            if action in _as_list(statement["Action"])
            for resource in _as_list(statement["Resource"])
        }

    assert resources_of("lambda:DeleteFunction") == {f"{function_arn}:*"}
    assert resources_of("lambda:InvokeFunction") == {f"{function_arn}:*", greeter_arn, f"{greeter_arn}:*"}

    logs = deployed_stack.backend.client("logs")
    group_name = f"/aws/lambda/{config['worker_function_name']}"
    groups = logs.describe_log_groups(logGroupNamePrefix=group_name)["logGroups"]
    assert [(group["logGroupName"], group.get("retentionInDays")) for group in groups] == [
        (group_name, EXPECTED["log_retention_days"])
    ]


def test_worker_event_source_mapping(deployed_stack: DeployedStack, config: dict[str, Any]) -> None:
    mappings = event_source_mappings_for(deployed_stack.backend, config["worker_function_name"])
    assert len(mappings) == 1
    mapping = mappings[0]
    assert mapping["EventSourceArn"] == config["work_queue_arn"]
    assert mapping["BatchSize"] == EXPECTED["batch_size"]
    assert mapping.get("MaximumBatchingWindowInSeconds", 0) == EXPECTED["batching_window"]
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["State"] in ("Enabled", "Enabling", "Creating")
    # New work reaches the newest published version through the alias.
    assert mapping["FunctionArn"] == deployed_stack.outputs["worker_alias_arn"]
    assert mapping["FunctionArn"].endswith(f":{config['worker_alias']}")


def test_wake_ups_invoke_the_alias_and_failures_go_to_the_work_queue(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    assert config["wake_function_arn"] == deployed_stack.outputs["worker_alias_arn"]
    invoke_config = deployed_stack.backend.client("lambda").get_function_event_invoke_config(
        FunctionName=config["worker_function_name"], Qualifier=config["worker_alias"]
    )
    assert invoke_config["MaximumRetryAttempts"] == 2
    assert invoke_config["DestinationConfig"]["OnFailure"]["Destination"] == config["work_queue_arn"]


def test_the_worker_may_wake_itself_through_its_queue_past_lambdas_loop_limit(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    # Left at Lambda's default (Terminate), an execution's 17th run in a row through the work queue
    # would be stopped and its message moved to the DLQ.
    lam = deployed_stack.backend.client("lambda")
    recursion = lam.get_function_recursion_config(FunctionName=config["worker_function_name"])
    assert recursion["RecursiveLoop"] == "Allow"


def test_worker_publishes_versions_and_the_alias_points_at_the_newest(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    lam = deployed_stack.backend.client("lambda")
    name = config["worker_function_name"]
    alias = lam.get_alias(FunctionName=name, Name=config["worker_alias"])
    published = [
        version["Version"]
        for page in lam.get_paginator("list_versions_by_function").paginate(FunctionName=name)
        for version in page["Versions"]
        if version["Version"] != "$LATEST"
    ]
    assert published, "the worker has no published version"
    newest = max(published, key=int)
    assert alias["FunctionVersion"] == newest == deployed_stack.outputs["worker_version"]
    assert alias["AliasArn"] == deployed_stack.outputs["worker_alias_arn"]
    # The published version runs the same code as the function's latest.
    assert (
        lam.get_function_configuration(FunctionName=name, Qualifier=newest)["CodeSha256"]
        == lam.get_function_configuration(FunctionName=name)["CodeSha256"]
    )


def test_payload_bucket_is_private_encrypted_and_tls_only(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    s3 = deployed_stack.backend.client("s3")
    bucket = config["payload_bucket"]
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert block == {
        "BlockPublicAcls": True,
        "IgnorePublicAcls": True,
        "BlockPublicPolicy": True,
        "RestrictPublicBuckets": True,
    }
    statements = _statements(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    assert [statement["Effect"] for statement in statements] == ["Deny"]
    assert statements[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statements[0]["Action"] == "s3:*"
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    ownership = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert ownership == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    lifecycle = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    expiring = [rule for rule in lifecycle if rule.get("Expiration", {}).get("Days")]
    assert expiring and all(rule["Status"] == "Enabled" for rule in expiring)
    # Only objects of ended executions expire (tests/deploy/test_payload_retention_deployed.py).
    assert [rule["Filter"] for rule in expiring] == [{"Tag": {"Key": "stepwell-retention", "Value": "ended"}}]


def _alarm_dimension_values(config: dict[str, Any]) -> dict[str, str]:
    return {
        "dlq_messages": config["dlq_url"].rsplit("/", 1)[-1],
        "oldest_message_age": config["work_queue_url"].rsplit("/", 1)[-1],
        "worker_errors": config["worker_function_name"],
        "worker_throttles": config["worker_function_name"],
        "failed_executions": config["name"],
        "stalled_executions": config["name"],
        "wake_up_lag": config["name"],
    }


def test_alarms_notify_the_alarm_topic(deployed_stack: DeployedStack, config: dict[str, Any]) -> None:
    alarm_names = deployed_stack.outputs["alarm_names"]
    assert set(alarm_names) == set(EXPECTED_ALARMS)
    topic_arn = deployed_stack.outputs["alarm_topic_arn"]
    cloudwatch = deployed_stack.backend.client("cloudwatch")
    described = cloudwatch.describe_alarms(AlarmNames=sorted(alarm_names.values()))["MetricAlarms"]
    alarms = {alarm["AlarmName"]: alarm for alarm in described}
    assert set(alarms) == set(alarm_names.values())
    dimension_values = _alarm_dimension_values(config)
    for key, (namespace, metric, dimension, threshold, period) in EXPECTED_ALARMS.items():
        alarm = alarms[alarm_names[key]]
        assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric), key
        assert alarm["Dimensions"] == [{"Name": dimension, "Value": dimension_values[key]}], key
        assert (alarm["Threshold"], alarm["Period"]) == (threshold, period), key
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold", key
        assert alarm["TreatMissingData"] == "notBreaching", key
        assert alarm["AlarmActions"] == alarm["OKActions"] == [topic_arn], key
    assert alarms[alarm_names["wake_up_lag"]]["ExtendedStatistic"] == "p99"

    attributes = deployed_stack.backend.client("sns").get_topic_attributes(TopicArn=topic_arn)["Attributes"]
    assert topic_arn.rsplit(":", 1)[-1] == f"{config['name']}-alarms"
    statements = _statements(attributes["Policy"])
    assert [(s["Effect"], s["Principal"], s["Action"], s["Resource"]) for s in statements] == [
        ("Allow", {"Service": "cloudwatch.amazonaws.com"}, "sns:Publish", topic_arn),
        ("Allow", {"Service": "events.amazonaws.com"}, "sns:Publish", topic_arn),
    ]
    alarm_arns = {alarm["AlarmArn"] for alarm in described}
    assert set(_as_list(statements[0]["Condition"]["ArnEquals"]["aws:SourceArn"])) == alarm_arns


def test_failed_executions_notify_the_alarm_topic(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    """The status-change events of failed and timed-out executions go to the alarm topic, which only that
    rule may publish to through EventBridge."""
    events = deployed_stack.backend.client("events")
    name = deployed_stack.outputs["status_notifications_rule_name"]
    rule = events.describe_rule(Name=name, EventBusName=config["event_bus_name"])
    assert json.loads(rule["EventPattern"]) == {
        "source": ["stepwell.executions"],
        "detail-type": ["Stepwell Execution Status Change"],
        "detail": {"status": ["FAILED", "TIMED_OUT"]},
    }
    targets = events.list_targets_by_rule(Rule=name, EventBusName=config["event_bus_name"])["Targets"]
    topic_arn = deployed_stack.outputs["alarm_topic_arn"]
    assert [target["Arn"] for target in targets] == [topic_arn]
    sns = deployed_stack.backend.client("sns")
    policy = sns.get_topic_attributes(TopicArn=topic_arn)["Attributes"]["Policy"]
    publishers = [s for s in _statements(policy) if s["Principal"] == {"Service": "events.amazonaws.com"}]
    assert [_as_list(s["Condition"]["ArnEquals"]["aws:SourceArn"]) for s in publishers] == [[rule["Arn"]]]


def test_dashboard_graphs_the_engine_per_workflow_and_shows_the_alarms(
    deployed_stack: DeployedStack, config: dict[str, Any]
) -> None:
    cloudwatch = deployed_stack.backend.client("cloudwatch")
    dashboard = cloudwatch.get_dashboard(DashboardName=deployed_stack.outputs["dashboard_name"])
    assert dashboard["DashboardName"] == config["name"]
    widgets = json.loads(dashboard["DashboardBody"])["widgets"]
    series = [entry for widget in widgets for entry in widget["properties"].get("metrics", [])]
    searches = {entry[0]["expression"] for entry in series if isinstance(entry[0], dict)}
    for metric in ("ExecutionsStarted", "ExecutionsFailed", "WakeUpLag", "LeaseFenced", "InvocationDuration"):
        assert any(
            search.startswith("SEARCH('{Stepwell,Deployment,Workflow} ")
            and f'Deployment="{config["name"]}"' in search
            and f'MetricName="{metric}"' in search
            for search in searches
        ), metric
    plain = {tuple(entry[:4]) for entry in series if isinstance(entry[0], str)}
    assert ("Stepwell", "StalledExecutions", "Deployment", config["name"]) in plain
    assert ("AWS/Lambda", "Errors", "FunctionName", config["worker_function_name"]) in plain
    alarm_arns = {
        alarm["AlarmArn"]
        for alarm in cloudwatch.describe_alarms(
            AlarmNames=sorted(deployed_stack.outputs["alarm_names"].values())
        )["MetricAlarms"]
    }
    assert [set(widget["properties"]["alarms"]) for widget in widgets if widget["type"] == "alarm"] == [
        alarm_arns
    ]


def test_a_second_plan_shows_no_changes(deployed_stack: DeployedStack) -> None:
    assert not deployed_stack.terraform.plan_has_changes(), deployed_stack.terraform.plan_text()
