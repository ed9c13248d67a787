output "function_name" {
  description = "Name of the API Lambda."
  value       = module.function_url.function_name
}

output "function_arn" {
  description = "ARN of the API Lambda."
  value       = module.function_url.function_arn
}

output "function_url" {
  description = "The function URL (https://<id>.lambda-url.<region>.on.aws/): the endpoint_url of boto3's lambda client, `aws lambda --endpoint-url`, or AWS_ENDPOINT_URL_LAMBDA."
  value       = module.function_url.function_url
}

output "role_name" {
  description = "Name of the API function's IAM role."
  value       = module.function_url.role_name
}

output "role_arn" {
  description = "ARN of the API function's IAM role."
  value       = module.function_url.role_arn
}

output "policy_json" {
  description = "The API role's inline policy document (JSON)."
  value       = module.function_url.policy_json
}

output "caller_policy_json" {
  description = "The IAM policy (JSON) a caller's role or user needs besides being listed in principals: lambda:InvokeFunctionUrl on the API function for AWS_IAM URLs, and lambda:InvokeFunction only through its URL (lambda:InvokedViaFunctionUrl)."
  value = try(jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid       = "CallTheApiUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunctionUrl"
        Resource  = module.function_url.function_arn
        Condition = { StringEquals = { "lambda:FunctionUrlAuthType" = "AWS_IAM" } }
      },
      {
        Sid       = "InvokeOnlyThroughTheUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunction"
        Resource  = module.function_url.function_arn
        Condition = { Bool = { "lambda:InvokedViaFunctionUrl" = "true" } }
      },
    ]
  }), null)
}

output "log_group_name" {
  description = "Name of the API function's log group."
  value       = module.function_url.log_group_name
}

output "environment" {
  description = "Environment of the API Lambda."
  value       = local.environment
}

output "principals" {
  description = "Who may call the API, per class of operation (read, operate, callbacks), as given."
  value       = var.principals
}

output "tenant_principals" {
  description = "Principals limited to one tenant (tenant id to principals), as given."
  value       = var.tenant_principals
}

output "durable_functions_parameter" {
  description = "The SSM parameter with the durable functions' registrations: name, ARN, type, key, tier and its JSON value ({\"functions\": {\"<workflow>\": {function_arn, qualifier, timeout_seconds, role_arn}}})."
  value = {
    name   = aws_ssm_parameter.durable_functions.name
    arn    = local.parameter_arn
    type   = aws_ssm_parameter.durable_functions.type
    key_id = aws_ssm_parameter.durable_functions.key_id
    tier   = aws_ssm_parameter.durable_functions.tier
    value  = local.durable_functions_document
  }
}

output "tracing_mode" {
  description = "The function's Lambda tracing mode: Active with xray_tracing (the root's traces.xray), PassThrough otherwise."
  value       = try(module.function_url.configuration.tracing_mode, null)
}
