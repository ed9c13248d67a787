output "function_name" {
  description = "Name of the callbacks Lambda."
  value       = module.function_url.function_name
}

output "function_arn" {
  description = "ARN of the callbacks Lambda."
  value       = module.function_url.function_arn
}

output "function_url" {
  description = "The function URL (https://<id>.lambda-url.<region>.on.aws/): the base of every callback URL."
  value       = module.function_url.function_url
}

output "role_name" {
  description = "Name of the callbacks function's IAM role."
  value       = module.function_url.role_name
}

output "role_arn" {
  description = "ARN of the callbacks function's IAM role."
  value       = module.function_url.role_arn
}

output "policy_json" {
  description = "The callbacks role's inline policy document (JSON)."
  value       = module.function_url.policy_json
}

output "log_group_name" {
  description = "Name of the callbacks function's log group."
  value       = module.function_url.log_group_name
}

output "environment" {
  description = "Environment of the callbacks Lambda."
  value       = local.environment
}

output "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for the callbacks function; null when unreserved."
  value       = var.reserved_concurrent_executions
}

output "tracing_mode" {
  description = "The function's Lambda tracing mode: Active with xray_tracing (the root's traces.xray), PassThrough otherwise."
  value       = try(module.function_url.configuration.tracing_mode, null)
}
