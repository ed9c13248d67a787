# modules/function_url: the function behind a function URL that modules/api and modules/callback_urls
# share: its log group, its role (the caller's statements, then Logs and CustomerKey), the function from
# the given package and the URL; and its own input validations.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  function_name        = "unit-widget"
  function_description = "Stepwell: a widget."
  role_description     = "Stepwell widget: answers its function URL."
  handler              = "stepwell.wiring.widget.handler"
  package              = { path = "worker.zip", code_hash = "aGFzaA==" }
  environment          = { STEPWELL_NAME = "unit" }
  policy_name          = "stepwell-widget"
  policy_statements = jsonencode([{
    Sid      = "WorkQueue"
    Effect   = "Allow"
    Action   = "sqs:SendMessage"
    Resource = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
  }])
  authorization_type = "AWS_IAM"
}

run "resources" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    timeout                        = 45
    memory_size                    = 512
    reserved_concurrent_executions = null
    tags                           = { team = "orders" }
  }

  assert {
    condition = (
      aws_lambda_function.this.function_name == "unit-widget" &&
      aws_lambda_function.this.description == "Stepwell: a widget." &&
      aws_lambda_function.this.handler == "stepwell.wiring.widget.handler" &&
      aws_lambda_function.this.filename == "worker.zip" &&
      aws_lambda_function.this.source_code_hash == "aGFzaA==" &&
      aws_lambda_function.this.runtime == "python3.13" &&
      aws_lambda_function.this.architectures[0] == "arm64" &&
      aws_lambda_function.this.memory_size == 512 &&
      aws_lambda_function.this.timeout == 45 &&
      aws_lambda_function.this.role == aws_iam_role.this.arn &&
      aws_lambda_function.this.environment[0].variables == tomap({ STEPWELL_NAME = "unit" }) &&
      aws_lambda_function.this.kms_key_arn == null &&
      aws_lambda_function.this.tags == tomap({ team = "orders" })
    )
    error_message = "The function runs the given handler from the package with the given settings, role and environment."
  }

  assert {
    condition     = aws_lambda_function.this.reserved_concurrent_executions == null && output.configuration.reserved_concurrent_executions == null
    error_message = "reserved_concurrent_executions = null leaves the function unreserved."
  }

  assert {
    condition = (
      aws_lambda_function_url.this.function_name == "unit-widget" &&
      aws_lambda_function_url.this.authorization_type == "AWS_IAM" &&
      output.function_url == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"
    )
    error_message = "The function URL is the function's, with the given auth type."
  }

  assert {
    condition = (
      aws_cloudwatch_log_group.this.name == "/aws/lambda/unit-widget" &&
      aws_cloudwatch_log_group.this.retention_in_days == 30 &&
      aws_cloudwatch_log_group.this.kms_key_id == null
    )
    error_message = "The function has its own log group, /aws/lambda/<function_name>, kept 30 days by default."
  }

  assert {
    condition = (
      aws_iam_role.this.name == "unit-widget" &&
      aws_iam_role.this.description == "Stepwell widget: answers its function URL." &&
      aws_iam_role.this.permissions_boundary == null &&
      jsondecode(aws_iam_role.this.assume_role_policy).Statement == [{
        Effect    = "Allow"
        Principal = { Service = "lambda.amazonaws.com" }
        Action    = "sts:AssumeRole"
      }]
    )
    error_message = "The role is named as the function and only Lambda may assume it."
  }

  assert {
    condition = aws_iam_role_policy.this.name == "stepwell-widget" && jsondecode(aws_iam_role_policy.this.policy) == {
      Version = "2012-10-17"
      Statement = [
        {
          Sid      = "WorkQueue"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
        },
        {
          Sid    = "Logs"
          Effect = "Allow"
          Action = ["logs:CreateLogStream", "logs:PutLogEvents"]
          # Its own log group's ARN (the mock gives every log group this one).
          Resource = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/unit-worker:*"
        },
      ]
    }
    error_message = "The role's policy holds the given statements and writing its own logs, and nothing else without kms_key_arn."
  }
}

run "customer_key_and_boundary" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    kms_key_arn              = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    permissions_boundary_arn = "arn:aws:iam::123456789012:policy/boundary"
    authorization_type       = "NONE"
    log_retention_days       = 7
    architecture             = "x86_64"
  }

  assert {
    condition = (
      aws_lambda_function.this.kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" &&
      aws_cloudwatch_log_group.this.kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" &&
      aws_cloudwatch_log_group.this.retention_in_days == 7 &&
      aws_iam_role.this.permissions_boundary == "arn:aws:iam::123456789012:policy/boundary" &&
      aws_lambda_function.this.architectures[0] == "x86_64" &&
      aws_lambda_function_url.this.authorization_type == "NONE"
    )
    error_message = "The key encrypts the environment and the logs; the boundary, retention, architecture and auth type are as given."
  }

  assert {
    condition = [for statement in jsondecode(aws_iam_role_policy.this.policy).Statement : statement.Sid] == ["WorkQueue", "Logs", "CustomerKey"] && jsondecode(aws_iam_role_policy.this.policy).Statement[2] == {
      Sid      = "CustomerKey"
      Effect   = "Allow"
      Action   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
      Resource = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    }
    error_message = "With kms_key_arn the role may use that key (and no other), after its logs."
  }
}

# The submodule's own input validations (one run per rule).

run "rejects_a_function_name_too_long" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    function_name = join("", [for index in range(65) : "a"])
  }

  expect_failures = [var.function_name]
}

run "rejects_a_handler_without_a_module" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    handler = "handler"
  }

  expect_failures = [var.handler]
}

run "rejects_an_empty_package" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    package = { path = "", code_hash = "aGFzaA==" }
  }

  expect_failures = [var.package]
}

run "rejects_an_environment_name" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    environment = { "STEPWELL-NAME" = "unit" }
  }

  expect_failures = [var.environment]
}

run "rejects_an_environment_over_4_kb" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    environment = { STEPWELL_BIG = format("%04090d", 0) }
  }

  expect_failures = [var.environment]
}

run "rejects_statements_that_are_no_json_array" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_statements = jsonencode({ Sid = "WorkQueue", Effect = "Allow", Action = "sqs:SendMessage", Resource = "*" })
  }

  expect_failures = [var.policy_statements]
}

run "rejects_no_statement" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_statements = "[]"
  }

  expect_failures = [var.policy_statements]
}

run "rejects_a_statement_without_a_resource" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_statements = jsonencode([{ Sid = "WorkQueue", Effect = "Allow", Action = "sqs:SendMessage" }])
  }

  expect_failures = [var.policy_statements]
}

run "rejects_a_statement_named_as_the_modules_own" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_statements = jsonencode([{ Sid = "Logs", Effect = "Allow", Action = "logs:PutLogEvents", Resource = "*" }])
  }

  expect_failures = [var.policy_statements]
}

run "rejects_repeated_sids" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_statements = jsonencode([
      { Sid = "Queue", Effect = "Allow", Action = "sqs:SendMessage", Resource = "*" },
      { Sid = "Queue", Effect = "Allow", Action = "sqs:GetQueueUrl", Resource = "*" },
    ])
  }

  expect_failures = [var.policy_statements]
}

run "rejects_an_authorization_type" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    authorization_type = "COGNITO"
  }

  expect_failures = [var.authorization_type]
}

run "rejects_a_timeout_over_15_minutes" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    timeout = 901
  }

  expect_failures = [var.timeout]
}

run "rejects_a_memory_size" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    memory_size = 64
  }

  expect_failures = [var.memory_size]
}

run "rejects_a_log_retention" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    log_retention_days = 2
  }

  expect_failures = [var.log_retention_days]
}

run "rejects_reserved_concurrency_zero" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    reserved_concurrent_executions = 0
  }

  expect_failures = [var.reserved_concurrent_executions]
}

run "rejects_a_policy_name" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    policy_name = "stepwell widget"
  }

  expect_failures = [var.policy_name]
}

run "rejects_a_function_description_too_long" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    function_description = join("", [for index in range(257) : "d"])
  }

  expect_failures = [var.function_description]
}
