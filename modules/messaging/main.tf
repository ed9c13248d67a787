locals {
  # Every event but the worker's own status-change events (they are for users' rules): EventBridge rejects
  # an empty pattern, and every event has a `source`.
  default_event_pattern = jsonencode({ source = [{ "anything-but" = [var.status_event_source] }] })
  event_pattern         = coalesce(var.event_pattern, local.default_event_pattern)

  event_bus_arn  = var.create_event_bus ? aws_cloudwatch_event_bus.this[0].arn : var.event_bus_arn
  event_bus_name = var.create_event_bus ? aws_cloudwatch_event_bus.this[0].name : try(regex("event-bus/(.+)$", var.event_bus_arn)[0], "")
}

resource "aws_sqs_queue" "dlq" {
  name                              = "${var.name}-dlq"
  message_retention_seconds         = var.dlq_message_retention_seconds
  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : var.kms_data_key_reuse_period_seconds
  tags                              = var.tags
}

resource "aws_sqs_queue" "work" {
  name                              = "${var.name}-work"
  visibility_timeout_seconds        = var.visibility_timeout_seconds
  message_retention_seconds         = var.message_retention_seconds
  sqs_managed_sse_enabled           = var.kms_key_arn == null ? true : null
  kms_master_key_id                 = var.kms_key_arn
  kms_data_key_reuse_period_seconds = var.kms_key_arn == null ? null : var.kms_data_key_reuse_period_seconds
  tags                              = var.tags

  lifecycle {
    # Owned by aws_sqs_queue_redrive_policy.work and aws_sqs_queue_policy.work below.
    ignore_changes = [redrive_policy, policy]
  }
}

# A separate resource rather than the queue's redrive_policy argument: it compares the policy as JSON,
# so an API that re-formats the document (moto does) shows no drift on the next plan.
resource "aws_sqs_queue_redrive_policy" "work" {
  queue_url = aws_sqs_queue.work.id
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.dlq.arn
    maxReceiveCount     = var.max_receive_count
  })
}

resource "aws_cloudwatch_event_bus" "this" {
  count = var.create_event_bus ? 1 : 0

  name = var.name
  tags = var.tags
}

# The engine trusts its own sources (its definitions' events speak for every domain, its status-change
# events for every execution), so nobody but the worker may put events with them on the bus; a deny
# grants nothing else and overrides any allow.
resource "aws_cloudwatch_event_bus_policy" "engine_source" {
  count = var.create_event_bus && length(var.engine_event_sources) > 0 ? 1 : 0

  event_bus_name = aws_cloudwatch_event_bus.this[0].name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "OnlyTheWorkerPutsEngineEvents"
      Effect    = "Deny"
      Principal = "*"
      Action    = "events:PutEvents"
      Resource  = aws_cloudwatch_event_bus.this[0].arn
      Condition = {
        StringEquals = { "events:source" = var.engine_event_sources }
        ArnNotEquals = { "aws:PrincipalArn" = var.engine_role_arn }
      }
    }]
  })

  lifecycle {
    precondition {
      condition     = var.engine_role_arn != null
      error_message = "engine_role_arn is required with engine_event_sources: it is the one principal allowed to put those sources."
    }
  }
}

resource "aws_cloudwatch_event_rule" "engine" {
  name           = "${var.name}-engine"
  description    = "Sends Stepwell engine events (domain events and callback commands) to the work queue."
  event_bus_name = local.event_bus_name
  event_pattern  = local.event_pattern
  tags           = var.tags

  lifecycle {
    precondition {
      condition     = var.create_event_bus || var.event_bus_arn != null
      error_message = "event_bus_arn is required when create_event_bus is false."
    }
  }
}

resource "aws_cloudwatch_event_target" "work_queue" {
  rule           = aws_cloudwatch_event_rule.engine.name
  event_bus_name = local.event_bus_name
  target_id      = "work-queue"
  arn            = aws_sqs_queue.work.arn
}

resource "aws_sqs_queue_policy" "work" {
  queue_url = aws_sqs_queue.work.id
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(
      [{
        Sid       = "EngineRuleSends"
        Effect    = "Allow"
        Principal = { Service = "events.amazonaws.com" }
        Action    = "sqs:SendMessage"
        Resource  = aws_sqs_queue.work.arn
        Condition = { ArnEquals = { "aws:SourceArn" = aws_cloudwatch_event_rule.engine.arn } }
      }],
      length(var.sender_role_arns) == 0 ? [] : [{
        Sid       = "SenderRolesSend"
        Effect    = "Allow"
        Principal = { AWS = var.sender_role_arns }
        Action    = "sqs:SendMessage"
        Resource  = aws_sqs_queue.work.arn
      }],
    )
  })
}
