# workflow_names (issue 39): the durable workflows a deployment has reach client_config.workflows, so the
# client and CLI refuse a start of any other at once (stepwell.client), and bad lists are refused at plan.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "unset_names_are_not_checked" {
  command = plan

  assert {
    condition     = contains(keys(output.client_config), "workflows") && output.client_config.workflows == null
    error_message = "Without workflow_names, client_config.workflows is null: the client lets every start through."
  }
}

run "names_reach_client_config" {
  command = plan

  variables {
    workflow_names = ["orders.fulfil", "shipments.book"]
  }

  assert {
    condition     = output.client_config.workflows == tolist(["orders.fulfil", "shipments.book"])
    error_message = "workflow_names must reach client_config.workflows as given."
  }
}

run "an_empty_list_is_a_deployment_without_code_workflows" {
  command = plan

  variables {
    workflow_names = []
  }

  assert {
    condition     = length(output.client_config.workflows) == 0
    error_message = "An empty list is kept (only definitions start there), not turned into null."
  }
}

run "rejects_a_name_the_engine_would_refuse" {
  command = plan

  variables {
    workflow_names = ["orders", "has space"]
  }

  expect_failures = [var.workflow_names]
}

run "rejects_a_name_given_twice" {
  command = plan

  variables {
    workflow_names = ["orders", "orders"]
  }

  expect_failures = [var.workflow_names]
}
