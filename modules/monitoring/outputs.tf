output "alarm_topic_arn" {
  description = "SNS topic the alarms notify (created or given); null when no alarm is enabled and none was given."
  value       = local.alarm_topic_arn
}

output "alarm_names" {
  description = "Names of the enabled alarms by key (dlq_messages, oldest_message_age, worker_errors, worker_throttles, failed_executions, stalled_executions, wake_up_lag)."
  value       = { for key, alarm in aws_cloudwatch_metric_alarm.this : key => alarm.alarm_name }
}

output "dashboard_name" {
  description = "Name of the CloudWatch dashboard; null when dashboard_enabled is false."
  value       = try(aws_cloudwatch_dashboard.this[0].dashboard_name, null)
}

output "status_notifications_rule_name" {
  description = "Name of the rule sending status-change events of notify_statuses to the alarm topic; null when none."
  value       = try(aws_cloudwatch_event_rule.status_notifications[0].name, null)
}
