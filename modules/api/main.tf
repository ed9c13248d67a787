# Lambda's durable execution API: a small function behind a Lambda function URL with AWS_IAM auth that
# answers in the wire format of botocore's lambda model (lambda_src/stepwell/features/lambda_api), so
# boto3's lambda client, the AWS CLI and any SDK client work against the deployment with endpoint_url.
# A function URL rather than API Gateway: callers sign with SigV4 for service lambda as for Lambda itself,
# no extra service, resources or per-request cost, and both local backends serve function URLs. Like the
# callbacks function, it runs from the worker's zip and never depends on the worker.

# Each durable function's configuration, for its execution role (the qualifier's: a version keeps the role it
# was published with).
data "aws_lambda_function" "durable" {
  for_each = var.durable_functions

  function_name = each.value.function_arn
  # $LATEST named: the provider's read of an unqualified function fails on moto ("latest version: empty").
  qualifier = coalesce(each.value.qualifier, "$LATEST")
}

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

data "aws_region" "current" {}

locals {
  function_name = "${var.name}-api"

  # Every principal that may call the URL at all, keyed by class and position: the keys are known at plan
  # time even when the ARNs are not (roles created in the same apply). The handler then checks each
  # request's caller against the class of its operation, and a tenant_principals entry's against its
  # tenant too; those are class principals as well (a validation), so this lets them through.
  principals = merge([
    for class in ["read", "operate", "callbacks"] : {
      for index, principal in var.principals[class] : "${class}-${index}" => principal
    }
  ]...)

  # The durable functions' registrations as the worker and this function read them from the parameter: the
  # function, its qualifier, its real timeout (the run's lease outlasts it) and its execution role (the
  # qualifier's), with which its SDK calls the data plane (durable_function_policy_json is attached to it).
  durable_functions_document = jsonencode({
    functions = {
      for name, function in var.durable_functions : name => {
        function_arn    = function.function_arn
        qualifier       = function.qualifier
        timeout_seconds = data.aws_lambda_function.durable[name].timeout
        role_arn        = data.aws_lambda_function.durable[name].role
      }
    }
  })
  parameter_name = coalesce(var.durable_functions_parameter, "/stepwell/${var.name}/durable-functions")
  parameter_arn  = "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${local.parameter_name}"

  schedules_arn = "${replace(var.schedule_group.arn, ":schedule-group/", ":schedule/")}/*"

  environment = merge(
    {
      STEPWELL_NAME                      = var.name
      STEPWELL_EXECUTIONS_TABLE          = var.tables.executions_name
      STEPWELL_OPERATIONS_TABLE          = var.tables.operations_name
      STEPWELL_COORDINATION_TABLE        = var.tables.coordination_name
      STEPWELL_SUBJECT_INDEX             = var.tables.subject_index_name
      STEPWELL_INDEX_SHARDS              = tostring(var.tables.index_shards)
      STEPWELL_INDEX_READ_SHARDS         = tostring(coalesce(var.tables.index_read_shards, var.tables.index_shards))
      STEPWELL_WORK_QUEUE_URL            = var.work_queue.url
      STEPWELL_WORK_QUEUE_ARN            = var.work_queue.arn
      STEPWELL_PAYLOAD_BUCKET            = var.payload_bucket.name
      STEPWELL_SCHEDULE_GROUP            = var.schedule_group.name
      STEPWELL_WORKER_FUNCTION_NAME      = var.worker.function_name
      STEPWELL_WORKER_ALIAS              = var.worker.alias_name
      STEPWELL_RETENTION_DAYS            = tostring(var.retention_days)
      STEPWELL_LOG_LEVEL                 = var.log_level
      STEPWELL_MAX_EXECUTION_INPUT_BYTES = tostring(var.payload_limits.execution_input_bytes)
      STEPWELL_MAX_CALLBACK_RESULT_BYTES = tostring(var.payload_limits.callback_result_bytes)
      STEPWELL_API_READ_PRINCIPALS       = jsonencode(var.principals.read)
      STEPWELL_API_OPERATE_PRINCIPALS    = jsonencode(var.principals.operate)
      STEPWELL_API_CALLBACK_PRINCIPALS   = jsonencode(var.principals.callbacks)
      # RequestResponse invokes wait for the execution's end at most this long (less the time to answer).
      STEPWELL_API_MAX_WAIT_SECONDS = tostring(var.timeout)
    },
    # The module's own workflows; the durable functions' names join them from the parameter.
    var.workflow_names == null ? {} : { STEPWELL_API_WORKFLOWS = jsonencode(var.workflow_names) },
    # {"<tenant>": ["<principal>", ...]}: these principals act only on that tenant's executions.
    length(var.tenant_principals) == 0 ? {} : { STEPWELL_API_TENANT_PRINCIPALS = jsonencode(var.tenant_principals) },
    # Users' durable functions and their execution roles (the only callers of the data plane), read from
    # the parameter at cold start: by name only, so that the function and its URL, which those functions
    # take as AWS_ENDPOINT_URL_LAMBDA, do not depend on them (a dependency cycle otherwise).
    { STEPWELL_DURABLE_FUNCTIONS_PARAMETER = local.parameter_name },
    var.kms_key_arn == null ? {} : { STEPWELL_KMS_KEY_ARN = var.kms_key_arn },
  )

  # The role's own grants; modules/function_url adds writing its logs and, with kms_key_arn, the key.
  statements = [
    {
      # Describe, list (the workflow index, then the records) and the records a start or a stop reads.
      Sid      = "ReadExecutions"
      Effect   = "Allow"
      Action   = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"]
      Resource = [var.tables.executions_arn, "${var.tables.executions_arn}/index/*"]
    },
    {
      # Invoke creates an execution's record (a conditional put); a stop ends it, a pause, a resume and a
      # delete request change its status (conditional updates; the worker deletes it).
      Sid      = "WriteExecutions"
      Effect   = "Allow"
      Action   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
      Resource = var.tables.executions_arn
    },
    {
      # The log (history, and whether a repeated start's first run happened); external inputs (a
      # heartbeat, a stopped child's parent, a result for an execution pinned to a version).
      Sid      = "ExecutionLogs"
      Effect   = "Allow"
      Action   = ["dynamodb:Query", "dynamodb:PutItem"]
      Resource = var.tables.operations_arn
    },
    {
      # The callback's record (cb#<id>): read it, complete it in a conditional write, reopen it when the
      # wake-up could not be sent. Besides, only the execution's lease record is read (ExecutionLeases).
      Sid      = "CallbackRecords"
      Effect   = "Allow"
      Action   = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
      Resource = var.tables.coordination_arn
      Condition = {
        "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["cb#*"] }
      }
    },
    {
      # An execution's coordination record (lease#<id>), read only: a suspended run carries its last
      # batch there instead of the log, so history and describe (the started timeout) read it.
      Sid      = "ExecutionLeases"
      Effect   = "Allow"
      Action   = "dynamodb:GetItem"
      Resource = var.tables.coordination_arn
      Condition = {
        "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["lease#*"] }
      }
    },
    {
      # Inputs, results and callback results over the inline limit.
      Sid      = "Payloads"
      Effect   = "Allow"
      Action   = ["s3:GetObject", "s3:PutObject"]
      Resource = "${var.payload_bucket.arn}/*"
    },
    {
      # The wake-up of a started, stopped, called-back, paused, resumed or deleted execution.
      Sid      = "WorkQueue"
      Effect   = "Allow"
      Action   = "sqs:SendMessage"
      Resource = var.work_queue.arn
    },
    {
      # A stopped execution's pending wake-ups, deleted by name.
      Sid      = "DeleteWakeUps"
      Effect   = "Allow"
      Action   = "scheduler:DeleteSchedule"
      Resource = local.schedules_arn
    },
    {
      # "*": ListSchedules takes no resource-level permission (a stop lists the execution's wake-ups by
      # name prefix in the group).
      Sid      = "ListWakeUps"
      Effect   = "Allow"
      Action   = "scheduler:ListSchedules"
      Resource = "*"
    },
    {
      # The durable functions' registrations (the parameter below), read once per cold start.
      Sid      = "DurableFunctionsParameter"
      Effect   = "Allow"
      Action   = "ssm:GetParameter"
      Resource = local.parameter_arn
    },
    {
      # Invoke's Qualifier: the worker's published versions and the version its alias points to.
      Sid      = "WorkerVersions"
      Effect   = "Allow"
      Action   = ["lambda:GetAlias", "lambda:ListAliases", "lambda:ListVersionsByFunction"]
      Resource = var.worker.function_arn
    },
  ]
}

module "function_url" {
  source = "../function_url"

  function_name        = local.function_name
  function_description = "Stepwell: Lambda's durable execution API (boto3, the AWS CLI) for this deployment."
  role_description     = "Stepwell durable execution API: answers Lambda's durable execution operations for its function URL."
  handler              = "stepwell.wiring.api_function.handler"
  package              = var.package
  environment          = local.environment
  policy_name          = "stepwell-api"
  policy_statements    = jsonencode(local.statements)
  # Only SigV4-signed requests of the principals the resource policy below lets in reach the function.
  authorization_type = "AWS_IAM"
  memory_size        = var.memory_size
  timeout            = var.timeout
  # A cap on what callers can take from the account's concurrency (429 beyond it).
  reserved_concurrent_executions = var.reserved_concurrent_executions
  runtime                        = var.runtime
  architecture                   = var.architecture
  kms_key_arn                    = var.kms_key_arn
  permissions_boundary_arn       = var.permissions_boundary_arn
  log_retention_days             = var.log_retention_days
  tags                           = var.tags
  # Only X-Ray: the function sends no spans of its own, so it needs no OTLP endpoint (traces.md).
  xray_tracing = var.xray_tracing
}

# The function, its role, policy, log group and URL were this module's own resources before
# modules/function_url: an existing deployment's are moved into it, not destroyed and created again.
moved {
  from = aws_cloudwatch_log_group.api
  to   = module.function_url.aws_cloudwatch_log_group.this
}

moved {
  from = aws_iam_role.api
  to   = module.function_url.aws_iam_role.this
}

moved {
  from = aws_iam_role_policy.api
  to   = module.function_url.aws_iam_role_policy.this
}

moved {
  from = aws_lambda_function.api
  to   = module.function_url.aws_lambda_function.this
}

moved {
  from = aws_lambda_function_url.api
  to   = module.function_url.aws_lambda_function_url.this
}

# Who may call the URL: each listed principal, for signed requests only. lambda:InvokeFunction, which
# function URLs created since October 2025 also need, is deliberately not granted here: provider 5.x
# (still allowed) cannot limit it to URL requests (lambda:InvokedViaFunctionUrl, provider 6.x's
# invoked_via_function_url), and granted without that condition it would let a caller invoke the
# function directly with a forged caller identity in the event. Callers get it from their own IAM
# policy with that condition (the root module's api_caller_policy_json).
resource "aws_lambda_permission" "principals" {
  for_each = local.principals

  statement_id           = "InvokeUrl-${each.key}"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = module.function_url.function_name
  principal              = each.value
  function_url_auth_type = "AWS_IAM"
}

# The durable functions' execution roles may call the URL too (signed requests); the handler lets them
# reach the data plane only, each call bound to one execution and invocation by its checkpoint token.
resource "aws_lambda_permission" "functions" {
  for_each = var.durable_functions

  # Statement ids take no '.': the name with '_' for it, and a hash of the name keeps them apart.
  statement_id           = "InvokeUrl-function-${replace(each.key, ".", "_")}-${substr(md5(each.key), 0, 8)}"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = module.function_url.function_name
  principal              = data.aws_lambda_function.durable[each.key].role
  function_url_auth_type = "AWS_IAM"
}

# The durable functions' registrations, which the worker and this function read at cold start
# (STEPWELL_DURABLE_FUNCTIONS_PARAMETER holds its name): {"functions": {"<workflow>": {"function_arn",
# "qualifier", "timeout_seconds", "role_arn"}}}. Always there (empty without functions), so that the
# functions' environments need not know whether there are any. SSM encrypts only SecureString parameters
# with a key: with kms_key_arn it is one, with that key (the roles may decrypt with it).
# Intelligent-Tiering: a standard parameter (free) while the document is under 4 KB, advanced ($0.05 a month,
# 8 KB) above, so that durable_functions is not capped at the nine or so functions 4 KB holds. The provider
# suppresses the diff between the configured Intelligent-Tiering and the tier SSM reports.
resource "aws_ssm_parameter" "durable_functions" {
  #checkov:skip=CKV2_AWS_34:Without kms_key_arn it holds function and role ARNs only, no secret; with it, it is a SecureString with that key.
  name        = local.parameter_name
  description = "Stepwell ${var.name}: the durable functions (durable_functions) the worker and the API run as workflows."
  type        = var.kms_key_arn == null ? "String" : "SecureString"
  key_id      = var.kms_key_arn
  tier        = "Intelligent-Tiering"
  value       = local.durable_functions_document
  tags        = var.tags

  lifecycle {
    # The variable's bound assumes role ARNs of up to 114 characters; longer role paths could still
    # overflow, which SSM would refuse with a bare ValidationException.
    precondition {
      condition     = length(local.durable_functions_document) <= 8192
      error_message = "The durable functions' registrations take ${length(local.durable_functions_document)} characters with their roles and timeouts; an SSM parameter holds at most 8192: register fewer functions, or use shorter names or role paths."
    }
  }
}
