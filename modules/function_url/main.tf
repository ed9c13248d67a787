# One Lambda function behind a Lambda function URL, as the API (modules/api) and callback URLs
# (modules/callback_urls) each deploy it: its log group, its role with the caller's statements plus its
# own logs and the customer key, the function from the worker's zip and the URL. Who may call the URL
# (the function's resource policy) stays with the caller: that is what differs between them.

locals {
  log_group_name = "/aws/lambda/${var.function_name}"

  statements = concat(
    jsondecode(var.policy_statements),
    [
      {
        Sid      = "Logs"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "${aws_cloudwatch_log_group.this.arn}:*"
      },
    ],
    var.kms_key_arn == null ? [] : [{
      Sid      = "CustomerKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
      Resource = var.kms_key_arn
    }],
    # Lambda's active tracing sends the function's segments; the actions take no resource but "*".
    !var.xray_tracing ? [] : [{
      Sid      = "XRayTraces"
      Effect   = "Allow"
      Action   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      Resource = "*"
    }],
  )
}

resource "aws_cloudwatch_log_group" "this" {
  #checkov:skip=CKV_AWS_338:Retention is the log_retention_days variable; a year is the operator's choice, not a default.
  #checkov:skip=CKV_AWS_158:Logs use the customer key when kms_key_arn is given; CloudWatch's own encryption otherwise.
  name              = local.log_group_name
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
  tags              = var.tags
}

resource "aws_iam_role" "this" {
  name                 = var.function_name
  description          = var.role_description
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "lambda.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy" "this" {
  name   = var.policy_name
  role   = aws_iam_role.this.id
  policy = jsonencode({ Version = "2012-10-17", Statement = local.statements })
}

resource "aws_lambda_function" "this" {
  #checkov:skip=CKV_AWS_50:X-Ray active tracing is the xray_tracing variable (the root's traces.xray; off by default: it needs xray:PutTraceSegments on "*").
  #checkov:skip=CKV_AWS_116:Invoked synchronously by its function URL; an async DLQ would never be used.
  #checkov:skip=CKV_AWS_117:The function only calls AWS APIs; it needs no VPC.
  #checkov:skip=CKV_AWS_272:Code signing needs a signing profile the module cannot assume the account has.
  #checkov:skip=CKV_AWS_173:Environment holds resource names, principal ARNs and a secret's ARN only, never a secret; kms_key_arn encrypts it when given.
  #checkov:skip=CKV_AWS_115:Reserved concurrency is the reserved_concurrent_executions variable (the root's api_reserved_concurrency and callback_url_reserved_concurrency), 10 by default; null opts out where the account's pool is too small to reserve.
  function_name = var.function_name
  description   = var.function_description
  role          = aws_iam_role.this.arn
  handler       = var.handler
  runtime       = var.runtime
  architectures = [var.architecture]
  memory_size   = var.memory_size
  timeout       = var.timeout
  kms_key_arn   = var.kms_key_arn
  # A cap on what callers of the URL can take from the account's concurrency (429 beyond it).
  reserved_concurrent_executions = var.reserved_concurrent_executions
  filename                       = var.package.path
  source_code_hash               = var.package.code_hash

  environment {
    variables = var.environment
  }

  # Lambda's own segments of each request in X-Ray (xray_tracing); PassThrough, Lambda's default, otherwise.
  dynamic "tracing_config" {
    for_each = var.xray_tracing ? [1] : []
    content {
      mode = "Active"
    }
  }

  tags = var.tags

  depends_on = [
    aws_cloudwatch_log_group.this,
    aws_iam_role_policy.this,
  ]
}

resource "aws_lambda_function_url" "this" {
  #checkov:skip=CKV_AWS_258:Auth type NONE only for callback URLs, which are for third parties without AWS credentials; the callback id and the optional HMAC signature are the check (docs/security.md).
  function_name      = aws_lambda_function.this.function_name
  authorization_type = var.authorization_type
}
