data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_region" "current" {}

locals {
  function_name  = "${var.name}-worker"
  alias_name     = "live"
  log_group_name = "/aws/lambda/${local.function_name}"
  in_vpc         = length(var.subnet_ids) > 0

  base_environment = {
    STEPWELL_NAME               = var.name
    STEPWELL_DEFINITIONS_TABLE  = var.tables.definitions_name
    STEPWELL_EXECUTIONS_TABLE   = var.tables.executions_name
    STEPWELL_OPERATIONS_TABLE   = var.tables.operations_name
    STEPWELL_COORDINATION_TABLE = var.tables.coordination_name
    STEPWELL_SUBJECT_INDEX      = var.tables.subject_index_name
    STEPWELL_INDEX_SHARDS       = tostring(var.tables.index_shards)
    STEPWELL_INDEX_READ_SHARDS  = tostring(coalesce(var.tables.index_read_shards, var.tables.index_shards))
    STEPWELL_WORK_QUEUE_URL     = var.work_queue.url
    STEPWELL_WORK_QUEUE_ARN     = var.work_queue.arn
    STEPWELL_DLQ_URL            = var.dlq.url
    # Dead-letter queue of the one-time wake-up schedules (what Scheduler cannot deliver lands there).
    STEPWELL_DLQ_ARN            = var.dlq.arn
    STEPWELL_EVENT_BUS_NAME     = var.event_bus.name
    STEPWELL_EVENT_BUS_ARN      = var.event_bus.arn
    STEPWELL_SCHEDULE_GROUP     = var.schedule_group_name
    STEPWELL_SCHEDULER_ROLE_ARN = var.scheduler_role_arn
    # One-time wake-up schedules are encrypted with the customer key too, as the reconcile schedule is.
    STEPWELL_KMS_KEY_ARN      = var.kms_key_arn == null ? "" : var.kms_key_arn
    STEPWELL_PAYLOAD_BUCKET   = var.payload_bucket.name
    STEPWELL_RETENTION_DAYS   = tostring(var.retention_days)
    STEPWELL_WORKFLOW_MODULES = join(",", local.workflow_modules)
    STEPWELL_EVENT_EXTRACTOR  = jsonencode(var.event_extractor)
    STEPWELL_EVENT_SOURCES    = jsonencode(var.event_sources)
    STEPWELL_LOG_LEVEL        = var.log_level
    # Where the stepwell.http action may connect (stepwell.features.definitions.outbound); "[]": nowhere.
    STEPWELL_HTTP_ALLOWLIST        = jsonencode(var.http_allowlist)
    STEPWELL_HTTP_ALLOWED_NETWORKS = jsonencode(var.http_allowed_networks)
    # CPU budgets of definitions' runs and expressions (stepwell.features.definitions.budgets).
    STEPWELL_DEFINITIONS_RUN_CPU_SECONDS        = tostring(var.definitions_run_cpu_seconds)
    STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS = tostring(var.definitions_expression_cpu_seconds)
    # Lambda functions context.invoke may call (stepwell.core.registry.Registry.allow_lambda_targets); "[]": none.
    STEPWELL_INVOKE_FUNCTIONS = jsonencode(var.invoke_function_arns)
    # The worker's own name and alias: it forwards a message for an execution pinned to another
    # published version to that version, and the reconciler prunes idle versions beyond the newest N.
    STEPWELL_WORKER_FUNCTION_NAME = local.function_name
    STEPWELL_WORKER_ALIAS         = local.alias_name
    # Long wake-ups invoke the alias from Scheduler directly: no SQS send, receive and delete per resume.
    STEPWELL_WAKE_FUNCTION_ARN = local.wake_function_arn
    STEPWELL_KEEP_VERSIONS     = tostring(var.keep_versions)
    # A killed first run's message comes back after this: the reconciler's pruning outwaits it.
    STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS = tostring(var.work_queue.visibility_timeout_seconds)
    # Payload limits (stepwell.limits): what a start, a checkpoint, a result and a callback may carry.
    STEPWELL_MAX_EXECUTION_INPUT_BYTES   = tostring(var.payload_limits.execution_input_bytes)
    STEPWELL_MAX_EXECUTION_RESULT_BYTES  = tostring(var.payload_limits.execution_result_bytes)
    STEPWELL_MAX_OPERATION_PAYLOAD_BYTES = tostring(var.payload_limits.operation_payload_bytes)
    STEPWELL_MAX_CALLBACK_RESULT_BYTES   = tostring(var.payload_limits.callback_result_bytes)
    # "true": every execution status change goes on the bus (stepwell.core.status_events).
    STEPWELL_STATUS_EVENTS = tostring(var.status_change_events)
  }
  # The base of stepwell.callback_url() (the callbacks function's URL), only when callback URLs are on.
  # The durable functions reach the worker through the SSM parameter modules/api writes, by its name only:
  # the worker's environment (and so the worker and the API's URL) must not depend on durable_functions,
  # whose functions take that URL as their AWS_ENDPOINT_URL_LAMBDA (a dependency cycle otherwise).
  environment = merge(
    local.base_environment,
    var.callback_url == null ? {} : { STEPWELL_CALLBACK_URL = var.callback_url },
    # Set only when not the default, so a deployment that keeps per-wait schedules sees no change.
    var.long_wait_wakeups == "schedules" ? {} : { STEPWELL_LONG_WAIT_WAKEUPS = var.long_wait_wakeups },
    var.durable_functions_parameter == null ? {} : { STEPWELL_DURABLE_FUNCTIONS_PARAMETER = var.durable_functions_parameter },
    # Trace export (stepwell.config.span_export_from_env): where the OTLP endpoint is kept, by name only.
    var.traces.otlp_secret_arn == null ? {} : { STEPWELL_OTLP_SECRET_ARN = var.traces.otlp_secret_arn },
    var.traces.otlp_parameter == null ? {} : { STEPWELL_OTLP_PARAMETER = var.traces.otlp_parameter },
    var.traces.worker_spans ? { STEPWELL_WORKER_SPANS = "true" } : {},
  )
}

resource "aws_cloudwatch_log_group" "worker" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days variable; a year is the operator's choice, not a default.
  #checkov:skip=CKV_AWS_158:Logs use the customer key when kms_key_arn is given; CloudWatch's own encryption otherwise.
  name              = local.log_group_name
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = var.tags
}

resource "aws_lambda_function" "worker" {
  #checkov:skip=CKV_AWS_50:X-Ray active tracing is the traces.xray variable (off by default: it needs xray:PutTraceSegments on "*").
  #checkov:skip=CKV_AWS_116:The worker is invoked by an SQS mapping, whose failed messages go to the queue's DLQ; an async DLQ would never be used.
  #checkov:skip=CKV_AWS_117:VPC placement is optional (subnet_ids/security_group_ids); the engine only calls AWS APIs.
  #checkov:skip=CKV_AWS_272:Code signing needs a signing profile the module cannot assume the account has.
  #checkov:skip=CKV_AWS_173:Environment holds resource names only, no secrets; kms_key_arn encrypts it when given.
  #checkov:skip=CKV_AWS_115:Reserved concurrency is the reserved_concurrent_executions variable; the SQS mapping's maximum_concurrency also bounds it.
  function_name                  = local.function_name
  description                    = "Stepwell worker: runs durable workflow executions from the work queue."
  role                           = aws_iam_role.worker.arn
  handler                        = "stepwell.wiring.entry.handler"
  runtime                        = var.runtime
  architectures                  = [var.architecture]
  memory_size                    = var.memory_size
  timeout                        = var.timeout
  reserved_concurrent_executions = var.reserved_concurrent_executions
  kms_key_arn                    = var.kms_key_arn
  filename                       = local.package_path
  source_code_hash               = local.package_code_hash
  # Every change publishes a version and leaves the older ones in place: a running execution stays on
  # the version it started on; the reconciler deletes a version once none is pinned to it.
  publish = true

  environment {
    variables = local.environment
  }

  # Lambda's own segments of each invocation in X-Ray (traces.xray); PassThrough, Lambda's default, otherwise.
  dynamic "tracing_config" {
    for_each = var.traces.xray ? [1] : []
    content {
      mode = "Active"
    }
  }

  dynamic "vpc_config" {
    for_each = local.in_vpc ? [1] : []
    content {
      subnet_ids         = var.subnet_ids
      security_group_ids = var.security_group_ids
    }
  }

  tags = var.tags

  # The log group must exist first so Lambda never creates an unmanaged one without retention.
  depends_on = [
    terraform_data.package,
    aws_cloudwatch_log_group.worker,
    aws_iam_role_policy.worker,
  ]

  lifecycle {
    precondition {
      condition     = length(var.subnet_ids) > 0 == length(var.security_group_ids) > 0
      error_message = "subnet_ids and security_group_ids go together: give both for a worker in a VPC, or neither."
    }
  }
}

# New work reaches the newest version through the alias; messages for executions pinned to an older
# version are forwarded to that version by the worker (docs/engine.md, Code versions).
resource "aws_lambda_alias" "live" {
  name             = local.alias_name
  description      = "Stepwell worker: the newest published version, which the work queue's mapping invokes."
  function_name    = aws_lambda_function.worker.function_name
  function_version = aws_lambda_function.worker.version
}

# The worker sends its executions' next runs to its own work queue (a continuation, a retry's delay, a
# short wait), so one execution's messages form a chain of worker invocations. Lambda's recursive loop
# detection (on by default) stops such a chain after 16 invocations and moves its message to the DLQ:
# an execution with 16 short waits in a row would stop. The loop is the design; its guard rails are the
# engine's own (an execution's log, timeouts and StopExecution; definitions' depth and chain budget).
resource "aws_lambda_function_recursion_config" "worker" {
  function_name  = aws_lambda_function.worker.function_name
  recursive_loop = "Allow"
}

# Scheduler invokes the alias asynchronously for the engine's long wake-ups (stepwell.aws.timers). A run that
# fails there is retried by Lambda twice, then its event goes to the work queue as an on-failure
# destination record (unwrapped by stepwell.wiring.entry), where SQS's retries and the alarmed DLQ take over.
resource "aws_lambda_function_event_invoke_config" "live" {
  function_name                = aws_lambda_function.worker.function_name
  qualifier                    = aws_lambda_alias.live.name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 21600

  destination_config {
    on_failure {
      destination = var.work_queue.arn
    }
  }
}

resource "aws_lambda_event_source_mapping" "work_queue" {
  event_source_arn                   = var.work_queue.arn
  function_name                      = aws_lambda_alias.live.arn
  batch_size                         = var.batch_size
  maximum_batching_window_in_seconds = var.maximum_batching_window_seconds
  function_response_types            = ["ReportBatchItemFailures"]

  dynamic "scaling_config" {
    for_each = var.maximum_concurrency == null ? [] : [var.maximum_concurrency]
    content {
      maximum_concurrency = scaling_config.value
    }
  }

  tags = var.tags

  lifecycle {
    precondition {
      condition     = var.work_queue.visibility_timeout_seconds >= 6 * var.timeout
      error_message = "The work queue's visibility timeout (${var.work_queue.visibility_timeout_seconds} s) must be at least six times the worker's timeout (6 x ${var.timeout} s = ${6 * var.timeout} s)."
    }
    precondition {
      condition     = var.batch_size <= 10 || var.maximum_batching_window_seconds > 0
      error_message = "batch_size ${var.batch_size} > 10 needs maximum_batching_window_seconds > 0 (SQS mappings allow more than 10 messages only with a batching window)."
    }
  }
}

# Users' durable functions (durable_functions): the worker invokes each asynchronously, and Lambda sends
# the invocation's result, success or failure, to the work queue as a destination record, which wakes
# the execution. No Lambda retries: the engine decides what a failed run means. Records expire after 6
# hours undelivered, as the worker's own (the execution's timeouts and the reconciler cover the rest).
# The function's execution role sends the records (durable_function_policy_json grants it).
resource "aws_lambda_function_event_invoke_config" "durable_functions" {
  for_each = var.durable_functions

  function_name                = each.value.function_arn
  qualifier                    = coalesce(each.value.qualifier, "$LATEST")
  maximum_retry_attempts       = 0
  maximum_event_age_in_seconds = 21600

  destination_config {
    on_success {
      destination = var.work_queue.arn
    }
    on_failure {
      destination = var.work_queue.arn
    }
  }

  lifecycle {
    precondition {
      # The module sets this function's invoke config with the deployment's provider, and its destination is
      # the deployment's queue: a function elsewhere would fail at apply or send its results nowhere.
      condition     = split(":", each.value.function_arn)[3] == local.region && split(":", each.value.function_arn)[4] == local.account_id
      error_message = "durable_functions[\"${each.key}\"].function_arn must name a function in this deployment's region and account (${local.region}, ${local.account_id}); got ${each.value.function_arn}."
    }
  }
}
