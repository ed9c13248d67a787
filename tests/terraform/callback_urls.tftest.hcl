# Callback URLs (callback_urls): the callbacks function from the worker's zip, its public function URL
# (auth type NONE), its own log group and least-privilege role, the worker's STEPWELL_CALLBACK_URL, the
# outputs, and the submodule's own validations.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

# The name, and modules/callback_urls' inputs for the runs that plan it alone (a run against the root
# ignores them).
variables {
  name = "unit"
  tables = {
    executions_name   = "unit-executions"
    executions_arn    = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions"
    operations_name   = "unit-operations"
    operations_arn    = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations"
    coordination_name = "unit-coordination"
    coordination_arn  = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
  }
  work_queue = { url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work", arn = "arn:aws:sqs:eu-west-1:123456789012:unit-work" }
  package    = { path = "worker.zip", code_hash = "aGFzaA==" }
}

run "off_by_default" {
  command = plan

  assert {
    condition     = length(module.callback_urls) == 0 && output.callback_url == null && output.client_config.callback_url == null
    error_message = "Without callback_urls nothing is created and callback_url is null."
  }

  assert {
    condition     = !contains(keys(module.engine.environment), "STEPWELL_CALLBACK_URL")
    error_message = "Without callback_urls the worker has no STEPWELL_CALLBACK_URL."
  }
}

run "function_url_role_and_worker_environment" {
  command = plan

  variables {
    callback_urls = true
  }

  assert {
    condition = (
      module.callback_urls[0].function_name == "unit-callbacks" &&
      module.callback_urls[0].log_group_name == "/aws/lambda/unit-callbacks" &&
      module.callback_urls[0].role_name == "unit-callbacks"
    )
    error_message = "The callbacks function, its log group and its role are named <name>-callbacks."
  }

  assert {
    condition     = output.callback_url == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/" && output.client_config.callback_url == output.callback_url && output.callback_function_name == "unit-callbacks"
    error_message = "callback_url (and client_config.callback_url) is the function URL."
  }

  assert {
    condition     = module.engine.environment.STEPWELL_CALLBACK_URL == output.callback_url
    error_message = "The worker's STEPWELL_CALLBACK_URL is the function URL."
  }

  assert {
    condition = module.callback_urls[0].environment == {
      STEPWELL_NAME                    = "unit"
      STEPWELL_EXECUTIONS_TABLE        = "unit-executions"
      STEPWELL_OPERATIONS_TABLE        = "unit-operations"
      STEPWELL_COORDINATION_TABLE      = "unit-coordination"
      STEPWELL_WORK_QUEUE_URL          = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work"
      STEPWELL_RETENTION_DAYS          = "30"
      STEPWELL_LOG_LEVEL               = "INFO"
      STEPWELL_CALLBACK_MAX_BODY_BYTES = "65536"
      # The worker's limit on a callback result.
      STEPWELL_MAX_CALLBACK_RESULT_BYTES = "262144"
    }
    error_message = "The callbacks function gets the tables, the work queue and the body limit; no secret without callback_url_secret_arn."
  }
}

run "submodule_resources" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    package = {
      path      = ".terraform/stepwell-build/unit-worker.zip"
      code_hash = "aGFzaA=="
    }
    max_body_bytes = 1000
  }

  assert {
    condition = (
      module.function_url.function_name == "unit-callbacks" &&
      module.function_url.configuration.handler == "stepwell.wiring.callback_function.handler" &&
      module.function_url.configuration.filename == ".terraform/stepwell-build/unit-worker.zip" &&
      module.function_url.configuration.source_code_hash == "aGFzaA==" &&
      module.function_url.configuration.runtime == "python3.13" &&
      module.function_url.configuration.memory_size == 256 &&
      module.function_url.configuration.timeout == 30 &&
      module.function_url.configuration.environment == tomap(output.environment) &&
      module.function_url.configuration.environment.STEPWELL_CALLBACK_MAX_BODY_BYTES == "1000"
    )
    error_message = "The callbacks function runs stepwell.wiring.callback_function.handler from the worker's zip, with 256 MB for 30 s at most and its environment."
  }

  assert {
    condition     = module.function_url.configuration.reserved_concurrent_executions == 10
    error_message = "The submodule reserves 10 concurrent executions for the callbacks function by default."
  }

  assert {
    condition     = module.function_url.authorization_type == "NONE" && module.function_url.function_name == "unit-callbacks"
    error_message = "The function URL has auth type NONE (the callback id, and the signature when configured, are the check)."
  }

  assert {
    condition = (
      aws_lambda_permission.function_url.action == "lambda:InvokeFunctionUrl" &&
      aws_lambda_permission.function_url.principal == "*" &&
      aws_lambda_permission.function_url.function_url_auth_type == "NONE" &&
      aws_lambda_permission.invoke.action == "lambda:InvokeFunction" &&
      aws_lambda_permission.invoke.principal == "*" &&
      aws_lambda_permission.invoke.function_name == "unit-callbacks"
    )
    error_message = "The function's resource policy lets anyone call the URL (InvokeFunctionUrl and InvokeFunction), and only this function."
  }

  assert {
    condition     = module.function_url.log_group_name == "/aws/lambda/unit-callbacks" && module.function_url.log_retention_days == 30
    error_message = "The function has its own log group with the retention."
  }

  assert {
    condition = jsondecode(module.function_url.policy_json).Statement == [
      {
        Sid       = "CallbackRecords"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
        Resource  = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["cb#*"] } }
      },
      {
        Sid      = "ReadExecutions"
        Effect   = "Allow"
        Action   = "dynamodb:GetItem"
        Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions"
      },
      {
        Sid      = "ExternalInputs"
        Effect   = "Allow"
        Action   = "dynamodb:PutItem"
        Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations"
      },
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
    error_message = "The callbacks role may exactly: read and conditionally update callback records, read executions, put external inputs, send to the work queue, write its logs."
  }
}

run "secret_and_key_grants" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    secret_arn  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepwell/callbacks-AbCdEf"
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition = [for s in jsondecode(module.function_url.policy_json).Statement : s if contains(["SigningSecret", "CustomerKey"], s.Sid)] == [
      {
        Sid      = "SigningSecret"
        Effect   = "Allow"
        Action   = "secretsmanager:GetSecretValue"
        Resource = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepwell/callbacks-AbCdEf"
      },
      {
        Sid      = "CustomerKey"
        Effect   = "Allow"
        Action   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]
        Resource = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
      },
    ]
    error_message = "A Secrets Manager secret adds GetSecretValue on that secret only; a customer key adds the key's grants."
  }

  assert {
    condition     = module.function_url.configuration.environment.STEPWELL_CALLBACK_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:stepwell/callbacks-AbCdEf"
    error_message = "The function is given the secret's ARN (never its value)."
  }
}

run "parameter_secret_grant" {
  command = plan

  variables {
    callback_urls           = true
    callback_url_secret_arn = "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/callback-key"
  }

  assert {
    condition = [for s in jsondecode(module.callback_urls[0].policy_json).Statement : s if s.Sid == "SigningSecret"] == [{
      Sid      = "SigningSecret"
      Effect   = "Allow"
      Action   = "ssm:GetParameter"
      Resource = "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/callback-key"
    }]
    error_message = "An SSM parameter adds GetParameter on that parameter only."
  }

  assert {
    condition     = module.callback_urls[0].environment.STEPWELL_CALLBACK_SECRET_ARN == "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/callback-key"
    error_message = "The root passes the secret's ARN to the function."
  }
}

run "reserved_concurrency_defaults_to_ten" {
  command = plan

  variables {
    callback_urls = true
  }

  assert {
    condition     = module.callback_urls[0].reserved_concurrent_executions == 10
    error_message = "By default the callbacks function reserves, and is capped at, 10 concurrent executions."
  }
}

run "reserved_concurrency_null_leaves_it_unreserved" {
  command = plan

  variables {
    callback_urls                     = true
    callback_url_reserved_concurrency = null
  }

  assert {
    condition     = module.callback_urls[0].reserved_concurrent_executions == null
    error_message = "callback_url_reserved_concurrency = null leaves the callbacks function unreserved."
  }
}

run "reserved_concurrency_caps_the_function" {
  command = plan

  variables {
    callback_urls                     = true
    callback_url_reserved_concurrency = 5
  }

  assert {
    condition     = module.callback_urls[0].reserved_concurrent_executions == 5
    error_message = "callback_url_reserved_concurrency reaches the callbacks function."
  }
}

run "submodule_reserved_concurrency" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    reserved_concurrent_executions = 5
  }

  assert {
    condition     = module.function_url.configuration.reserved_concurrent_executions == 5
    error_message = "The callbacks function reserves (and is capped at) the given concurrency."
  }
}

# The submodule's own input validations (one run per rule).

run "submodule_rejects_reserved_concurrency_zero" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    reserved_concurrent_executions = 0
  }

  expect_failures = [var.reserved_concurrent_executions]
}

run "submodule_rejects_name" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    name = "Bad_Name"
  }

  expect_failures = [var.name]
}

run "submodule_rejects_kms_key_arn" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    kms_key_arn = "arn:aws:s3:::bucket"
  }

  expect_failures = [var.kms_key_arn]
}

run "submodule_rejects_permissions_boundary_arn" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    permissions_boundary_arn = "arn:aws:iam::123456789012:role/x"
  }

  expect_failures = [var.permissions_boundary_arn]
}

run "submodule_rejects_runtime" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    runtime = "python3.9"
  }

  expect_failures = [var.runtime]
}

run "submodule_rejects_architecture" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    architecture = "ppc64"
  }

  expect_failures = [var.architecture]
}

run "submodule_rejects_log_retention_days" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    log_retention_days = 2
  }

  expect_failures = [var.log_retention_days]
}

run "submodule_rejects_log_level" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    log_level = "TRACE"
  }

  expect_failures = [var.log_level]
}

run "submodule_rejects_retention_days" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    retention_days = 0
  }

  expect_failures = [var.retention_days]
}

run "submodule_rejects_max_body_bytes_over_200_kb" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    max_body_bytes = 204801
  }

  expect_failures = [var.max_body_bytes]
}

run "submodule_rejects_max_body_bytes_zero" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    max_body_bytes = 0
  }

  expect_failures = [var.max_body_bytes]
}

run "submodule_rejects_secret_arn" {
  command = plan

  module {
    source = "./modules/callback_urls"
  }

  variables {
    secret_arn = "arn:aws:ssm:eu-west-1:123456789012:document/x"
  }

  expect_failures = [var.secret_arn]
}
