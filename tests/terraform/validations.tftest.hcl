# Every input validation of the root module rejects a bad value (one run per rule), at plan time,
# with a mocked AWS provider. The first run proves the defaults plan cleanly.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "defaults_plan_cleanly" {
  command = plan

  assert {
    condition     = output.client_config.name == "unit"
    error_message = "The defaults should plan, with client_config naming the deployment."
  }
}

run "rejects_name_uppercase" {
  command = plan

  variables {
    name = "Bad_Name"
  }

  expect_failures = [var.name]
}

run "rejects_name_too_short" {
  command = plan

  variables {
    name = "ab"
  }

  expect_failures = [var.name]
}

run "rejects_name_trailing_hyphen" {
  command = plan

  variables {
    name = "stepwell-"
  }

  expect_failures = [var.name]
}

run "rejects_kms_key_arn_not_kms" {
  command = plan

  variables {
    kms_key_arn = "arn:aws:s3:::bucket"
  }

  expect_failures = [var.kms_key_arn]
}

run "rejects_permissions_boundary_not_policy" {
  command = plan

  variables {
    permissions_boundary_arn = "arn:aws:iam::123456789012:role/boundary"
  }

  expect_failures = [var.permissions_boundary_arn]
}

run "rejects_keep_versions_zero" {
  command = plan

  variables {
    keep_versions = 0
  }

  expect_failures = [var.keep_versions]
}

run "rejects_keep_versions_over_100" {
  command = plan

  variables {
    keep_versions = 101
  }

  expect_failures = [var.keep_versions]
}

run "rejects_keep_versions_fraction" {
  command = plan

  variables {
    keep_versions = 1.5
  }

  expect_failures = [var.keep_versions]
}

run "rejects_retention_days_zero" {
  command = plan

  variables {
    retention_days = 0
  }

  expect_failures = [var.retention_days]
}

run "rejects_retention_days_fraction" {
  command = plan

  variables {
    retention_days = 1.5
  }

  expect_failures = [var.retention_days]
}

run "rejects_billing_mode_unknown" {
  command = plan

  variables {
    billing_mode = "ON_DEMAND"
  }

  expect_failures = [var.billing_mode]
}

run "rejects_read_capacity_zero" {
  command = plan

  variables {
    read_capacity = 0
  }

  expect_failures = [var.read_capacity]
}

run "rejects_write_capacity_too_large" {
  command = plan

  variables {
    write_capacity = 40001
  }

  expect_failures = [var.write_capacity]
}

run "rejects_subject_index_name_bad_chars" {
  command = plan

  variables {
    subject_index_name = "by subject!"
  }

  expect_failures = [var.subject_index_name]
}

run "rejects_event_bus_arn_not_a_bus" {
  command = plan

  variables {
    event_bus_arn = "arn:aws:sqs:eu-west-1:123456789012:queue"
  }

  expect_failures = [var.event_bus_arn]
}

run "rejects_event_pattern_not_json_object" {
  command = plan

  variables {
    event_pattern = "[1, 2]"
  }

  expect_failures = [var.event_pattern]
}

run "rejects_queue_visibility_timeout_too_large" {
  command = plan

  variables {
    queue_visibility_timeout_seconds = 43201
  }

  expect_failures = [var.queue_visibility_timeout_seconds]
}

run "rejects_queue_message_retention_too_short" {
  command = plan

  variables {
    queue_message_retention_seconds = 59
  }

  expect_failures = [var.queue_message_retention_seconds]
}

run "rejects_dlq_message_retention_too_long" {
  command = plan

  variables {
    dlq_message_retention_seconds = 1209601
  }

  expect_failures = [var.dlq_message_retention_seconds]
}

run "rejects_max_receive_count_zero" {
  command = plan

  variables {
    max_receive_count = 0
  }

  expect_failures = [var.max_receive_count]
}

run "rejects_reconcile_interval_zero" {
  command = plan

  variables {
    reconcile_interval_minutes = 0
  }

  expect_failures = [var.reconcile_interval_minutes]
}

run "rejects_reconcile_interval_over_a_day" {
  command = plan

  variables {
    reconcile_interval_minutes = 1441
  }

  expect_failures = [var.reconcile_interval_minutes]
}

run "rejects_payload_bucket_name_uppercase" {
  command = plan

  variables {
    payload_bucket_name = "Payloads"
  }

  expect_failures = [var.payload_bucket_name]
}

run "rejects_runtime_not_python" {
  command = plan

  variables {
    runtime = "nodejs20.x"
  }

  expect_failures = [var.runtime]
}

run "rejects_runtime_old_python" {
  command = plan

  variables {
    runtime = "python3.9"
  }

  expect_failures = [var.runtime]
}

run "rejects_architecture_unknown" {
  command = plan

  variables {
    architecture = "aarch64"
  }

  expect_failures = [var.architecture]
}

run "rejects_memory_size_too_small" {
  command = plan

  variables {
    memory_size = 64
  }

  expect_failures = [var.memory_size]
}

run "rejects_timeout_over_15_minutes" {
  command = plan

  variables {
    timeout = 901
  }

  expect_failures = [var.timeout]
}

run "rejects_timeout_zero" {
  command = plan

  variables {
    timeout = 0
  }

  expect_failures = [var.timeout]
}

run "rejects_reserved_concurrency_negative" {
  command = plan

  variables {
    reserved_concurrent_executions = -1
  }

  expect_failures = [var.reserved_concurrent_executions]
}

run "rejects_reserved_concurrency_of_one" {
  command = plan

  variables {
    reserved_concurrent_executions = 1
  }

  expect_failures = [var.reserved_concurrent_executions]
}

run "rejects_log_retention_not_a_cloudwatch_value" {
  command = plan

  variables {
    log_retention_days = 10
  }

  expect_failures = [var.log_retention_days]
}

run "rejects_log_level_unknown" {
  command = plan

  variables {
    log_level = "TRACE"
  }

  expect_failures = [var.log_level]
}

run "rejects_event_extractor_unknown_key" {
  command = plan

  variables {
    event_extractor = { tenant = "detail.tenant" }
  }

  expect_failures = [var.event_extractor]
}

run "rejects_subnet_ids_not_subnets" {
  command = plan

  variables {
    subnet_ids = ["vpc-123"]
  }

  expect_failures = [var.subnet_ids]
}

run "rejects_batch_size_zero" {
  command = plan

  variables {
    batch_size = 0
  }

  expect_failures = [var.batch_size]
}

run "rejects_batching_window_too_long" {
  command = plan

  variables {
    maximum_batching_window_seconds = 301
  }

  expect_failures = [var.maximum_batching_window_seconds]
}

run "rejects_maximum_concurrency_one" {
  command = plan

  variables {
    maximum_concurrency = 1
  }

  expect_failures = [var.maximum_concurrency]
}

run "rejects_lambda_package_path_not_zip" {
  command = plan

  variables {
    lambda_package_path = "worker.tar.gz"
  }

  expect_failures = [var.lambda_package_path]
}

run "rejects_workflow_modules_not_dotted_names" {
  command = plan

  variables {
    workflow_modules = ["orders-v2"]
  }

  expect_failures = [var.workflow_modules]
}

run "rejects_visibility_timeout_below_six_times_timeout" {
  command = plan

  variables {
    timeout                          = 60
    queue_visibility_timeout_seconds = 300
  }

  expect_failures = [var.queue_visibility_timeout_seconds]
}

run "rejects_existing_bus_needs_arn" {
  command = plan

  variables {
    create_event_bus = false
  }

  expect_failures = [var.event_bus_arn]
}

run "rejects_large_batch_needs_window" {
  command = plan

  variables {
    batch_size                      = 100
    maximum_batching_window_seconds = 0
  }

  expect_failures = [var.maximum_batching_window_seconds]
}

run "rejects_security_groups_not_security_groups" {
  command = plan

  variables {
    subnet_ids         = ["subnet-0abc"]
    security_group_ids = ["subnet-0abc"]
  }

  expect_failures = [var.security_group_ids]
}

run "rejects_subnets_without_security_groups" {
  command = plan

  variables {
    subnet_ids = ["subnet-0abc"]
  }

  expect_failures = [var.security_group_ids]
}

run "rejects_action_function_arns_not_functions" {
  command = plan

  variables {
    action_function_arns = ["arn:aws:iam::123456789012:role/notify"]
  }

  expect_failures = [var.action_function_arns]
}

run "invoke_function_arns_reach_the_worker" {
  command = plan

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:greeter", "arn:aws-cn:lambda:cn-north-1:123456789012:function:Report_Export-2"]
  }

  assert {
    condition     = tolist(jsondecode(module.engine.environment.STEPWELL_INVOKE_FUNCTIONS)) == var.invoke_function_arns
    error_message = "invoke_function_arns must reach the worker as the JSON list STEPWELL_INVOKE_FUNCTIONS."
  }
}

run "rejects_invoke_function_arns_not_functions" {
  command = plan

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:layer:greeter"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "rejects_invoke_function_arns_names" {
  command = plan

  variables {
    invoke_function_arns = ["greeter"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "rejects_invoke_function_arns_qualified" {
  command = plan

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:greeter:3"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "rejects_invoke_function_arns_wildcard" {
  command = plan

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:*"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "rejects_invoke_function_arns_own_worker" {
  command = plan

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "rejects_action_event_bus_arns_not_buses" {
  command = plan

  variables {
    action_event_bus_arns = ["platform-events"]
  }

  expect_failures = [var.action_event_bus_arns]
}

run "rejects_event_sources_bad_source" {
  command = plan

  variables {
    event_sources = { "com.acme billing" = ["acme"] }
  }

  expect_failures = [var.event_sources]
}

run "rejects_event_sources_bad_account" {
  command = plan

  variables {
    event_sources = { "1234:com.acme" = ["acme"] }
  }

  expect_failures = [var.event_sources]
}

run "rejects_event_sources_bad_domain" {
  command = plan

  variables {
    event_sources = { "com.acme" = ["acme#eu"] }
  }

  expect_failures = [var.event_sources]
}

run "rejects_event_sources_no_domains" {
  command = plan

  variables {
    event_sources = { "com.acme" = [] }
  }

  expect_failures = [var.event_sources]
}

run "rejects_event_sources_status_event_source" {
  command = plan

  variables {
    event_sources = { "123456789012:stepwell.executions" = ["*"] }
  }

  expect_failures = [var.event_sources]
}

run "http_allowlist_every_form_reaches_the_worker" {
  command = plan

  variables {
    http_allowlist        = ["api.example.com", "api.example.com:8443", "*.example.org", "203.0.113.7", "[2001:db8::1]:8443", "https://api.example.com/v1/", "http://10.20.0.5:8080/hooks"]
    http_allowed_networks = ["10.20.0.0/16", "fd00::/8"]
  }

  assert {
    condition = (
      tolist(jsondecode(module.engine.environment.STEPWELL_HTTP_ALLOWLIST)) == var.http_allowlist &&
      tolist(jsondecode(module.engine.environment.STEPWELL_HTTP_ALLOWED_NETWORKS)) == var.http_allowed_networks
    )
    error_message = "http_allowlist and http_allowed_networks must reach the worker as JSON lists."
  }
}

run "rejects_http_allowlist_user_info" {
  command = plan

  variables {
    http_allowlist = ["https://api.example.com@169.254.169.254/"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_scheme" {
  command = plan

  variables {
    http_allowlist = ["ftp://files.example.com/"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_inner_wildcard" {
  command = plan

  variables {
    http_allowlist = ["api.*.example.com"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_host_with_path" {
  command = plan

  variables {
    http_allowlist = ["api.example.com/v1"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_query" {
  command = plan

  variables {
    http_allowlist = ["https://api.example.com/v1?key=1"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_port_out_of_range" {
  command = plan

  variables {
    http_allowlist = ["api.example.com:70000"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_numeric_ipv4_spelling" {
  command = plan

  variables {
    http_allowlist = ["http://2130706433/"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_wildcard_address" {
  command = plan

  variables {
    http_allowlist = ["*.10.0.0.1"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowlist_dot_segments" {
  command = plan

  variables {
    http_allowlist = ["https://api.example.com/v1/../admin"]
  }

  expect_failures = [var.http_allowlist]
}

run "rejects_http_allowed_networks_not_cidr" {
  command = plan

  variables {
    http_allowed_networks = ["169.254.169.254"]
  }

  expect_failures = [var.http_allowed_networks]
}

run "rejects_alarms_negative_threshold" {
  command = plan

  variables {
    alarms = { dlq_messages = { threshold = -1 } }
  }

  expect_failures = [var.alarms]
}

run "rejects_alarms_period_not_a_minute_multiple" {
  command = plan

  variables {
    alarms = { worker_errors = { period_seconds = 90 } }
  }

  expect_failures = [var.alarms]
}

run "rejects_alarms_evaluation_periods_zero" {
  command = plan

  variables {
    alarms = { failed_executions = { evaluation_periods = 0 } }
  }

  expect_failures = [var.alarms]
}

run "rejects_alarms_window_over_a_day_with_short_periods" {
  command = plan

  variables {
    alarms = { oldest_message_age = { period_seconds = 1800, evaluation_periods = 49 } }
  }

  expect_failures = [var.alarms]
}

run "rejects_alarms_datapoints_over_evaluation_periods" {
  command = plan

  variables {
    alarms = { wake_up_lag = { evaluation_periods = 3, datapoints_to_alarm = 4 } }
  }

  expect_failures = [var.alarms]
}

run "rejects_alarm_topic_arn_not_sns" {
  command = plan

  variables {
    alarm_topic_arn = "arn:aws:sqs:eu-west-1:123456789012:ops"
  }

  expect_failures = [var.alarm_topic_arn]
}

run "rejects_notify_statuses_unknown" {
  command = plan

  variables {
    notify_statuses = ["FAILED", "CRASHED"]
  }

  expect_failures = [var.notify_statuses]
}

# A pause is announced when it takes hold (PAUSED): PAUSING is no status-change event.
run "rejects_notify_statuses_pausing" {
  command = plan

  variables {
    notify_statuses = ["PAUSING"]
  }

  expect_failures = [var.notify_statuses]
}

run "accepts_notify_statuses_paused_and_deleting" {
  command = plan

  variables {
    notify_statuses = ["FAILED", "PAUSED", "DELETING"]
  }
}

# schedules: the key (schedule name), workflow name, expression shape, time zone, overlap and input rules.

run "rejects_schedules_key" {
  command = plan

  variables {
    schedules = { "bad name" = { workflow = "orders", expression = "rate(1 hour)" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_workflow" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "9orders", expression = "rate(1 hour)" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_expression" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "every day at 6" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_cron_field_count" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "cron(0 6 * * ?)" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_rate_zero" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "rate(0 minutes)" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_timezone" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "rate(1 hour)", timezone = "" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_overlap" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "rate(1 hour)", overlap = "QUEUE" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_input_not_json" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "rate(1 hour)", input = "{not json" } }
  }

  expect_failures = [var.schedules]
}

run "rejects_schedules_input_too_long" {
  command = plan

  variables {
    schedules = { nightly = { workflow = "orders", expression = "rate(1 hour)", input = jsonencode({ text = format("%7001s", "x") }) } }
  }

  expect_failures = [var.schedules]
}

run "rejects_callback_url_max_body_bytes_zero" {
  command = plan

  variables {
    callback_urls               = true
    callback_url_max_body_bytes = 0
  }

  expect_failures = [var.callback_url_max_body_bytes]
}

run "rejects_callback_url_max_body_bytes_over_200_kb" {
  command = plan

  variables {
    callback_urls               = true
    callback_url_max_body_bytes = 204801
  }

  expect_failures = [var.callback_url_max_body_bytes]
}

run "rejects_callback_url_max_body_bytes_fraction" {
  command = plan

  variables {
    callback_url_max_body_bytes = 1000.5
  }

  expect_failures = [var.callback_url_max_body_bytes]
}

run "rejects_callback_url_secret_arn_not_a_secret" {
  command = plan

  variables {
    callback_urls           = true
    callback_url_secret_arn = "arn:aws:s3:::bucket/key"
  }

  expect_failures = [var.callback_url_secret_arn]
}

run "rejects_callback_url_secret_arn_without_callback_urls" {
  command = plan

  variables {
    callback_url_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepwell/callbacks-AbCdEf"
  }

  expect_failures = [var.callback_url_secret_arn]
}

run "rejects_callback_url_reserved_concurrency_zero" {
  command = plan

  variables {
    callback_urls                     = true
    callback_url_reserved_concurrency = 0
  }

  expect_failures = [var.callback_url_reserved_concurrency]
}

run "rejects_callback_url_reserved_concurrency_fraction" {
  command = plan

  variables {
    callback_urls                     = true
    callback_url_reserved_concurrency = 2.5
  }

  expect_failures = [var.callback_url_reserved_concurrency]
}

run "rejects_callback_url_reserved_concurrency_negative" {
  command = plan

  variables {
    callback_urls                     = true
    callback_url_reserved_concurrency = -1
  }

  expect_failures = [var.callback_url_reserved_concurrency]
}

run "accepts_callback_url_reserved_concurrency_without_callback_urls" {
  # It has a default now, so it cannot require callback_urls: without them it bounds nothing.
  command = plan

  variables {
    callback_url_reserved_concurrency = 20
  }

  assert {
    condition     = length(module.callback_urls) == 0
    error_message = "Without callback_urls no callbacks function is made, whatever its reserved concurrency."
  }
}

run "accepts_callback_url_limits_and_secret" {
  command = plan

  variables {
    callback_urls               = true
    callback_url_max_body_bytes = 204800
    callback_url_secret_arn     = "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/callback-key"
  }

  assert {
    condition     = module.callback_urls[0].environment.STEPWELL_CALLBACK_MAX_BODY_BYTES == "204800"
    error_message = "200 KB is the largest body limit accepted."
  }
}
