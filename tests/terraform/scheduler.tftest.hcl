# modules/scheduler: group, least-privilege role, recurring reconcile schedule.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name                  = "unit"
  work_queue_arn        = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
  wake_function_arn     = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
  dead_letter_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
  event_bus_arn         = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
}

run "role_and_reconcile_schedule" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  assert {
    condition     = aws_scheduler_schedule_group.this.name == "unit" && aws_iam_role.scheduler.name == "unit-scheduler"
    error_message = "Group and role must be named from var.name."
  }

  assert {
    condition = jsondecode(aws_iam_role.scheduler.assume_role_policy).Statement == [{
      Effect    = "Allow"
      Principal = { Service = "scheduler.amazonaws.com" }
      Action    = "sts:AssumeRole"
      Condition = {
        StringEquals = { "aws:SourceAccount" = "123456789012" }
        ArnEquals    = { "aws:SourceArn" = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
      }
    }]
    error_message = "The role must trust only scheduler.amazonaws.com for this account's schedule group of the module."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.scheduler.policy).Statement : statement.Sid => [statement.Action, statement.Resource]
      } == {
      SendToWorkQueue       = ["sqs:SendMessage", "arn:aws:sqs:eu-west-1:123456789012:unit-work"]
      SendToDeadLetterQueue = ["sqs:SendMessage", "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"]
      InvokeWorkerAlias     = ["lambda:InvokeFunction", "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"]
      PutEventsOnBus        = ["events:PutEvents", "arn:aws:events:eu-west-1:123456789012:event-bus/unit"]
    }
    error_message = "Without a key the role may only send to the work queue, send undeliverable firings to the DLQ, invoke the worker's alias and put events on the bus."
  }

  assert {
    condition = (
      aws_scheduler_schedule.reconcile.group_name == "unit" &&
      aws_scheduler_schedule.reconcile.schedule_expression == "rate(5 minutes)" &&
      aws_scheduler_schedule.reconcile.state == "ENABLED" &&
      aws_scheduler_schedule.reconcile.target[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-work" &&
      aws_scheduler_schedule.reconcile.target[0].role_arn == aws_iam_role.scheduler.arn &&
      jsondecode(aws_scheduler_schedule.reconcile.target[0].input) == { kind = "reconcile" } &&
      aws_scheduler_schedule.reconcile.target[0].dead_letter_config[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    )
    error_message = "The reconcile schedule must send {\"kind\":\"reconcile\"} to the work queue every 5 minutes through the role, with the DLQ as its dead-letter queue."
  }
}

run "one_minute_and_customer_key" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    reconcile_interval_minutes = 1
    reconcile_schedule_enabled = false
    kms_key_arn                = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    permissions_boundary_arn   = "arn:aws:iam::123456789012:policy/boundary"
  }

  assert {
    condition     = aws_scheduler_schedule.reconcile.schedule_expression == "rate(1 minute)" && aws_scheduler_schedule.reconcile.state == "DISABLED"
    error_message = "One minute is written rate(1 minute); the enabled switch must reach the schedule."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.scheduler.policy).Statement : statement.Action if statement.Sid == "EncryptWithKey"
    ] == [["kms:GenerateDataKey", "kms:Decrypt"]]
    error_message = "With a key the role gets exactly the KMS actions sending needs."
  }

  assert {
    condition     = aws_iam_role.scheduler.permissions_boundary == "arn:aws:iam::123456789012:policy/boundary"
    error_message = "The permissions boundary must be attached."
  }

  assert {
    condition     = aws_scheduler_schedule.reconcile.kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    error_message = "The customer key must encrypt the reconcile schedule."
  }
}

run "rejects_work_queue_arn_not_sqs" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    work_queue_arn = "arn:aws:sns:eu-west-1:123456789012:topic"
  }

  expect_failures = [var.work_queue_arn]
}

run "rejects_wake_function_arn_without_an_alias" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    # Unqualified: the role would invoke $LATEST, not the alias that keeps wake-ups on the live code.
    wake_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
  }

  expect_failures = [var.wake_function_arn]
}

run "rejects_dead_letter_queue_arn_not_sqs" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    dead_letter_queue_arn = "unit-dlq"
  }

  expect_failures = [var.dead_letter_queue_arn]
}

run "rejects_event_bus_arn_not_a_bus" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    event_bus_arn = "unit"
  }

  expect_failures = [var.event_bus_arn]
}

run "workflow_schedules_send_scheduled_starts_to_the_work_queue" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    schedules = {
      nightly = { workflow = "orders.report", expression = "cron(0 6 * * ? *)", timezone = "Europe/Dublin", input = "{\"region\": \"eu\"}", enabled = true, overlap = "SKIP" }
      paused  = { workflow = "orders.report", expression = "rate(1 hour)", timezone = "UTC", input = "{}", enabled = false, overlap = "ALLOW" }
    }
  }

  assert {
    condition = (
      aws_scheduler_schedule.workflow["nightly"].name == "start.nightly" &&
      aws_scheduler_schedule.workflow["nightly"].group_name == "unit" &&
      aws_scheduler_schedule.workflow["nightly"].state == "ENABLED" &&
      aws_scheduler_schedule.workflow["paused"].state == "DISABLED" &&
      aws_scheduler_schedule.workflow["nightly"].schedule_expression == "cron(0 6 * * ? *)" &&
      aws_scheduler_schedule.workflow["nightly"].schedule_expression_timezone == "Europe/Dublin" &&
      aws_scheduler_schedule.workflow["nightly"].flexible_time_window[0].mode == "OFF" &&
      aws_scheduler_schedule.workflow["nightly"].target[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-work" &&
      aws_scheduler_schedule.workflow["nightly"].target[0].role_arn == aws_iam_role.scheduler.arn &&
      aws_scheduler_schedule.workflow["nightly"].target[0].dead_letter_config[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    )
    error_message = "Each schedule is start.<key> in the group, in its time zone, ENABLED or DISABLED by enabled, delivered to the work queue through the role."
  }

  assert {
    condition = jsondecode(aws_scheduler_schedule.workflow["nightly"].target[0].input) == {
      kind     = "scheduled-start"
      schedule = "nightly"
      workflow = "orders.report"
      input    = { region = "eu" }
      overlap  = "SKIP"
      firedAt  = "<aws.scheduler.scheduled-time>"
    }
    error_message = "The target input is the scheduled-start message (stepwell.features.schedules.scheduled_start_message)."
  }

  assert {
    condition     = strcontains(aws_scheduler_schedule.workflow["nightly"].target[0].input, "\"firedAt\":\"<aws.scheduler.scheduled-time>\"")
    error_message = "The keyword must be written as is (not \\u003c-escaped), or Scheduler would not put the time in."
  }

  assert {
    condition     = output.workflow_schedule_names == { nightly = "start.nightly", paused = "start.paused" }
    error_message = "workflow_schedule_names maps each key to its schedule's name."
  }
}
