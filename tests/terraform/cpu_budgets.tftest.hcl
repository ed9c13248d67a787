# Definitions' CPU budgets (stepwell.features.definitions.budgets, docs/security.md Limits): the
# definitions_*_cpu_seconds variables, their defaults (the Python defaults), their validations (a run's
# below the worker's timeout, an expression's at most the run's) and the worker's environment.

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

run "defaults_reach_the_worker" {
  command = plan

  assert {
    condition = (
      module.engine.environment.STEPWELL_DEFINITIONS_RUN_CPU_SECONDS == "10" &&
      module.engine.environment.STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS == "0.25"
    )
    error_message = "The worker's budgets default to 10 s a run and 0.25 s an expression, as stepwell.features.definitions.budgets."
  }

  assert {
    condition     = !contains(keys(output.client_config), "definitions_run_cpu_seconds")
    error_message = "The budgets are the worker's only: client_config carries no definitions setting."
  }
}

run "chosen_budgets_reach_the_worker" {
  command = plan

  variables {
    timeout                            = 120
    definitions_run_cpu_seconds        = 90
    definitions_expression_cpu_seconds = 1.5
  }

  assert {
    condition = (
      module.engine.environment.STEPWELL_DEFINITIONS_RUN_CPU_SECONDS == "90" &&
      module.engine.environment.STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS == "1.5"
    )
    error_message = "definitions_*_cpu_seconds reach the worker's STEPWELL_DEFINITIONS_*_CPU_SECONDS."
  }
}

run "accepts_an_expression_budget_equal_to_the_run_budget" {
  command = plan

  variables {
    definitions_run_cpu_seconds        = 0.5
    definitions_expression_cpu_seconds = 0.5
  }
}

run "rejects_a_run_budget_of_0" {
  command = plan

  variables {
    definitions_run_cpu_seconds = 0
  }

  expect_failures = [var.definitions_run_cpu_seconds]
}

run "rejects_a_run_budget_at_the_workers_timeout" {
  command = plan

  variables {
    timeout                     = 30
    definitions_run_cpu_seconds = 30
  }

  expect_failures = [var.definitions_run_cpu_seconds]
}

run "rejects_a_run_budget_past_the_default_timeout" {
  command = plan

  variables {
    definitions_run_cpu_seconds = 61
  }

  expect_failures = [var.definitions_run_cpu_seconds]
}

run "rejects_an_expression_budget_of_0" {
  command = plan

  variables {
    definitions_expression_cpu_seconds = 0
  }

  expect_failures = [var.definitions_expression_cpu_seconds]
}

run "rejects_an_expression_budget_over_the_run_budget" {
  command = plan

  variables {
    definitions_run_cpu_seconds        = 2
    definitions_expression_cpu_seconds = 2.5
  }

  expect_failures = [var.definitions_expression_cpu_seconds]
}

# The engine submodule holds the same rules against its own timeout.

run "engine_submodule_rejects_a_run_budget_at_its_timeout" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    timeout                     = 10
    definitions_run_cpu_seconds = 10
  }

  expect_failures = [var.definitions_run_cpu_seconds]
}

run "engine_submodule_rejects_an_expression_budget_over_the_run_budget" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    definitions_expression_cpu_seconds = 11
  }

  expect_failures = [var.definitions_expression_cpu_seconds]
}
