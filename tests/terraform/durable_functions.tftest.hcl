# Users' durable functions (durable_functions, issue 41): Lambda functions of any runtime that run as
# workflows by name. The SSM parameter the worker and the API function read them from (their environments
# carry its name only: issue 41's dependency cycle), the grants to read it, the worker's grant to invoke
# exactly those functions, each function's event invoke config (results to the work queue, no
# retries), the outputs a function's owner uses, and the validations of the root, the engine and the API.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

# The name, and modules/engine's inputs for the runs that plan it alone (a run against the root ignores them).
variables {
  name = "unit"
  tables = {
    definitions_name   = "unit-definitions"
    definitions_arn    = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-definitions"
    executions_name    = "unit-executions"
    executions_arn     = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions"
    operations_name    = "unit-operations"
    operations_arn     = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations"
    coordination_name  = "unit-coordination"
    coordination_arn   = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination"
    subject_index_name = "domain-subjectId-index"
  }
  work_queue = {
    url                        = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work"
    arn                        = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    visibility_timeout_seconds = 360
  }
  dlq                 = { url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq", arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq" }
  event_bus           = { name = "unit", arn = "arn:aws:events:eu-west-1:123456789012:event-bus/unit" }
  schedule_group_name = "unit"
  scheduler_role_arn  = "arn:aws:iam::123456789012:role/unit-scheduler"
  payload_bucket      = { name = "unit-payloads-123456789012", arn = "arn:aws:s3:::unit-payloads-123456789012" }
}

run "none_by_default" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
  }

  assert {
    condition = (
      !contains(keys(module.engine.environment), "STEPWELL_DURABLE_FUNCTIONS") &&
      !contains(keys(module.api[0].environment), "STEPWELL_DURABLE_FUNCTIONS") &&
      !contains(keys(module.api[0].environment), "STEPWELL_API_FUNCTION_PRINCIPALS") &&
      length(module.engine.durable_functions) == 0 &&
      output.client_config.workflows == null
    )
    error_message = "Without durable_functions neither the worker nor the API function gets STEPWELL_DURABLE_FUNCTIONS, and the workflows stay unchecked."
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_DURABLE_FUNCTIONS_PARAMETER == "/stepwell/unit/durable-functions" &&
      module.api[0].environment.STEPWELL_DURABLE_FUNCTIONS_PARAMETER == "/stepwell/unit/durable-functions" &&
      jsondecode(module.api[0].durable_functions_parameter.value) == { functions = {} }
    )
    error_message = "With the API the parameter is there, empty, and both functions carry its name: they need not know whether there are functions."
  }

  assert {
    condition     = output.durable_functions_endpoint == output.api_url && jsondecode(output.durable_function_policy_json).Statement[2].Sid == "ResultsToTheWorkQueue"
    error_message = "With enable_api the endpoint and the policy for a durable function are there before any is listed."
  }
}

run "without_the_api_the_outputs_are_null" {
  command = plan

  assert {
    condition     = output.durable_functions_endpoint == null && output.durable_function_policy_json == null
    error_message = "Without enable_api there is no endpoint for a durable function and no policy."
  }

  assert {
    condition = (
      !contains(keys(module.engine.environment), "STEPWELL_DURABLE_FUNCTIONS_PARAMETER") &&
      length([for statement in jsondecode(module.engine.policy_json).Statement : statement if statement.Sid == "DurableFunctionsParameter"]) == 0
    )
    error_message = "Without the API there is no parameter: the worker neither names it nor may read it."
  }
}

run "functions_reach_the_worker_the_api_and_the_outputs" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { operate = ["arn:aws:iam::123456789012:role/operator"] }
    workflow_names = ["orders"]
    kms_key_arn    = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    durable_functions = {
      greeter          = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" }
      "billing.export" = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:billing-export", qualifier = "live" }
    }
  }

  assert {
    condition = (
      jsondecode(module.api[0].durable_functions_parameter.value) == {
        functions = {
          "billing.export" = {
            function_arn    = "arn:aws:lambda:eu-west-1:123456789012:function:billing-export"
            qualifier       = "live"
            timeout_seconds = 45
            role_arn        = "arn:aws:iam::123456789012:role/durable-function"
          }
          greeter = {
            function_arn    = "arn:aws:lambda:eu-west-1:123456789012:function:greeter"
            qualifier       = null
            timeout_seconds = 45
            role_arn        = "arn:aws:iam::123456789012:role/durable-function"
          }
        }
      } &&
      module.api[0].durable_functions_parameter.name == "/stepwell/unit/durable-functions" &&
      module.api[0].durable_functions_parameter.type == "SecureString" &&
      module.api[0].durable_functions_parameter.key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" &&
      module.api[0].durable_functions_parameter.tier == "Intelligent-Tiering"
    )
    error_message = "The parameter holds each function's ARN, qualifier (null when none), timeout and execution role (the mock's), read from the function; with kms_key_arn it is a SecureString with that key; Intelligent-Tiering (standard under 4 KB, advanced above)."
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_DURABLE_FUNCTIONS_PARAMETER == "/stepwell/unit/durable-functions" &&
      module.api[0].environment.STEPWELL_DURABLE_FUNCTIONS_PARAMETER == "/stepwell/unit/durable-functions" &&
      !contains(keys(module.engine.environment), "STEPWELL_DURABLE_FUNCTIONS") &&
      !contains(keys(module.api[0].environment), "STEPWELL_DURABLE_FUNCTIONS") &&
      !contains(keys(module.api[0].environment), "STEPWELL_API_FUNCTION_PRINCIPALS")
    )
    error_message = "The worker and the API function carry only the parameter's name: their environments must not depend on the functions (which take the API's URL)."
  }

  assert {
    condition = (
      [for statement in jsondecode(module.engine.policy_json).Statement : [statement.Action, statement.Resource] if statement.Sid == "DurableFunctionsParameter"] == [["ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/unit/durable-functions"]] &&
      [for statement in jsondecode(module.api[0].policy_json).Statement : [statement.Action, statement.Resource] if statement.Sid == "DurableFunctionsParameter"] == [["ssm:GetParameter", "arn:aws:ssm:eu-west-1:123456789012:parameter/stepwell/unit/durable-functions"]] &&
      [for statement in jsondecode(module.api[0].policy_json).Statement : statement.Action if statement.Sid == "CustomerKey"] == [["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]]
    )
    error_message = "The worker's and the API function's roles may read exactly that parameter (and decrypt with the customer key)."
  }

  assert {
    condition = (
      output.client_config.workflows == tolist(["orders", "billing.export", "greeter"]) &&
      module.api[0].environment.STEPWELL_API_WORKFLOWS == jsonencode(["orders"])
    )
    error_message = "The durable functions' names join workflow_names for the client and the CLI; the API function gets its own workflows only and the functions' names from the parameter."
  }

  assert {
    condition     = output.durable_functions_endpoint == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/" && output.durable_functions_endpoint == output.api_url
    error_message = "durable_functions_endpoint is the API's URL (the function's AWS_ENDPOINT_URL_LAMBDA)."
  }

  assert {
    condition = jsondecode(output.durable_function_policy_json) == {
      Version = "2012-10-17"
      Statement = [
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
        {
          Sid      = "ResultsToTheWorkQueue"
          Effect   = "Allow"
          Action   = "sqs:SendMessage"
          Resource = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
        },
        {
          Sid      = "WorkQueueKey"
          Effect   = "Allow"
          Action   = ["kms:GenerateDataKey", "kms:Decrypt"]
          Resource = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
        },
      ]
    }
    error_message = "A durable function's role may call the API's URL (AWS_IAM, and InvokeFunction only through the URL: the mock's function ARN is the API's), send its results to the work queue and use the queue's key."
  }
}

run "engine_invoke_configs_and_grant" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:helper"]
    durable_functions = {
      greeter          = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" }
      "billing.export" = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:billing-export", qualifier = "live" }
      pinned           = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:pinned", qualifier = "12" }
    }
  }

  assert {
    condition = {
      for name, config in aws_lambda_function_event_invoke_config.durable_functions : name => [config.function_name, config.qualifier]
      } == {
      greeter          = ["arn:aws:lambda:eu-west-1:123456789012:function:greeter", "$LATEST"]
      "billing.export" = ["arn:aws:lambda:eu-west-1:123456789012:function:billing-export", "live"]
      pinned           = ["arn:aws:lambda:eu-west-1:123456789012:function:pinned", "12"]
    }
    error_message = "Each durable function gets an event invoke config for its qualifier, $LATEST when none is given."
  }

  assert {
    condition = alltrue([
      for config in aws_lambda_function_event_invoke_config.durable_functions :
      config.maximum_retry_attempts == 0 && config.maximum_event_age_in_seconds == 21600 &&
      config.destination_config[0].on_success[0].destination == "arn:aws:sqs:eu-west-1:123456789012:unit-work" &&
      config.destination_config[0].on_failure[0].destination == "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    ])
    error_message = "A durable function's invocations are not retried by Lambda, expire after 6 hours, and send success and failure to the work queue."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.durable_functions[0].policy).Statement : [statement.Effect, statement.Action, statement.Resource]
      if statement.Sid == "DurableFunctions"
      ] == [["Allow", "lambda:InvokeFunction", [
        "arn:aws:lambda:eu-west-1:123456789012:function:billing-export",
        "arn:aws:lambda:eu-west-1:123456789012:function:billing-export:live",
        "arn:aws:lambda:eu-west-1:123456789012:function:greeter",
        "arn:aws:lambda:eu-west-1:123456789012:function:greeter:$LATEST",
        "arn:aws:lambda:eu-west-1:123456789012:function:pinned",
        "arn:aws:lambda:eu-west-1:123456789012:function:pinned:12",
    ]]]
    error_message = "The worker may invoke exactly the durable functions, unqualified and with their qualifier."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid
      if contains(flatten([statement.Action]), "lambda:InvokeFunction")
    ] == ["OwnVersions", "InvokeTargets"]
    error_message = "The worker's own policy (on which the worker function depends) lets it invoke its own versions and the invoke targets only; the durable functions' grant is a policy of its own."
  }

  assert {
    condition = (
      aws_iam_role_policy.durable_functions[0].name == "stepwell-durable-functions" &&
      !contains(keys(aws_lambda_function.worker.environment[0].variables), "STEPWELL_DURABLE_FUNCTIONS") &&
      !contains(keys(aws_lambda_function.worker.environment[0].variables), "STEPWELL_DURABLE_FUNCTIONS_PARAMETER")
    )
    error_message = "The engine alone (no parameter name given) puts nothing of the durable functions in the worker's environment."
  }
}

run "engine_without_durable_functions_grants_and_configures_nothing" {
  command = plan

  module {
    source = "./modules/engine"
  }

  assert {
    condition = (
      length(aws_lambda_function_event_invoke_config.durable_functions) == 0 &&
      length(aws_iam_role_policy.durable_functions) == 0 &&
      !contains(keys(aws_lambda_function.worker.environment[0].variables), "STEPWELL_DURABLE_FUNCTIONS")
    )
    error_message = "Without durable functions: no invoke config, no grant, no STEPWELL_DURABLE_FUNCTIONS."
  }
}

# The root's validations.

run "durable_functions_need_enable_api" {
  command = plan

  variables {
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_name_that_is_no_workflow_name_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { "1greeter" = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_name_in_workflow_names_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    workflow_names    = ["orders", "greeter"]
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_qualified_function_arn_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter:live" } }
  }

  expect_failures = [var.durable_functions]
}

run "an_arn_of_another_service_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { greeter = { function_arn = "arn:aws:states:eu-west-1:123456789012:stateMachine:greeter" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_version_0_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "0" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_qualifier_with_a_colon_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "live:1" } }
  }

  expect_failures = [var.durable_functions]
}

run "a_lowercase_latest_is_refused" {
  command = plan

  variables {
    enable_api        = true
    api_principals    = { read = ["123456789012"] }
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "$latest" } }
  }

  expect_failures = [var.durable_functions]
}

run "accepts_latest_a_version_and_an_alias" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
    durable_functions = {
      latest  = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:latest", qualifier = "$LATEST" }
      version = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:version", qualifier = "3" }
      alias   = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:alias", qualifier = "blue-2_x" }
    }
  }

  assert {
    condition     = jsondecode(module.api[0].durable_functions_parameter.value).functions.latest.qualifier == "$LATEST"
    error_message = "$LATEST, a version number and an alias name are qualifiers."
  }
}

# The bound (3072 characters of JSON): 26 such registrations (3069 characters) are taken, and their
# parameter, over a standard parameter's 4 KB, within an advanced one's 8 KB; 27 (3187) are refused.
run "durable_functions_up_to_3072_characters_are_accepted" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
    durable_functions = {
      for index in range(26) : format("workflow-%02d", index) => { function_arn = format("arn:aws:lambda:eu-west-1:123456789012:function:function-number-%02d", index), qualifier = "live" }
    }
  }

  assert {
    condition = (
      length(jsonencode(var.durable_functions)) == 3069 &&
      length(jsondecode(module.api[0].durable_functions_parameter.value).functions) == 26 &&
      length(module.api[0].durable_functions_parameter.value) > 4096 &&
      length(module.api[0].durable_functions_parameter.value) <= 8192 &&
      module.api[0].durable_functions_parameter.tier == "Intelligent-Tiering"
    )
    error_message = "26 registrations (3069 characters) are taken: their parameter is over 4 KB (so advanced, which Intelligent-Tiering chooses) and within 8 KB."
  }
}

run "durable_functions_over_3072_characters_are_refused" {
  command = plan

  variables {
    enable_api     = true
    api_principals = { read = ["123456789012"] }
    durable_functions = {
      for index in range(27) : format("workflow-%02d", index) => { function_arn = format("arn:aws:lambda:eu-west-1:123456789012:function:function-number-%02d", index), qualifier = "live" }
    }
  }

  expect_failures = [var.durable_functions]
}

# The engine's and the API's own.

run "engine_refuses_a_function_of_another_account" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:210987654321:function:greeter" } }
  }

  expect_failures = [aws_lambda_function_event_invoke_config.durable_functions]
}

run "engine_refuses_a_function_of_another_region" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:us-east-1:123456789012:function:greeter" } }
  }

  expect_failures = [aws_lambda_function_event_invoke_config.durable_functions]
}

run "engine_refuses_a_name" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = { "greeter/v2" = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter" } }
  }

  expect_failures = [var.durable_functions]
}

run "engine_refuses_a_qualified_arn" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter:3" } }
  }

  expect_failures = [var.durable_functions]
}

run "engine_refuses_a_qualifier" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "" } }
  }

  expect_failures = [var.durable_functions]
}

run "engine_refuses_over_3072_characters" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    durable_functions = {
      for index in range(27) : format("workflow-%02d", index) => { function_arn = format("arn:aws:lambda:eu-west-1:123456789012:function:function-number-%02d", index), qualifier = "live" }
    }
  }

  expect_failures = [var.durable_functions]
}

run "api_submodule_environment" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals                  = { read = ["123456789012"] }
    package                     = { path = "worker.zip", code_hash = "aGFzaA==" }
    schedule_group              = { name = "unit", arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
    worker                      = { function_name = "unit-worker", function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker", alias_name = "live" }
    durable_functions_parameter = "/stepwell/unit/durable-functions"
    durable_functions = {
      greeter       = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "7" }
      "orders.ship" = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:ship" }
    }
  }

  assert {
    condition = (
      jsondecode(output.durable_functions_parameter.value).functions.greeter == {
        function_arn    = "arn:aws:lambda:eu-west-1:123456789012:function:greeter"
        qualifier       = "7"
        timeout_seconds = 45
        role_arn        = "arn:aws:iam::123456789012:role/durable-function"
      } &&
      aws_ssm_parameter.durable_functions.type == "String" &&
      output.environment.STEPWELL_DURABLE_FUNCTIONS_PARAMETER == "/stepwell/unit/durable-functions" &&
      !contains(keys(output.environment), "STEPWELL_API_FUNCTION_PRINCIPALS")
    )
    error_message = "The API writes each function's registration, timeout and execution role (read for its qualifier) to the parameter, a plain String without kms_key_arn, and its function carries the parameter's name only."
  }

  assert {
    condition = (
      { for name, permission in aws_lambda_permission.functions : name => [permission.statement_id, permission.principal, permission.action, permission.function_url_auth_type] } == {
        greeter       = ["InvokeUrl-function-greeter-b0330d52", "arn:aws:iam::123456789012:role/durable-function", "lambda:InvokeFunctionUrl", "AWS_IAM"]
        "orders.ship" = ["InvokeUrl-function-orders_ship-b8b963ca", "arn:aws:iam::123456789012:role/durable-function", "lambda:InvokeFunctionUrl", "AWS_IAM"]
      } &&
      data.aws_lambda_function.durable["greeter"].qualifier == "7" && data.aws_lambda_function.durable["orders.ship"].qualifier == "$LATEST"
    )
    error_message = "The URL's resource policy lets each durable function's role through (signed requests); its role is read for the qualifier it runs."
  }
}

run "api_submodule_refuses_a_qualifier" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals        = { read = ["123456789012"] }
    package           = { path = "worker.zip", code_hash = "aGFzaA==" }
    schedule_group    = { name = "unit", arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
    worker            = { function_name = "unit-worker", function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker", alias_name = "live" }
    durable_functions = { greeter = { function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:greeter", qualifier = "007" } }

    durable_functions_parameter = "/stepwell/unit/durable-functions"
  }

  expect_failures = [var.durable_functions]
}

run "api_submodule_refuses_over_3072_characters" {
  command = plan

  module {
    source = "./modules/api"
  }

  variables {
    principals     = { read = ["123456789012"] }
    package        = { path = "worker.zip", code_hash = "aGFzaA==" }
    schedule_group = { name = "unit", arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
    worker         = { function_name = "unit-worker", function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker", alias_name = "live" }
    durable_functions = {
      for index in range(27) : format("workflow-%02d", index) => { function_arn = format("arn:aws:lambda:eu-west-1:123456789012:function:function-number-%02d", index), qualifier = "live" }
    }

    durable_functions_parameter = "/stepwell/unit/durable-functions"
  }

  expect_failures = [var.durable_functions]
}

# Within the bound, roles with a long path (205 characters) take the document past 8192: the parameter's
# precondition says so at plan time, before SSM would refuse it.
run "api_submodule_refuses_a_document_over_8192_characters" {
  command = plan

  module {
    source = "./modules/api"
  }

  override_data {
    target = data.aws_lambda_function.durable
    values = {
      role    = "arn:aws:iam::123456789012:role/business-unit-00/business-unit-01/business-unit-02/business-unit-03/business-unit-04/business-unit-05/business-unit-06/business-unit-07/business-unit-08/business-unit-09/business-unit-10/business-unit-11/durable-function"
      timeout = 900
    }
  }

  variables {
    principals     = { read = ["123456789012"] }
    package        = { path = "worker.zip", code_hash = "aGFzaA==" }
    schedule_group = { name = "unit", arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit" }
    worker         = { function_name = "unit-worker", function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker", alias_name = "live" }
    durable_functions = {
      for index in range(26) : format("workflow-%02d", index) => { function_arn = format("arn:aws:lambda:eu-west-1:123456789012:function:function-number-%02d", index), qualifier = "live" }
    }

    durable_functions_parameter = "/stepwell/unit/durable-functions"
  }

  expect_failures = [aws_ssm_parameter.durable_functions]
}

# Issue 41: a function that takes durable_functions_endpoint as its AWS_ENDPOINT_URL_LAMBDA and is registered
# in the same root plans: Terraform would refuse a dependency cycle ("Cycle: ...") before any assertion.
run "a_function_registered_in_the_same_root_takes_the_endpoint" {
  command = plan

  module {
    source = "./tests/terraform/fixtures/durable_function_endpoint"
  }

  variables {
    name = "cycle"
  }

  assert {
    condition     = output.endpoint == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/" && output.parameter == "/stepwell/cycle/durable-functions"
    error_message = "The function gets the API's URL, and the module's parameter is named from the name alone."
  }
}
