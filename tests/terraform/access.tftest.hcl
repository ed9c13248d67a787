# The access_policies output: one IAM policy document per kind of principal (docs/security.md).

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

variables {
  name = "unit"
}

run "reader_reads_and_changes_nothing" {
  command = plan

  assert {
    condition = alltrue(flatten([
      for statement in jsondecode(output.access_policies.reader).Statement : [
        for action in flatten([statement.Action]) : contains([
          "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:DescribeTable", "s3:GetObject",
          "lambda:ListVersionsByFunction", "lambda:ListAliases", "lambda:GetAlias",
        ], action)
      ]
    ]))
    error_message = "The reader policy grants only reads of the tables, the payload bucket and the worker's versions."
  }

  assert {
    condition = [
      for statement in jsondecode(output.access_policies.reader).Statement : statement.Resource
      if anytrue([for action in flatten([statement.Action]) : startswith(action, "lambda:")])
    ] == ["arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"]
    error_message = "The reader lists the versions and aliases of the module's worker only."
  }

  assert {
    condition = anytrue([
      for statement in jsondecode(output.access_policies.reader).Statement :
      contains(flatten([statement.Action]), "dynamodb:Query") && contains(flatten([statement.Resource]), "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-table/index/*")
    ])
    error_message = "The reader queries the tables' indexes (version-index: running executions per version)."
  }

  assert {
    condition = anytrue([
      for statement in jsondecode(output.access_policies.reader).Statement :
      contains(flatten([statement.Resource]), "arn:aws:s3:::unit-payloads-123456789012/*")
    ])
    error_message = "The reader reads payloads in the module's bucket only."
  }
}

run "callback_sender_puts_only_callback_commands" {
  command = plan

  assert {
    condition = (
      length(jsondecode(output.access_policies.callback_sender).Statement) == 1 &&
      jsondecode(output.access_policies.callback_sender).Statement[0].Action == "events:PutEvents" &&
      jsondecode(output.access_policies.callback_sender).Statement[0].Resource == "arn:aws:events:eu-west-1:123456789012:event-bus/unit" &&
      jsondecode(output.access_policies.callback_sender).Statement[0].Condition.StringEquals["events:source"] == "stepwell.client" &&
      toset(jsondecode(output.access_policies.callback_sender).Statement[0].Condition.StringEquals["events:detail-type"]) == toset([
        "stepwell.callback.success", "stepwell.callback.failure", "stepwell.callback.heartbeat",
      ])
    )
    error_message = "The callback sender may put callback commands on the module's bus, and nothing else."
  }
}

run "operator_has_no_wildcard_action_and_one_star_resource" {
  command = plan

  assert {
    condition = alltrue(flatten([
      for statement in jsondecode(output.access_policies.operator).Statement : [
        for action in flatten([statement.Action]) : !strcontains(action, "*")
      ]
    ]))
    error_message = "No operator action is a wildcard."
  }

  assert {
    condition = [
      for statement in jsondecode(output.access_policies.operator).Statement : statement.Action
      if contains(flatten([statement.Resource]), "*")
    ] == ["scheduler:ListSchedules"]
    error_message = "Only scheduler:ListSchedules (no resource-level permission) has a '*' resource."
  }

  assert {
    condition = anytrue([
      for statement in jsondecode(output.access_policies.operator).Statement :
      contains(flatten([statement.Resource]), "arn:aws:scheduler:eu-west-1:123456789012:schedule/unit/*")
    ])
    error_message = "The operator manages the schedules of the module's group only."
  }

  assert {
    condition = (
      anytrue([
        for statement in jsondecode(output.access_policies.operator).Statement :
        contains(flatten([statement.Action]), "lambda:ListVersionsByFunction") && contains(flatten([statement.Action]), "lambda:GetAlias") &&
        statement.Resource == "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
      ]) &&
      anytrue([
        for statement in jsondecode(output.access_policies.operator).Statement :
        contains(flatten([statement.Action]), "dynamodb:UpdateItem") && contains(flatten([statement.Resource]), "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-table")
      ]) &&
      !anytrue([
        for statement in jsondecode(output.access_policies.operator).Statement :
        anytrue([for action in flatten([statement.Action]) : contains(["lambda:DeleteFunction", "lambda:UpdateAlias"], action)])
      ])
    )
    error_message = "The operator reads the worker's versions and alias and upgrades executions (UpdateItem), but never deletes or moves versions."
  }

  assert {
    condition = [
      for statement in jsondecode(output.access_policies.operator).Statement : statement.Resource
      if contains(flatten([statement.Action]), "lambda:InvokeFunction")
    ] == ["arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"]
    error_message = "The operator may invoke the worker's alias live (a wake-up), and no other function or version."
  }

  assert {
    condition = alltrue([
      for name in ["reader", "callback_sender"] : !anytrue([
        for statement in jsondecode(output.access_policies[name]).Statement :
        contains(flatten([statement.Action]), "lambda:InvokeFunction")
      ])
    ])
    error_message = "The reader and the callback sender never invoke the worker."
  }
}

run "operator_manages_user_schedules_and_passes_only_the_scheduler_role" {
  command = plan

  assert {
    condition = {
      for statement in jsondecode(output.access_policies.operator).Statement : statement.Sid => [statement.Action, statement.Resource]
      if contains(["WakeUpSchedules", "UserSchedules"], statement.Sid)
      } == {
      WakeUpSchedules = [["scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:GetSchedule"], "arn:aws:scheduler:eu-west-1:123456789012:schedule/unit/*"]
      UserSchedules   = ["scheduler:UpdateSchedule", "arn:aws:scheduler:eu-west-1:123456789012:schedule/unit/start.*"]
    }
    error_message = "The operator creates, reads and deletes the group's schedules and updates (pauses, resumes) only the user's start.* ones."
  }

  assert {
    condition = [
      for statement in jsondecode(output.access_policies.operator).Statement : [statement.Resource, statement.Condition]
      if contains(flatten([statement.Action]), "iam:PassRole")
      ] == [[
        "arn:aws:iam::123456789012:role/unit-role",
        { StringEquals = { "iam:PassedToService" = "scheduler.amazonaws.com" } },
    ]]
    error_message = "The operator may pass the scheduler role, to Scheduler only, and no other role."
  }

  assert {
    condition = !anytrue([
      for statement in jsondecode(output.access_policies.reader).Statement :
      anytrue([for action in flatten([statement.Action]) : startswith(action, "scheduler:") || action == "iam:PassRole"])
    ])
    error_message = "The reader manages no schedules."
  }
}

run "each_event_source_gets_a_producer_policy_for_its_source_only" {
  command = plan

  variables {
    event_sources = {
      "com.acme.billing"              = ["acme"]
      "210987654321:com.globex.sales" = ["globex-*"]
    }
  }

  assert {
    condition     = toset(keys(output.access_policies.event_producers)) == toset(["com.acme.billing", "com.globex.sales"])
    error_message = "One producer policy per source, named by the source without its account."
  }

  assert {
    condition = alltrue([
      for source, document in output.access_policies.event_producers : (
        length(jsondecode(document).Statement) == 1 &&
        jsondecode(document).Statement[0].Action == "events:PutEvents" &&
        jsondecode(document).Statement[0].Resource == "arn:aws:events:eu-west-1:123456789012:event-bus/unit" &&
        jsondecode(document).Statement[0].Condition.StringEquals["events:source"] == source
      )
    ])
    error_message = "A producer may put events with its own source on the module's bus, and nothing else."
  }
}

run "customer_key_reaches_every_policy" {
  command = plan

  variables {
    kms_key_arn   = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    event_sources = { "com.acme.billing" = ["acme"] }
  }

  assert {
    condition = alltrue([
      for name, document in output.access_policies : anytrue([
        for statement in jsondecode(document).Statement :
        statement.Resource == "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
      ]) if name != "event_producers"
    ])
    error_message = "With a customer key, every principal may use it (the tables, queue and bucket are encrypted with it)."
  }

  assert {
    condition = alltrue([
      for source, document in output.access_policies.event_producers : anytrue([
        for statement in jsondecode(document).Statement :
        statement.Resource == "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
      ])
    ])
    error_message = "With a customer key, every principal may use it (the tables, queue and bucket are encrypted with it)."
  }
}
