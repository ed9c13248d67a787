# The AWS durable execution API (enable_api): the API function from the worker's zip behind a function
# URL with AWS_IAM auth, a resource policy naming exactly api_principals, the function's environment and
# least-privilege role, the outputs, and the validations of the root and of modules/api.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

# The name, and modules/api's inputs for the runs that plan it alone (a run against the root ignores them).
variables {
  name = "unit"
  tables = {
    executions_name    = "unit-executions"
    executions_arn     = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions"
    operations_name    = "unit-operations"
    operations_arn     = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations"
    coordination_name  = "unit-coordination"
    coordination_arn   = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
    subject_index_name = "domain-subjectId-index"
  }
  work_queue     = { url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work", arn = "arn:aws:sqs:eu-west-1:123456789012:unit-work" }
  payload_bucket = { name = "unit-payloads", arn = "arn:aws:s3:::unit-payloads" }
  schedule_group = { name = "unit", arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
  worker         = { function_name = "unit-worker", function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker", alias_name = "live" }
  package        = { path = "worker.zip", code_hash = "aGFzaA==" }
}

run "off_by_default" {
  command = plan

  assert {
    condition     = length(module.api) == 0 && output.api_url == null && output.api_function_name == null && output.api_caller_policy_json == null
    error_message = "Without enable_api nothing is created and the API's outputs are null."
  }
}

run "function_url_principals_and_environment" {
  command = plan

  variables {
    enable_api     = true
    workflow_names = ["orders", "orders.confirm"]
    api_principals = {
      read      = ["arn:aws:iam::123456789012:role/ops/reader", "arn:aws:iam::123456789012:role/operator"]
      operate   = ["arn:aws:iam::123456789012:role/operator"]
      callbacks = ["arn:aws:iam::123456789012:role/operator", "210987654321"]
    }
  }

  assert {
    condition = (
      module.api[0].function_name == "unit-api" &&
      module.api[0].log_group_name == "/aws/lambda/unit-api" &&
      module.api[0].role_name == "unit-api" &&
      output.api_function_name == "unit-api"
    )
    error_message = "The API function, its log group and its role are named <name>-api."
  }

  assert {
    condition     = output.api_url == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/" && output.api_url == module.api[0].function_url
    error_message = "api_url is the function URL."
  }

  assert {
    condition = (
      module.api[0].environment.STEPWELL_API_READ_PRINCIPALS == jsonencode(["arn:aws:iam::123456789012:role/ops/reader", "arn:aws:iam::123456789012:role/operator"]) &&
      module.api[0].environment.STEPWELL_API_OPERATE_PRINCIPALS == jsonencode(["arn:aws:iam::123456789012:role/operator"]) &&
      module.api[0].environment.STEPWELL_API_CALLBACK_PRINCIPALS == jsonencode(["arn:aws:iam::123456789012:role/operator", "210987654321"]) &&
      module.api[0].environment.STEPWELL_API_WORKFLOWS == jsonencode(["orders", "orders.confirm"]) &&
      module.api[0].environment.STEPWELL_API_MAX_WAIT_SECONDS == "60" &&
      module.api[0].environment.STEPWELL_EXECUTIONS_TABLE == "unit-executions" &&
      module.api[0].environment.STEPWELL_WORKER_FUNCTION_NAME == "unit-worker" &&
      module.api[0].environment.STEPWELL_WORKER_ALIAS == "live" &&
      module.api[0].environment.STEPWELL_MAX_EXECUTION_INPUT_BYTES == "262144" &&
      !contains(keys(module.api[0].environment), "STEPWELL_KMS_KEY_ARN")
    )
    error_message = "The function gets the principals per class, the workflows, its wait, the tables, the worker and the limits."
  }

  assert {
    condition = jsondecode(output.api_caller_policy_json).Statement == [
      {
        Sid       = "CallTheApiUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunctionUrl"
        Resource  = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
        Condition = { StringEquals = { "lambda:FunctionUrlAuthType" = "AWS_IAM" } }
      },
      {
        Sid       = "InvokeOnlyThroughTheUrl"
        Effect    = "Allow"
        Action    = "lambda:InvokeFunction"
        Resource  = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
        Condition = { Bool = { "lambda:InvokedViaFunctionUrl" = "true" } }
      },
    ]
    error_message = "A caller's policy: InvokeFunctionUrl for AWS_IAM URLs and InvokeFunction only through the URL, on the API function (the mock's function ARN)."
  }
}

run "submodule_resources" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = {
      read    = ["arn:aws:iam::123456789012:role/reader", "123456789012"]
      operate = ["arn:aws:iam::123456789012:role/operator"]
    }
    package = {
      path      = ".terraform/stepwell-build/unit-worker.zip"
      code_hash = "aGFzaA=="
    }
    timeout = 120
  }

  assert {
    condition = (
      module.function_url.function_name == "unit-api" &&
      module.function_url.configuration.handler == "stepwell.wiring.api_function.handler" &&
      module.function_url.configuration.filename == ".terraform/stepwell-build/unit-worker.zip" &&
      module.function_url.configuration.source_code_hash == "aGFzaA==" &&
      module.function_url.configuration.timeout == 120 &&
      module.function_url.configuration.memory_size == 256 &&
      module.function_url.configuration.environment.STEPWELL_API_MAX_WAIT_SECONDS == "120" &&
      module.function_url.configuration.environment == tomap(output.environment) &&
      module.function_url.configuration.reserved_concurrent_executions == 10 &&
      !contains(keys(module.function_url.configuration.environment), "STEPWELL_API_WORKFLOWS")
    )
    error_message = "The API function runs stepwell.wiring.api_function.handler from the worker's zip; it waits as long as its timeout."
  }

  assert {
    condition     = module.function_url.authorization_type == "AWS_IAM" && module.function_url.function_name == "unit-api"
    error_message = "The function URL has auth type AWS_IAM: only SigV4-signed requests reach the function."
  }

  assert {
    condition = (
      { for key, permission in aws_lambda_permission.principals : key => permission.principal } == {
        "read-0"    = "arn:aws:iam::123456789012:role/reader"
        "read-1"    = "123456789012"
        "operate-0" = "arn:aws:iam::123456789012:role/operator"
      } &&
      aws_lambda_permission.principals["read-1"].statement_id == "InvokeUrl-read-1" &&
      alltrue([
        for permission in aws_lambda_permission.principals :
        permission.action == "lambda:InvokeFunctionUrl" && permission.function_url_auth_type == "AWS_IAM" && permission.function_name == "unit-api"
      ])
    )
    error_message = "The resource policy lets each listed principal call the URL with signed requests (a statement per entry), and grants nothing else."
  }

  assert {
    condition = jsondecode(module.function_url.policy_json).Statement == [
      {
        Sid      = "ReadExecutions"
        Effect   = "Allow"
        Action   = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"]
        Resource = ["arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions", "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions/index/*"]
      },
      {
        Sid      = "WriteExecutions"
        Effect   = "Allow"
        Action   = ["dynamodb:PutItem", "dynamodb:UpdateItem"]
        Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions"
      },
      {
        Sid      = "ExecutionLogs"
        Effect   = "Allow"
        Action   = ["dynamodb:Query", "dynamodb:PutItem"]
        Resource = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations"
      },
      {
        Sid       = "CallbackRecords"
        Effect    = "Allow"
        Action    = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
        Resource  = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["cb#*"] } }
      },
      {
        Sid       = "ExecutionLeases"
        Effect    = "Allow"
        Action    = "dynamodb:GetItem"
        Resource  = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
        Condition = { "ForAllValues:StringLike" = { "dynamodb:LeadingKeys" = ["lease#*"] } }
      },
      {
        Sid      = "Payloads"
        Effect   = "Allow"
        Action   = ["s3:GetObject", "s3:PutObject"]
        Resource = "arn:aws:s3:::unit-payloads/*"
      },
      {
        Sid      = "WorkQueue"
        Effect   = "Allow"
        Action   = "sqs:SendMessage"
        Resource = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
      },
      {
        Sid      = "DeleteWakeUps"
        Effect   = "Allow"
        Action   = "scheduler:DeleteSchedule"
        Resource = "arn:aws:scheduler:eu-west-1:123456789012:schedule/unit/*"
      },
      {
        Sid      = "ListWakeUps"
        Effect   = "Allow"
        Action   = "scheduler:ListSchedules"
        Resource = "*"
      },
      {
        Sid      = "DurableFunctionsParameter"
        Effect   = "Allow"
        Action   = "ssm:GetParameter"
        Resource = "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/unit/durable-functions"
      },
      {
        Sid      = "WorkerVersions"
        Effect   = "Allow"
        Action   = ["lambda:GetAlias", "lambda:ListAliases", "lambda:ListVersionsByFunction"]
        Resource = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
      },
      {
        Sid    = "Logs"
        Effect = "Allow"
        Action = ["logs:CreateLogStream", "logs:PutLogEvents"]
        # Its own log group's ARN (the mock gives every log group this one).
        Resource = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/unit-worker:*"
      },
    ]
    error_message = "The API role may exactly: read executions and their indexes, create and end executions, read logs and put external inputs, read and complete callback records, read execution lease records (the carried batch), read and write payloads, send wake-ups, delete a stopped execution's wake-ups, read the durable functions' parameter, read the worker's versions, write its logs."
  }
}

run "api_principals_need_enable_api" {
  command = plan

  variables {
    api_principals = { read = ["123456789012"] }
  }

  expect_failures = [var.api_principals]
}

run "enable_api_needs_a_principal" {
  command = plan

  variables {
    enable_api = true
  }

  expect_failures = [var.api_principals]
}

run "principals_of_another_form_are_refused" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = { operate = ["arn:aws:iam::123456789012:group/admins"] }
  }

  expect_failures = [var.principals]
}

run "a_wildcard_principal_is_refused" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = { read = ["*"] }
  }

  expect_failures = [var.principals]
}

run "an_assumed_role_session_is_no_principal" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = { read = ["arn:aws:sts::123456789012:assumed-role/reader/session"] }
  }

  expect_failures = [var.principals]
}

run "too_many_principals_are_refused" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = { read = [for index in range(31) : format("1234567890%02d", index)] }
  }

  expect_failures = [var.principals]
}

run "the_submodule_needs_a_principal" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = {}
  }

  expect_failures = [var.principals]
}

run "the_submodule_timeout_is_bounded" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = { read = ["123456789012"] }
    timeout    = 5
  }

  expect_failures = [var.timeout]
}

run "api_timeout_is_bounded" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
    api_timeout    = 901
  }

  expect_failures = [var.api_timeout]
}

run "api_reserved_concurrency_is_a_whole_number" {
  command = plan

  variables {
    api_reserved_concurrency = 0
  }

  expect_failures = [var.api_reserved_concurrency]
}

# Principals limited to one tenant (api_tenant_principals): the function's STEPWELL_API_TENANT_PRINCIPALS,
# the resource policy that lets them through as class principals, and the validations.

run "tenant_principals_reach_the_function" {
  command = plan

  variables {
    enable_api = true
    api_principals = {
      read    = ["arn:aws:iam::123456789012:role/acme-reader", "arn:aws:iam::123456789012:role/operator"]
      operate = ["arn:aws:iam::123456789012:role/operator", "210987654321"]
    }
    api_tenant_principals = {
      "acme"         = ["arn:aws:iam::123456789012:role/acme-reader"]
      "globex:eu-1@" = ["210987654321", "arn:aws:iam::123456789012:role/acme-reader"]
    }
  }

  assert {
    condition = (
      module.api[0].environment.STEPWELL_API_TENANT_PRINCIPALS == "{\"acme\":[\"arn:aws:iam::123456789012:role/acme-reader\"],\"globex:eu-1@\":[\"210987654321\",\"arn:aws:iam::123456789012:role/acme-reader\"]}" &&
      jsondecode(module.api[0].environment.STEPWELL_API_TENANT_PRINCIPALS) == {
        "acme"         = ["arn:aws:iam::123456789012:role/acme-reader"]
        "globex:eu-1@" = ["210987654321", "arn:aws:iam::123456789012:role/acme-reader"]
      }
    )
    error_message = "The API function gets api_tenant_principals as the JSON object STEPWELL_API_TENANT_PRINCIPALS, tenant id to principals."
  }

  assert {
    condition     = module.api[0].environment.STEPWELL_API_READ_PRINCIPALS == jsonencode(["arn:aws:iam::123456789012:role/acme-reader", "arn:aws:iam::123456789012:role/operator"])
    error_message = "A tenant's principals keep their classes from api_principals."
  }
}

run "no_tenant_principals_no_variable" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
  }

  assert {
    condition     = !contains(keys(module.api[0].environment), "STEPWELL_API_TENANT_PRINCIPALS") && length(module.api[0].tenant_principals) == 0
    error_message = "Without api_tenant_principals the function gets no STEPWELL_API_TENANT_PRINCIPALS (no principal is limited to a tenant)."
  }
}

run "submodule_lets_tenant_principals_through" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals = {
      read      = ["arn:aws:iam::123456789012:role/acme-reader"]
      callbacks = ["arn:aws:iam::123456789012:user/globex-hooks"]
    }
    tenant_principals = {
      acme   = ["arn:aws:iam::123456789012:role/acme-reader"]
      globex = ["arn:aws:iam::123456789012:user/globex-hooks"]
    }
  }

  assert {
    condition = alltrue([
      for principal in flatten(values(var.tenant_principals)) : length([
        for permission in aws_lambda_permission.principals : permission
        if permission.principal == principal && permission.action == "lambda:InvokeFunctionUrl" && permission.function_url_auth_type == "AWS_IAM"
      ]) == 1
    ])
    error_message = "The function URL's resource policy lets each tenant's principal through (signed requests), once, as a class principal."
  }

  assert {
    condition     = jsondecode(module.function_url.configuration.environment.STEPWELL_API_TENANT_PRINCIPALS) == { acme = ["arn:aws:iam::123456789012:role/acme-reader"], globex = ["arn:aws:iam::123456789012:user/globex-hooks"] }
    error_message = "The function's environment carries the tenants' principals as JSON."
  }
}

run "tenant_principals_need_enable_api" {
  command = plan

  variables {
    api_tenant_principals = { acme = ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "a_tenant_id_with_a_hash_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { "acme#eu" = ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "a_tenant_id_over_128_characters_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { (format("%0129d", 0)) = ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

# The engine's domain rule (stepwell.model.KEY_PART_PATTERN): a tenant the API function could not read is refused
# at plan time rather than stopping the function at its start.
run "a_tenant_id_with_a_space_or_a_leading_symbol_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { "acme eu" = ["123456789012"], "-acme" = ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "an_empty_tenant_id_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { "" = ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "a_tenant_without_principals_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { acme = [] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "a_tenant_principal_of_another_form_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { acme = ["arn:aws:iam::123456789012:group/acme"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "a_tenant_principal_outside_api_principals_is_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { acme = ["arn:aws:iam::123456789012:role/acme-reader"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "tenant_principals_over_1024_characters_are_refused" {
  command = plan

  variables {
    enable_api            = true
    api_principals        = { read = ["123456789012"] }
    api_tenant_principals = { for index in range(40) : format("tenant-%02d-of-the-many", index) => ["123456789012"] }
  }

  expect_failures = [var.api_tenant_principals]
}

run "the_submodule_refuses_a_tenant_principal_outside_principals" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    tenant_principals = { acme = ["210987654321"] }
  }

  expect_failures = [var.tenant_principals]
}

run "the_submodule_refuses_a_tenant_id" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    tenant_principals = { "acme#1" = ["123456789012"] }
  }

  expect_failures = [var.tenant_principals]
}

run "the_submodule_refuses_a_tenant_principal_of_another_form" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    tenant_principals = { acme = ["*"] }
  }

  expect_failures = [var.tenant_principals]
}

run "the_submodule_refuses_a_tenant_without_principals" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    tenant_principals = { acme = [] }
  }

  expect_failures = [var.tenant_principals]
}

run "the_submodule_refuses_tenant_principals_over_1024_characters" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    tenant_principals = { for index in range(40) : format("tenant-%02d-of-the-many", index) => ["123456789012"] }
  }

  expect_failures = [var.tenant_principals]
}
