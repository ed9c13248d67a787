output "function_name" {
  description = "Name of the API Lambda."
  value       = try(aws_lambda_function.api.function_name, null)
}

output "function_arn" {
  description = "ARN of the API Lambda."
  value       = try(aws_lambda_function.api.arn, null)
}

output "function_url" {
  description = "The function URL (https://<id>.lambda-url.<region>.on.aws/): the endpoint_url of boto3's lambda client, `aws lambda --endpoint-url`, or AWS_ENDPOINT_URL_LAMBDA."
  value       = try(aws_lambda_function_url.api.function_url, null)
}

output "role_name" {
  description = "Name of the API function's IAM role."
  value       = try(aws_iam_role.api.name, null)
}

output "role_arn" {
  description = "ARN of the API function's IAM role."
  value       = try(aws_iam_role.api.arn, null)
}

output "policy_json" {
  description = "The API role's inline policy document (JSON)."
  value       = try(aws_iam_role_policy.api.policy, null)
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
        Resource  = aws_lambda_function.api.arn
        Condition = { StringEquals = { "lambda:FunctionUrlAuthType" = "AWS_IAM" } }
      },
      {
        Sid       = "InvokeOnlyThroughTheUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunction"
        Resource  = aws_lambda_function.api.arn
        Condition = { Bool = { "lambda:InvokedViaFunctionUrl" = "true" } }
      },
    ]
  }), null)
}

output "log_group_name" {
  description = "Name of the API function's log group."
  value       = try(aws_cloudwatch_log_group.api.name, null)
}

output "environment" {
  description = "Environment of the API Lambda."
  value       = local.environment
}

output "principals" {
  description = "Who may call the API, per class of operation (read, operate, callbacks), as given."
  value       = var.principals
}
