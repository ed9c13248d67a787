# Callback URLs: a small function behind a Lambda function URL (auth type NONE) that completes, fails or
# heartbeats a callback for a third party without AWS credentials (lambda_src/stepwell/features/callback_urls.py).
# A function URL rather than API Gateway: no extra service, resources or per-request cost, and both local
# backends serve function URLs. The function is built from the worker's zip and never depends on the
# worker, so the worker can be given its URL (STEPWELL_CALLBACK_URL) without a cycle.

locals {
  function_name = "${var.name}-callbacks"

  environment = merge(
    {
      STEPWELL_NAME                    = var.name
      STEPWELL_EXECUTIONS_TABLE        = var.tables.executions_name
      STEPWELL_OPERATIONS_TABLE        = var.tables.operations_name
      STEPWELL_COORDINATION_TABLE      = var.tables.coordination_name
      STEPWELL_WORK_QUEUE_URL          = var.work_queue.url
      STEPWELL_RETENTION_DAYS          = tostring(var.retention_days)
      STEPWELL_LOG_LEVEL               = var.log_level
      STEPWELL_CALLBACK_MAX_BODY_BYTES = tostring(var.max_body_bytes)
      # The worker's limit on a callback result (stepwell.limits): a URL refuses what a client would.
      STEPWELL_MAX_CALLBACK_RESULT_BYTES = tostring(var.max_callback_result_bytes)
    },
    var.secret_arn == null ? {} : { STEPWELL_CALLBACK_SECRET_ARN = var.secret_arn },
  )

  secret_is_parameter = var.secret_arn != null && can(regex("^arn:aws[a-z-]*:ssm:", var.secret_arn))

  # The role's own grants; modules/function_url adds writing its logs and, with kms_key_arn, the key.
  statements = concat(
    [
      {
        # The callback's record (cb#<id>): read it, complete it with its result in a conditional write,
        # and reopen it when the wake-up could not be sent. No other coordination item.
        Sid      = "CallbackRecords"
        Effect   = "Allow"
        Action   = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
        Resource = var.tables.coordination_arn
        Condition = {
          "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["cb#*"] }
        }
      },
      {
        # Whether the callback's execution is still running.
        Sid      = "ReadExecutions"
        Effect   = "Allow"
        Action   = "dynamodb:GetItem"
        Resource = var.tables.executions_arn
      },
      {
        # A heartbeat's external input, and a result's for an execution pinned to a worker version (whose
        # code may read results only from inputs).
        Sid      = "ExternalInputs"
        Effect   = "Allow"
        Action   = "dynamodb:PutItem"
        Resource = var.tables.operations_arn
      },
      {
        # The execution's wake-up message.
        Sid      = "WorkQueue"
        Effect   = "Allow"
        Action   = "sqs:SendMessage"
        Resource = var.work_queue.arn
      },
    ],
    var.secret_arn == null || local.secret_is_parameter ? [] : [{
      Sid      = "SigningSecret"
      Effect   = "Allow"
      Action   = "secretsmanager:GetSecretValue"
      Resource = var.secret_arn
    }],
    !local.secret_is_parameter ? [] : [{
      Sid      = "SigningSecret"
      Effect   = "Allow"
      Action   = "ssm:GetParameter"
      Resource = var.secret_arn
    }],
  )
}

module "function_url" {
  source = "../function_url"

  function_name        = local.function_name
  function_description = "Stepwell callback URLs: completes, fails or heartbeats a callback for an HTTPS request."
  role_description     = "Stepwell callback URLs: completes callbacks for requests to the function URL."
  handler              = "stepwell.wiring.callback_function.handler"
  package              = var.package
  environment          = local.environment
  policy_name          = "stepwell-callbacks"
  policy_statements    = jsonencode(local.statements)
  # A callback URL is for third parties without AWS credentials: the callback id and the optional
  # signature are the check (docs/security.md).
  authorization_type = "NONE"
  memory_size        = 256
  timeout            = 30
  # A cap on what a flood of requests to the public URL can take (429 beyond it).
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
  from = aws_cloudwatch_log_group.callbacks
  to   = module.function_url.aws_cloudwatch_log_group.this
}

moved {
  from = aws_iam_role.callbacks
  to   = module.function_url.aws_iam_role.this
}

moved {
  from = aws_iam_role_policy.callbacks
  to   = module.function_url.aws_iam_role_policy.this
}

moved {
  from = aws_lambda_function.callbacks
  to   = module.function_url.aws_lambda_function.this
}

moved {
  from = aws_lambda_function_url.callbacks
  to   = module.function_url.aws_lambda_function_url.this
}

# AuthType NONE still needs the function's resource policy to let anyone call the URL.
resource "aws_lambda_permission" "function_url" {
  #checkov:skip=CKV_AWS_301:The function URL is public by design (auth type NONE): a callback URL for third parties (docs/security.md).
  statement_id           = "PublicFunctionUrl"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = module.function_url.function_name
  principal              = "*"
  function_url_auth_type = "NONE"
}

# Function URLs created since October 2025 also need lambda:InvokeFunction. Only its condition
# lambda:InvokedViaFunctionUrl limits it to URL requests (lambda:FunctionUrlAuthType applies to
# InvokeFunctionUrl alone), and the provider sets that condition only from 6.x's invoked_via_function_url
# (hashicorp/terraform-provider-aws#44858), which provider 5.x, still allowed here, rejects as an unknown
# argument. So a direct invoke is allowed too: the handler treats any event as a hostile HTTP request
# (route, method, size, signature), so a direct invoke can do nothing a request to the URL cannot.
resource "aws_lambda_permission" "invoke" {
  #checkov:skip=CKV_AWS_301:The function is public by design (a callback URL for third parties); see the comment above.
  statement_id  = "PublicInvokeForFunctionUrl"
  action        = "lambda:InvokeFunction"
  function_name = module.function_url.function_name
  principal     = "*"
}
