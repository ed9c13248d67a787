# modules/engine: the worker function, its environment, SQS mapping, log group, least-privilege role and package.

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

run "function_environment_mapping_and_role" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    workflows_dir = "./tests/terraform/fixtures/workflows"
  }

  assert {
    condition = (
      aws_lambda_function.worker.function_name == "unit-worker" &&
      aws_lambda_function.worker.handler == "stepwell.wiring.entry.handler" &&
      aws_lambda_function.worker.runtime == "python3.13" &&
      aws_lambda_function.worker.architectures == tolist(["arm64"]) &&
      aws_lambda_function.worker.timeout == 60 && aws_lambda_function.worker.memory_size == 512
    )
    error_message = "Worker defaults: stepwell.wiring.entry.handler on python3.13/arm64, 60 s, 512 MB."
  }

  assert {
    condition = aws_lambda_function.worker.environment[0].variables == tomap({
      STEPWELL_NAME               = "unit"
      STEPWELL_DEFINITIONS_TABLE  = "unit-definitions"
      STEPWELL_EXECUTIONS_TABLE   = "unit-executions"
      STEPWELL_OPERATIONS_TABLE   = "unit-operations"
      STEPWELL_COORDINATION_TABLE = "unit-coordination"
      STEPWELL_SUBJECT_INDEX      = "domain-subjectId-index"
      STEPWELL_INDEX_SHARDS       = "1"
      STEPWELL_INDEX_READ_SHARDS  = "1"
      STEPWELL_WORK_QUEUE_URL     = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work"
      STEPWELL_WORK_QUEUE_ARN     = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
      STEPWELL_DLQ_URL            = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-dlq"
      STEPWELL_DLQ_ARN            = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
      STEPWELL_EVENT_BUS_NAME     = "unit"
      STEPWELL_EVENT_BUS_ARN      = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
      STEPWELL_SCHEDULE_GROUP     = "unit"
      STEPWELL_SCHEDULER_ROLE_ARN = "arn:aws:iam::123456789012:role/unit-scheduler"
      STEPWELL_KMS_KEY_ARN        = ""
      STEPWELL_PAYLOAD_BUCKET     = "unit-payloads-123456789012"
      STEPWELL_RETENTION_DAYS     = "30"
      STEPWELL_WORKFLOW_MODULES   = "workflows.billing,workflows.shipping"
      STEPWELL_EVENT_EXTRACTOR    = "{}"
      STEPWELL_EVENT_SOURCES      = "{}"
      STEPWELL_LOG_LEVEL          = "INFO"
      # The stepwell.http action is disabled until the operator allows hosts.
      STEPWELL_HTTP_ALLOWLIST        = "[]"
      STEPWELL_HTTP_ALLOWED_NETWORKS = "[]"
      # Definitions' CPU budgets (stepwell.features.definitions.budgets): a run's, each expression's.
      STEPWELL_DEFINITIONS_RUN_CPU_SECONDS        = "10"
      STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS = "0.25"
      # context.invoke reaches no Lambda function until the operator lists some.
      STEPWELL_INVOKE_FUNCTIONS     = "[]"
      STEPWELL_WORKER_FUNCTION_NAME = "unit-worker"
      STEPWELL_WORKER_ALIAS         = "live"
      STEPWELL_WAKE_FUNCTION_ARN    = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
      STEPWELL_KEEP_VERSIONS        = "3"
      # The reconciler outwaits it before pruning a version a killed first run may pin to.
      STEPWELL_WORK_QUEUE_VISIBILITY_SECONDS = "360"
      # Payload limits (stepwell.limits), AWS durable functions' or stricter.
      STEPWELL_MAX_EXECUTION_INPUT_BYTES   = "262144"
      STEPWELL_MAX_EXECUTION_RESULT_BYTES  = "1048576"
      STEPWELL_MAX_OPERATION_PAYLOAD_BYTES = "262144"
      STEPWELL_MAX_CALLBACK_RESULT_BYTES   = "262144"
      STEPWELL_STATUS_EVENTS               = "true"
    })
    error_message = "The worker environment must be exactly the variables of docs/architecture.md."
  }

  assert {
    condition = (
      aws_lambda_event_source_mapping.work_queue.event_source_arn == "arn:aws:sqs:eu-west-1:123456789012:unit-work" &&
      aws_lambda_event_source_mapping.work_queue.function_response_types == toset(["ReportBatchItemFailures"]) &&
      aws_lambda_event_source_mapping.work_queue.batch_size == 10 &&
      aws_lambda_event_source_mapping.work_queue.maximum_batching_window_in_seconds == 0
    )
    error_message = "The SQS mapping must consume the work queue with ReportBatchItemFailures."
  }

  assert {
    condition = (
      aws_lambda_function.worker.publish &&
      aws_lambda_alias.live.name == "live" &&
      aws_lambda_alias.live.function_name == "unit-worker" &&
      aws_lambda_alias.live.function_version == aws_lambda_function.worker.version &&
      aws_lambda_alias.live.function_version == "7"
    )
    error_message = "The worker must publish a version per change, and the alias live must point at the newest one."
  }

  assert {
    condition = (
      output.wake_function_arn == aws_lambda_alias.live.arn &&
      aws_lambda_function_event_invoke_config.live.function_name == "unit-worker" &&
      aws_lambda_function_event_invoke_config.live.qualifier == "live" &&
      aws_lambda_function_event_invoke_config.live.maximum_retry_attempts == 2 &&
      aws_lambda_function_event_invoke_config.live.destination_config[0].on_failure[0].destination == "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    )
    error_message = "Wake-ups invoke the alias live; a run failing there is retried twice, then goes to the work queue."
  }

  assert {
    condition = (
      aws_lambda_function_recursion_config.worker.function_name == "unit-worker" &&
      aws_lambda_function_recursion_config.worker.recursive_loop == "Allow"
    )
    error_message = "The worker's chain of runs through its own work queue must not be stopped by Lambda's recursive loop detection."
  }

  assert {
    condition = (
      aws_lambda_event_source_mapping.work_queue.function_name == aws_lambda_alias.live.arn &&
      aws_lambda_event_source_mapping.work_queue.function_name == "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
    )
    error_message = "The SQS mapping must invoke the alias live, so new work runs on the newest version."
  }

  assert {
    condition = [output.alias_name, output.alias_arn, output.function_version] == [
      "live", "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live", "7",
    ]
    error_message = "The module must output the alias's name and ARN and the newest version."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid => [statement.Action, statement.Resource]
      if contains(["OwnVersions", "ReadOwnVersions"], statement.Sid)
      } == {
      OwnVersions     = [["lambda:InvokeFunction", "lambda:DeleteFunction"], "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:*"]
      ReadOwnVersions = [["lambda:ListVersionsByFunction", "lambda:GetAlias"], "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"]
    }
    error_message = "The worker may invoke and delete only its own qualified ARNs (versions, alias) and list its own versions and read its alias."
  }

  assert {
    condition = alltrue(flatten([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : [
        for resource in flatten([statement.Resource]) : endswith(resource, ":*") && startswith(resource, "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:")
      ] if anytrue([for action in flatten([statement.Action]) : contains(["lambda:InvokeFunction", "lambda:DeleteFunction"], action)])
    ]))
    error_message = "No statement may let the worker invoke or delete anything but its own function's qualified ARNs (never the unqualified one: the function itself)."
  }

  assert {
    condition     = aws_cloudwatch_log_group.worker.name == "/aws/lambda/unit-worker" && aws_cloudwatch_log_group.worker.retention_in_days == 30
    error_message = "The worker's log group must be /aws/lambda/{name}-worker with the retention variable."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement :
      alltrue([for action in flatten([statement.Action]) : !strcontains(action, "*")])
    ])
    error_message = "No action in the worker policy may contain a wildcard."
  }

  assert {
    condition = alltrue([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : !contains(flatten([statement.Resource]), "*") if statement.Sid != "ListTimerSchedules"
    ])
    error_message = "Without a VPC only scheduler:ListSchedules (no resource-level permission) has a \"*\" resource."
  }

  assert {
    condition = toset(flatten([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Resource if statement.Sid == "Tables"
      ])) == toset([
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-definitions",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-definitions/index/*",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-executions/index/*",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-operations/index/*",
      "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-coordination/index/*",
    ])
    error_message = "DynamoDB access must be scoped to the four tables and their indexes."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid => statement.Resource
      if contains(["TimerSchedules", "PassSchedulerRole", "PutEvents", "Payloads", "WorkQueue", "DeadLetterQueue"], statement.Sid)
      } == {
      TimerSchedules    = "arn:aws:scheduler:eu-west-1:123456789012:schedule/unit/*"
      PassSchedulerRole = "arn:aws:iam::123456789012:role/unit-scheduler"
      PutEvents         = ["arn:aws:events:eu-west-1:123456789012:event-bus/unit"]
      Payloads          = "arn:aws:s3:::unit-payloads-123456789012/*"
      WorkQueue         = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
      DeadLetterQueue   = "arn:aws:sqs:eu-west-1:123456789012:unit-dlq"
    }
    error_message = "Schedules, PassRole, PutEvents, S3 and SQS access must be scoped to this deployment's resources."
  }

  assert {
    condition = one([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Condition if statement.Sid == "PassSchedulerRole"
    ]) == { StringEquals = { "iam:PassedToService" = "scheduler.amazonaws.com" } }
    error_message = "The scheduler role may only be passed to EventBridge Scheduler."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid => [statement.Action, statement.Resource, try(statement.Condition, null)]
      if contains(["Payloads", "ListPayloadFolders"], statement.Sid)
      } == {
      Payloads           = [["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"], "arn:aws:s3:::unit-payloads-123456789012/*", null]
      ListPayloadFolders = ["s3:ListBucket", "arn:aws:s3:::unit-payloads-123456789012", { StringLike = { "s3:prefix" = ["ex/*"] } }]
    }
    error_message = "The worker may read, write, tag (to retire) and delete payload objects, and list only the executions' folders."
  }

  assert {
    condition     = length([for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement if contains(["VpcNetworkInterfaces", "CustomerKey", "ActionFunctions", "InvokeTargets"], statement.Sid)]) == 0
    error_message = "No EC2, KMS or Lambda permissions without a VPC, a key or action functions."
  }

  assert {
    condition     = length(terraform_data.package) == 1 && aws_lambda_function.worker.filename == ".terraform/stepwell-build/unit-worker.zip"
    error_message = "Without a prebuilt package the module builds one into the build directory."
  }

  assert {
    condition     = aws_lambda_function.worker.source_code_hash == base64encode(terraform_data.package[0].triggers_replace)
    error_message = "source_code_hash must be the source hash that also triggers the build."
  }
}

run "vpc_key_and_tuning" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    subnet_ids                      = ["subnet-0abc", "subnet-0def"]
    security_group_ids              = ["sg-0123"]
    kms_key_arn                     = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    permissions_boundary_arn        = "arn:aws:iam::123456789012:policy/boundary"
    architecture                    = "x86_64"
    runtime                         = "python3.12"
    reserved_concurrent_executions  = 4
    batch_size                      = 50
    maximum_batching_window_seconds = 5
    maximum_concurrency             = 3
    workflow_modules                = ["my_team.flows"]
    event_extractor                 = { domain = "source", subject = "detail.orderId" }
    action_function_arns            = ["arn:aws:lambda:eu-west-1:123456789012:function:notify"]
    action_event_bus_arns           = ["arn:aws:events:eu-west-1:123456789012:event-bus/platform-events"]
    keep_versions                   = 10
  }

  assert {
    condition     = aws_lambda_function.worker.environment[0].variables.STEPWELL_KEEP_VERSIONS == "10"
    error_message = "keep_versions must reach the worker, whose reconciler prunes versions beyond the newest N."
  }

  assert {
    condition = {
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid => [statement.Action, statement.Resource]
      if contains(["ActionFunctions", "PutEvents"], statement.Sid)
      } == {
      ActionFunctions = ["lambda:InvokeFunction", ["arn:aws:lambda:eu-west-1:123456789012:function:notify"]]
      PutEvents = ["events:PutEvents", [
        "arn:aws:events:eu-west-1:123456789012:event-bus/unit",
        "arn:aws:events:eu-west-1:123456789012:event-bus/platform-events",
      ]]
    }
    error_message = "Definitions' actions may invoke exactly the listed functions and put events on the listed buses."
  }

  assert {
    condition = (
      aws_lambda_function.worker.vpc_config[0].subnet_ids == toset(["subnet-0abc", "subnet-0def"]) &&
      aws_lambda_function.worker.vpc_config[0].security_group_ids == toset(["sg-0123"])
    )
    error_message = "The VPC settings must reach the function."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid if contains(flatten([statement.Resource]), "*")
    ] == ["ListTimerSchedules", "VpcNetworkInterfaces"]
    error_message = "Only ListSchedules and the EC2 network interface statement may use a \"*\" resource."
  }

  assert {
    condition = one([
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Resource if statement.Sid == "CustomerKey"
    ]) == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    error_message = "With a key the worker may use exactly that key."
  }

  assert {
    condition = (
      aws_iam_role.worker.permissions_boundary == "arn:aws:iam::123456789012:policy/boundary" &&
      aws_lambda_function.worker.kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab" &&
      aws_cloudwatch_log_group.worker.kms_key_id == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    )
    error_message = "Boundary and key must reach the role, function environment and log group."
  }

  assert {
    condition     = aws_lambda_function.worker.environment[0].variables.STEPWELL_KMS_KEY_ARN == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    error_message = "The key must reach the worker, which encrypts its one-time wake-up schedules with it."
  }

  assert {
    condition = (
      aws_lambda_function.worker.architectures == tolist(["x86_64"]) && aws_lambda_function.worker.runtime == "python3.12" &&
      aws_lambda_function.worker.reserved_concurrent_executions == 4 &&
      aws_lambda_event_source_mapping.work_queue.batch_size == 50 &&
      aws_lambda_event_source_mapping.work_queue.maximum_batching_window_in_seconds == 5 &&
      aws_lambda_event_source_mapping.work_queue.scaling_config[0].maximum_concurrency == 3
    )
    error_message = "Runtime, architecture, concurrency and batching variables must reach the function and mapping."
  }

  assert {
    condition = (
      aws_lambda_function.worker.environment[0].variables.STEPWELL_WORKFLOW_MODULES == "my_team.flows" &&
      jsondecode(aws_lambda_function.worker.environment[0].variables.STEPWELL_EVENT_EXTRACTOR) == { domain = "source", subject = "detail.orderId" }
    )
    error_message = "workflow_modules and event_extractor must reach the environment."
  }

  assert {
    condition     = output.package_platform == "manylinux2014_x86_64"
    error_message = "Dependencies must be installed for the function's architecture."
  }
}

run "invoke_targets_reach_the_worker_and_its_role" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    invoke_function_arns = [
      "arn:aws:lambda:eu-west-1:123456789012:function:greeter",
      "arn:aws:lambda:eu-west-1:210987654321:function:billing-export",
    ]
  }

  assert {
    condition = jsondecode(aws_lambda_function.worker.environment[0].variables.STEPWELL_INVOKE_FUNCTIONS) == [
      "arn:aws:lambda:eu-west-1:123456789012:function:greeter",
      "arn:aws:lambda:eu-west-1:210987654321:function:billing-export",
    ]
    error_message = "invoke_function_arns must reach the worker as the JSON list STEPWELL_INVOKE_FUNCTIONS."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : [statement.Effect, statement.Action, statement.Resource]
      if statement.Sid == "InvokeTargets"
      ] == [["Allow", "lambda:InvokeFunction", [
        "arn:aws:lambda:eu-west-1:123456789012:function:greeter",
        "arn:aws:lambda:eu-west-1:123456789012:function:greeter:*",
        "arn:aws:lambda:eu-west-1:210987654321:function:billing-export",
        "arn:aws:lambda:eu-west-1:210987654321:function:billing-export:*",
    ]]]
    error_message = "The worker may invoke exactly the listed functions, unqualified or with a version or alias qualifier, and nothing else."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_iam_role_policy.worker.policy).Statement : statement.Sid
      if contains(flatten([statement.Action]), "lambda:InvokeFunction")
    ] == ["OwnVersions", "InvokeTargets"]
    error_message = "Only the worker's own versions and the listed targets may be invoked."
  }
}

run "rejects_engine_invoke_function_arns_qualified" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    invoke_function_arns = ["arn:aws:lambda:eu-west-1:123456789012:function:greeter:live"]
  }

  expect_failures = [var.invoke_function_arns]
}

run "default_platform_is_arm64" {
  command = plan

  module {
    source = "./modules/engine"
  }

  assert {
    condition     = output.package_platform == "manylinux2014_aarch64" && length(output.workflow_modules) == 0
    error_message = "arm64 installs manylinux2014_aarch64 wheels; without workflows_dir no module is listed."
  }
}

run "visibility_timeout_below_six_times_timeout" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    timeout = 120
  }

  expect_failures = [aws_lambda_event_source_mapping.work_queue]
}

run "large_batch_without_window" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    batch_size = 11
  }

  expect_failures = [aws_lambda_event_source_mapping.work_queue]
}

run "subnets_without_security_groups" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    subnet_ids = ["subnet-0abc"]
  }

  expect_failures = [aws_lambda_function.worker]
}

run "rejects_keep_versions_fraction" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    keep_versions = 2.5
  }

  expect_failures = [var.keep_versions]
}

run "rejects_scheduler_role_arn_not_a_role" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    scheduler_role_arn = "arn:aws:iam::123456789012:policy/unit"
  }

  expect_failures = [var.scheduler_role_arn]
}

run "package_selection_excludes_harness_and_console" {
  command = plan

  module {
    source = "./modules/engine"
  }

  assert {
    condition     = contains(local.engine_files, "core/engine.py") && contains(local.engine_files, "features/definitions/schema.json")
    error_message = "The engine's own files are hashed into the package."
  }

  assert {
    condition     = length([for file in local.engine_files : file if startswith(file, "testing/") || startswith(file, "console/")]) == 0
    error_message = "stepwell/testing and stepwell/console never count towards the package: the builder leaves them out."
  }

  assert {
    condition     = toset(local.engine_excluded) == toset(["console", "testing"])
    error_message = "The module reads the builder's exclusion list (tools/lambda_package_excludes.json)."
  }
}

run "callback_url_reaches_the_worker" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    callback_url = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"
  }

  assert {
    condition     = aws_lambda_function.worker.environment[0].variables.STEPWELL_CALLBACK_URL == "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"
    error_message = "callback_url is the worker's STEPWELL_CALLBACK_URL."
  }
}

run "rejects_callback_url_with_a_path" {
  command = plan

  module {
    source = "./modules/engine"
  }

  variables {
    callback_url = "https://example.com/callbacks/x"
  }

  expect_failures = [var.callback_url]
}
