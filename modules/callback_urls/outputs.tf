output "function_name" {
  description = "Name of the callbacks Lambda."
  value       = try(aws_lambda_function.callbacks.function_name, null)
}

output "function_arn" {
  description = "ARN of the callbacks Lambda."
  value       = try(aws_lambda_function.callbacks.arn, null)
}

output "function_url" {
  description = "The function URL (https://<id>.lambda-url.<region>.on.aws/): the base of every callback URL."
  value       = try(aws_lambda_function_url.callbacks.function_url, null)
}

output "role_name" {
  description = "Name of the callbacks function's IAM role."
  value       = try(aws_iam_role.callbacks.name, null)
}

output "role_arn" {
  description = "ARN of the callbacks function's IAM role."
  value       = try(aws_iam_role.callbacks.arn, null)
}

output "policy_json" {
  description = "The callbacks role's inline policy document (JSON)."
  value       = try(aws_iam_role_policy.callbacks.policy, null)
}

output "log_group_name" {
  description = "Name of the callbacks function's log group."
  value       = try(aws_cloudwatch_log_group.callbacks.name, null)
}

output "environment" {
  description = "Environment of the callbacks Lambda."
  value       = local.environment
}

output "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for the callbacks function; null when unreserved."
  value       = var.reserved_concurrent_executions
}
