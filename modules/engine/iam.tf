locals {
  arn_prefix = "arn:${data.aws_partition.current.partition}"
  account_id = data.aws_caller_identity.current.account_id
  region     = data.aws_region.current.name

  # Built from its parts, not read from the function, which depends on the role's policy.
  worker_function_arn = "${local.arn_prefix}:lambda:${local.region}:${local.account_id}:function:${local.function_name}"
  # The alias the one-time wake-up schedules invoke (known at plan time: the scheduler's role names it).
  wake_function_arn = "${local.worker_function_arn}:${local.alias_name}"

  table_arns = [
    var.tables.definitions_arn,
    var.tables.executions_arn,
    var.tables.operations_arn,
    var.tables.coordination_arn,
  ]

  worker_statements = concat(
    [
      {
        # TransactWriteItems is authorised through these item actions; there is no separate IAM action.
        Sid    = "Tables"
        Effect = "Allow"
        Action = [
          "dynamodb:GetItem",
          "dynamodb:BatchGetItem",
          "dynamodb:PutItem",
          "dynamodb:UpdateItem",
          "dynamodb:DeleteItem",
          "dynamodb:BatchWriteItem",
          "dynamodb:ConditionCheckItem",
          "dynamodb:Query",
          "dynamodb:DescribeTable",
        ]
        Resource = concat(local.table_arns, [for arn in local.table_arns : "${arn}/index/*"])
      },
      {
        Sid    = "WorkQueue"
        Effect = "Allow"
        Action = [
          "sqs:SendMessage",
          "sqs:ReceiveMessage",
          "sqs:DeleteMessage",
          "sqs:ChangeMessageVisibility",
          "sqs:GetQueueAttributes",
        ]
        Resource = var.work_queue.arn
      },
      {
        # The worker parks messages it can never process; redrive back (StartMessageMoveTask) is the operator's.
        Sid      = "DeadLetterQueue"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage", "sqs:GetQueueAttributes"]
        Resource = var.dlq.arn
      },
      {
        Sid      = "TimerSchedules"
        Effect   = "Allow"
        Action   = ["scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"]
        Resource = "${local.arn_prefix}:scheduler:${local.region}:${local.account_id}:schedule/${var.schedule_group_name}/*"
      },
      {
        # "*" resource: ListSchedules takes no resource-level permission. Stopping an execution lists
        # its pending wake-ups by name prefix in the group to delete them.
        Sid      = "ListTimerSchedules"
        Effect   = "Allow"
        Action   = "scheduler:ListSchedules"
        Resource = "*"
      },
      {
        Sid       = "PassSchedulerRole"
        Effect    = "Allow"
        Action    = "iam:PassRole"
        Resource  = var.scheduler_role_arn
        Condition = { StringEquals = { "iam:PassedToService" = "scheduler.amazonaws.com" } }
      },
      {
        # Any source: its definitions' events (stepwell.features.definitions) and its status-change events
        # (stepwell.executions), which the module's bus lets no one else put.
        Sid      = "PutEvents"
        Effect   = "Allow"
        Action   = "events:PutEvents"
        Resource = distinct(concat([var.event_bus.arn], var.action_event_bus_arns))
      },
      {
        # PutObjectTagging: an ended execution's objects are copied onto themselves with the tag the
        # bucket's expiry rule filters on (stepwell.aws.payloads.S3PayloadStore.retire).
        Sid      = "Payloads"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"]
        Resource = "${var.payload_bucket.arn}/*"
      },
      {
        # Listing one execution's folder (ex/<hash>/) to retire its objects; nothing else is listed.
        Sid       = "ListPayloadFolders"
        Effect    = "Allow"
        Action    = "s3:ListBucket"
        Resource  = var.payload_bucket.arn
        Condition = { StringLike = { "s3:prefix" = ["ex/*"] } }
      },
      {
        # Forwarding to a pinned version (Invoke with a version qualifier) and pruning idle versions
        # (DeleteFunction with a Qualifier). Lambda authorizes these against the ARN the call names,
        # qualifier included, and "function:NAME:*" matches only qualified ARNs (versions, aliases), never
        # the unqualified "function:NAME": the worker cannot delete its function, only its versions
        # (Lambda itself refuses to delete a version an alias points to, and $LATEST).
        Sid      = "OwnVersions"
        Effect   = "Allow"
        Action   = ["lambda:InvokeFunction", "lambda:DeleteFunction"]
        Resource = "${local.worker_function_arn}:*"
      },
      {
        # Listing versions and reading the alias are authorized against the function's own ARN.
        Sid      = "ReadOwnVersions"
        Effect   = "Allow"
        Action   = ["lambda:ListVersionsByFunction", "lambda:GetAlias"]
        Resource = local.worker_function_arn
      },
      {
        Sid      = "Logs"
        Effect   = "Allow"
        Action   = ["logs:CreateLogStream", "logs:PutLogEvents"]
        Resource = "${aws_cloudwatch_log_group.worker.arn}:*"
      },
    ],
    length(var.action_function_arns) == 0 ? [] : [{
      # Definitions' invoke-lambda action calls only the functions the operator lists.
      Sid      = "ActionFunctions"
      Effect   = "Allow"
      Action   = "lambda:InvokeFunction"
      Resource = var.action_function_arns
    }],
    length(var.invoke_function_arns) == 0 ? [] : [{
      # context.invoke of a Lambda target: the listed functions, unqualified or with any version or
      # alias qualifier (Lambda authorizes Invoke against the ARN the call names, qualifier included).
      Sid      = "InvokeTargets"
      Effect   = "Allow"
      Action   = "lambda:InvokeFunction"
      Resource = flatten([for arn in var.invoke_function_arns : [arn, "${arn}:*"]])
    }],
    var.durable_functions_parameter == null ? [] : [{
      # The durable functions' registrations (modules/api writes them), read once per cold start.
      Sid      = "DurableFunctionsParameter"
      Effect   = "Allow"
      Action   = "ssm:GetParameter"
      Resource = "${local.arn_prefix}:ssm:${local.region}:${local.account_id}:parameter${var.durable_functions_parameter}"
    }],
    var.traces.otlp_secret_arn == null ? [] : [{
      # The OTLP endpoint's URL and headers (traces), read once per cold start: that secret only.
      Sid      = "TraceExportSecret"
      Effect   = "Allow"
      Action   = "secretsmanager:GetSecretValue"
      Resource = var.traces.otlp_secret_arn
    }],
    var.traces.otlp_parameter == null ? [] : [{
      Sid      = "TraceExportParameter"
      Effect   = "Allow"
      Action   = "ssm:GetParameter"
      Resource = "${local.arn_prefix}:ssm:${local.region}:${local.account_id}:parameter${var.traces.otlp_parameter}"
    }],
    var.traces.otlp_kms_key_arn == null ? [] : [{
      # The key of that secret or parameter, only as its service decrypts it for the worker.
      Sid       = "TraceExportKey"
      Effect    = "Allow"
      Action    = "kms:Decrypt"
      Resource  = var.traces.otlp_kms_key_arn
      Condition = { StringEquals = { "kms:ViaService" = ["secretsmanager.${local.region}.amazonaws.com", "ssm.${local.region}.amazonaws.com"] } }
    }],
    !var.traces.xray ? [] : [{
      # "*" resource: X-Ray's PutTraceSegments and PutTelemetryRecords take no resource-level permission.
      Sid      = "XRayTraces"
      Effect   = "Allow"
      Action   = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]
      Resource = "*"
    }],
    var.kms_key_arn == null ? [] : [{
      Sid      = "CustomerKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
      Resource = var.kms_key_arn
    }],
    !local.in_vpc ? [] : [{
      # "*" resource: Lambda creates and describes the worker's network interfaces before their ids
      # exist, and the ec2:Describe* actions support no resource-level permissions.
      Sid    = "VpcNetworkInterfaces"
      Effect = "Allow"
      Action = [
        "ec2:CreateNetworkInterface",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DeleteNetworkInterface",
        "ec2:AssignPrivateIpAddresses",
        "ec2:UnassignPrivateIpAddresses",
      ]
      Resource = "*"
    }],
  )
}

resource "aws_iam_role" "worker" {
  name                 = "${var.name}-worker"
  description          = "Stepwell worker Lambda."
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

resource "aws_iam_role_policy" "worker" {
  name   = "stepwell-worker"
  role   = aws_iam_role.worker.id
  policy = jsonencode({ Version = "2012-10-17", Statement = local.worker_statements })
}

# Users' durable functions run as workflows: the worker may invoke exactly those functions, unqualified and
# with the qualifier each is invoked with ($LATEST when none is given). A policy of its own, not the worker's:
# the worker function depends on that one, and must not depend on the functions (they take the API's URL).
resource "aws_iam_role_policy" "durable_functions" {
  count = length(var.durable_functions) == 0 ? 0 : 1

  name = "stepwell-durable-functions"
  role = aws_iam_role.worker.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid    = "DurableFunctions"
      Effect = "Allow"
      Action = "lambda:InvokeFunction"
      Resource = flatten([
        for function in values(var.durable_functions) : [function.function_arn, "${function.function_arn}:${coalesce(function.qualifier, "$LATEST")}"]
      ])
    }]
  })
}
