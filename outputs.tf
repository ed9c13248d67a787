output "client_config" {
  description = "Everything the Stepwell Python client and CLI need to reach this deployment (keys in docs/architecture.md)."
  value = try({
    region               = data.aws_region.current.name
    name                 = var.name
    definitions_table    = module.state.definitions_table_name
    executions_table     = module.state.executions_table_name
    operations_table     = module.state.operations_table_name
    coordination_table   = module.state.coordination_table_name
    subject_index_name   = module.state.subject_index_name
    index_shards         = module.state.index_shards.write
    index_read_shards    = module.state.index_shards.read
    work_queue_url       = module.messaging.work_queue_url
    work_queue_arn       = module.messaging.work_queue_arn
    dlq_url              = module.messaging.dlq_url
    dlq_arn              = module.messaging.dlq_arn
    event_bus_name       = module.messaging.event_bus_name
    event_bus_arn        = module.messaging.event_bus_arn
    schedule_group_name  = module.scheduler.schedule_group_name
    scheduler_role_arn   = module.scheduler.scheduler_role_arn
    long_wait_wakeups    = var.long_wait_wakeups
    kms_key_arn          = var.kms_key_arn
    payload_bucket       = module.payloads.bucket_name
    worker_function_name = module.engine.function_name
    worker_alias         = module.engine.alias_name
    wake_function_arn    = module.engine.wake_function_arn
    # A cap on the queue's mapping must hold for starts too: then they go through the queue.
    direct_wake_ups = var.maximum_concurrency == null
    callback_url    = var.callback_urls ? module.callback_urls[0].function_url : null
    # Payload limits: the client and CLI refuse what the deployment would, before sending it.
    max_execution_input_bytes   = var.max_execution_input_bytes
    max_execution_result_bytes  = var.max_execution_result_bytes
    max_operation_payload_bytes = var.max_operation_payload_bytes
    max_callback_result_bytes   = var.max_callback_result_bytes
    # The workflows a start may name (null: not checked); definitions' contexts start the interpreter.
    workflows = local.workflow_names
  }, null)
}

output "definitions_table_name" {
  description = "Name of the definitions table."
  value       = try(module.state.definitions_table_name, null)
}

output "definitions_table_arn" {
  description = "ARN of the definitions table."
  value       = try(module.state.definitions_table_arn, null)
}

output "executions_table_name" {
  description = "Name of the executions table."
  value       = try(module.state.executions_table_name, null)
}

output "executions_table_arn" {
  description = "ARN of the executions table."
  value       = try(module.state.executions_table_arn, null)
}

output "operations_table_name" {
  description = "Name of the operations table."
  value       = try(module.state.operations_table_name, null)
}

output "operations_table_arn" {
  description = "ARN of the operations table."
  value       = try(module.state.operations_table_arn, null)
}

output "coordination_table_name" {
  description = "Name of the coordination table."
  value       = try(module.state.coordination_table_name, null)
}

output "coordination_table_arn" {
  description = "ARN of the coordination table."
  value       = try(module.state.coordination_table_arn, null)
}

output "subject_index_name" {
  description = "Name of the executions (domain, subjectId) GSI."
  value       = try(module.state.subject_index_name, null)
}

output "work_queue_name" {
  description = "Name of the work queue."
  value       = try(module.messaging.work_queue_name, null)
}

output "work_queue_url" {
  description = "URL of the work queue."
  value       = try(module.messaging.work_queue_url, null)
}

output "work_queue_arn" {
  description = "ARN of the work queue."
  value       = try(module.messaging.work_queue_arn, null)
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = try(module.messaging.dlq_name, null)
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = try(module.messaging.dlq_url, null)
}

output "dlq_arn" {
  description = "ARN of the dead-letter queue."
  value       = try(module.messaging.dlq_arn, null)
}

output "event_bus_name" {
  description = "Name of the event bus (created or existing)."
  value       = try(module.messaging.event_bus_name, null)
}

output "event_bus_arn" {
  description = "ARN of the event bus (created or existing)."
  value       = try(module.messaging.event_bus_arn, null)
}

output "event_rule_name" {
  description = "Name of the rule sending bus events to the work queue."
  value       = try(module.messaging.event_rule_name, null)
}

output "event_rule_arn" {
  description = "ARN of the rule sending bus events to the work queue."
  value       = try(module.messaging.event_rule_arn, null)
}

output "schedule_group_name" {
  description = "Name of the schedule group of the engine's schedules."
  value       = try(module.scheduler.schedule_group_name, null)
}

output "schedule_group_arn" {
  description = "ARN of the schedule group."
  value       = try(module.scheduler.schedule_group_arn, null)
}

output "scheduler_role_name" {
  description = "Name of the role schedules assume to reach the work queue and bus."
  value       = try(module.scheduler.scheduler_role_name, null)
}

output "scheduler_role_arn" {
  description = "ARN of the role schedules assume to reach the work queue and bus."
  value       = try(module.scheduler.scheduler_role_arn, null)
}

output "reconcile_schedule_name" {
  description = "Name of the recurring reconcile schedule."
  value       = try(module.scheduler.reconcile_schedule_name, null)
}

output "reconcile_schedule_arn" {
  description = "ARN of the recurring reconcile schedule."
  value       = try(module.scheduler.reconcile_schedule_arn, null)
}

output "workflow_schedule_names" {
  description = "EventBridge Scheduler names of the `schedules` by key (`start.<key>`, in the schedule group)."
  value       = try(module.scheduler.workflow_schedule_names, {})
}

output "payload_bucket_name" {
  description = "Name of the payload bucket."
  value       = try(module.payloads.bucket_name, null)
}

output "payload_bucket_arn" {
  description = "ARN of the payload bucket."
  value       = try(module.payloads.bucket_arn, null)
}

output "worker_function_name" {
  description = "Name of the worker Lambda."
  value       = try(module.engine.function_name, null)
}

output "worker_function_arn" {
  description = "ARN of the worker Lambda."
  value       = try(module.engine.function_arn, null)
}

output "worker_version" {
  description = "The worker's newest published version, the one new executions start on."
  value       = try(module.engine.function_version, null)
}

output "worker_alias_name" {
  description = "Name of the worker's alias (live), which the work queue's mapping invokes."
  value       = try(module.engine.alias_name, null)
}

output "worker_alias_arn" {
  description = "ARN of the worker's alias (live), which the work queue's mapping invokes."
  value       = try(module.engine.alias_arn, null)
}

output "worker_role_name" {
  description = "Name of the worker's IAM role."
  value       = try(module.engine.role_name, null)
}

output "worker_role_arn" {
  description = "ARN of the worker's IAM role."
  value       = try(module.engine.role_arn, null)
}

output "worker_log_group_name" {
  description = "Name of the worker's log group."
  value       = try(module.engine.log_group_name, null)
}

output "worker_event_source_mapping_uuid" {
  description = "UUID of the worker's SQS event source mapping."
  value       = try(module.engine.event_source_mapping_uuid, null)
}

output "worker_package_path" {
  description = "Path of the worker zip (built or given)."
  value       = try(module.engine.package_path, null)
}

output "workflow_modules" {
  description = "Modules the engine imports at start."
  value       = try(module.engine.workflow_modules, null)
}

output "event_sources" {
  description = "The event sources the worker accepts domain events from and the domains each may speak for (event_sources, plus the engine's own source when the module created the bus)."
  value       = local.event_sources
}

output "alarm_topic_arn" {
  description = "SNS topic the alarms notify (created or alarm_topic_arn); null when no alarm is enabled and none was given."
  value       = try(module.monitoring.alarm_topic_arn, null)
}

output "alarm_names" {
  description = "Names of the enabled alarms by key (dlq_messages, oldest_message_age, worker_errors, worker_throttles, failed_executions, stalled_executions, wake_up_lag)."
  value       = try(module.monitoring.alarm_names, null)
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard; null when dashboard_enabled is false."
  value       = try(module.monitoring.dashboard_name, null)
}

output "status_notifications_rule_name" {
  description = "Name of the EventBridge rule sending status-change events of notify_statuses to the alarm topic; null when none."
  value       = try(module.monitoring.status_notifications_rule_name, null)
}

output "callback_url" {
  description = "Base URL of the callback URLs (the callbacks function's URL; stepwell.callback_url() appends /callbacks/<id>/<outcome>); null when callback_urls is false."
  value       = var.callback_urls ? try(module.callback_urls[0].function_url, null) : null
}

output "callback_function_name" {
  description = "Name of the callbacks Lambda behind the callback URLs; null when callback_urls is false."
  value       = var.callback_urls ? try(module.callback_urls[0].function_name, null) : null
}

output "api_url" {
  description = "The AWS durable execution API's URL (enable_api): the endpoint_url of boto3.client(\"lambda\", ...), `aws lambda ... --endpoint-url`, or AWS_ENDPOINT_URL_LAMBDA; null when enable_api is false."
  value       = var.enable_api ? try(module.api[0].function_url, null) : null
}

output "api_function_name" {
  description = "Name of the Lambda behind the API's function URL; null when enable_api is false."
  value       = var.enable_api ? try(module.api[0].function_name, null) : null
}

output "api_caller_policy_json" {
  description = "The IAM policy (JSON) each api_principals role or user attaches to call the API: lambda:InvokeFunctionUrl on the API function for AWS_IAM URLs, and lambda:InvokeFunction only through its URL; null when enable_api is false."
  value       = var.enable_api ? try(module.api[0].caller_policy_json, null) : null
}

output "durable_functions_parameter" {
  description = "The SSM parameter (name) in which the module keeps durable_functions' registrations, each function's timeout and execution role, for the worker and the API function, which read it at cold start (their environments carry only this name: a function that takes durable_functions_endpoint must not be a dependency of the API's URL); null when enable_api is false."
  value       = var.enable_api ? local.durable_functions_parameter : null
}

output "durable_functions_endpoint" {
  description = "Where durable_functions' SDK calls Lambda's durable execution API: the API's URL (enable_api), for the function's AWS_ENDPOINT_URL_LAMBDA; null when enable_api is false."
  value       = var.enable_api ? try(module.api[0].function_url, null) : null
}

output "durable_function_policy_json" {
  description = "The IAM policy (JSON) each durable_functions function's execution role attaches: lambda:InvokeFunctionUrl on the API function for AWS_IAM URLs and lambda:InvokeFunction only through its URL (its SDK's checkpoints), sqs:SendMessage on the work queue (its results, sent by Lambda as destination records with the function's role) and, with kms_key_arn, the key for that queue; null when enable_api is false."
  value = var.enable_api ? try(jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      # An API caller's grants (the URL with its condition keys), as api_caller_policy_json's.
      jsondecode(module.api[0].caller_policy_json).Statement,
      [
        {
          # The on-success and on-failure destinations (the engine's event invoke config) send with the
          # function's execution role.
          Sid      = "ResultsToTheWorkQueue"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = module.messaging.work_queue_arn
        },
      ],
      var.kms_key_arn == null ? [] : [{
        # The work queue is encrypted with the customer key: sending needs a data key.
        Sid      = "WorkQueueKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = var.kms_key_arn
      }],
    )
  }), null) : null
}
