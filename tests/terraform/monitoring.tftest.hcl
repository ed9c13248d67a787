# modules/monitoring: the alarms (metric, dimensions, threshold, actions), their switches, the alarm
# topic (created, encrypted, or given), and the dashboard's widgets; then the root's defaults.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name                 = "unit"
  work_queue_name      = "unit-work"
  dlq_name             = "unit-dlq"
  worker_function_name = "unit-worker"
  event_bus_name       = "unit-bus"
  status_event_source  = "stepwell.executions"
  # Distinct values per alarm, so each assertion proves its alarm reads its own settings.
  alarms = {
    dlq_messages       = { enabled = true, threshold = 1, period_seconds = 60, evaluation_periods = 1 }
    oldest_message_age = { enabled = true, threshold = 600, period_seconds = 120, evaluation_periods = 3 }
    worker_errors      = { enabled = true, threshold = 2, period_seconds = 180, evaluation_periods = 1 }
    worker_throttles   = { enabled = true, threshold = 3, period_seconds = 240, evaluation_periods = 1 }
    failed_executions  = { enabled = true, threshold = 4, period_seconds = 300, evaluation_periods = 2, datapoints_to_alarm = 1 }
    stalled_executions = { enabled = true, threshold = 5, period_seconds = 900, evaluation_periods = 1 }
    wake_up_lag        = { enabled = true, threshold = 120000, period_seconds = 600, evaluation_periods = 3, datapoints_to_alarm = 2 }
  }
}

run "each_alarm_watches_its_metric_and_notifies_the_created_topic" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    notify_statuses = []
  }

  assert {
    condition     = length(aws_cloudwatch_event_rule.status_notifications) == 0 && output.status_notifications_rule_name == null
    error_message = "notify_statuses = [] creates no status notifications rule."
  }

  assert {
    condition = jsonencode({
      for key, alarm in aws_cloudwatch_metric_alarm.this : key => [alarm.alarm_name, alarm.namespace, alarm.metric_name, alarm.dimensions]
      }) == jsonencode({
      dlq_messages       = ["unit-dlq-messages", "AWS/SQS", "ApproximateNumberOfMessagesVisible", { QueueName = "unit-dlq" }]
      oldest_message_age = ["unit-oldest-message-age", "AWS/SQS", "ApproximateAgeOfOldestMessage", { QueueName = "unit-work" }]
      worker_errors      = ["unit-worker-errors", "AWS/Lambda", "Errors", { FunctionName = "unit-worker" }]
      worker_throttles   = ["unit-worker-throttles", "AWS/Lambda", "Throttles", { FunctionName = "unit-worker" }]
      failed_executions  = ["unit-failed-executions", "Stepwell", "ExecutionsFailed", { Deployment = "unit" }]
      stalled_executions = ["unit-stalled-executions", "Stepwell", "StalledExecutions", { Deployment = "unit" }]
      wake_up_lag        = ["unit-wake-up-lag", "Stepwell", "WakeUpLag", { Deployment = "unit" }]
    })
    error_message = "Each alarm must watch its metric: SQS by QueueName, the worker by FunctionName, the engine's by Deployment only."
  }

  assert {
    condition = jsonencode({
      for key, alarm in aws_cloudwatch_metric_alarm.this : key => [alarm.statistic, alarm.extended_statistic]
      }) == jsonencode({
      dlq_messages       = ["Maximum", null]
      oldest_message_age = ["Maximum", null]
      worker_errors      = ["Sum", null]
      worker_throttles   = ["Sum", null]
      failed_executions  = ["Sum", null]
      stalled_executions = ["Maximum", null]
      wake_up_lag        = [null, "p99"]
    })
    error_message = "Counts are summed, levels maximised, and the wake-up lag is its 99th percentile."
  }

  assert {
    condition = alltrue([
      for key, alarm in aws_cloudwatch_metric_alarm.this :
      alarm.threshold == var.alarms[key].threshold && alarm.period == var.alarms[key].period_seconds &&
      alarm.evaluation_periods == var.alarms[key].evaluation_periods
    ])
    error_message = "Threshold, period and evaluation periods must come from the alarms variable."
  }

  assert {
    condition = (
      aws_cloudwatch_metric_alarm.this["failed_executions"].datapoints_to_alarm == 1 &&
      aws_cloudwatch_metric_alarm.this["wake_up_lag"].datapoints_to_alarm == 2 &&
      aws_cloudwatch_metric_alarm.this["oldest_message_age"].datapoints_to_alarm == 3
    )
    error_message = "datapoints_to_alarm comes from the variable, and defaults to all evaluation periods."
  }

  assert {
    condition = alltrue([
      for alarm in values(aws_cloudwatch_metric_alarm.this) :
      alarm.comparison_operator == "GreaterThanThreshold" && alarm.treat_missing_data == "notBreaching"
    ])
    error_message = "Every alarm fires above its threshold, and no data (an idle engine) is healthy."
  }

  assert {
    condition = alltrue([
      for alarm in values(aws_cloudwatch_metric_alarm.this) :
      alarm.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:unit-alarms"]) && alarm.ok_actions == alarm.alarm_actions
    ])
    error_message = "Alarm and OK actions must go to the created topic."
  }

  assert {
    condition     = aws_sns_topic.alarms[0].name == "unit-alarms" && aws_sns_topic.alarms[0].kms_master_key_id == null
    error_message = "Without a customer key the module creates {name}-alarms unencrypted (CloudWatch cannot use the AWS managed SNS key)."
  }

  assert {
    condition = jsondecode(aws_sns_topic_policy.alarms[0].policy).Statement == [{
      Sid       = "DeploymentAlarmsPublish"
      Effect    = "Allow"
      Principal = { Service = "cloudwatch.amazonaws.com" }
      Action    = "sns:Publish"
      Resource  = "arn:aws:sns:eu-west-1:123456789012:unit-alarms"
      Condition = {
        StringEquals = { "aws:SourceAccount" = "123456789012" }
        ArnEquals = { "aws:SourceArn" = [
          for alarm in ["dlq-messages", "failed-executions", "oldest-message-age", "stalled-executions", "wake-up-lag", "worker-errors", "worker-throttles"] :
          "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:unit-${alarm}"
        ] }
      }
    }]
    error_message = "Only this deployment's alarms (CloudWatch, this account, each alarm's ARN) may publish to the topic."
  }

  assert {
    condition     = output.alarm_topic_arn == "arn:aws:sns:eu-west-1:123456789012:unit-alarms" && output.alarm_names.wake_up_lag == "unit-wake-up-lag" && length(output.alarm_names) == 7
    error_message = "The outputs must name the topic and every enabled alarm."
  }
}

run "a_customer_key_encrypts_the_created_topic" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition     = aws_sns_topic.alarms[0].kms_master_key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    error_message = "The alarm topic must be encrypted with kms_key_arn."
  }
}

run "a_given_topic_is_notified_and_none_is_created" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    alarm_topic_arn = "arn:aws:sns:eu-west-1:123456789012:ops-pager"
  }

  assert {
    condition     = length(aws_sns_topic.alarms) == 0 && length(aws_sns_topic_policy.alarms) == 0
    error_message = "With alarm_topic_arn the module creates no topic."
  }

  assert {
    condition = alltrue([
      for alarm in values(aws_cloudwatch_metric_alarm.this) :
      alarm.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:ops-pager"]) && alarm.ok_actions == alarm.alarm_actions
    ])
    error_message = "Alarm and OK actions must go to the given topic."
  }

  assert {
    condition     = output.alarm_topic_arn == "arn:aws:sns:eu-west-1:123456789012:ops-pager"
    error_message = "alarm_topic_arn must output the given topic."
  }
}

run "a_switched_off_alarm_does_not_exist" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    alarms = {
      dlq_messages       = { enabled = true, threshold = 0, period_seconds = 60, evaluation_periods = 1 }
      oldest_message_age = { enabled = true, threshold = 900, period_seconds = 300, evaluation_periods = 3 }
      worker_errors      = { enabled = true, threshold = 0, period_seconds = 300, evaluation_periods = 1 }
      worker_throttles   = { enabled = false, threshold = 0, period_seconds = 300, evaluation_periods = 1 }
      failed_executions  = { enabled = true, threshold = 0, period_seconds = 300, evaluation_periods = 1 }
      stalled_executions = { enabled = true, threshold = 0, period_seconds = 900, evaluation_periods = 1 }
      wake_up_lag        = { enabled = false, threshold = 300000, period_seconds = 300, evaluation_periods = 3 }
    }
  }

  assert {
    condition     = keys(aws_cloudwatch_metric_alarm.this) == ["dlq_messages", "failed_executions", "oldest_message_age", "stalled_executions", "worker_errors"]
    error_message = "Only the enabled alarms exist."
  }

  assert {
    condition     = length([for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : widget if widget.type == "alarm"][0].properties.alarms) == 5
    error_message = "The dashboard's alarm widget shows the enabled alarms only."
  }
}

run "without_alarms_there_is_no_topic_and_no_alarm_widget" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    notify_statuses = []
    alarms = {
      dlq_messages = { enabled = false, threshold = 0, period_seconds = 60, evaluation_periods = 1 }
      wake_up_lag  = { enabled = false, threshold = 300000, period_seconds = 300, evaluation_periods = 3 }
    }
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.this) == 0 && length(aws_sns_topic.alarms) == 0 && output.alarm_topic_arn == null
    error_message = "With every alarm off nothing notifies, so no topic is created."
  }

  assert {
    condition     = length([for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : widget if widget.type == "alarm"]) == 0
    error_message = "An alarm widget without alarms is invalid: the dashboard has none."
  }
}

run "the_dashboard_graphs_every_metric" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  assert {
    condition     = aws_cloudwatch_dashboard.this[0].dashboard_name == "unit" && output.dashboard_name == "unit"
    error_message = "The dashboard is named after var.name."
  }

  # Per workflow: one SEARCH over the Workflow dimension per engine metric, with the graph's statistic.
  assert {
    condition = toset(flatten([
      for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : [
        for series in try(widget.properties.metrics, []) : series[0].expression if can(series[0].expression)
      ]
      ])) == toset([
      for metric, stat in {
        ExecutionsStarted  = "Sum", ExecutionsSucceeded = "Sum", ExecutionsFailed = "Sum", ExecutionsStopped = "Sum",
        ExecutionsTimedOut = "Sum", Invocations = "Sum", InvocationDuration = "p99", InvocationCrashes = "Sum",
        LeaseBusy          = "Sum", LeaseFenced = "Sum", WakeUpLag = "p99", OperationsRecorded = "Sum",
        ForwardedMessages  = "Sum", PayloadBytesOffloaded = "Sum", ExecutionsDelayed = "Sum", ExecutionsWaiting = "Sum",
        ExecutionsPaused   = "Sum", ExecutionsResumed = "Sum", ExecutionsDeleted = "Sum",
      } : "SEARCH('{Stepwell,Deployment,Workflow} Deployment=\"unit\" MetricName=\"${metric}\"', '${stat}', 300)"
    ])
    error_message = "The dashboard must graph every per-workflow engine metric with a SEARCH over the Workflow dimension."
  }

  # Deployment-wide: the reconciler's findings, the queues, the worker function.
  assert {
    condition = toset(flatten([
      for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : [
        for series in try(widget.properties.metrics, []) : join(" ", slice(series, 0, 4)) if !can(series[0].expression)
      ]
      ])) == toset([
      "Stepwell StalledExecutions Deployment unit",
      "Stepwell OverdueWakeUps Deployment unit",
      "AWS/SQS ApproximateNumberOfMessagesVisible QueueName unit-work",
      "AWS/SQS ApproximateNumberOfMessagesNotVisible QueueName unit-work",
      "AWS/SQS ApproximateNumberOfMessagesVisible QueueName unit-dlq",
      "AWS/SQS ApproximateAgeOfOldestMessage QueueName unit-work",
      "AWS/Lambda Errors FunctionName unit-worker",
      "AWS/Lambda Throttles FunctionName unit-worker",
      "AWS/Lambda Duration FunctionName unit-worker",
      "AWS/Lambda ConcurrentExecutions FunctionName unit-worker",
    ])
    error_message = "The dashboard must graph the reconciler's metrics, both queues and the worker function."
  }

  assert {
    condition = alltrue([
      for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets :
      widget.properties.region == "eu-west-1" if widget.type == "metric"
    ])
    error_message = "Every graph must name the deployment's region."
  }

  assert {
    condition = [
      for widget in jsondecode(aws_cloudwatch_dashboard.this[0].dashboard_body).widgets : length(widget.properties.alarms) if widget.type == "alarm"
    ] == [7]
    error_message = "One alarm widget shows every enabled alarm."
  }
}

run "the_dashboard_is_switchable" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    dashboard_enabled = false
  }

  assert {
    condition     = length(aws_cloudwatch_dashboard.this) == 0 && output.dashboard_name == null
    error_message = "dashboard_enabled = false creates no dashboard."
  }
}

run "rejects_an_unknown_alarm_key" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    alarms = {
      dlq_depth = { enabled = true, threshold = 0, period_seconds = 60, evaluation_periods = 1 }
    }
  }

  expect_failures = [var.alarms]
}

run "failed_executions_are_sent_to_the_topic" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  assert {
    condition = jsondecode(aws_cloudwatch_event_rule.status_notifications[0].event_pattern) == {
      source        = ["stepwell.executions"]
      "detail-type" = ["Stepwell Execution Status Change"]
      detail        = { status = ["FAILED", "TIMED_OUT"] }
    }
    error_message = "By default the rule takes the status-change events of failed and timed-out executions only."
  }

  assert {
    condition = (
      aws_cloudwatch_event_rule.status_notifications[0].event_bus_name == "unit-bus" &&
      aws_cloudwatch_event_target.status_notifications[0].arn == "arn:aws:sns:eu-west-1:123456789012:unit-alarms" &&
      output.status_notifications_rule_name == "unit-status-notifications"
    )
    error_message = "The rule lives on the engine's bus and targets the alarm topic."
  }

  assert {
    condition = [for statement in jsondecode(aws_sns_topic_policy.alarms[0].policy).Statement : statement if statement.Sid == "StatusNotificationsPublish"] == [{
      Sid       = "StatusNotificationsPublish"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sns:Publish"
      Resource  = "arn:aws:sns:eu-west-1:123456789012:unit-alarms"
      Condition = { ArnEquals = { "aws:SourceArn" = "arn:aws:events:eu-west-1:123456789012:rule/unit-bus/unit-status-notifications" } }
    }]
    error_message = "EventBridge may publish to the topic only for this rule."
  }
}

run "paused_and_deleting_executions_may_be_sent_to_the_topic" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    notify_statuses = ["PAUSED", "DELETING", "RUNNING"]
  }

  assert {
    condition     = jsondecode(aws_cloudwatch_event_rule.status_notifications[0].event_pattern).detail == { status = ["PAUSED", "DELETING", "RUNNING"] }
    error_message = "The rule takes the status-change events of the statuses a pause, a resume and a delete announce."
  }
}

run "the_module_rejects_pausing_which_is_no_event" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    notify_statuses = ["PAUSED", "PAUSING"]
  }

  expect_failures = [var.notify_statuses]
}

run "notifications_alone_create_the_topic" {
  command = plan

  module {
    source = "./modules/monitoring"
  }

  variables {
    notify_statuses = ["FAILED"]
    alarms = {
      dlq_messages = { enabled = false, threshold = 0, period_seconds = 60, evaluation_periods = 1 }
    }
  }

  assert {
    condition = (
      length(aws_cloudwatch_metric_alarm.this) == 0 && length(aws_sns_topic.alarms) == 1 &&
      [for statement in jsondecode(aws_sns_topic_policy.alarms[0].policy).Statement : statement.Sid] == ["StatusNotificationsPublish"]
    )
    error_message = "With every alarm off, notifications still need the topic, and only EventBridge may publish to it."
  }
}

# The root: by default every alarm, the topic and the dashboard exist, with the documented defaults.
run "the_root_turns_monitoring_on_by_default" {
  command = plan

  variables {
    alarms = {
      wake_up_lag = { threshold = 60000 }
    }
  }

  assert {
    condition = output.alarm_names == {
      dlq_messages       = "unit-dlq-messages"
      oldest_message_age = "unit-oldest-message-age"
      worker_errors      = "unit-worker-errors"
      worker_throttles   = "unit-worker-throttles"
      failed_executions  = "unit-failed-executions"
      stalled_executions = "unit-stalled-executions"
      wake_up_lag        = "unit-wake-up-lag"
    }
    error_message = "Every alarm is on by default."
  }

  assert {
    condition     = output.alarm_topic_arn == "arn:aws:sns:eu-west-1:123456789012:unit-alarms" && output.dashboard_name == "unit"
    error_message = "By default the module creates the alarm topic and the dashboard."
  }

  assert {
    condition     = output.status_notifications_rule_name == "unit-status-notifications"
    error_message = "By default failed and timed-out executions are sent to the alarm topic."
  }

  assert {
    condition = (
      module.monitoring.alarm_names.wake_up_lag == "unit-wake-up-lag" &&
      var.alarms.wake_up_lag.threshold == 60000 && var.alarms.wake_up_lag.period_seconds == 300 &&
      var.alarms.wake_up_lag.datapoints_to_alarm == 2 && var.alarms.dlq_messages.threshold == 0
    )
    error_message = "A threshold given for one alarm keeps the other settings' defaults."
  }
}
