# traces (issue 43): X-Ray active tracing and the OTLP endpoint's secret or parameter on the worker (modules/engine),
# passed from the root; bad values fail at the variable. The API and callback-URL functions (modules/function_url)
# take X-Ray only: they send no spans of their own, so they get no OTLP endpoint and no grant to read it.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

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
  dlq = {
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
    arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
  }
  event_bus = {
    name = "unit"
    arn  = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
  }
  schedule_group_name = "unit"
  scheduler_role_arn  = "arn:aws:iam::123456789012:role/unit-scheduler"
  payload_bucket = {
    name = "unit-payloads-123456789012"
    arn  = "arn:aws:s3:::unit-payloads-123456789012"
  }
}

run "off_by_default_nothing_changes" {
  command = plan

  module {
    source = "./modules/engine"
  }

  assert {
    condition     = length(aws_lambda_function.worker.tracing_config) == 0
    error_message = "Without traces.xray the worker keeps Lambda's default tracing (no tracing_config)."
  }

  assert {
    condition     = alltrue([for key in ["STEPWELL_OTLP_SECRET_ARN", "STEPWELL_OTLP_PARAMETER", "STEPWELL_WORKER_SPANS"] : !contains(keys(output.environment), key)])
    error_message = "Without traces the worker's environment names no OTLP endpoint and no spans."
  }

  assert {
    condition     = !strcontains(output.policy_json, "xray:") && !strcontains(output.policy_json, "secretsmanager:")
    error_message = "Without traces the worker's role has no X-Ray or Secrets Manager grant."
  }
}

run "xray_turns_on_active_tracing_with_its_grants" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    traces = { xray = true }
  }

  assert {
    condition     = aws_lambda_function.worker.tracing_config[0].mode == "Active"
    error_message = "traces.xray must set the worker's tracing_config mode to Active."
  }

  assert {
    condition = anytrue([for statement in jsondecode(output.policy_json).Statement :
      statement.Sid == "XRayTraces" && jsonencode(statement.Action) == jsonencode(["xray:PutTraceSegments", "xray:PutTelemetryRecords"])
    ])
    error_message = "traces.xray must grant xray:PutTraceSegments and xray:PutTelemetryRecords."
  }
}

run "secret_reaches_the_worker_by_arn_with_read_access_to_exactly_it" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    traces = {
      otlp_secret_arn  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf"
      otlp_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
      worker_spans     = true
    }
  }

  assert {
    condition = (
      output.environment.STEPWELL_OTLP_SECRET_ARN == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf" &&
      output.environment.STEPWELL_WORKER_SPANS == "true" &&
      !contains(keys(output.environment), "STEPWELL_OTLP_PARAMETER")
    )
    error_message = "The worker must get the secret's ARN (not its value) and STEPWELL_WORKER_SPANS=true."
  }

  assert {
    condition = anytrue([for statement in jsondecode(output.policy_json).Statement :
      statement.Sid == "TraceExportSecret" && statement.Action == "secretsmanager:GetSecretValue" &&
      statement.Resource == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf"
    ])
    error_message = "The worker's role must read exactly the OTLP secret."
  }

  assert {
    condition = anytrue([for statement in jsondecode(output.policy_json).Statement :
      statement.Sid == "TraceExportKey" && statement.Action == "kms:Decrypt" &&
      statement.Resource == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    ])
    error_message = "The worker's role must decrypt with the OTLP secret's key."
  }
}

run "parameter_reaches_the_worker_by_name_with_read_access_to_exactly_it" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    traces = { otlp_parameter = "/unit/otlp" }
  }

  assert {
    condition     = output.environment.STEPWELL_OTLP_PARAMETER == "/unit/otlp" && !contains(keys(output.environment), "STEPWELL_WORKER_SPANS")
    error_message = "The worker must get the parameter's name; its spans stay off unless worker_spans is set."
  }

  assert {
    condition = anytrue([for statement in jsondecode(output.policy_json).Statement :
      statement.Sid == "TraceExportParameter" && statement.Action == "ssm:GetParameter" &&
      endswith(jsonencode(statement.Resource), ":parameter/unit/otlp\"")
    ])
    error_message = "The worker's role must read exactly the OTLP parameter."
  }
}

run "rejects_secret_and_parameter_together" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = {
      otlp_secret_arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf"
      otlp_parameter  = "/unit/otlp"
    }
  }
  expect_failures = [var.traces]
}

run "rejects_a_secret_that_is_not_a_secret_arn" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = { otlp_secret_arn = "https://collector.example.com:4318" }
  }
  expect_failures = [var.traces]
}

run "rejects_a_parameter_name_not_from_the_root" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = { otlp_parameter = "otlp endpoint" }
  }
  expect_failures = [var.traces]
}

run "rejects_worker_spans_without_an_endpoint" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = { worker_spans = true }
  }
  expect_failures = [var.traces]
}

run "rejects_a_key_that_is_not_a_kms_key_arn" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = { otlp_parameter = "/unit/otlp", otlp_kms_key_arn = "alias/otlp" }
  }
  expect_failures = [var.traces]
}

run "rejects_a_key_without_a_secret_or_parameter" {
  command = plan
  module {
    source = "./modules/engine"
  }
  variables {
    traces = { otlp_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" }
  }
  expect_failures = [var.traces]
}

run "root_rejects_worker_spans_without_an_endpoint" {
  command = plan
  variables {
    name   = "unit"
    traces = { worker_spans = true }
  }
  expect_failures = [var.traces]
}

run "root_passes_traces_to_the_worker" {
  command = plan
  variables {
    name   = "unit"
    traces = { xray = true, otlp_parameter = "/unit/otlp", worker_spans = true }
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_OTLP_PARAMETER == "/unit/otlp" &&
      module.engine.environment.STEPWELL_WORKER_SPANS == "true" &&
      strcontains(module.engine.policy_json, "xray:PutTraceSegments")
    )
    error_message = "The root's traces must reach the worker's environment and role."
  }
}

run "function_url_off_by_default" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    function_name        = "unit-widget"
    function_description = "Stepwell: a widget."
    role_description     = "Stepwell widget: answers its function URL."
    handler              = "stepwell.wiring.widget.handler"
    package              = { path = "worker.zip", code_hash = "aGFzaA==" }
    policy_name          = "stepwell-widget"
    policy_statements    = jsonencode([{ Sid = "Queue", Effect = "Allow", Action = "sqs:SendMessage", Resource = "*" }])
    authorization_type   = "AWS_IAM"
  }

  assert {
    condition     = length(aws_lambda_function.this.tracing_config) == 0 && output.configuration.tracing_mode == "PassThrough"
    error_message = "Without xray_tracing the function keeps Lambda's default tracing."
  }

  assert {
    condition     = !strcontains(output.policy_json, "xray:")
    error_message = "Without xray_tracing the function's role has no X-Ray grant."
  }
}

run "function_url_xray_turns_on_active_tracing_with_its_grants" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    function_name        = "unit-widget"
    function_description = "Stepwell: a widget."
    role_description     = "Stepwell widget: answers its function URL."
    handler              = "stepwell.wiring.widget.handler"
    package              = { path = "worker.zip", code_hash = "aGFzaA==" }
    policy_name          = "stepwell-widget"
    policy_statements    = jsonencode([{ Sid = "Queue", Effect = "Allow", Action = "sqs:SendMessage", Resource = "*" }])
    authorization_type   = "AWS_IAM"
    xray_tracing         = true
  }

  assert {
    condition     = aws_lambda_function.this.tracing_config[0].mode == "Active" && output.configuration.tracing_mode == "Active"
    error_message = "xray_tracing must set the function's tracing_config mode to Active."
  }

  assert {
    condition = anytrue([for statement in jsondecode(output.policy_json).Statement :
      statement.Sid == "XRayTraces" && statement.Resource == "*" &&
      jsonencode(statement.Action) == jsonencode(["xray:PutTraceSegments", "xray:PutTelemetryRecords"])
    ])
    error_message = "xray_tracing must grant xray:PutTraceSegments and xray:PutTelemetryRecords."
  }
}

run "function_url_refuses_a_statement_named_as_the_modules_xray_grant" {
  command = plan

  module {
    source = "./modules/function_url"
  }

  variables {
    function_name        = "unit-widget"
    function_description = "Stepwell: a widget."
    role_description     = "Stepwell widget: answers its function URL."
    handler              = "stepwell.wiring.widget.handler"
    package              = { path = "worker.zip", code_hash = "aGFzaA==" }
    policy_name          = "stepwell-widget"
    policy_statements    = jsonencode([{ Sid = "XRayTraces", Effect = "Allow", Action = "xray:*", Resource = "*" }])
    authorization_type   = "AWS_IAM"
  }

  expect_failures = [var.policy_statements]
}

run "root_keeps_the_api_and_callback_functions_untraced_by_default" {
  command = plan
  variables {
    name           = "unit"
    enable_api     = true
    callback_urls  = true
    api_principals = { read = ["arn:aws:iam::123456789012:role/operator"] }
  }

  assert {
    condition = (
      module.api[0].tracing_mode == "PassThrough" && module.callback_urls[0].tracing_mode == "PassThrough" &&
      !strcontains(module.api[0].policy_json, "xray:") && !strcontains(module.callback_urls[0].policy_json, "xray:")
    )
    error_message = "Without traces.xray the API and callback-URL functions keep Lambda's default tracing and no X-Ray grant."
  }
}

run "root_passes_xray_to_the_api_and_callback_functions_and_no_otlp_grant" {
  command = plan
  variables {
    name           = "unit"
    enable_api     = true
    callback_urls  = true
    api_principals = { read = ["arn:aws:iam::123456789012:role/operator"] }
    traces = {
      xray             = true
      otlp_secret_arn  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:otlp-AbCdEf"
      otlp_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
      worker_spans     = true
    }
  }

  assert {
    condition     = module.api[0].tracing_mode == "Active" && module.callback_urls[0].tracing_mode == "Active"
    error_message = "traces.xray must turn on active tracing on the API and callback-URL functions."
  }

  assert {
    condition = alltrue([for policy in [module.api[0].policy_json, module.callback_urls[0].policy_json] :
      anytrue([for statement in jsondecode(policy).Statement :
        statement.Sid == "XRayTraces" &&
        jsonencode(statement.Action) == jsonencode(["xray:PutTraceSegments", "xray:PutTelemetryRecords"])
      ])
    ])
    error_message = "traces.xray must grant the API and callback-URL functions xray:PutTraceSegments and xray:PutTelemetryRecords."
  }

  assert {
    condition = alltrue([for policy in [module.api[0].policy_json, module.callback_urls[0].policy_json] :
      !strcontains(policy, "secret:otlp-AbCdEf") && !strcontains(policy, "key/1234abcd-12ab-34cd-56ef-1234567890ab")
    ])
    error_message = "The API and callback-URL functions send no spans: they must not read the OTLP secret or its key."
  }

  assert {
    condition = alltrue([for environment in [module.api[0].environment, module.callback_urls[0].environment] :
      !contains(keys(environment), "STEPWELL_OTLP_SECRET_ARN") && !contains(keys(environment), "STEPWELL_WORKER_SPANS")
    ])
    error_message = "The API and callback-URL functions' environments name no OTLP endpoint."
  }
}
