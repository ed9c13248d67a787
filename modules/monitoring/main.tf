# Alarms on the engine's health, the SNS topic they notify, and a dashboard of the engine's metrics.
# The engine's own metrics (namespace Stepwell, EMF lines of the worker) carry the dimension sets
# [Deployment, Workflow] and [Deployment]: alarms watch the deployment-wide series, the dashboard the
# per-workflow ones through SEARCH, so a new workflow shows up without an apply.

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

data "aws_partition" "current" {}

locals {
  engine_namespace = "Stepwell"
  deployment       = { Deployment = var.name }

  # What each alarm watches; its switch, threshold and evaluation come from var.alarms. Every alarm fires
  # above its threshold, and no data means healthy (an idle queue or worker publishes nothing).
  alarm_metrics = {
    dlq_messages = {
      description = "Messages wait in the dead-letter queue: the engine gave up on them (docs/engine.md)."
      namespace   = "AWS/SQS"
      metric_name = "ApproximateNumberOfMessagesVisible"
      dimensions  = { QueueName = var.dlq_name }
      statistic   = "Maximum"
    }
    oldest_message_age = {
      description = "The oldest work-queue message is older than the threshold (seconds): the worker falls behind or fails."
      namespace   = "AWS/SQS"
      metric_name = "ApproximateAgeOfOldestMessage"
      dimensions  = { QueueName = var.work_queue_name }
      statistic   = "Maximum"
    }
    worker_errors = {
      description = "Worker invocations failed (all versions and aliases of the function)."
      namespace   = "AWS/Lambda"
      metric_name = "Errors"
      dimensions  = { FunctionName = var.worker_function_name }
      statistic   = "Sum"
    }
    worker_throttles = {
      description = "Worker invocations were throttled (all versions and aliases of the function)."
      namespace   = "AWS/Lambda"
      metric_name = "Throttles"
      dimensions  = { FunctionName = var.worker_function_name }
      statistic   = "Sum"
    }
    failed_executions = {
      description = "Executions of this deployment failed."
      namespace   = local.engine_namespace
      metric_name = "ExecutionsFailed"
      dimensions  = local.deployment
      statistic   = "Sum"
    }
    stalled_executions = {
      description = "Executions stalled: their worker died holding the lease (the next worker took it over once it expired)."
      namespace   = local.engine_namespace
      metric_name = "StalledExecutions"
      dimensions  = local.deployment
      statistic   = "Maximum"
    }
    wake_up_lag = {
      description = "Executions wake up late: the 99th percentile of actual minus due time (ms) exceeds the threshold."
      namespace   = local.engine_namespace
      metric_name = "WakeUpLag"
      dimensions  = local.deployment
      statistic   = "p99"
    }
  }

  enabled_alarms  = { for key, alarm in var.alarms : key => merge(local.alarm_metrics[key], alarm) if alarm.enabled }
  notify          = length(var.notify_statuses) > 0
  create_topic    = var.alarm_topic_arn == null && (length(local.enabled_alarms) > 0 || local.notify)
  alarm_topic_arn = local.create_topic ? aws_sns_topic.alarms[0].arn : var.alarm_topic_arn
  alarm_names     = { for key in keys(local.alarm_metrics) : key => "${var.name}-${replace(key, "_", "-")}" }
}

resource "aws_sns_topic" "alarms" {
  #checkov:skip=CKV_AWS_26:Encrypted with kms_key_arn when given; CloudWatch cannot publish to a topic under the AWS managed SNS key, so there is no key without one.
  count = local.create_topic ? 1 : 0

  name              = "${var.name}-alarms"
  kms_master_key_id = var.kms_key_arn
  tags              = var.tags
}

# Only this deployment's alarms may publish (by ARN: another deployment's names may share the prefix); the account's own principals reach the topic through IAM.
resource "aws_sns_topic_policy" "alarms" {
  count = local.create_topic ? 1 : 0

  arn = aws_sns_topic.alarms[0].arn
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = concat(length(local.enabled_alarms) == 0 ? [] : [{
      Sid       = "DeploymentAlarmsPublish"
      Effect    = "Allow"
      Principal = { Service = "cloudwatch.amazonaws.com" }
      Action    = "sns:Publish"
      Resource  = aws_sns_topic.alarms[0].arn
      Condition = {
        StringEquals = { "aws:SourceAccount" = data.aws_caller_identity.current.account_id }
        ArnEquals = {
          "aws:SourceArn" = sort([
            for key in keys(local.enabled_alarms) :
            "arn:${data.aws_partition.current.partition}:cloudwatch:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:alarm:${local.alarm_names[key]}"
          ])
        }
      }
      }], !local.notify ? [] : [{
      Sid       = "StatusNotificationsPublish"
      Effect    = "Allow"
      Principal = { Service = "events.amazonaws.com" }
      Action    = "sns:Publish"
      Resource  = aws_sns_topic.alarms[0].arn
      Condition = {
        ArnEquals = { "aws:SourceArn" = local.status_rule_arn }
      }
    }])
  })
}

# Status-change events of the listed statuses (a failed execution, by default) go to the alarm topic, so
# whoever is subscribed hears of them without writing a rule. The rule's ARN is built from its name: the
# topic policy must not wait for the rule (the target needs the policy first).
locals {
  status_rule_name = "${var.name}-status-notifications"
  status_rule_arn  = "arn:${data.aws_partition.current.partition}:events:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:rule/${var.event_bus_name == "default" ? "" : "${var.event_bus_name}/"}${local.status_rule_name}"
}

resource "aws_cloudwatch_event_rule" "status_notifications" {
  count = local.notify ? 1 : 0

  name           = local.status_rule_name
  description    = "Stepwell: status-change events of ${join(", ", var.notify_statuses)} executions to the alarm topic."
  event_bus_name = var.event_bus_name
  event_pattern = jsonencode({
    source        = [var.status_event_source]
    "detail-type" = ["Stepwell Execution Status Change"]
    detail        = { status = var.notify_statuses }
  })
  tags = var.tags
}

resource "aws_cloudwatch_event_target" "status_notifications" {
  count = local.notify ? 1 : 0

  rule           = aws_cloudwatch_event_rule.status_notifications[0].name
  event_bus_name = var.event_bus_name
  target_id      = "alarm-topic"
  arn            = local.alarm_topic_arn

  depends_on = [aws_sns_topic_policy.alarms]
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = local.enabled_alarms

  alarm_name          = local.alarm_names[each.key]
  alarm_description   = each.value.description
  namespace           = each.value.namespace
  metric_name         = each.value.metric_name
  dimensions          = each.value.dimensions
  statistic           = startswith(each.value.statistic, "p") ? null : each.value.statistic
  extended_statistic  = startswith(each.value.statistic, "p") ? each.value.statistic : null
  comparison_operator = "GreaterThanThreshold"
  threshold           = each.value.threshold
  period              = each.value.period_seconds
  evaluation_periods  = each.value.evaluation_periods
  datapoints_to_alarm = coalesce(each.value.datapoints_to_alarm, each.value.evaluation_periods)
  treat_missing_data  = "notBreaching"
  alarm_actions       = [local.alarm_topic_arn]
  ok_actions          = [local.alarm_topic_arn]
  tags                = var.tags
}

locals {
  dashboard_period_seconds = 300

  # The engine's per-workflow metrics, one graph each: a SEARCH per metric over the Workflow dimension.
  workflow_graphs = [
    { title = "Executions started", stat = "Sum", metrics = ["ExecutionsStarted"] },
    { title = "Executions succeeded", stat = "Sum", metrics = ["ExecutionsSucceeded"] },
    { title = "Executions failed", stat = "Sum", metrics = ["ExecutionsFailed"] },
    { title = "Executions stopped and timed out", stat = "Sum", metrics = ["ExecutionsStopped", "ExecutionsTimedOut"] },
    { title = "Executions held back by flow limits", stat = "Sum", metrics = ["ExecutionsDelayed", "ExecutionsWaiting"] },
    { title = "Executions paused, resumed and deleted", stat = "Sum", metrics = ["ExecutionsPaused", "ExecutionsResumed", "ExecutionsDeleted"] },
    { title = "Invocations", stat = "Sum", metrics = ["Invocations"] },
    { title = "Invocation duration p99 (ms)", stat = "p99", metrics = ["InvocationDuration"] },
    { title = "Crashes and lease conflicts", stat = "Sum", metrics = ["InvocationCrashes", "LeaseBusy", "LeaseFenced"] },
    { title = "Wake-up lag p99 (ms)", stat = "p99", metrics = ["WakeUpLag"] },
    { title = "Operations recorded and messages forwarded", stat = "Sum", metrics = ["OperationsRecorded", "ForwardedMessages"] },
    { title = "Payload bytes offloaded", stat = "Sum", metrics = ["PayloadBytesOffloaded"] },
  ]
  workflow_graph_properties = [for graph in local.workflow_graphs : {
    title = graph.title
    metrics = [for index, metric in graph.metrics : [{
      id         = "s${index}"
      label      = "${metric} $${PROP('Dim.Workflow')}"
      expression = "SEARCH('{${local.engine_namespace},Deployment,Workflow} Deployment=\"${var.name}\" MetricName=\"${metric}\"', '${graph.stat}', ${local.dashboard_period_seconds})"
    }]]
  }]

  # Deployment-wide series: stalls and late wake-ups, the queues, the worker function.
  deployment_graph_properties = [
    {
      title = "Stalled executions and overdue wake-ups"
      stat  = "Maximum"
      metrics = [
        [local.engine_namespace, "StalledExecutions", "Deployment", var.name],
        [local.engine_namespace, "OverdueWakeUps", "Deployment", var.name],
      ]
    },
    {
      title = "Queue depth"
      stat  = "Maximum"
      metrics = [
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", var.work_queue_name, { label = "work queue visible" }],
        ["AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "QueueName", var.work_queue_name, { label = "work queue in flight" }],
        ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", var.dlq_name, { label = "dead-letter queue" }],
      ]
    },
    {
      title   = "Age of the oldest work-queue message (s)"
      stat    = "Maximum"
      metrics = [["AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", var.work_queue_name]]
    },
    {
      title = "Worker errors and throttles"
      stat  = "Sum"
      metrics = [
        ["AWS/Lambda", "Errors", "FunctionName", var.worker_function_name],
        ["AWS/Lambda", "Throttles", "FunctionName", var.worker_function_name],
      ]
    },
    {
      title = "Worker duration p99 (ms) and concurrency"
      stat  = "Maximum"
      metrics = [
        ["AWS/Lambda", "Duration", "FunctionName", var.worker_function_name, { stat = "p99" }],
        ["AWS/Lambda", "ConcurrentExecutions", "FunctionName", var.worker_function_name, { yAxis = "right" }],
      ]
    },
  ]

  graph_properties = concat(local.workflow_graph_properties, local.deployment_graph_properties)
  graph_widgets = [for index, properties in local.graph_properties : {
    type   = "metric"
    x      = (index % 2) * 12
    y      = local.alarm_widget_height + floor(index / 2) * 6
    width  = 12
    height = 6
    properties = merge(properties, {
      region = data.aws_region.current.name
      view   = "timeSeries"
      period = local.dashboard_period_seconds
    })
  }]
  # The alarms' states on top: what an operator looks at first.
  alarm_widget_height = length(local.enabled_alarms) == 0 ? 0 : 4
  alarm_widgets = length(local.enabled_alarms) == 0 ? [] : [{
    type       = "alarm"
    x          = 0
    y          = 0
    width      = 24
    height     = local.alarm_widget_height
    properties = { title = "Alarms", alarms = [for alarm in aws_cloudwatch_metric_alarm.this : alarm.arn] }
  }]
}

resource "aws_cloudwatch_dashboard" "this" {
  count = var.dashboard_enabled ? 1 : 0

  dashboard_name = var.name
  dashboard_body = jsonencode({ widgets = concat(local.alarm_widgets, local.graph_widgets) })
}
