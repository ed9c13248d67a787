# Payload limits (stepwell.limits, docs/security.md Limits): the max_*_bytes variables, their defaults (at
# least as strict as AWS durable functions'), their validations, and where they reach.

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

run "defaults_are_at_least_as_strict_as_aws" {
  command = plan

  variables {
    callback_urls = true
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_MAX_EXECUTION_INPUT_BYTES == "262144" &&
      module.engine.environment.STEPWELL_MAX_EXECUTION_RESULT_BYTES == "1048576" &&
      module.engine.environment.STEPWELL_MAX_OPERATION_PAYLOAD_BYTES == "262144" &&
      module.engine.environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "262144"
    )
    error_message = "The worker's limits default to 256 KiB (input, operation payload, callback result) and 1 MiB (result)."
  }

  assert {
    condition     = module.callback_urls[0].environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "262144"
    error_message = "The callbacks function refuses a callback result over the worker's limit."
  }

  assert {
    condition = (
      output.client_config.max_execution_input_bytes == 262144 &&
      output.client_config.max_execution_result_bytes == 1048576 &&
      output.client_config.max_operation_payload_bytes == 262144 &&
      output.client_config.max_callback_result_bytes == 262144
    )
    error_message = "client_config carries the limits, so the client and CLI refuse what the deployment would."
  }
}

run "chosen_limits_reach_the_worker_the_callbacks_function_and_the_client" {
  command = plan

  variables {
    callback_urls               = true
    max_execution_input_bytes   = 6291456
    max_execution_result_bytes  = 1024
    max_operation_payload_bytes = 4096
    max_callback_result_bytes   = 1048576
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_MAX_EXECUTION_INPUT_BYTES == "6291456" &&
      module.engine.environment.STEPWELL_MAX_EXECUTION_RESULT_BYTES == "1024" &&
      module.engine.environment.STEPWELL_MAX_OPERATION_PAYLOAD_BYTES == "4096" &&
      module.engine.environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "1048576" &&
      module.callback_urls[0].environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "1048576" &&
      output.client_config.max_operation_payload_bytes == 4096
    )
    error_message = "Each max_*_bytes reaches the worker's STEPWELL_MAX_*_BYTES, the callbacks function and client_config."
  }
}

run "accepts_the_least_and_the_most" {
  command = plan

  variables {
    max_execution_input_bytes   = 1024
    max_execution_result_bytes  = 6291456
    max_operation_payload_bytes = 6291456
    max_callback_result_bytes   = 1024
  }
}

run "rejects_an_input_limit_past_aws" {
  command = plan

  variables {
    max_execution_input_bytes = 6291457
  }

  expect_failures = [var.max_execution_input_bytes]
}

run "rejects_a_result_limit_under_1024" {
  command = plan

  variables {
    max_execution_result_bytes = 1023
  }

  expect_failures = [var.max_execution_result_bytes]
}

run "rejects_an_operation_payload_limit_past_aws" {
  command = plan

  variables {
    max_operation_payload_bytes = 6291457
  }

  expect_failures = [var.max_operation_payload_bytes]
}

run "rejects_a_callback_result_limit_past_aws" {
  command = plan

  variables {
    max_callback_result_bytes = 1048577
  }

  expect_failures = [var.max_callback_result_bytes]
}

run "rejects_a_fraction_of_a_byte" {
  command = plan

  variables {
    max_callback_result_bytes = 2048.5
  }

  expect_failures = [var.max_callback_result_bytes]
}

run "engine_submodule_limits_default_per_attribute" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    payload_limits = { operation_payload_bytes = 4096 }
  }

  assert {
    condition = (
      output.environment.STEPWELL_MAX_EXECUTION_INPUT_BYTES == "262144" &&
      output.environment.STEPWELL_MAX_EXECUTION_RESULT_BYTES == "1048576" &&
      output.environment.STEPWELL_MAX_OPERATION_PAYLOAD_BYTES == "4096" &&
      output.environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "262144"
    )
    error_message = "An attribute left out of payload_limits takes its default."
  }
}

run "engine_submodule_rejects_a_limit_past_aws" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    payload_limits = { callback_result_bytes = 1048577 }
  }

  expect_failures = [var.payload_limits]
}

run "callback_urls_function_takes_the_most_aws_allows" {
  command = plan

  variables {
    callback_urls             = true
    max_callback_result_bytes = 1048576
  }

  assert {
    condition     = module.callback_urls[0].environment.STEPWELL_MAX_CALLBACK_RESULT_BYTES == "1048576"
    error_message = "The callbacks function takes the root's max_callback_result_bytes."
  }
}
