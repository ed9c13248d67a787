output "schedule_group_name" {
  description = "Name of the schedule group holding the engine's schedules."
  value       = try(aws_scheduler_schedule_group.this.name, null)
}

output "schedule_group_arn" {
  description = "ARN of the schedule group."
  value       = try(aws_scheduler_schedule_group.this.arn, null)
}

output "scheduler_role_name" {
  description = "Name of the role schedules assume to reach the work queue and bus."
  value       = try(aws_iam_role.scheduler.name, null)
}

output "scheduler_role_arn" {
  description = "ARN of the role schedules assume to reach the work queue and bus."
  value       = try(aws_iam_role.scheduler.arn, null)
}

output "reconcile_schedule_name" {
  description = "Name of the recurring reconcile schedule."
  value       = try(aws_scheduler_schedule.reconcile.name, null)
}

output "reconcile_schedule_arn" {
  description = "ARN of the recurring reconcile schedule."
  value       = try(aws_scheduler_schedule.reconcile.arn, null)
}

output "wake_sweep_schedule_names" {
  description = "Names of the recurring wake-sweep schedule (one with long_wait_wakeups = \"sweep\", none otherwise)."
  value       = aws_scheduler_schedule.wake_sweep[*].name
}

output "workflow_schedule_names" {
  description = "Scheduler names of the workflow schedules by key (`start.<key>`)."
  value       = { for key, schedule in aws_scheduler_schedule.workflow : key => schedule.name }
}
