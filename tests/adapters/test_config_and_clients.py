"""Configuration loading and the boto3 client factory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from botocore.stub import Stubber
from stepwell.aws.clients import AwsClients, RequestCounter
from stepwell.config import ConfigError, StepwellConfig
from stepwell.core.versions import PRUNE_GRACE_SECONDS
from stepwell.features.definitions.runtime import DefinitionsRuntime
from stepwell.wiring.entry import EntryRuntime

CLIENT_CONFIG = {
    "region": "eu-west-1",
    "name": "orders",
    "definitions_table": "orders-definitions",
    "executions_table": "orders-executions",
    "operations_table": "orders-operations",
    "coordination_table": "orders-coordination",
    "subject_index_name": "by-subject",
    "work_queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-work",
    "work_queue_arn": "arn:aws:sqs:eu-west-1:123456789012:orders-work",
    "dlq_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dlq",
    "event_bus_name": "orders",
    "event_bus_arn": "arn:aws:events:eu-west-1:123456789012:event-bus/orders",
    "schedule_group_name": "orders",
    "scheduler_role_arn": "arn:aws:iam::123456789012:role/orders-scheduler",
    "payload_bucket": "orders-payloads",
    "worker_function_name": "orders-worker",
    "wake_function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:orders-worker:live",
}


def test_client_config_dict_and_terraform_output_file_give_the_same_config(tmp_path: Path) -> None:
    from_dict = StepwellConfig.from_client_config(CLIENT_CONFIG)
    output_file = tmp_path / "client_config.json"
    output_file.write_text(json.dumps({"sensitive": False, "type": "object", "value": CLIENT_CONFIG}))
    assert StepwellConfig.from_file(output_file) == from_dict
    all_outputs = {"client_config": {"sensitive": False, "value": CLIENT_CONFIG}, "other": {"value": 1}}
    assert StepwellConfig.from_client_config(all_outputs) == from_dict
    with pytest.raises(ConfigError, match="client_config must be a JSON object, got NoneType"):
        StepwellConfig.from_client_config(None)  # type: ignore[arg-type]
    assert from_dict.subject_index_name == "by-subject"
    assert from_dict.region == "eu-west-1"


def test_null_outputs_mean_unset_and_unknown_outputs_are_ignored() -> None:
    config = StepwellConfig.from_client_config({**CLIENT_CONFIG, "dlq_url": None, "future_output": "x"})
    assert config.dlq_url == ""


def test_environment_round_trip() -> None:
    config = StepwellConfig.from_client_config(
        {
            **CLIENT_CONFIG,
            "workflow_modules": ["orders", "billing.flows"],
            "work_queue_visibility_seconds": 14400,
        }
    )
    env = config.to_env()
    assert env["STEPWELL_SUBJECT_INDEX"] == "by-subject"
    assert env["STEPWELL_WORKFLOW_MODULES"] == "orders,billing.flows"
    assert env["STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS"] == "14400"
    again = StepwellConfig.from_env({**env, "STEPWELL_WORKER_FUNCTION_NAME": "orders-worker"})
    assert again == config


def test_definitions_cpu_budgets_round_trip_and_default_to_the_runtimes() -> None:
    """STEPWELL_DEFINITIONS_RUN_CPU_SECONDS and STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS (the module's
    definitions_*_cpu_seconds) give the budgets of stepwell.features.definitions.budgets; unset, its
    defaults."""
    default = StepwellConfig.from_client_config(CLIENT_CONFIG)
    runtime = DefinitionsRuntime.in_memory()
    assert (default.definitions_run_cpu_seconds, default.definitions_expression_cpu_seconds) == (10.0, 0.25)
    assert (runtime.run_cpu_seconds, runtime.expression_cpu_seconds) == (10.0, 0.25)
    config = StepwellConfig.from_client_config(
        {**CLIENT_CONFIG, "definitions_run_cpu_seconds": "2.5", "definitions_expression_cpu_seconds": 0.05}
    )
    env = config.to_env()
    assert env["STEPWELL_DEFINITIONS_RUN_CPU_SECONDS"] == "2.5"
    assert env["STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS"] == "0.05"
    again = StepwellConfig.from_env({**env, "STEPWELL_WORKER_FUNCTION_NAME": "orders-worker"})
    assert again == config
    assert StepwellConfig.from_client_config(config.to_client_config()) == config
    # The module's tostring() of whole numbers.
    whole = StepwellConfig.from_env({**env, "STEPWELL_DEFINITIONS_RUN_CPU_SECONDS": "20"})
    assert whole.definitions_run_cpu_seconds == 20.0
    with pytest.raises(
        ConfigError,
        match="STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS must be a number of seconds, got '250ms'",
    ):
        StepwellConfig.from_env({**env, "STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS": "250ms"})
    with pytest.raises(ConfigError, match=r"at most the run's budget \(2.5 s\).*got 3$"):
        StepwellConfig.from_env({**env, "STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS": "3"})


def test_the_work_queues_visibility_timeout_sets_the_reconcilers_grace_before_pruning() -> None:
    """The module gives the worker the work queue's visibility timeout: a killed first run's retry comes
    that long after, and the reconciler keeps the version it may pin to until then."""
    env = StepwellConfig.from_client_config(CLIENT_CONFIG).to_env()
    assert "STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS" not in env  # not told: the default grace
    clients = AwsClients(region="eu-west-1")
    told = StepwellConfig.from_env({**env, "STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS": "14400"})
    assert EntryRuntime.from_config(told, clients).reconciler.prune_grace == 14400 + 1800
    untold = StepwellConfig.from_env(env)
    assert EntryRuntime.from_config(untold, clients).reconciler.prune_grace == PRUNE_GRACE_SECONDS
    with pytest.raises(ConfigError, match="STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS must be a whole number"):
        StepwellConfig.from_env({**env, "STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS": "6h"})


def test_missing_required_setting_names_it() -> None:
    incomplete = {key: value for key, value in CLIENT_CONFIG.items() if key != "operations_table"}
    with pytest.raises(ConfigError, match="operations_table"):
        StepwellConfig.from_client_config(incomplete)
    with pytest.raises(ConfigError, match="STEPWELL_EXECUTIONS_TABLE"):
        StepwellConfig.from_env({"STEPWELL_NAME": "x"})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"retention_days": "soon"}, "retention_days must be a whole number, got 'soon'"),
        ({"retention_days": 0}, "positive number of days, got 0"),
        (
            {"work_queue_visibility_seconds": 50000},
            "work_queue_visibility_seconds must be 0..43200 \\(the work queue's visibility timeout",
        ),
        ({"workflow_modules": "good,not-a-module"}, "'not-a-module' is not a dotted Python module name"),
        ({"executions_table": 42}, "client_config\\['executions_table'\\] must be a string, got 42"),
        # Unqualified (Scheduler would invoke $LATEST, not the live alias), or no ARN at all.
        (
            {"wake_function_arn": "arn:aws:lambda:eu-west-1:123456789012:function:orders-worker"},
            "wake_function_arn \\(STEPWELL_WAKE_FUNCTION_ARN\\) must be a Lambda function ARN with an alias",
        ),
        ({"wake_function_arn": "orders-worker:live"}, "got 'orders-worker:live'"),
        # Definitions' CPU budgets: a run's within (0, 900) (Lambda's longest timeout), an expression's
        # within (0, the run's].
        (
            {"definitions_run_cpu_seconds": "ten"},
            "definitions_run_cpu_seconds must be a number of seconds, got 'ten'",
        ),
        ({"definitions_run_cpu_seconds": True}, "must be a number of seconds, got True"),
        (
            {"definitions_run_cpu_seconds": 0},
            "^definitions_run_cpu_seconds \\(STEPWELL_DEFINITIONS_RUN_CPU_SECONDS\\) must be more than 0 and "
            "less than 900 seconds \\(the CPU one run of a definition's context may take, below the worker's "
            "timeout\\), got 0$",
        ),
        ({"definitions_run_cpu_seconds": 900}, "less than 900 seconds .*got 900$"),
        ({"definitions_run_cpu_seconds": "nan"}, "less than 900 seconds .*got nan$"),
        (
            {"definitions_expression_cpu_seconds": -0.5},
            "^definitions_expression_cpu_seconds \\(STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS\\) must be "
            "more than 0 and at most the run's budget \\(10 s\\): the CPU one expression evaluation may "
            "take, got -0.5$",
        ),
        (
            {"definitions_run_cpu_seconds": 1, "definitions_expression_cpu_seconds": 2},
            "at most the run's budget \\(1 s\\).*got 2$",
        ),
    ],
)
def test_bad_values_are_named(override: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StepwellConfig.from_client_config({**CLIENT_CONFIG, **override})


def test_bad_config_file_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ConfigError, match=r"broken\.json.*not valid JSON"):
        StepwellConfig.from_file(broken)
    with pytest.raises(ConfigError, match="cannot read"):
        StepwellConfig.from_file(tmp_path / "absent.json")


def test_bad_log_level_is_named() -> None:
    env = StepwellConfig.from_client_config(CLIENT_CONFIG).to_env()
    with pytest.raises(ConfigError, match="log level 'CHATTY' is not one of DEBUG, INFO"):
        StepwellConfig.from_env({**env, "STEPWELL_LOG_LEVEL": "chatty"})
    assert StepwellConfig.from_env({**env, "STEPWELL_LOG_LEVEL": "debug"}).log_level == "DEBUG"


def test_event_extractor_must_be_an_object() -> None:
    env = StepwellConfig.from_client_config(CLIENT_CONFIG).to_env()
    with pytest.raises(ConfigError, match="STEPWELL_EVENT_EXTRACTOR must be a JSON object"):
        StepwellConfig.from_env({**env, "STEPWELL_EVENT_EXTRACTOR": "[1]"})


def test_bad_retry_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="retry mode 'eager' is not one of standard, adaptive, legacy"):
        AwsClients(region="us-east-1", retry_mode="eager")


def test_endpoint_url_is_used_by_every_client() -> None:
    clients = AwsClients(region="us-east-1", endpoint_url="http://127.0.0.1:4566")
    assert clients.dynamodb.meta.endpoint_url == "http://127.0.0.1:4566"
    assert clients.sqs.meta.endpoint_url == "http://127.0.0.1:4566"
    assert clients.dynamodb is clients.dynamodb


def test_a_service_endpoint_wins_for_its_service_only() -> None:
    # A local Lambda runtime beside a local AWS: Lambda requests go to the runtime, the rest to the AWS.
    clients = AwsClients(
        region="us-east-1",
        endpoint_url="http://127.0.0.1:4566",
        service_endpoints={"lambda": "http://127.0.0.1:7000"},
    )
    assert clients.lambda_.meta.endpoint_url == "http://127.0.0.1:7000"
    assert clients.lambda_wake.meta.endpoint_url == "http://127.0.0.1:7000"
    assert clients.lambda_invoke.meta.endpoint_url == "http://127.0.0.1:7000"
    assert clients.sqs.meta.endpoint_url == "http://127.0.0.1:4566"


def test_a_wake_up_invoke_is_tried_once_and_a_synchronous_invoke_waits_for_its_function() -> None:
    clients = AwsClients(region="us-east-1")
    # A refused wake-up goes to the work queue at once; a synchronous invoke waits up to Lambda's limit.
    assert clients.lambda_wake.meta.config.retries["total_max_attempts"] == 1
    assert clients.lambda_wake.meta.config.read_timeout == 5
    assert clients.lambda_invoke.meta.config.read_timeout == 900
    assert clients.lambda_wake is not clients.lambda_invoke


def test_aws_endpoint_url_from_the_environment_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    clients = AwsClients(region="us-east-1")
    assert clients.scheduler.meta.endpoint_url == "http://127.0.0.1:5000"
    assert clients.s3.meta.endpoint_url == "http://127.0.0.1:5000"


def test_counter_counts_calls_and_consumed_capacity(aws_credentials: None) -> None:
    counter = RequestCounter()
    clients = AwsClients(region="us-east-1", counter=counter)
    with Stubber(clients.dynamodb) as stub:
        stub.add_response("put_item", {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": 1.0}})
        stub.add_response("get_item", {"ConsumedCapacity": {"TableName": "t", "CapacityUnits": 0.5}})
        clients.dynamodb.put_item(TableName="t", Item={"k": {"S": "v"}}, ReturnConsumedCapacity="TOTAL")
        clients.dynamodb.get_item(TableName="t", Key={"k": {"S": "v"}}, ReturnConsumedCapacity="TOTAL")
    snapshot = counter.snapshot()
    assert snapshot["calls"] == {"dynamodb.PutItem": 1, "dynamodb.GetItem": 1}
    assert snapshot["write_units"] == 1.0
    assert snapshot["read_units"] == 0.5
    assert counter.total("dynamodb") == 2
    counter.reset()
    assert counter.total("dynamodb") == 0


def test_counter_names_calls_by_service(aws_credentials: None) -> None:
    clients = AwsClients(region="us-east-1")
    with Stubber(clients.events) as events, Stubber(clients.scheduler) as scheduler:
        events.add_response("put_events", {"FailedEntryCount": 0, "Entries": []})
        scheduler.add_response("list_schedules", {"Schedules": []})
        clients.events.put_events(Entries=[{"Source": "s", "DetailType": "d", "Detail": "{}"}])
        clients.scheduler.list_schedules()
    assert clients.counter.snapshot()["calls"] == {"events.PutEvents": 1, "scheduler.ListSchedules": 1}
