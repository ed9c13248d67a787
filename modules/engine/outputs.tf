output "function_name" {
  description = "Name of the worker Lambda."
  value       = try(aws_lambda_function.worker.function_name, null)
}

output "function_arn" {
  description = "ARN of the worker Lambda."
  value       = try(aws_lambda_function.worker.arn, null)
}

output "function_version" {
  description = "The worker's newest published version (the one the alias points to)."
  value       = try(aws_lambda_function.worker.version, null)
}

output "alias_name" {
  description = "Name of the worker's alias the work queue's mapping invokes."
  value       = try(aws_lambda_alias.live.name, null)
}

output "alias_arn" {
  description = "ARN of the worker's alias the work queue's mapping invokes."
  value       = try(aws_lambda_alias.live.arn, null)
}

output "wake_function_arn" {
  description = "ARN of the worker's alias the engine's one-time wake-up schedules invoke (built from its parts, known at plan time)."
  value       = local.wake_function_arn
}

output "role_name" {
  description = "Name of the worker's IAM role."
  value       = try(aws_iam_role.worker.name, null)
}

output "role_arn" {
  description = "ARN of the worker's IAM role."
  value       = try(aws_iam_role.worker.arn, null)
}

output "log_group_name" {
  description = "Name of the worker's log group."
  value       = try(aws_cloudwatch_log_group.worker.name, null)
}

output "event_source_mapping_uuid" {
  description = "UUID of the SQS event source mapping."
  value       = try(aws_lambda_event_source_mapping.work_queue.uuid, null)
}

output "policy_json" {
  description = "The worker role's inline policy document (JSON)."
  value       = try(aws_iam_role_policy.worker.policy, null)
}

output "package_path" {
  description = "Path of the worker zip (built or given)."
  value       = local.package_path
}

output "source_hash" {
  description = "Hash of the package sources (null with a prebuilt lambda_package_path)."
  value       = local.source_hash
}

output "workflow_modules" {
  description = "Modules the engine imports at start."
  value       = local.workflow_modules
}

output "environment" {
  description = "Environment of the worker Lambda."
  value       = local.environment
}

output "package_platform" {
  description = "pip platform tag the package's dependencies are installed for."
  value       = local.pip_platform
}

output "package" {
  description = "The worker's zip (path and source_code_hash), available once it is built: the callbacks function runs from it too."
  value = {
    path      = local.package_path
    code_hash = local.package_code_hash
  }
  depends_on = [terraform_data.package]
}

output "durable_functions" {
  description = "Users' durable functions by workflow name (function_arn, qualifier), as given."
  value       = var.durable_functions
}
