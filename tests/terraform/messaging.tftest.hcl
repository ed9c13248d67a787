# modules/messaging: queues, redrive, bus or existing bus, the rule and the queue policy.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

run "queues_redrive_rule_and_policy" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                       = "unit"
    max_receive_count          = 7
    visibility_timeout_seconds = 600
    message_retention_seconds  = 86400
    sender_role_arns           = ["arn:aws:iam::123456789012:role/unit-scheduler"]
  }

  override_resource {
    target          = aws_sqs_queue.dlq
    override_during = plan
    values = {
      id  = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
      arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
      url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
    }
  }

  assert {
    condition     = aws_sqs_queue.work.name == "unit-work" && aws_sqs_queue.dlq.name == "unit-dlq"
    error_message = "Queues must be named {name}-work and {name}-dlq."
  }

  assert {
    condition = jsondecode(aws_sqs_queue_redrive_policy.work.redrive_policy) == {
      deadLetterTargetArn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
      maxReceiveCount     = 7
    }
    error_message = "The work queue must redrive to the DLQ after max_receive_count receives."
  }

  assert {
    condition     = aws_sqs_queue_redrive_policy.work.queue_url == aws_sqs_queue.work.url
    error_message = "The redrive policy must be set on the work queue."
  }

  assert {
    condition = (
      aws_sqs_queue.work.visibility_timeout_seconds == 600 && aws_sqs_queue.work.message_retention_seconds == 86400 &&
      aws_sqs_queue.dlq.message_retention_seconds == 1209600
    )
    error_message = "Visibility timeout and retention must come from the variables."
  }

  assert {
    condition     = aws_sqs_queue.work.sqs_managed_sse_enabled && aws_sqs_queue.dlq.sqs_managed_sse_enabled
    error_message = "Without a customer key both queues use SSE-SQS."
  }

  assert {
    condition     = length(aws_cloudwatch_event_bus.this) == 1 && aws_cloudwatch_event_bus.this[0].name == "unit"
    error_message = "A custom bus named after var.name is created by default."
  }

  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.engine.event_pattern) == { source = [{ "anything-but" = ["stepwell.executions"] }] }
    error_message = "The default rule pattern must match every event on the bus but the worker's status-change events."
  }

  assert {
    condition     = aws_cloudwatch_event_target.work_queue.arn == aws_sqs_queue.work.arn && aws_cloudwatch_event_target.work_queue.rule == aws_cloudwatch_event_rule.engine.name
    error_message = "The rule must target the work queue."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_sqs_queue_policy.work.policy).Statement : statement.Condition.ArnEquals["aws:SourceArn"]
      if try(statement.Principal.Service, "") == "events.amazonaws.com"
    ] == [aws_cloudwatch_event_rule.engine.arn]
    error_message = "The queue policy must admit EventBridge only for this rule (aws:SourceArn)."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_sqs_queue_policy.work.policy).Statement : statement.Principal.AWS
      if can(statement.Principal.AWS)
    ] == [["arn:aws:iam::123456789012:role/unit-scheduler"]]
    error_message = "The queue policy must admit the scheduler role."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_sqs_queue_policy.work.policy).Statement :
      statement.Effect == "Allow" && statement.Action == "sqs:SendMessage" && statement.Resource == aws_sqs_queue.work.arn
    ])
    error_message = "The queue policy may only allow sqs:SendMessage on the work queue."
  }
}

run "existing_bus_custom_pattern_and_key" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                 = "unit"
    create_event_bus     = false
    event_bus_arn        = "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"
    event_pattern        = "{\"source\":[{\"prefix\":\"orders.\"}]}"
    kms_key_arn          = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    engine_event_sources = ["stepwell.definitions", "stepwell.executions"]
    engine_role_arn      = "arn:aws:iam::123456789012:role/unit-worker"
  }

  assert {
    condition     = length(aws_cloudwatch_event_bus.this) == 0 && length(aws_cloudwatch_event_bus_policy.engine_source) == 0
    error_message = "No bus is created when an existing one is given, and the module does not set the policy of a bus it does not own."
  }

  assert {
    condition = (
      aws_cloudwatch_event_rule.engine.event_bus_name == "platform-events" &&
      output.event_bus_name == "platform-events" &&
      output.event_bus_arn == "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"
    )
    error_message = "The rule must sit on the existing bus, named from its ARN."
  }

  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.engine.event_pattern) == { source = [{ prefix = "orders." }] }
    error_message = "The configured pattern must be used."
  }

  assert {
    condition = (
      aws_sqs_queue.work.kms_master_key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" &&
      aws_sqs_queue.dlq.kms_master_key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    )
    error_message = "With a customer key both queues use SSE-KMS with it."
  }

  assert {
    condition     = length(jsondecode(aws_sqs_queue_policy.work.policy).Statement) == 1
    error_message = "Without sender roles only the rule is admitted."
  }
}

run "existing_bus_needs_its_arn" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name             = "unit"
    create_event_bus = false
  }

  expect_failures = [aws_cloudwatch_event_rule.engine]
}

run "rejects_sender_that_is_not_a_role" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name             = "unit"
    sender_role_arns = ["arn:aws:iam::123456789012:user/alice"]
  }

  expect_failures = [var.sender_role_arns]
}

run "rejects_data_key_reuse_too_short" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                              = "unit"
    kms_data_key_reuse_period_seconds = 30
  }

  expect_failures = [var.kms_data_key_reuse_period_seconds]
}

run "only_the_worker_puts_the_engine_sources" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                 = "unit"
    engine_event_sources = ["stepwell.definitions", "stepwell.executions"]
    engine_role_arn      = "arn:aws:iam::123456789012:role/unit-worker"
  }

  assert {
    condition = [for statement in jsondecode(aws_cloudwatch_event_bus_policy.engine_source[0].policy).Statement : {
      effect = statement.Effect, action = statement.Action, principal = statement.Principal, condition = statement.Condition
      }] == [{
      effect    = "Deny"
      action    = "events:PutEvents"
      principal = "*"
      condition = {
        StringEquals = { "events:source" = ["stepwell.definitions", "stepwell.executions"] }
        ArnNotEquals = { "aws:PrincipalArn" = "arn:aws:iam::123456789012:role/unit-worker" }
      }
    }]
    error_message = "The created bus must deny putting the engine's sources (definitions' and status-change events) to every principal but the worker role."
  }
}

run "engine_sources_need_the_worker_role" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                 = "unit"
    engine_event_sources = ["stepwell.executions"]
  }

  expect_failures = [aws_cloudwatch_event_bus_policy.engine_source]
}

run "rejects_a_status_event_source_that_is_not_a_source" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                = "unit"
    status_event_source = "not a source"
  }

  expect_failures = [var.status_event_source]
}

run "rejects_an_engine_source_that_is_not_a_source" {
  command = plan

  module {
    source = "./modules/messaging"
  }

  variables {
    name                 = "unit"
    engine_event_sources = ["stepwell.definitions", "-bad"]
  }

  expect_failures = [var.engine_event_sources]
}
