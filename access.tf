# Who may do what: IAM policy documents for the principals that use a deployment, so that users attach
# exactly one of them to each role instead of writing their own. The engine's client works on the tables,
# queues, bucket and bus directly, so these grants are the access control (docs/security.md).

locals {
  access_table_arns = [
    module.state.definitions_table_arn,
    module.state.executions_table_arn,
    module.state.operations_table_arn,
    module.state.coordination_table_arn,
  ]
  access_table_and_index_arns = concat(local.access_table_arns, [for arn in local.access_table_arns : "${arn}/index/*"])

  # The detail types and the source of the callback commands the client puts on the bus
  # (stepwell.client.CALLBACK_* and CALLBACK_EVENT_SOURCE).
  callback_detail_types = ["stepwell.callback.success", "stepwell.callback.failure", "stepwell.callback.heartbeat"]
  callback_event_source = "stepwell.client"

  # Callback commands on the module's bus, and nothing else on it.
  callback_command_statement = {
    Sid      = "CallbackCommands"
    Effect   = "Allow"
    Action   = "events:PutEvents"
    Resource = module.messaging.event_bus_arn
    Condition = {
      StringEquals = {
        "events:source"      = local.callback_event_source
        "events:detail-type" = local.callback_detail_types
      }
    }
  }

  kms_statements = var.kms_key_arn == null ? [] : [{
    Sid      = "CustomerKey"
    Effect   = "Allow"
    Action   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
    Resource = var.kms_key_arn
  }]

  read_statements = [
    {
      Sid      = "ReadState"
      Effect   = "Allow"
      Action   = ["dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:DescribeTable"]
      Resource = local.access_table_and_index_arns
    },
    {
      # Inputs, results and errors above the item limit live in the bucket.
      Sid      = "ReadPayloads"
      Effect   = "Allow"
      Action   = "s3:GetObject"
      Resource = "${module.payloads.bucket_arn}/*"
    },
    {
      # `stepwell versions` and upgrades name the worker's published versions and its alias; running
      # executions per version come from the executions table's version index (ReadState).
      Sid      = "ReadWorkerVersions"
      Effect   = "Allow"
      Action   = ["lambda:ListVersionsByFunction", "lambda:ListAliases", "lambda:GetAlias"]
      Resource = module.engine.function_arn
    },
  ]

  # Reader: describe, list, history, definitions, contexts and versions; nothing that changes state.
  reader_policy = {
    Version   = "2012-10-17"
    Statement = concat(local.read_statements, local.kms_statements)
  }

  # Operator: everything the client and CLI do (start, stop, callbacks, definitions, events, DLQ redrive,
  # upgrades of executions to another version: a conditional UpdateItem and an invoke message; schedules).
  operator_policy = {
    Version = "2012-10-17"
    Statement = concat(local.read_statements, [
      {
        Sid    = "WriteState"
        Effect = "Allow"
        Action = [
          "dynamodb:PutItem",
          "dynamodb:UpdateItem",
          "dynamodb:DeleteItem",
          "dynamodb:BatchWriteItem",
          "dynamodb:ConditionCheckItem",
        ]
        Resource = local.access_table_arns
      },
      {
        Sid      = "WritePayloads"
        Effect   = "Allow"
        Action   = ["s3:PutObject", "s3:PutObjectTagging"]
        Resource = "${module.payloads.bucket_arn}/*"
      },
      {
        Sid      = "WorkQueue"
        Effect   = "Allow"
        Action   = ["sqs:SendMessage", "sqs:GetQueueAttributes"]
        Resource = module.messaging.work_queue_arn
      },
      {
        # Waking an execution now (a start, a callback result, a stop) by an asynchronous invoke of the
        # worker's alias (stepwell.aws.direct_wake), which the worker treats as the same message on the queue.
        Sid      = "WakeExecutions"
        Effect   = "Allow"
        Action   = "lambda:InvokeFunction"
        Resource = module.engine.wake_function_arn
      },
      {
        Sid    = "RedriveDeadLetters"
        Effect = "Allow"
        Action = [
          "sqs:ReceiveMessage",
          "sqs:DeleteMessage",
          "sqs:GetQueueAttributes",
          "sqs:StartMessageMoveTask",
          "sqs:ListMessageMoveTasks",
        ]
        Resource = module.messaging.dlq_arn
      },
      {
        Sid      = "WakeUpSchedules"
        Effect   = "Allow"
        Action   = ["scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"]
        Resource = "${replace(module.scheduler.schedule_group_arn, ":schedule-group/", ":schedule/")}/*"
      },
      {
        # `stepwell schedules pause/resume` (UpdateSchedule): the user's schedules only (`start.*`), never
        # the engine's wake-ups or its reconcile schedule. Create, get and delete: WakeUpSchedules.
        Sid      = "UserSchedules"
        Effect   = "Allow"
        Action   = "scheduler:UpdateSchedule"
        Resource = "${replace(module.scheduler.schedule_group_arn, ":schedule-group/", ":schedule/")}/start.*"
      },
      {
        # "*" resource: ListSchedules takes no resource-level permission (stopping an execution lists its
        # pending wake-ups by name prefix in the group).
        Sid      = "ListWakeUpSchedules"
        Effect   = "Allow"
        Action   = "scheduler:ListSchedules"
        Resource = "*"
      },
      {
        Sid       = "PassSchedulerRole"
        Effect    = "Allow"
        Action    = "iam:PassRole"
        Resource  = module.scheduler.scheduler_role_arn
        Condition = { StringEquals = { "iam:PassedToService" = "scheduler.amazonaws.com" } }
      },
      local.callback_command_statement,
    ], local.kms_statements)
  }

  # Event producers: one policy per source in event_sources (the key's source, without its account part),
  # so a producer's events carry the source whose domains it may speak for and no other.
  event_producer_sources = distinct([for key in keys(var.event_sources) : reverse(split(":", key))[0]])
  event_producer_policies = {
    for source in local.event_producer_sources : source => {
      Version = "2012-10-17"
      Statement = concat([{
        Sid       = "DomainEvents"
        Effect    = "Allow"
        Action    = "events:PutEvents"
        Resource  = module.messaging.event_bus_arn
        Condition = { StringEquals = { "events:source" = source } }
      }], local.kms_statements)
    }
  }

  # Callback sender: an outside system that completes the callbacks it was handed ids for, through the
  # bus only. It reads nothing and cannot start, stop or resume anything else.
  callback_sender_policy = {
    Version   = "2012-10-17"
    Statement = concat([local.callback_command_statement], local.kms_statements)
  }
}

output "access_policies" {
  description = "IAM policy documents (JSON) for the principals that use this deployment: reader (describe, list, history; no change), operator (everything the client and CLI do), callback_sender (callback commands on the bus only) and event_producers (per event_sources source: events with that source on the bus only). Attach one per role; docs/security.md says who may do what."
  value = try({
    reader          = jsonencode(local.reader_policy)
    operator        = jsonencode(local.operator_policy)
    callback_sender = jsonencode(local.callback_sender_policy)
    event_producers = { for source, policy in local.event_producer_policies : source => jsonencode(policy) }
  }, null)
}
