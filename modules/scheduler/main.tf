data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}
data "aws_region" "current" {}

locals {
  # Built from its parts (not the group's computed ARN) so the trust policy is known at plan time.
  schedule_group_arn = "arn:${data.aws_partition.current.partition}:scheduler:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:schedule-group/${var.name}"
}

resource "aws_scheduler_schedule_group" "this" {
  name = var.name
  tags = var.tags
}

resource "aws_iam_role" "scheduler" {
  name                 = "${var.name}-scheduler"
  description          = "Assumed by EventBridge Scheduler to deliver Stepwell schedules to the work queue, the worker and the bus."
  permissions_boundary = var.permissions_boundary_arn
  tags                 = var.tags

  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
      # Only this module's schedule group may use the role (confused-deputy guard): Scheduler names the
      # group, not the schedule, as the source of the request.
      Condition = {
        StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id }
        ArnEquals    = { "aws:SourceArn" = local.schedule_group_arn }
      }
    }]
  })
}

resource "aws_iam_role_policy" "scheduler" {
  name = "deliver"
  role = aws_iam_role.scheduler.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [
        {
          Sid      = "SendToWorkQueue"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = var.work_queue_arn
        },
        {
          # Every schedule (the engine's wake-ups, the reconcile schedule, the workflow schedules) names the
          # DLQ as its dead-letter queue: Scheduler sends what it cannot deliver there as this role.
          Sid      = "SendToDeadLetterQueue"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = var.dead_letter_queue_arn
        },
        {
          # The engine's one-time wake-ups invoke the worker's alias (asynchronously) instead of the queue.
          Sid      = "InvokeWorkerAlias"
          Effect   = "Allow"
          Action   = "lambda:InvokeFunction"
          Resource = var.wake_function_arn
        },
        {
          Sid      = "PutEventsOnBus"
          Effect   = "Allow"
          Action   = "events:PutEvents"
          Resource = var.event_bus_arn
        },
      ],
      var.kms_key_arn == null ? [] : [{
        # Sending to an SSE-KMS queue (or bus) needs a data key from the customer's key.
        Sid      = "EncryptWithKey"
        Effect   = "Allow"
        Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
        Resource = var.kms_key_arn
      }],
    )
  })
}

resource "aws_scheduler_schedule" "reconcile" {
  #checkov:skip=CKV_AWS_297:The schedule holds no secret (its input is {"kind":"reconcile"}); kms_key_arn encrypts it when given.
  name        = "${var.name}-reconcile"
  group_name  = aws_scheduler_schedule_group.this.name
  description = "Wakes the Stepwell reconciler: flow control sweeps, pruning of old worker versions."
  state       = var.reconcile_schedule_enabled ? "ENABLED" : "DISABLED"
  kms_key_arn = var.kms_key_arn

  schedule_expression = var.reconcile_interval_minutes == 1 ? "rate(1 minute)" : "rate(${var.reconcile_interval_minutes} minutes)"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = var.work_queue_arn
    role_arn = aws_iam_role.scheduler.arn
    input    = jsonencode({ kind = "reconcile" })

    # A firing Scheduler cannot deliver (the queue gone or refusing, retries spent) is kept, not dropped.
    dead_letter_config {
      arn = var.dead_letter_queue_arn
    }
  }

  # The role must carry its permissions before the first delivery.
  depends_on = [aws_iam_role_policy.scheduler]
}

# With long_wait_wakeups = "sweep": every minute, the worker sends the long waits now due (kept as due items,
# not as a schedule each) to the work queue with the rest of each wait as its delay (stepwell.core.wake_sweep).
resource "aws_scheduler_schedule" "wake_sweep" {
  #checkov:skip=CKV_AWS_297:The schedule holds no secret (its input is {"kind":"wake-sweep"}); kms_key_arn encrypts it when given.
  count = var.long_wait_wakeups == "sweep" ? 1 : 0

  name                = "${var.name}-wake-sweep"
  group_name          = aws_scheduler_schedule_group.this.name
  description         = "Sends the Stepwell waits now due (long_wait_wakeups = sweep)."
  kms_key_arn         = var.kms_key_arn
  schedule_expression = "rate(1 minute)"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = var.work_queue_arn
    role_arn = aws_iam_role.scheduler.arn
    input    = jsonencode({ kind = "wake-sweep" })

    dead_letter_config {
      arn = var.dead_letter_queue_arn
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}

# The user's workflow schedules. Named `start.<key>`: the engine's own schedules (`sw-...` wake-ups and
# `<name>-reconcile`) never contain a dot, since var.name allows none, so the two never collide and a
# listing tells them apart (stepwell.features.schedules.SCHEDULE_NAME_PREFIX).
resource "aws_scheduler_schedule" "workflow" {
  #checkov:skip=CKV_AWS_297:kms_key_arn encrypts it when given; without one AWS owned keys do.
  for_each = var.schedules

  name                         = "start.${each.key}"
  group_name                   = aws_scheduler_schedule_group.this.name
  description                  = "Starts Stepwell workflow ${each.value.workflow}."
  state                        = each.value.enabled ? "ENABLED" : "DISABLED"
  kms_key_arn                  = var.kms_key_arn
  schedule_expression          = each.value.expression
  schedule_expression_timezone = each.value.timezone

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = var.work_queue_arn
    role_arn = aws_iam_role.scheduler.arn
    # Scheduler puts the occurrence's time in place of <aws.scheduler.scheduled-time>. jsonencode writes
    # < and > as \u003c and \u003e, which Scheduler would not recognise: the keyword is put back as is.
    input = replace(jsonencode({
      kind     = "scheduled-start"
      schedule = each.key
      workflow = each.value.workflow
      input    = jsondecode(each.value.input)
      overlap  = each.value.overlap
      firedAt  = "<aws.scheduler.scheduled-time>"
    }), "\\u003caws.scheduler.scheduled-time\\u003e", "<aws.scheduler.scheduled-time>")

    dead_letter_config {
      arn = var.dead_letter_queue_arn
    }
  }

  depends_on = [aws_iam_role_policy.scheduler]
}
