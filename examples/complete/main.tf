# Every knob the module has, with workflow code packaged from ./workflows.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

variable "name" {
  description = "Name of this Stepwell deployment."
  type        = string
  default     = "stepwell-demo"
}

# A plain Lambda function (functions/greeter.py) the workflows may call with context.invoke by ARN.
locals {
  greeter_name    = "${var.name}-greeter"
  greeter_source  = "${path.module}/functions/greeter.py"
  greeter_package = "${path.module}/.terraform/stepwell-build/${local.greeter_name}.zip"
}

# Zipped by Python's standard library from a local-exec, as the module builds the worker: no archive
# provider. Plan never reads the zip: source_code_hash is the source's hash, which triggers the build.
resource "terraform_data" "greeter_package" {
  triggers_replace = filesha256(local.greeter_source)

  provisioner "local-exec" {
    interpreter = [
      "python3", "-c",
      "import os, sys, zipfile\nos.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as bundle: bundle.write(sys.argv[2], 'greeter.py')",
      local.greeter_package,
    ]
    command = local.greeter_source
  }
}

resource "aws_iam_role" "greeter" {
  name        = local.greeter_name
  description = "The example's plain Lambda function: writes its own logs, nothing else."
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { Service = "lambda.amazonaws.com" }, Action = "sts:AssumeRole" }]
  })
}

resource "aws_cloudwatch_log_group" "greeter" {
  name              = "/aws/lambda/${local.greeter_name}"
  retention_in_days = 14
}

resource "aws_iam_role_policy" "greeter_logs" {
  name = "logs"
  role = aws_iam_role.greeter.id
  policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Action = ["logs:CreateLogStream", "logs:PutLogEvents"], Resource = "${aws_cloudwatch_log_group.greeter.arn}:*" }]
  })
}

resource "aws_lambda_function" "greeter" {
  function_name    = local.greeter_name
  description      = "Stepwell example: a plain function workflows call with context.invoke."
  role             = aws_iam_role.greeter.arn
  handler          = "greeter.handler"
  runtime          = "python3.13"
  architectures    = ["arm64"]
  timeout          = 10
  filename         = local.greeter_package
  source_code_hash = filebase64sha256(local.greeter_source)

  depends_on = [terraform_data.greeter_package, aws_cloudwatch_log_group.greeter, aws_iam_role_policy.greeter_logs]
}

# Who uses the AWS durable execution API (enable_api below): an operator role (reads, starts and stops
# executions, sends callbacks), a reader role (reads only) and a tenant's role, acme (reads, starts and
# stops only executions of tenant acme: api_tenant_principals), each assumable by the account's principals
# their own policies allow. Each also carries the API's caller policy (module.stepwell.api_caller_policy_json).
data "aws_caller_identity" "current" {}

locals {
  # Role key -> who it is (in its description).
  api_callers = {
    operator = "operator"
    reader   = "reader"
    acme     = "tenant acme's operator (only acme's executions)"
  }
}

resource "aws_iam_role" "api_callers" {
  for_each    = local.api_callers
  name        = "${var.name}-api-${each.key}"
  description = "The example's ${each.value} of the durable execution API (boto3's lambda client, the AWS CLI)."
  assume_role_policy = jsonencode({
    Version   = "2012-10-17"
    Statement = [{ Effect = "Allow", Principal = { AWS = "arn:aws:iam::${data.aws_caller_identity.current.account_id}:root" }, Action = "sts:AssumeRole" }]
  })
}

resource "aws_iam_role_policy" "api_callers" {
  for_each = aws_iam_role.api_callers
  name     = "stepwell-api"
  role     = each.value.id
  policy   = module.stepwell.api_caller_policy_json
}

module "stepwell" {
  source = "../.."

  name = var.name
  tags = {
    project = "stepwell"
    example = "complete"
  }

  # State
  billing_mode           = "PAY_PER_REQUEST"
  point_in_time_recovery = true
  deletion_protection    = false
  subject_index_name     = "domain-subjectId-index"
  retention_days         = 30

  # Messaging: the engine's own bus; the rule takes every event on it.
  create_event_bus                = true
  queue_message_retention_seconds = 345600
  dlq_message_retention_seconds   = 1209600
  max_receive_count               = 5

  # Tenants: the domains each producer's events may speak for (anything else is rejected). Grant each
  # producer events:PutEvents only for its own source (condition events:source).
  event_sources = {
    "com.example.acme"   = ["acme-*"]
    "com.example.globex" = ["globex-*"]
  }

  # Scheduler
  reconcile_interval_minutes = 5

  # Workflow schedules: orders.confirm each morning at 06:00 Dublin time with a fixed input, skipped while
  # the previous one still runs. Disabled here, so nothing fires until an operator resumes it
  # (`stepwell schedules resume morning-confirm`; an apply disables it again).
  schedules = {
    morning-confirm = {
      workflow   = "orders.confirm"
      expression = "cron(0 6 * * ? *)"
      timezone   = "Europe/Dublin"
      input      = jsonencode({ order_id = "scheduled", lines = [{ quantity = 2, unit_price_cents = 150 }] })
      enabled    = false
      overlap    = "SKIP"
    }
  }

  # Payloads: destroyable with objects in it, for a throwaway example.
  payload_bucket_force_destroy = true

  # Worker
  runtime                          = "python3.13"
  architecture                     = "arm64"
  memory_size                      = 512
  timeout                          = 60
  queue_visibility_timeout_seconds = 360
  log_retention_days               = 14
  log_level                        = "INFO"
  batch_size                       = 10
  maximum_batching_window_seconds  = 1
  workflows_dir                    = "${path.module}/workflows"

  # Lambda functions context.invoke may call besides the registered workflows (unqualified ARNs; their
  # versions and aliases are allowed with them).
  invoke_function_arns = [aws_lambda_function.greeter.arn]

  # Callback URLs: a public function URL through which a third party (a payment provider's webhook, an
  # approval link) completes a callback without AWS credentials; stepwell.callback_url(id) in a workflow.
  # In production give callback_url_secret_arn too, so that requests must be signed (HMAC-SHA256).
  # A reserved (and capping) concurrency keeps a flood of URL requests from starving the worker.
  callback_urls                     = true
  callback_url_max_body_bytes       = 65536
  callback_url_reserved_concurrency = 20

  # The AWS durable execution API: boto3.client("lambda", endpoint_url=api_url) and `aws lambda
  # --endpoint-url` against this deployment (a function URL with AWS_IAM auth). Who may do what, per class
  # of operation; RequestResponse invokes wait up to api_timeout for the execution's end. A principal
  # listed under a tenant in api_tenant_principals reaches only that tenant's executions (Invoke's
  # TenantId), in the classes api_principals gives it; the others reach every tenant's.
  enable_api = true
  api_principals = {
    read = [
      aws_iam_role.api_callers["operator"].arn,
      aws_iam_role.api_callers["reader"].arn,
      aws_iam_role.api_callers["acme"].arn,
    ]
    operate   = [aws_iam_role.api_callers["operator"].arn, aws_iam_role.api_callers["acme"].arn]
    callbacks = [aws_iam_role.api_callers["operator"].arn]
  }
  api_tenant_principals = {
    acme = [aws_iam_role.api_callers["acme"].arn]
  }
  api_timeout              = 60
  api_reserved_concurrency = 10

  # Monitoring: every alarm, and every failed or timed-out execution (its status-change event), notifies
  # the module's topic {name}-alarms (subscribe to it: email, chat, pager); the dashboard {name} graphs
  # the engine's metrics per workflow.
  dashboard_enabled    = true
  alarm_topic_arn      = null
  status_change_events = true
  notify_statuses      = ["FAILED", "TIMED_OUT"]
  alarms = {
    dlq_messages       = { threshold = 0, period_seconds = 60 }
    oldest_message_age = { threshold = 900, period_seconds = 300, evaluation_periods = 3 }
    worker_errors      = { threshold = 0 }
    worker_throttles   = { threshold = 0 }
    failed_executions  = { threshold = 0 }
    stalled_executions = { threshold = 0, period_seconds = 900 }
    wake_up_lag        = { threshold = 300000, evaluation_periods = 3, datapoints_to_alarm = 2 }
  }
}

output "client_config" {
  description = "What the Stepwell client and CLI read to reach this deployment."
  value       = module.stepwell.client_config
}

output "callback_url" {
  description = "Base URL of the callback URLs (stepwell.callback_url() builds on it)."
  value       = module.stepwell.callback_url
}

output "api_url" {
  description = "The AWS durable execution API's URL (boto3's lambda client's endpoint_url)."
  value       = module.stepwell.api_url
}

output "api_function_name" {
  description = "Name of the Lambda behind the API's URL."
  value       = module.stepwell.api_function_name
}

output "api_caller_role_arns" {
  description = "The roles that may use the API, by what they may do (operator, reader, acme: tenant acme's only)."
  value       = { for key, role in aws_iam_role.api_callers : key => role.arn }
}

output "callback_function_name" {
  description = "Name of the Lambda behind the callback URLs."
  value       = module.stepwell.callback_function_name
}

output "worker_function_name" {
  description = "Name of the worker Lambda."
  value       = module.stepwell.worker_function_name
}

output "event_rule_name" {
  description = "Name of the rule sending bus events to the work queue."
  value       = module.stepwell.event_rule_name
}

output "workflow_schedule_names" {
  description = "Scheduler names of the workflow schedules by key."
  value       = module.stepwell.workflow_schedule_names
}

output "reconcile_schedule_name" {
  description = "Name of the recurring reconcile schedule."
  value       = module.stepwell.reconcile_schedule_name
}

output "workflow_modules" {
  description = "Modules the worker imports at start."
  value       = module.stepwell.workflow_modules
}

output "worker_function_arn" {
  description = "ARN of the worker Lambda (unqualified)."
  value       = module.stepwell.worker_function_arn
}

output "worker_version" {
  description = "The worker's newest published version, the one new executions start on."
  value       = module.stepwell.worker_version
}

output "alarm_topic_arn" {
  description = "SNS topic the alarms notify."
  value       = module.stepwell.alarm_topic_arn
}

output "alarm_names" {
  description = "Names of the alarms by key."
  value       = module.stepwell.alarm_names
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard."
  value       = module.stepwell.dashboard_name
}

output "status_notifications_rule_name" {
  description = "Name of the rule sending failed and timed-out executions' status-change events to the alarm topic."
  value       = module.stepwell.status_notifications_rule_name
}

output "worker_alias_arn" {
  description = "ARN of the worker's alias (live), which the work queue's mapping invokes."
  value       = module.stepwell.worker_alias_arn
}

output "greeter_function_arn" {
  description = "ARN of the example's plain Lambda function (listed in invoke_function_arns)."
  value       = aws_lambda_function.greeter.arn
}
