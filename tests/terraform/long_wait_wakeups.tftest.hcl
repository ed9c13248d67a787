# long_wait_wakeups: per-wait schedules (the default) or due items swept by one recurring schedule (issue 42).

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "sweep_creates_the_recurring_schedule_and_tells_the_worker" {
  command = plan

  variables {
    long_wait_wakeups = "sweep"
  }

  assert {
    condition     = module.scheduler.wake_sweep_schedule_names == ["unit-wake-sweep"]
    error_message = "long_wait_wakeups = sweep must create the schedule unit-wake-sweep."
  }

  assert {
    condition     = module.engine.environment.STEPWELL_LONG_WAIT_WAKEUPS == "sweep"
    error_message = "long_wait_wakeups = sweep must reach the worker as STEPWELL_LONG_WAIT_WAKEUPS=sweep."
  }
}

run "the_sweep_schedule_fires_every_minute_to_the_work_queue_with_a_dead_letter_queue" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    work_queue_arn        = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    wake_function_arn     = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
    dead_letter_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    event_bus_arn         = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
    long_wait_wakeups     = "sweep"
  }

  assert {
    condition = (
      aws_scheduler_schedule.wake_sweep[0].group_name == "unit" &&
      aws_scheduler_schedule.wake_sweep[0].schedule_expression == "rate(1 minute)" &&
      aws_scheduler_schedule.wake_sweep[0].flexible_time_window[0].mode == "OFF" &&
      aws_scheduler_schedule.wake_sweep[0].target[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-work" &&
      aws_scheduler_schedule.wake_sweep[0].target[0].role_arn == aws_iam_role.scheduler.arn &&
      jsondecode(aws_scheduler_schedule.wake_sweep[0].target[0].input) == { kind = "wake-sweep" } &&
      aws_scheduler_schedule.wake_sweep[0].target[0].dead_letter_config[0].arn == "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    )
    error_message = "The wake-sweep schedule must send {\"kind\":\"wake-sweep\"} to the work queue every minute, with the DLQ for what it cannot deliver."
  }
}

run "no_sweep_schedule_by_default" {
  command = plan

  module {
    source = "./modules/scheduler"
  }

  variables {
    work_queue_arn        = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    wake_function_arn     = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
    dead_letter_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    event_bus_arn         = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
  }

  assert {
    condition     = length(aws_scheduler_schedule.wake_sweep) == 0
    error_message = "With per-wait schedules (the default) there is no recurring wake-sweep schedule (and the engine's environment is unchanged: engine.tftest.hcl)."
  }
}

run "rejects_an_unknown_mode" {
  command = plan

  variables {
    long_wait_wakeups = "auto"
  }

  expect_failures = [var.long_wait_wakeups]
}
