# Status-change events in the root module: the worker's switch, the bus policy that reserves their source
# for the worker, and the rule that does not take them back to the work queue.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "status_change_events_are_on_by_default_and_reserved_for_the_worker" {
  command = plan

  assert {
    condition     = module.engine.environment.STEPWELL_STATUS_EVENTS == "true"
    error_message = "The worker puts status-change events by default (STEPWELL_STATUS_EVENTS=true)."
  }

  assert {
    condition = [
      for statement in jsondecode(module.messaging.event_bus_policy).Statement : statement.Condition.StringEquals["events:source"]
    ] == [["stepwell.definitions", "stepwell.executions"]]
    error_message = "On the module's bus only the worker may put the definitions' source and the status-change source."
  }

  assert {
    condition     = jsondecode(module.messaging.event_rule_pattern) == { source = [{ "anything-but" = ["stepwell.executions"] }] }
    error_message = "The module's rule must not send the status-change events back to the work queue."
  }
}

run "status_change_events_switch_off" {
  command = plan

  variables {
    status_change_events = false
  }

  assert {
    condition     = module.engine.environment.STEPWELL_STATUS_EVENTS == "false"
    error_message = "status_change_events = false must reach the worker as STEPWELL_STATUS_EVENTS=false."
  }
}
