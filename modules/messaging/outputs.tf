output "work_queue_name" {
  description = "Name of the work queue."
  value       = try(aws_sqs_queue.work.name, null)
}

output "work_queue_url" {
  description = "URL of the work queue."
  value       = try(aws_sqs_queue.work.url, null)
}

output "work_queue_arn" {
  description = "ARN of the work queue."
  value       = try(aws_sqs_queue.work.arn, null)
}

output "work_queue_visibility_timeout_seconds" {
  description = "Visibility timeout of the work queue."
  value       = try(aws_sqs_queue.work.visibility_timeout_seconds, null)
}

output "dlq_name" {
  description = "Name of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq.name, null)
}

output "dlq_url" {
  description = "URL of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq.url, null)
}

output "dlq_arn" {
  description = "ARN of the dead-letter queue."
  value       = try(aws_sqs_queue.dlq.arn, null)
}

output "event_bus_name" {
  description = "Name of the event bus (created or existing)."
  value       = try(local.event_bus_name, null)
}

output "event_bus_arn" {
  description = "ARN of the event bus (created or existing)."
  value       = try(local.event_bus_arn, null)
}

output "event_rule_name" {
  description = "Name of the rule sending bus events to the work queue."
  value       = try(aws_cloudwatch_event_rule.engine.name, null)
}

output "event_rule_arn" {
  description = "ARN of the rule sending bus events to the work queue."
  value       = try(aws_cloudwatch_event_rule.engine.arn, null)
}

output "event_rule_pattern" {
  description = "Event pattern of the rule sending bus events to the work queue (by default every event but the worker's status-change events)."
  value       = try(aws_cloudwatch_event_rule.engine.event_pattern, null)
}

output "event_bus_policy" {
  description = "Policy of the created bus reserving the engine's sources for the worker (null on an existing bus, or without engine_event_sources)."
  value       = try(aws_cloudwatch_event_bus_policy.engine_source[0].policy, null)
}
