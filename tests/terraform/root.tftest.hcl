# The root module: wiring of the submodules and the client_config contract of docs/architecture.md.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "client_config_has_the_contract_keys" {
  command = plan

  assert {
    condition = toset(keys(output.client_config)) == toset([
      "region", "name", "definitions_table", "executions_table", "operations_table", "coordination_table",
      "subject_index_name", "index_shards", "index_read_shards", "work_queue_url", "work_queue_arn", "dlq_url", "dlq_arn", "event_bus_name", "event_bus_arn",
      "schedule_group_name", "scheduler_role_arn", "long_wait_wakeups", "kms_key_arn", "payload_bucket", "worker_function_name",
      "worker_alias", "wake_function_arn", "direct_wake_ups", "callback_url", "max_execution_input_bytes",
      "max_execution_result_bytes", "max_operation_payload_bytes", "max_callback_result_bytes", "workflows",
    ])
    error_message = "client_config must hold exactly the keys of docs/architecture.md."
  }

  assert {
    condition = (
      output.client_config.region == "eu-west-1" &&
      output.client_config.name == "unit" &&
      output.client_config.definitions_table == "unit-definitions" &&
      output.client_config.executions_table == "unit-executions" &&
      output.client_config.operations_table == "unit-operations" &&
      output.client_config.coordination_table == "unit-coordination" &&
      output.client_config.subject_index_name == "domain-subjectId-index" &&
      output.client_config.event_bus_name == "unit" &&
      output.client_config.schedule_group_name == "unit" &&
      output.client_config.worker_function_name == "unit-worker" &&
      output.client_config.worker_alias == "live" &&
      output.client_config.wake_function_arn == "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live" &&
      output.client_config.direct_wake_ups == true &&
      output.client_config.payload_bucket == "unit-payloads-123456789012"
    )
    error_message = "client_config must name this deployment's resources."
  }

  assert {
    condition = (
      output.worker_alias_name == "live" &&
      output.worker_alias_arn == "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live" &&
      output.worker_version == "7" &&
      module.engine.environment.STEPWELL_KEEP_VERSIONS == "3"
    )
    error_message = "The root outputs the worker's alias and newest version, and keep_versions (default 3) reaches the worker."
  }

  assert {
    condition     = output.worker_package_path == ".terraform/stepwell-build/unit-worker.zip" && length(output.workflow_modules) == 0
    error_message = "The package is built into the build directory; without workflows_dir no module is imported."
  }
}

run "a_concurrency_cap_sends_client_wake_ups_through_the_queue" {
  command = plan

  variables {
    maximum_concurrency = 5
  }

  assert {
    condition     = output.client_config.direct_wake_ups == false
    error_message = "With maximum_concurrency set, clients wake executions through the queue, so the cap holds for them."
  }
}

run "dlq_arn_reaches_the_worker_and_client_config" {
  command = plan

  override_resource {
    target          = module.messaging.aws_sqs_queue.dlq
    override_during = plan
    values = {
      id  = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
      arn = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
      url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
    }
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_DLQ_ARN == "arn:aws:sqs:eu-west-1:123456789012:unit-dlq" &&
      output.client_config.dlq_arn == "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    )
    error_message = "The DLQ's ARN (the wake-up schedules' dead-letter queue) must reach the worker and client_config."
  }
}

run "existing_bus_and_workflows" {
  command = plan

  variables {
    create_event_bus = false
    event_bus_arn    = "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"
    workflows_dir    = "./tests/terraform/fixtures/workflows"
  }

  assert {
    condition = (
      output.client_config.event_bus_name == "platform-events" &&
      output.client_config.event_bus_arn == "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"
    )
    error_message = "An existing bus must be used by name and ARN."
  }

  assert {
    condition     = join(",", output.workflow_modules) == "workflows.billing,workflows.shipping"
    error_message = "Each top-level module of workflows_dir is imported as workflows.<module>."
  }
}

run "event_sources_reach_the_worker" {
  command = plan

  variables {
    event_sources = { "com.acme.billing" = ["acme"], "123456789012:com.globex" = ["globex-*"] }
  }

  assert {
    condition = jsonencode(output.event_sources) == jsonencode({
      "com.acme.billing"        = ["acme"]
      "123456789012:com.globex" = ["globex-*"]
      "stepwell.definitions"    = ["*"]
    })
    error_message = "The worker trusts the given sources and, on the module's own bus, the engine's source for every domain."
  }

  assert {
    condition     = jsondecode(module.engine.environment.STEPWELL_EVENT_SOURCES) == jsondecode(jsonencode(output.event_sources))
    error_message = "event_sources must reach the worker as STEPWELL_EVENT_SOURCES."
  }
}

run "existing_bus_does_not_trust_the_engine_source" {
  command = plan

  variables {
    create_event_bus = false
    event_bus_arn    = "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"
    event_sources    = { "com.acme.billing" = ["acme"] }
  }

  assert {
    condition     = jsonencode(output.event_sources) == jsonencode({ "com.acme.billing" = ["acme"] })
    error_message = "On an existing bus nothing guards the engine's source, so it is trusted only when listed."
  }
}
