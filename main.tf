# The root only wires the submodules; each can be called on its own from an infra repo.

data "aws_region" "current" {}

locals {
  # The least visibility timeout that keeps a message hidden through six worker attempts' worth of time.
  queue_visibility_timeout_seconds = coalesce(var.queue_visibility_timeout_seconds, 6 * var.timeout)

  # Events definitions emit (stepwell.put_event) carry the emitting context's domain, stamped by the
  # engine, so their source speaks for every domain; on the module's own bus only the worker may put
  # that source (the bus policy), on an existing bus the operator must ensure it and list it here.
  engine_event_source = "stepwell.definitions"
  # The worker's status-change events (stepwell.core.status_events): for users' rules, never taken back by the
  # module's own rule, and on the module's bus put by the worker only.
  status_event_source = "stepwell.executions"
  event_sources       = merge(var.create_event_bus ? { (local.engine_event_source) = ["*"] } : {}, var.event_sources)

  # The workflows a start may name (null: not checked): the registered ones and users' durable functions.
  workflow_names = var.workflow_names == null ? null : concat(var.workflow_names, sort(keys(var.durable_functions)))
  # Where modules/api writes the durable functions' registrations for the worker and the API function: a
  # name from var.name only, so that neither function depends on durable_functions (issue 41: the functions
  # take the API's URL as AWS_ENDPOINT_URL_LAMBDA, which would close a dependency cycle).
  durable_functions_parameter = "/stepwell/${var.name}/durable-functions"
}

module "state" {
  source = "./modules/state"

  name                   = var.name
  tags                   = var.tags
  billing_mode           = var.billing_mode
  read_capacity          = var.read_capacity
  write_capacity         = var.write_capacity
  kms_key_arn            = var.kms_key_arn
  point_in_time_recovery = var.point_in_time_recovery
  deletion_protection    = var.deletion_protection
  subject_index_name     = var.subject_index_name
  index_shards           = var.index_shards
  index_read_shards      = var.index_read_shards
}

module "messaging" {
  source = "./modules/messaging"

  name                          = var.name
  tags                          = var.tags
  kms_key_arn                   = var.kms_key_arn
  create_event_bus              = var.create_event_bus
  event_bus_arn                 = var.event_bus_arn
  event_pattern                 = var.event_pattern
  visibility_timeout_seconds    = local.queue_visibility_timeout_seconds
  message_retention_seconds     = var.queue_message_retention_seconds
  dlq_message_retention_seconds = var.dlq_message_retention_seconds
  max_receive_count             = var.max_receive_count
  sender_role_arns              = [module.scheduler.scheduler_role_arn]
  engine_event_sources          = [local.engine_event_source, local.status_event_source]
  status_event_source           = local.status_event_source
  engine_role_arn               = module.engine.role_arn
}

module "scheduler" {
  source = "./modules/scheduler"

  name                       = var.name
  tags                       = var.tags
  work_queue_arn             = module.messaging.work_queue_arn
  wake_function_arn          = module.engine.wake_function_arn
  dead_letter_queue_arn      = module.messaging.dlq_arn
  event_bus_arn              = module.messaging.event_bus_arn
  kms_key_arn                = var.kms_key_arn
  permissions_boundary_arn   = var.permissions_boundary_arn
  reconcile_interval_minutes = var.reconcile_interval_minutes
  reconcile_schedule_enabled = var.reconcile_schedule_enabled
  long_wait_wakeups          = var.long_wait_wakeups
  schedules                  = var.schedules
}

module "payloads" {
  source = "./modules/payloads"

  name           = var.name
  tags           = var.tags
  bucket_name    = var.payload_bucket_name
  kms_key_arn    = var.kms_key_arn
  retention_days = var.retention_days
  force_destroy  = var.payload_bucket_force_destroy
}

module "engine" {
  source = "./modules/engine"

  name = var.name
  tags = var.tags

  tables = {
    definitions_name   = module.state.definitions_table_name
    definitions_arn    = module.state.definitions_table_arn
    executions_name    = module.state.executions_table_name
    executions_arn     = module.state.executions_table_arn
    operations_name    = module.state.operations_table_name
    operations_arn     = module.state.operations_table_arn
    coordination_name  = module.state.coordination_table_name
    coordination_arn   = module.state.coordination_table_arn
    subject_index_name = module.state.subject_index_name
    index_shards       = module.state.index_shards.write
    index_read_shards  = module.state.index_shards.read
  }
  work_queue = {
    url                        = module.messaging.work_queue_url
    arn                        = module.messaging.work_queue_arn
    visibility_timeout_seconds = local.queue_visibility_timeout_seconds
  }
  dlq = {
    url = module.messaging.dlq_url
    arn = module.messaging.dlq_arn
  }
  event_bus = {
    name = module.messaging.event_bus_name
    arn  = module.messaging.event_bus_arn
  }
  schedule_group_name = module.scheduler.schedule_group_name
  scheduler_role_arn  = module.scheduler.scheduler_role_arn
  payload_bucket = {
    name = module.payloads.bucket_name
    arn  = module.payloads.bucket_arn
  }

  kms_key_arn                     = var.kms_key_arn
  permissions_boundary_arn        = var.permissions_boundary_arn
  action_function_arns            = var.action_function_arns
  invoke_function_arns            = var.invoke_function_arns
  action_event_bus_arns           = var.action_event_bus_arns
  http_allowlist                  = var.http_allowlist
  http_allowed_networks           = var.http_allowed_networks
  runtime                         = var.runtime
  architecture                    = var.architecture
  memory_size                     = var.memory_size
  timeout                         = var.timeout
  reserved_concurrent_executions  = var.reserved_concurrent_executions
  log_retention_days              = var.log_retention_days
  keep_versions                   = var.keep_versions
  status_change_events            = var.status_change_events
  long_wait_wakeups               = var.long_wait_wakeups
  traces                          = var.traces
  log_level                       = var.log_level
  retention_days                  = var.retention_days
  event_extractor                 = var.event_extractor
  event_sources                   = local.event_sources
  subnet_ids                      = var.subnet_ids
  security_group_ids              = var.security_group_ids
  batch_size                      = var.batch_size
  maximum_batching_window_seconds = var.maximum_batching_window_seconds
  maximum_concurrency             = var.maximum_concurrency
  lambda_package_path             = var.lambda_package_path
  workflows_dir                   = var.workflows_dir
  workflow_modules                = var.workflow_modules
  package_build_dir               = var.package_build_dir
  python_executable               = var.python_executable
  callback_url                    = var.callback_urls ? module.callback_urls[0].function_url : null
  durable_functions               = var.durable_functions
  durable_functions_parameter     = var.enable_api ? local.durable_functions_parameter : null

  payload_limits = {
    execution_input_bytes   = var.max_execution_input_bytes
    execution_result_bytes  = var.max_execution_result_bytes
    operation_payload_bytes = var.max_operation_payload_bytes
    callback_result_bytes   = var.max_callback_result_bytes
  }

  # Definitions' CPU budgets (stepwell.features.definitions.budgets): a run's, each expression's.
  definitions_run_cpu_seconds        = var.definitions_run_cpu_seconds
  definitions_expression_cpu_seconds = var.definitions_expression_cpu_seconds
}

# Callback URLs (callback_urls): the callbacks function and its public function URL; it runs from the
# worker's zip and does not depend on the worker, which gets its URL.
module "callback_urls" {
  source = "./modules/callback_urls"
  count  = var.callback_urls ? 1 : 0

  name = var.name
  tags = var.tags
  tables = {
    executions_name   = module.state.executions_table_name
    executions_arn    = module.state.executions_table_arn
    operations_name   = module.state.operations_table_name
    operations_arn    = module.state.operations_table_arn
    coordination_name = module.state.coordination_table_name
    coordination_arn  = module.state.coordination_table_arn
  }
  work_queue = {
    url = module.messaging.work_queue_url
    arn = module.messaging.work_queue_arn
  }
  package                  = module.engine.package
  kms_key_arn              = var.kms_key_arn
  permissions_boundary_arn = var.permissions_boundary_arn
  runtime                  = var.runtime
  architecture             = var.architecture
  log_retention_days       = var.log_retention_days
  log_level                = var.log_level
  retention_days           = var.retention_days
  max_body_bytes           = var.callback_url_max_body_bytes
  secret_arn               = var.callback_url_secret_arn

  reserved_concurrent_executions = var.callback_url_reserved_concurrency
  max_callback_result_bytes      = var.max_callback_result_bytes
  xray_tracing                   = var.traces.xray
}

module "monitoring" {
  source = "./modules/monitoring"

  name                 = var.name
  tags                 = var.tags
  kms_key_arn          = var.kms_key_arn
  alarm_topic_arn      = var.alarm_topic_arn
  alarms               = var.alarms
  dashboard_enabled    = var.dashboard_enabled
  work_queue_name      = module.messaging.work_queue_name
  dlq_name             = module.messaging.dlq_name
  worker_function_name = module.engine.function_name
  event_bus_name       = module.messaging.event_bus_name
  status_event_source  = local.status_event_source
  notify_statuses      = var.status_change_events ? var.notify_statuses : []
}

# The AWS durable execution API (enable_api): the API function behind a function URL with AWS_IAM auth;
# it runs from the worker's zip and does not depend on the worker.
module "api" {
  source = "./modules/api"
  count  = var.enable_api ? 1 : 0

  name       = var.name
  tags       = var.tags
  principals = var.api_principals
  # Principals limited to one tenant; each is one of api_principals too (the variable's validation).
  tenant_principals = var.api_tenant_principals
  tables = {
    executions_name    = module.state.executions_table_name
    executions_arn     = module.state.executions_table_arn
    operations_name    = module.state.operations_table_name
    operations_arn     = module.state.operations_table_arn
    coordination_name  = module.state.coordination_table_name
    coordination_arn   = module.state.coordination_table_arn
    subject_index_name = module.state.subject_index_name
    index_shards       = module.state.index_shards.write
    index_read_shards  = module.state.index_shards.read
  }
  work_queue = {
    url = module.messaging.work_queue_url
    arn = module.messaging.work_queue_arn
  }
  payload_bucket = {
    name = module.payloads.bucket_name
    arn  = module.payloads.bucket_arn
  }
  schedule_group = {
    name = module.scheduler.schedule_group_name
    arn  = module.scheduler.schedule_group_arn
  }
  worker = {
    function_name = module.engine.function_name
    function_arn  = module.engine.function_arn
    alias_name    = module.engine.alias_name
  }
  package = module.engine.package
  # The registered workflows only: the API function adds the durable functions' names from the parameter.
  workflow_names              = var.workflow_names
  durable_functions           = var.durable_functions
  durable_functions_parameter = local.durable_functions_parameter
  payload_limits = {
    execution_input_bytes = var.max_execution_input_bytes
    callback_result_bytes = var.max_callback_result_bytes
  }
  kms_key_arn                    = var.kms_key_arn
  permissions_boundary_arn       = var.permissions_boundary_arn
  runtime                        = var.runtime
  architecture                   = var.architecture
  timeout                        = var.api_timeout
  log_retention_days             = var.log_retention_days
  log_level                      = var.log_level
  retention_days                 = var.retention_days
  reserved_concurrent_executions = var.api_reserved_concurrency
  xray_tracing                   = var.traces.xray
}
