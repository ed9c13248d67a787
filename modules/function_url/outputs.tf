output "function_name" {
  description = "Name of the function."
  value       = try(aws_lambda_function.this.function_name, null)
}

output "function_arn" {
  description = "ARN of the function (unqualified)."
  value       = try(aws_lambda_function.this.arn, null)
}

output "function_url" {
  description = "The function URL (https://<id>.lambda-url.<region>.on.aws/)."
  value       = try(aws_lambda_function_url.this.function_url, null)
}

output "authorization_type" {
  description = "Auth type of the function URL (AWS_IAM or NONE)."
  value       = try(aws_lambda_function_url.this.authorization_type, null)
}

output "role_name" {
  description = "Name of the function's IAM role."
  value       = try(aws_iam_role.this.name, null)
}

output "role_arn" {
  description = "ARN of the function's IAM role."
  value       = try(aws_iam_role.this.arn, null)
}

output "policy_json" {
  description = "The role's inline policy document (JSON): the given statements, Logs, with kms_key_arn CustomerKey and with xray_tracing XRayTraces."
  value       = try(aws_iam_role_policy.this.policy, null)
}

output "log_group_name" {
  description = "Name of the function's log group."
  value       = try(aws_cloudwatch_log_group.this.name, null)
}

output "log_retention_days" {
  description = "Retention of the function's log group in days."
  value       = try(aws_cloudwatch_log_group.this.retention_in_days, null)
}

output "configuration" {
  description = "The function as planned: handler, runtime, architecture, memory_size, timeout, reserved_concurrent_executions, filename and source_code_hash of its package, environment, and tracing_mode (Active with xray_tracing, PassThrough otherwise)."
  value = try({
    handler                        = aws_lambda_function.this.handler
    runtime                        = aws_lambda_function.this.runtime
    architecture                   = aws_lambda_function.this.architectures[0]
    memory_size                    = aws_lambda_function.this.memory_size
    timeout                        = aws_lambda_function.this.timeout
    reserved_concurrent_executions = aws_lambda_function.this.reserved_concurrent_executions
    filename                       = aws_lambda_function.this.filename
    source_code_hash               = aws_lambda_function.this.source_code_hash
    environment                    = aws_lambda_function.this.environment[0].variables
    tracing_mode                   = try(aws_lambda_function.this.tracing_config[0].mode, "PassThrough")
  }, null)
}
