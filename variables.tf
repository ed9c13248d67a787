# --- Identity ---

variable "name" {
  description = "Prefix of every resource name; one engine per name."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must match ^[a-z][a-z0-9-]{1,30}[a-z0-9]$ (3-32 lowercase letters, digits or hyphens, starting with a letter)."
  }
}

variable "tags" {
  description = "Tags applied to every resource."
  type        = map(string)
  default     = {}
}

variable "kms_key_arn" {
  description = "Customer managed KMS key for the tables, queues, bucket, logs, function environment and alarm topic; null uses AWS managed encryption (the alarm topic: none, as CloudWatch cannot publish under the AWS managed SNS key). Its key policy must let the services (events, scheduler, logs, cloudwatch) use it."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "permissions_boundary_arn" {
  description = "IAM permissions boundary attached to the roles the module creates; null for none."
  type        = string
  default     = null

  validation {
    condition     = var.permissions_boundary_arn == null || can(regex("^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$", var.permissions_boundary_arn))
    error_message = "permissions_boundary_arn must be an IAM policy ARN (arn:aws:iam::ACCOUNT:policy/NAME) or null."
  }
}

variable "retention_days" {
  description = "Days finished executions and their payloads are kept, counted from the end (a running execution's payloads never expire)."
  type        = number
  default     = 30

  validation {
    condition     = var.retention_days >= 1 && var.retention_days <= 3650 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number between 1 and 3650."
  }
}

# --- State (DynamoDB) ---

variable "billing_mode" {
  description = "DynamoDB billing mode: PAY_PER_REQUEST (on-demand) or PROVISIONED."
  type        = string
  default     = "PAY_PER_REQUEST"

  validation {
    condition     = contains(["PAY_PER_REQUEST", "PROVISIONED"], var.billing_mode)
    error_message = "billing_mode must be PAY_PER_REQUEST or PROVISIONED."
  }
}

variable "read_capacity" {
  description = "Read capacity units of every table and index when billing_mode is PROVISIONED."
  type        = number
  default     = 5

  validation {
    condition     = var.read_capacity >= 1 && var.read_capacity <= 40000 && floor(var.read_capacity) == var.read_capacity
    error_message = "read_capacity must be a whole number between 1 and 40000."
  }

}

variable "write_capacity" {
  description = "Write capacity units of every table and index when billing_mode is PROVISIONED."
  type        = number
  default     = 5

  validation {
    condition     = var.write_capacity >= 1 && var.write_capacity <= 40000 && floor(var.write_capacity) == var.write_capacity
    error_message = "write_capacity must be a whole number between 1 and 40000."
  }
}

variable "point_in_time_recovery" {
  description = "Enable point-in-time recovery on every table."
  type        = bool
  default     = true
}

variable "deletion_protection" {
  description = "Enable deletion protection on every table."
  type        = bool
  default     = false
}

variable "subject_index_name" {
  description = "Name of the executions table GSI on (domain, subjectId)."
  type        = string
  default     = "domain-subjectId-index"

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.subject_index_name))
    error_message = "subject_index_name must be 3-255 characters of letters, digits, '_', '.' or '-'."
  }
}

variable "index_shards" {
  description = "Shards writers spread each status, workflow and version index key value and each tag's entries over (issue 42: one key value takes at most 1,000 writes per second; a listing page costs one Query per read shard). 1 fits deployments under about 250 executions a second of one workflow or domain; raise it by docs/reference/tables.md's \"Index shards\": index_read_shards first."
  type        = number
  default     = 1
  nullable    = false

  validation {
    condition     = floor(var.index_shards) == var.index_shards && var.index_shards >= 1 && var.index_shards <= 64
    error_message = "index_shards must be a whole number 1..64."
  }
}

variable "index_read_shards" {
  description = "Shards listings read (null = index_shards): at least index_shards, and at least every index_shards used before while an execution whose index keys were last written under it lives (docs/reference/tables.md, \"Index shards\")."
  type        = number
  default     = null

  validation {
    condition = var.index_read_shards == null ? true : (
      floor(var.index_read_shards) == var.index_read_shards && var.index_read_shards >= var.index_shards && var.index_read_shards <= 64
    )
    error_message = "index_read_shards must be null or a whole number from index_shards to 64 (listings read every shard writers write)."
  }
}

# --- Messaging (SQS, EventBridge) ---

variable "create_event_bus" {
  description = "Create a custom event bus named after var.name; false uses the existing bus in event_bus_arn."
  type        = bool
  default     = true
}

variable "event_bus_arn" {
  description = "ARN of an existing event bus, required when create_event_bus is false."
  type        = string
  default     = null

  validation {
    condition     = var.event_bus_arn == null || can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]+$", var.event_bus_arn))
    error_message = "event_bus_arn must be an event bus ARN (arn:aws:events:REGION:ACCOUNT:event-bus/NAME) or null."
  }

  validation {
    condition     = var.create_event_bus || var.event_bus_arn != null
    error_message = "event_bus_arn is required when create_event_bus is false."
  }
}

variable "event_pattern" {
  description = "EventBridge event pattern (JSON) of the rule sending bus events to the work queue; null matches every event on the bus but the worker's status-change events (source stepwell.executions)."
  type        = string
  default     = null

  validation {
    condition     = var.event_pattern == null || can(keys(jsondecode(var.event_pattern)))
    error_message = "event_pattern must be a JSON object (an EventBridge event pattern) or null."
  }
}

variable "queue_visibility_timeout_seconds" {
  description = "Visibility timeout of the work queue; null sets six times the worker's timeout, the least allowed."
  type        = number
  default     = null

  validation {
    condition     = var.queue_visibility_timeout_seconds == null || try(var.queue_visibility_timeout_seconds >= 0 && var.queue_visibility_timeout_seconds <= 43200 && floor(var.queue_visibility_timeout_seconds) == var.queue_visibility_timeout_seconds, false)
    error_message = "queue_visibility_timeout_seconds must be a whole number between 0 and 43200, or null."
  }

  # A message must stay hidden while a worker may still be processing it, retries included.
  validation {
    condition     = var.queue_visibility_timeout_seconds == null || try(var.queue_visibility_timeout_seconds >= 6 * var.timeout, false)
    error_message = "queue_visibility_timeout_seconds must be at least six times timeout (6 x ${var.timeout} s = ${6 * var.timeout} s), or null for exactly that."
  }
}

variable "queue_message_retention_seconds" {
  description = "How long the work queue keeps a message."
  type        = number
  default     = 345600

  validation {
    condition     = var.queue_message_retention_seconds >= 60 && var.queue_message_retention_seconds <= 1209600
    error_message = "queue_message_retention_seconds must be between 60 (1 minute) and 1209600 (14 days)."
  }
}

variable "dlq_message_retention_seconds" {
  description = "How long the dead-letter queue keeps a message."
  type        = number
  default     = 1209600

  validation {
    condition     = var.dlq_message_retention_seconds >= 60 && var.dlq_message_retention_seconds <= 1209600
    error_message = "dlq_message_retention_seconds must be between 60 (1 minute) and 1209600 (14 days)."
  }
}

variable "max_receive_count" {
  description = "Receives of a message before SQS moves it to the dead-letter queue."
  type        = number
  default     = 5

  validation {
    condition     = var.max_receive_count >= 1 && var.max_receive_count <= 1000 && floor(var.max_receive_count) == var.max_receive_count
    error_message = "max_receive_count must be a whole number between 1 and 1000."
  }
}

# --- Scheduler ---

variable "reconcile_interval_minutes" {
  description = "Minutes between the reconciler's runs (a recurring schedule sending {\"kind\":\"reconcile\"})."
  type        = number
  default     = 5

  validation {
    condition     = var.reconcile_interval_minutes >= 1 && var.reconcile_interval_minutes <= 1440 && floor(var.reconcile_interval_minutes) == var.reconcile_interval_minutes
    error_message = "reconcile_interval_minutes must be a whole number between 1 and 1440."
  }
}

variable "reconcile_schedule_enabled" {
  description = "Whether the recurring reconcile schedule is enabled."
  type        = bool
  default     = true
}

variable "long_wait_wakeups" {
  description = "How waits longer than SQS's 15-minute delay wake: \"schedules\" (the default: one one-time EventBridge Scheduler schedule per wait, the cheapest per wait and with no fixed cost) or \"sweep\" (each wait is a due item in the executions table, and a recurring schedule `<name>-wake-sweep` sends what is due every minute, to the second, through the work queue: no Scheduler quota caps how many long waits start or end per second). See \"Running at scale\" in the README."
  type        = string
  default     = "schedules"
  nullable    = false

  validation {
    condition     = contains(["schedules", "sweep"], var.long_wait_wakeups)
    error_message = "long_wait_wakeups must be \"schedules\" or \"sweep\"."
  }
}

variable "traces" {
  description = "Exporting traces (docs/reference/traces.md#exporting-traces). `xray`: Lambda active tracing on the worker, API and callback-URL functions (`tracing_config { mode = \"Active\" }`) with xray:PutTraceSegments and xray:PutTelemetryRecords. `otlp_secret_arn` (a Secrets Manager secret ARN) or `otlp_parameter` (an SSM parameter name from the root, `/path/name`), one of them: where the OTLP/HTTP endpoint's URL and headers are kept, as JSON `{\"endpoint\": \"https://collector:4318\", \"headers\": {\"name\": \"value\"}}` (never in plain variables); the worker's role may read exactly that secret or parameter. `otlp_kms_key_arn`: the customer key that encrypts it (kms:Decrypt), if any. `worker_spans`: the worker sends its own spans (lease, load, run, checkpoint, release) to that endpoint as children of each execution's trace; off by default."
  type = object({
    xray             = optional(bool, false)
    otlp_secret_arn  = optional(string)
    otlp_parameter   = optional(string)
    otlp_kms_key_arn = optional(string)
    worker_spans     = optional(bool, false)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.traces.otlp_secret_arn == null || var.traces.otlp_parameter == null
    error_message = "traces: give otlp_secret_arn or otlp_parameter, not both: the OTLP endpoint is kept in one place."
  }

  validation {
    condition     = var.traces.otlp_secret_arn == null || can(regex("^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$", var.traces.otlp_secret_arn))
    error_message = "traces.otlp_secret_arn must be a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-SUFFIX)."
  }

  validation {
    condition     = var.traces.otlp_parameter == null || can(regex("^/[A-Za-z0-9_./-]{1,1000}$", var.traces.otlp_parameter))
    error_message = "traces.otlp_parameter must be an SSM parameter name from the root (/path/name: letters, digits, _ . - /)."
  }

  validation {
    condition     = var.traces.otlp_kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]{1,128}$", var.traces.otlp_kms_key_arn))
    error_message = "traces.otlp_kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/KEY-ID)."
  }

  validation {
    condition     = var.traces.otlp_kms_key_arn == null || var.traces.otlp_secret_arn != null || var.traces.otlp_parameter != null
    error_message = "traces.otlp_kms_key_arn decrypts the OTLP endpoint's secret or parameter: give otlp_secret_arn or otlp_parameter with it."
  }

  validation {
    condition     = !var.traces.worker_spans || var.traces.otlp_secret_arn != null || var.traces.otlp_parameter != null
    error_message = "traces.worker_spans needs the OTLP endpoint: give otlp_secret_arn or otlp_parameter."
  }
}

variable "schedules" {
  description = "Workflow schedules: name => {workflow, expression (at(), rate() or cron() as EventBridge Scheduler takes it), timezone (IANA, default UTC), input (the execution's input as JSON text, default \"{}\": text, as the inputs of different schedules have different shapes), enabled (default true), overlap (ALLOW, the default, or SKIP: start nothing while an execution of the schedule still runs)}. Each is the schedule `start.<name>` in the module's group; an occurrence starts the execution `<name>-<YYYYMMDDTHHMMSSZ>` (subject `<name>`) once, however often it is delivered."
  type = map(object({
    workflow   = string
    expression = string
    timezone   = optional(string, "UTC")
    input      = optional(string, "{}")
    enabled    = optional(bool, true)
    overlap    = optional(string, "ALLOW")
  }))
  default = {}

  validation {
    condition     = alltrue([for key in keys(var.schedules) : can(regex("^[A-Za-z0-9][A-Za-z0-9_-]{0,57}$", key))])
    error_message = "schedules keys must be 1-58 characters: letters, digits, '_' and '-', starting with a letter or digit; bad: ${jsonencode([for key in keys(var.schedules) : key if !can(regex("^[A-Za-z0-9][A-Za-z0-9_-]{0,57}$", key))])}."
  }

  validation {
    condition     = alltrue([for schedule in values(var.schedules) : can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", schedule.workflow))])
    error_message = "schedules workflow must be a workflow name: 1-64 characters, a letter, then letters, digits, '_', '.' or '-'; bad: ${jsonencode({ for key, schedule in var.schedules : key => schedule.workflow if !can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", schedule.workflow)) })}."
  }

  validation {
    condition     = alltrue([for schedule in values(var.schedules) : can(regex("^(at\\([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\)|rate\\([1-9][0-9]*\\s+(minute|minutes|hour|hours|day|days)\\)|cron\\(\\S+(\\s+\\S+){5}\\))$", schedule.expression))])
    error_message = "schedules expression must be at(yyyy-mm-ddThh:mm:ss), rate(N minute[s]|hour[s]|day[s]) or cron(minutes hours day-of-month month day-of-week year); bad: ${jsonencode({ for key, schedule in var.schedules : key => schedule.expression if !can(regex("^(at\\([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\)|rate\\([1-9][0-9]*\\s+(minute|minutes|hour|hours|day|days)\\)|cron\\(\\S+(\\s+\\S+){5}\\))$", schedule.expression)) })}."
  }

  validation {
    condition     = alltrue([for schedule in values(var.schedules) : can(regex("^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$", schedule.timezone))])
    error_message = "schedules timezone must be an IANA time zone name such as UTC or Europe/Dublin; bad: ${jsonencode({ for key, schedule in var.schedules : key => schedule.timezone if !can(regex("^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$", schedule.timezone)) })}."
  }

  validation {
    condition     = alltrue([for schedule in values(var.schedules) : contains(["ALLOW", "SKIP"], schedule.overlap)])
    error_message = "schedules overlap must be ALLOW or SKIP; bad: ${jsonencode({ for key, schedule in var.schedules : key => schedule.overlap if !contains(["ALLOW", "SKIP"], schedule.overlap) })}."
  }

  # Scheduler keeps a target input up to 8192 characters: the input gets 7000 of them.
  validation {
    condition     = alltrue([for schedule in values(var.schedules) : can(jsondecode(schedule.input)) && length(schedule.input) <= 7000])
    error_message = "schedules input must be JSON text (e.g. jsonencode({...})) of at most 7000 characters; bad: ${jsonencode([for key, schedule in var.schedules : key if !(can(jsondecode(schedule.input)) && length(schedule.input) <= 7000)])}."
  }
}

# --- Payloads (S3) ---

variable "payload_bucket_name" {
  description = "Name of the payload bucket; null derives `{name}-payloads-{account id}`."
  type        = string
  default     = null

  validation {
    condition     = var.payload_bucket_name == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.payload_bucket_name))
    error_message = "payload_bucket_name must be 3-63 lowercase letters, digits, '.' or '-', starting and ending with a letter or digit, or null."
  }
}

variable "payload_bucket_force_destroy" {
  description = "Let `terraform destroy` delete the payload bucket while it still holds objects."
  type        = bool
  default     = false
}

variable "action_function_arns" {
  description = "Lambda functions the engine's definitions may call with the invoke-lambda action (granted lambda:InvokeFunction); empty: none."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.action_function_arns : can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]+(:[A-Za-z0-9_$-]+)?$", arn))])
    error_message = "action_function_arns must hold Lambda function ARNs (arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER])."
  }
}

variable "invoke_function_arns" {
  description = "Lambda functions workflow code may call with context.invoke by name or ARN (optionally with a version or alias qualifier), as unqualified function ARNs; the worker is granted lambda:InvokeFunction on each and its versions and aliases (STEPWELL_INVOKE_FUNCTIONS). Empty: context.invoke reaches only registered workflows and functions."
  type        = list(string)
  default     = []
  nullable    = false

  validation {
    condition     = alltrue([for arn in var.invoke_function_arns : can(regex("^arn:aws[a-z-]*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}$", arn))])
    error_message = "invoke_function_arns must hold unqualified Lambda function ARNs (arn:aws:lambda:REGION:ACCOUNT:function:NAME): no :VERSION or :ALIAS qualifier (each function's versions and aliases are allowed with it) and no wildcards; bad: ${jsonencode([for arn in var.invoke_function_arns : arn if !can(regex("^arn:aws[a-z-]*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}$", arn))])}."
  }

  validation {
    # The worker is run by its work queue; invoked with a workflow's input it would only fail.
    condition     = !anytrue([for arn in var.invoke_function_arns : endswith(arn, ":function:${var.name}-worker")])
    error_message = "invoke_function_arns may not list this deployment's own worker (function ${var.name}-worker): context.invoke reaches its workflows by name."
  }
}

variable "action_event_bus_arns" {
  description = "Further event buses the engine's definitions may put events on (granted events:PutEvents) besides its own bus; empty: none."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.action_event_bus_arns : can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]+$", arn))])
    error_message = "action_event_bus_arns must hold event bus ARNs (arn:aws:events:REGION:ACCOUNT:event-bus/NAME)."
  }
}

variable "http_allowlist" {
  description = "Where definitions' stepwell.http action may send requests: hosts (api.example.com, api.example.com:8443), subdomain wildcards (*.example.com) or URL prefixes (https://api.example.com/v1/), each on the scheme's default port unless one is given; empty: the action is disabled."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for entry in var.http_allowlist : (can(regex("^((\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$", entry)) || can(regex("^https?://([A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?/[^?#\\s\\\\]*$", entry)))])
    error_message = "http_allowlist entries must be host[:port] (api.example.com, 203.0.113.7, [2001:db8::1]:8443), *.domain[:port] or a URL prefix http(s)://host[:port]/path, without user info, query, fragment or other wildcards; bad: ${jsonencode([for entry in var.http_allowlist : entry if !((can(regex("^((\\*\\.)?[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$", entry)) || can(regex("^https?://([A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?/[^?#\\s\\\\]*$", entry))))])}."
  }

  validation {
    condition     = alltrue([for entry in var.http_allowlist : alltrue([for port in regexall(":([0-9]+)(/|$)", entry) : tonumber(port[0]) >= 1 && tonumber(port[0]) <= 65535])])
    error_message = "http_allowlist ports must be 1..65535; bad: ${jsonencode([for entry in var.http_allowlist : entry if !(alltrue([for port in regexall(":([0-9]+)(/|$)", entry) : tonumber(port[0]) >= 1 && tonumber(port[0]) <= 65535]))])}."
  }

  validation {
    condition     = alltrue([for entry in var.http_allowlist : (!can(regex("^(https?://)?(\\*\\.)?([A-Za-z0-9-]+\\.)*[0-9]+(:[0-9]+)?(/.*)?$", entry)) || can(regex("^(https?://)?((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(:[0-9]+)?(/.*)?$", entry)))])
    error_message = "http_allowlist IPv4 addresses must be four decimal numbers (203.0.113.7, not 3405803783 or 0xcb.0.113.7), and a wildcard needs a domain; bad: ${jsonencode([for entry in var.http_allowlist : entry if !((!can(regex("^(https?://)?(\\*\\.)?([A-Za-z0-9-]+\\.)*[0-9]+(:[0-9]+)?(/.*)?$", entry)) || can(regex("^(https?://)?((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(:[0-9]+)?(/.*)?$", entry))))])}."
  }

  validation {
    condition     = alltrue([for entry in var.http_allowlist : !can(regex("/\\.\\.?(/|$)", entry))])
    error_message = "http_allowlist URL prefixes may not hold dot segments (/./ or /../); bad: ${jsonencode([for entry in var.http_allowlist : entry if !(!can(regex("/\\.\\.?(/|$)", entry)))])}."
  }
}

variable "http_allowed_networks" {
  description = "Non-public networks (CIDR blocks, e.g. 10.20.0.0/16) the stepwell.http action may reach; loopback, link-local, private, shared, multicast and reserved addresses are refused otherwise. Empty: public addresses only."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for cidr in var.http_allowed_networks : can(cidrhost(cidr, 0))])
    error_message = "http_allowed_networks must hold CIDR blocks (10.20.0.0/16, fd00::/8); bad: ${jsonencode([for cidr in var.http_allowed_networks : cidr if !can(cidrhost(cidr, 0))])}."
  }
}

variable "definitions_run_cpu_seconds" {
  description = "CPU seconds one run of a definition's context (its start or a wake-up, one worker invocation) may take; past it the context fails with one DefinitionRuntimeError naming the node and the budget (STEPWELL_DEFINITIONS_RUN_CPU_SECONDS; stepwell.features.definitions.budgets). More than 0 and less than timeout, so the context fails before Lambda kills the invocation."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = var.definitions_run_cpu_seconds > 0
    error_message = "definitions_run_cpu_seconds must be more than 0 seconds; got ${var.definitions_run_cpu_seconds}."
  }

  validation {
    # CPU time does not outrun the wall clock: a budget at or past the timeout would never stop a run.
    condition     = var.definitions_run_cpu_seconds < var.timeout
    error_message = "definitions_run_cpu_seconds (${var.definitions_run_cpu_seconds} s) must be less than timeout (${var.timeout} s), the worker's timeout, so a run over its budget fails its context before Lambda kills the invocation."
  }
}

variable "definitions_expression_cpu_seconds" {
  description = "CPU seconds one evaluation of a definition's expression (a condition, an input, a wait's until, a trigger's filter in the router) may take; past it the context fails naming the budget and the expression (STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS; stepwell.features.definitions.budgets). More than 0 and at most definitions_run_cpu_seconds."
  type        = number
  default     = 0.25
  nullable    = false

  validation {
    condition     = var.definitions_expression_cpu_seconds > 0 && var.definitions_expression_cpu_seconds <= var.definitions_run_cpu_seconds
    error_message = "definitions_expression_cpu_seconds must be more than 0 and at most definitions_run_cpu_seconds (${var.definitions_run_cpu_seconds} s); got ${var.definitions_expression_cpu_seconds}."
  }
}

# --- Worker Lambda ---

variable "runtime" {
  description = "Lambda Python runtime of the worker."
  type        = string
  default     = "python3.13"

  validation {
    condition     = contains(["python3.11", "python3.12", "python3.13"], var.runtime)
    error_message = "runtime must be one of python3.11, python3.12, python3.13."
  }
}

variable "architecture" {
  description = "Lambda instruction set architecture: arm64 or x86_64."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "memory_size" {
  description = "Memory of the worker in MB."
  type        = number
  default     = 512

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240 && floor(var.memory_size) == var.memory_size
    error_message = "memory_size must be a whole number of MB between 128 and 10240."
  }
}

variable "timeout" {
  description = "Timeout of one worker invocation in seconds."
  type        = number
  default     = 60

  validation {
    condition     = var.timeout >= 1 && var.timeout <= 900 && floor(var.timeout) == var.timeout
    error_message = "timeout must be a whole number of seconds between 1 and 900."
  }
}

variable "reserved_concurrent_executions" {
  description = "Concurrency reserved for the worker; null leaves it unreserved."
  type        = number
  default     = null

  validation {
    condition     = var.reserved_concurrent_executions == null || try(var.reserved_concurrent_executions >= 0 && floor(var.reserved_concurrent_executions) == var.reserved_concurrent_executions, false)
    error_message = "reserved_concurrent_executions must be a whole number >= 0, or null."
  }

  validation {
    # A worker forwarding a message to the version its execution is pinned to invokes that version
    # synchronously: a second concurrent execution of the same function.
    condition     = var.reserved_concurrent_executions != 1
    error_message = "reserved_concurrent_executions 1 leaves no room to forward a message to an execution's pinned version (a second concurrent execution): reserve 0 (disabled), 2 or more, or null."
  }
}

variable "keep_versions" {
  description = "Published worker versions (one per change of its package or settings) the reconciler keeps however idle: the newest N. An older version is deleted once no running execution is pinned to it; the alias's version never is."
  type        = number
  default     = 3
  nullable    = false

  validation {
    condition     = var.keep_versions >= 1 && var.keep_versions <= 100 && floor(var.keep_versions) == var.keep_versions
    error_message = "keep_versions must be a whole number between 1 and 100; got ${var.keep_versions}."
  }
}

variable "max_execution_input_bytes" {
  description = "Largest execution input (bytes of its JSON) a start accepts, from the client, the CLI or a schedule; larger ones are refused with PayloadTooLarge naming the limit and the size (STEPWELL_MAX_EXECUTION_INPUT_BYTES). The default is AWS durable functions' 256 KB for an asynchronous invoke; at most 6291456 (6 MiB, a synchronous invoke's). A definition's context is bounded by its definition and bus event limits instead."
  type        = number
  default     = 262144
  nullable    = false

  validation {
    condition     = var.max_execution_input_bytes >= 1024 && var.max_execution_input_bytes <= 6291456 && floor(var.max_execution_input_bytes) == var.max_execution_input_bytes
    error_message = "max_execution_input_bytes must be a whole number of bytes from 1024 to 6291456 (6 MiB, AWS's limit); got ${var.max_execution_input_bytes}."
  }
}

variable "max_execution_result_bytes" {
  description = "Largest execution result (bytes of its JSON): an execution returning more fails with stepwell.limits.PayloadOverLimit naming the limit and the size, and the result is not stored (STEPWELL_MAX_EXECUTION_RESULT_BYTES). The default 1 MiB is what a chained invoke's child may return on AWS; at most 6291456 (6 MiB, AWS's GetDurableExecution Result)."
  type        = number
  default     = 1048576
  nullable    = false

  validation {
    condition     = var.max_execution_result_bytes >= 1024 && var.max_execution_result_bytes <= 6291456 && floor(var.max_execution_result_bytes) == var.max_execution_result_bytes
    error_message = "max_execution_result_bytes must be a whole number of bytes from 1024 to 6291456 (6 MiB, AWS's limit); got ${var.max_execution_result_bytes}."
  }
}

variable "max_operation_payload_bytes" {
  description = "Largest payload (result, with its error object) of one operation in a checkpoint: a step's or child context's result, a wait or callback update. A checkpoint over it fails the execution with stepwell.limits.PayloadOverLimit naming the operation, the limit and the size, and nothing of it is stored (STEPWELL_MAX_OPERATION_PAYLOAD_BYTES). The default is the SDK's 256 KB per operation (larger child context results are summarized by the SDK); at most 6291456 (botocore's OperationPayload)."
  type        = number
  default     = 262144
  nullable    = false

  validation {
    condition     = var.max_operation_payload_bytes >= 1024 && var.max_operation_payload_bytes <= 6291456 && floor(var.max_operation_payload_bytes) == var.max_operation_payload_bytes
    error_message = "max_operation_payload_bytes must be a whole number of bytes from 1024 to 6291456 (6 MiB, AWS's limit); got ${var.max_operation_payload_bytes}."
  }
}

variable "max_callback_result_bytes" {
  description = "Largest callback result (bytes as sent) the client, the CLI, the bus and callback URLs accept; larger ones are refused with PayloadTooLarge (413 at a callback URL) naming the limit and the size, and the callback stays open (STEPWELL_MAX_CALLBACK_RESULT_BYTES). Default 256 KiB; at most 1048576 (1 MiB, AWS's SendDurableExecutionCallbackSuccess Result)."
  type        = number
  default     = 262144
  nullable    = false

  validation {
    condition     = var.max_callback_result_bytes >= 1024 && var.max_callback_result_bytes <= 1048576 && floor(var.max_callback_result_bytes) == var.max_callback_result_bytes
    error_message = "max_callback_result_bytes must be a whole number of bytes from 1024 to 1048576 (1 MiB, AWS's limit); got ${var.max_callback_result_bytes}."
  }
}

variable "status_change_events" {
  description = "Put every status change of an execution on the bus as an event (source stepwell.executions, detail-type \"Stepwell Execution Status Change\"; docs/reference/status-events.md), for your own rules to react to: RUNNING, then SUCCEEDED, FAILED, STOPPED or TIMED_OUT; PAUSED when a pause takes hold and RUNNING again on resume (PAUSING is no event); DELETING when the worker begins deleting an ended execution."
  type        = bool
  default     = true
  nullable    = false
}

variable "notify_statuses" {
  description = "Execution statuses whose status-change events go to the alarm topic (the created one or alarm_topic_arn) through an EventBridge rule on the bus: any of RUNNING, SUCCEEDED, FAILED, STOPPED, TIMED_OUT, PAUSED, DELETING (PAUSING is no event); [] creates no rule. Ignored when status_change_events is false."
  type        = list(string)
  default     = ["FAILED", "TIMED_OUT"]
  nullable    = false

  validation {
    condition     = length(setsubtract(var.notify_statuses, ["RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT", "PAUSED", "DELETING"])) == 0
    error_message = "notify_statuses must be among RUNNING, SUCCEEDED, FAILED, STOPPED, TIMED_OUT, PAUSED, DELETING (a pause is announced when the execution is PAUSED, never PAUSING); unknown: ${jsonencode(setsubtract(var.notify_statuses, ["RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT", "PAUSED", "DELETING"]))}."
  }
}

variable "log_retention_days" {
  description = "Retention of the worker's log group in days."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch's values: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "log_level" {
  description = "Log level of the engine."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR."
  }
}

variable "event_extractor" {
  description = "Paths mapping a bus event to the engine's (domain, subject, name, data); empty uses the engine's defaults."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for key in keys(var.event_extractor) : contains(["domain", "subject", "name", "data"], key)])
    error_message = "event_extractor keys must be among domain, subject, name, data."
  }
}

variable "event_sources" {
  description = "Which bus event sources may speak for which domains (tenants): source (or \"ACCOUNT:source\" to require that account too) -> domain ids, prefixes ending in '*' or '*' for every domain. Bus events whose source may not speak for their domain are rejected; empty: no domain event from the bus is accepted. Grant producers events:PutEvents only for their own source (events:source condition)."
  type        = map(list(string))
  default     = {}

  validation {
    condition     = alltrue([for source in keys(var.event_sources) : can(regex("^([0-9]{12}:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])
    error_message = "event_sources keys must be an event source (1-256 letters, digits and . _ / -, starting with a letter or digit), optionally after \"ACCOUNT:\" (12 digits); got ${jsonencode([for source in keys(var.event_sources) : source if !can(regex("^([0-9]{12}:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])}."
  }

  validation {
    condition     = !contains([for source in keys(var.event_sources) : reverse(split(":", source))[0]], "stepwell.executions")
    error_message = "event_sources must not list stepwell.executions: that source is the worker's status-change events, which only the worker may put and which are never domain events."
  }

  validation {
    condition     = alltrue([for domains in values(var.event_sources) : length(domains) > 0 && alltrue([for domain in domains : can(regex("^(\\*|[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}\\*?)$", domain))])])
    error_message = "event_sources values must be non-empty lists of domain ids (1-128 letters, digits and _ . : @ + = , -, starting with a letter or digit), prefixes ending in '*' (e.g. \"acme-*\") or '*' (every domain); bad: ${jsonencode({ for source, domains in var.event_sources : source => domains if length(domains) == 0 || !alltrue([for domain in domains : can(regex("^(\\*|[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}\\*?)$", domain))]) })}."
  }
}

variable "subnet_ids" {
  description = "Subnets for a worker inside a VPC (with security_group_ids); empty: no VPC."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.subnet_ids : can(regex("^subnet-[0-9a-f]+$", id))])
    error_message = "subnet_ids must hold subnet ids (subnet-0123abcd)."
  }
}

variable "security_group_ids" {
  description = "Security groups for a worker inside a VPC (with subnet_ids); empty: no VPC."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.security_group_ids : can(regex("^sg-[0-9a-f]+$", id))])
    error_message = "security_group_ids must hold security group ids (sg-0123abcd)."
  }

  validation {
    condition     = (length(var.subnet_ids) > 0) == (length(var.security_group_ids) > 0)
    error_message = "subnet_ids and security_group_ids go together: give both for a worker in a VPC, or neither."
  }
}

variable "batch_size" {
  description = "Work queue messages per worker invocation."
  type        = number
  default     = 10

  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10000 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size must be a whole number between 1 and 10000."
  }
}

variable "maximum_batching_window_seconds" {
  description = "Seconds Lambda gathers messages before invoking the worker (must be > 0 when batch_size > 10)."
  type        = number
  default     = 0

  validation {
    condition     = var.maximum_batching_window_seconds >= 0 && var.maximum_batching_window_seconds <= 300 && floor(var.maximum_batching_window_seconds) == var.maximum_batching_window_seconds
    error_message = "maximum_batching_window_seconds must be a whole number between 0 and 300."
  }

  validation {
    condition     = var.batch_size <= 10 || var.maximum_batching_window_seconds > 0
    error_message = "batch_size ${var.batch_size} > 10 needs maximum_batching_window_seconds > 0 (SQS mappings allow more than 10 messages only with a batching window)."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent worker invocations the SQS mapping starts; null: no limit beyond the function's. While null, clients wake executions (starts, callback results, stops) by invoking the worker's alias asynchronously, with no SQS message; set, they send to the queue, so the cap holds for them. The long wake-ups Scheduler invokes directly are not counted here either way: reserved_concurrent_executions caps every invocation (Lambda retries a throttled wake-up for up to 6 hours, then hands it to the work queue)."
  type        = number
  default     = null

  validation {
    condition     = var.maximum_concurrency == null || try(var.maximum_concurrency >= 2 && var.maximum_concurrency <= 1000, false)
    error_message = "maximum_concurrency must be between 2 and 1000, or null."
  }
}

# --- Package ---

variable "lambda_package_path" {
  description = "Path of a prebuilt worker zip; null builds one from lambda_src, its requirements and workflows_dir."
  type        = string
  default     = null

  validation {
    condition     = var.lambda_package_path == null || can(regex("\\.zip$", var.lambda_package_path))
    error_message = "lambda_package_path must be the path of a .zip file, or null."
  }
}

variable "workflows_dir" {
  description = "Directory of your workflow code, copied into the package under workflows/; null: none."
  type        = string
  default     = null
}

variable "workflow_modules" {
  description = "Modules the engine imports at start; null lists each top-level module of workflows_dir as workflows.<module>."
  type        = list(string)
  default     = null

  validation {
    condition     = var.workflow_modules == null || alltrue([for module in coalesce(var.workflow_modules, []) : can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$", module))])
    error_message = "workflow_modules must hold dotted Python module names (e.g. workflows.orders)."
  }
}

variable "workflow_names" {
  description = "Names of the durable workflows your code registers (client_config.workflows): the client and CLI refuse to start any other, listing these. null: not checked (the worker fails an execution whose workflow it does not have)."
  type        = list(string)
  default     = null

  validation {
    condition     = var.workflow_names == null || alltrue([for name in coalesce(var.workflow_names, []) : can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])
    error_message = "workflow_names must hold workflow names: 1-64 characters, a letter, then letters, digits, '_', '.' or '-'."
  }

  validation {
    condition     = var.workflow_names == null || length(distinct(coalesce(var.workflow_names, []))) == length(coalesce(var.workflow_names, []))
    error_message = "workflow_names must not name a workflow twice."
  }
}

variable "package_build_dir" {
  description = "Where the built zip is written, relative to the working directory."
  type        = string
  default     = ".terraform/stepwell-build"
}

variable "python_executable" {
  description = "Python (3.9+, with pip) that runs the package builder."
  type        = string
  default     = "python3"
}

# --- Monitoring (alarms, SNS topic, dashboard) ---

variable "alarms" {
  description = "The module's CloudWatch alarms (README, Monitoring): each one's switch, the threshold it fires above, its period (seconds), evaluation periods and datapoints to alarm (null: all evaluation periods). Alarm and OK go to the alarm topic."
  type = object({
    dlq_messages = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 0)
      period_seconds      = optional(number, 60)
      evaluation_periods  = optional(number, 1)
      datapoints_to_alarm = optional(number)
    }), {})
    oldest_message_age = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 900)
      period_seconds      = optional(number, 300)
      evaluation_periods  = optional(number, 3)
      datapoints_to_alarm = optional(number)
    }), {})
    worker_errors = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 0)
      period_seconds      = optional(number, 300)
      evaluation_periods  = optional(number, 1)
      datapoints_to_alarm = optional(number)
    }), {})
    worker_throttles = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 0)
      period_seconds      = optional(number, 300)
      evaluation_periods  = optional(number, 1)
      datapoints_to_alarm = optional(number)
    }), {})
    failed_executions = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 0)
      period_seconds      = optional(number, 300)
      evaluation_periods  = optional(number, 1)
      datapoints_to_alarm = optional(number)
    }), {})
    stalled_executions = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 0)
      period_seconds      = optional(number, 900)
      evaluation_periods  = optional(number, 1)
      datapoints_to_alarm = optional(number)
    }), {})
    wake_up_lag = optional(object({
      enabled             = optional(bool, true)
      threshold           = optional(number, 300000)
      period_seconds      = optional(number, 300)
      evaluation_periods  = optional(number, 3)
      datapoints_to_alarm = optional(number, 2)
    }), {})
  })
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for alarm in values(var.alarms) : alarm.threshold >= 0])
    error_message = "alarms thresholds must be >= 0; bad: ${jsonencode({ for key, alarm in var.alarms : key => alarm.threshold if alarm.threshold < 0 })}."
  }

  validation {
    condition     = alltrue([for alarm in values(var.alarms) : alarm.period_seconds >= 60 && alarm.period_seconds % 60 == 0])
    error_message = "alarms period_seconds must be a multiple of 60 (the engine's and AWS's metrics have one-minute resolution); bad: ${jsonencode({ for key, alarm in var.alarms : key => alarm.period_seconds if !(alarm.period_seconds >= 60 && alarm.period_seconds % 60 == 0) })}."
  }

  validation {
    condition     = alltrue([for alarm in values(var.alarms) : alarm.evaluation_periods >= 1 && floor(alarm.evaluation_periods) == alarm.evaluation_periods])
    error_message = "alarms evaluation_periods must be a whole number >= 1; bad: ${jsonencode({ for key, alarm in var.alarms : key => alarm.evaluation_periods if !(alarm.evaluation_periods >= 1 && floor(alarm.evaluation_periods) == alarm.evaluation_periods) })}."
  }

  # CloudWatch looks back at most seven days, and at most one day with periods under an hour.
  validation {
    condition     = alltrue([for alarm in values(var.alarms) : alarm.period_seconds * alarm.evaluation_periods <= (alarm.period_seconds < 3600 ? 86400 : 604800)])
    error_message = "alarms period_seconds x evaluation_periods must be at most 86400 (one day) with periods under 3600, at most 604800 (seven days) otherwise; bad: ${jsonencode({ for key, alarm in var.alarms : key => "${alarm.period_seconds} x ${alarm.evaluation_periods}" if alarm.period_seconds * alarm.evaluation_periods > (alarm.period_seconds < 3600 ? 86400 : 604800) })}."
  }

  validation {
    condition     = alltrue([for alarm in values(var.alarms) : alarm.datapoints_to_alarm == null ? true : alarm.datapoints_to_alarm >= 1 && alarm.datapoints_to_alarm <= alarm.evaluation_periods && floor(alarm.datapoints_to_alarm) == alarm.datapoints_to_alarm])
    error_message = "alarms datapoints_to_alarm must be a whole number between 1 and the alarm's evaluation_periods, or null; bad: ${jsonencode({ for key, alarm in var.alarms : key => "${alarm.datapoints_to_alarm} of ${alarm.evaluation_periods}" if alarm.datapoints_to_alarm == null ? false : !(alarm.datapoints_to_alarm >= 1 && alarm.datapoints_to_alarm <= alarm.evaluation_periods && floor(alarm.datapoints_to_alarm) == alarm.datapoints_to_alarm) })}."
  }
}

variable "alarm_topic_arn" {
  description = "An existing SNS topic the alarms notify; null creates `{name}-alarms` (encrypted with kms_key_arn when given) when any alarm is enabled. Subscribe to the topic to be told."
  type        = string
  default     = null

  validation {
    condition     = var.alarm_topic_arn == null || can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\\.fifo)?$", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME) or null; got ${jsonencode(var.alarm_topic_arn)}."
  }
}

variable "dashboard_enabled" {
  description = "Create the CloudWatch dashboard `{name}`: the engine's metrics per workflow and deployment-wide, the queues', the worker's, and the alarms."
  type        = bool
  default     = true
}

# --- Callback URLs ---

variable "callback_urls" {
  description = "Create the callbacks function and its public function URL, so a third party completes, fails or heartbeats a callback with one HTTPS request (stepwell.callback_url()); false: callbacks only through the client or the bus."
  type        = bool
  default     = false
  nullable    = false
}

variable "callback_url_max_body_bytes" {
  description = "Largest request body (bytes) the callback URLs accept (413 above it). At most 204800 (200 KB), so a result sent this way is never offloaded."
  type        = number
  default     = 65536
  nullable    = false

  validation {
    condition     = var.callback_url_max_body_bytes >= 1 && var.callback_url_max_body_bytes <= 204800 && floor(var.callback_url_max_body_bytes) == var.callback_url_max_body_bytes
    error_message = "callback_url_max_body_bytes must be a whole number of bytes from 1 to 204800 (200 KB)."
  }
}

variable "callback_url_reserved_concurrency" {
  description = "Concurrent executions reserved for the callbacks function, which are also its ceiling: beyond them its public URL answers 429 (Too Many Requests), so a flood of requests cannot take the account's concurrency from the worker or run up more than this many invocations at once. The reservation comes out of the account's unreserved pool, which must keep at least 100 (an account whose concurrency quota is under 110 cannot reserve 10). null: unreserved (it shares the account's pool). Unused without callback_urls."
  type        = number
  default     = 10

  validation {
    condition     = var.callback_url_reserved_concurrency == null || try(var.callback_url_reserved_concurrency >= 1 && floor(var.callback_url_reserved_concurrency) == var.callback_url_reserved_concurrency, false)
    error_message = "callback_url_reserved_concurrency must be a whole number >= 1 (0 would refuse every callback URL request: set callback_urls = false instead), or null for unreserved; got ${coalesce(var.callback_url_reserved_concurrency, "null")}."
  }
}

variable "callback_url_secret_arn" {
  description = "Secrets Manager secret ARN or SSM SecureString parameter ARN holding the HMAC-SHA256 key callback URL requests must be signed with (X-Stepwell-Timestamp, X-Stepwell-Signature); null: unsigned requests are accepted and the callback id alone is the capability."
  type        = string
  default     = null

  validation {
    condition     = var.callback_url_secret_arn == null || can(regex("^arn:aws[a-z-]*:(secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+|ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9/_.-]+)$", var.callback_url_secret_arn))
    error_message = "callback_url_secret_arn must be a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME) or an SSM parameter ARN (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME), or null."
  }

  validation {
    condition     = var.callback_url_secret_arn == null || var.callback_urls
    error_message = "callback_url_secret_arn needs callback_urls = true (it signs the callback URLs' requests)."
  }
}

# The AWS durable execution API (modules/api): boto3's lambda client, the AWS CLI and any SDK client.

variable "enable_api" {
  description = "Create the API function behind a Lambda function URL with AWS_IAM auth that speaks Lambda's durable execution API (Invoke of a workflow, GetDurableExecution, its history, ListDurableExecutionsByFunction, StopDurableExecution, the callback sends), so boto3.client(\"lambda\", endpoint_url=api_url) and `aws lambda --endpoint-url` work against this deployment. Off by default: it adds a function, a role, a log group and a URL, and it serves only the principals api_principals names, so turning it on goes with saying who may use it."
  type        = bool
  default     = false
  nullable    = false
}

variable "api_principals" {
  description = "Who may call the API (enable_api), per class of operation: read (GetDurableExecution, GetDurableExecutionHistory, ListDurableExecutionsByFunction), operate (Invoke, StopDurableExecution; pause, resume and delete once served) and callbacks (SendDurableExecutionCallbackSuccess, Failure, Heartbeat). Each entry is an account id, an account's root ARN, an IAM role ARN (any session of the role) or an IAM user ARN. The function URL's resource policy lets every listed principal through (lambda:InvokeFunctionUrl, signed requests only) and the function checks each request's caller against the operation's class. Callers also need the api_caller_policy_json output's grants in their own IAM policy."
  type = object({
    read      = optional(list(string), [])
    operate   = optional(list(string), [])
    callbacks = optional(list(string), [])
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.enable_api || length(concat(var.api_principals.read, var.api_principals.operate, var.api_principals.callbacks)) == 0
    error_message = "api_principals needs enable_api = true (they are the API's callers)."
  }

  validation {
    condition     = !var.enable_api || length(concat(var.api_principals.read, var.api_principals.operate, var.api_principals.callbacks)) > 0
    error_message = "enable_api needs at least one principal in api_principals (read, operate or callbacks): the API refuses every caller it does not list."
  }
}

variable "api_tenant_principals" {
  description = "Principals of the API (enable_api) limited to one tenant: a tenant id (an execution's domain) to the principals that may act only on that tenant's executions, in the classes api_principals gives them. Each principal takes the forms api_principals accepts and must also be listed there (which lets it through the function URL's resource policy). The API function gets the map as STEPWELL_API_TENANT_PRINCIPALS (JSON). {}: no principal is limited to a tenant."
  type        = map(list(string))
  default     = {}
  nullable    = false

  validation {
    condition     = var.enable_api || length(var.api_tenant_principals) == 0
    error_message = "api_tenant_principals needs enable_api = true (they are the API's callers)."
  }

  validation {
    condition     = alltrue([for tenant in keys(var.api_tenant_principals) : can(regex("^[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}$", tenant))])
    error_message = "api_tenant_principals' keys must be tenant ids (an execution's domain): 1-128 letters, digits and _ . : @ + = , - characters, not starting with a symbol (no spaces, '/' or '#')."
  }

  validation {
    condition     = alltrue([for tenant, principals in var.api_tenant_principals : length(principals) > 0 && length(distinct(principals)) == length(principals)])
    error_message = "api_tenant_principals must list at least one principal for each tenant, each once (a tenant without principals limits nobody)."
  }

  validation {
    condition = alltrue([
      for principal in flatten(values(var.api_tenant_principals)) :
      can(regex("^([0-9]{12}|arn:aws[a-z-]*:iam::[0-9]{12}:(root|(role|user)/([A-Za-z0-9+=,.@_/-]*/)?[A-Za-z0-9+=,.@_-]{1,128}))$", principal))
    ])
    error_message = "api_tenant_principals' principals must be account ids (123456789012), account root ARNs (arn:aws:iam::123456789012:root), IAM role ARNs (arn:aws:iam::123456789012:role/NAME) or IAM user ARNs (arn:aws:iam::123456789012:user/NAME), as in api_principals."
  }

  validation {
    condition = alltrue([
      for principal in flatten(values(var.api_tenant_principals)) :
      contains(concat(var.api_principals.read, var.api_principals.operate, var.api_principals.callbacks), principal)
    ])
    error_message = "Every principal in api_tenant_principals must also be listed in api_principals (read, operate or callbacks): that gives it its classes of operation and lets it through the function URL's resource policy."
  }

  validation {
    condition     = length(jsonencode(var.api_tenant_principals)) <= 1024
    error_message = "api_tenant_principals may hold at most 1024 characters of JSON (it travels in the API function's environment, which Lambda limits to 4 KB in all); use fewer tenants, or account ids."
  }
}

variable "durable_functions" {
  description = "Lambda functions you deploy yourself (any runtime, written with AWS's durable execution SDK) that become Stepwell workflows, by workflow name: function_arn (the unqualified ARN of a function in this deployment's account and region) and qualifier (a version number, an alias name or $LATEST; null: unqualified). Needs enable_api: the function's SDK calls the API (durable_functions_endpoint, as AWS_ENDPOINT_URL_LAMBDA) with the durable_function_policy_json grants. The worker invokes each by name (lambda:InvokeFunction on exactly these), and each gets an event invoke config that sends its results, success and failure, to the work queue without Lambda's retries. The module writes them, with each function's timeout and execution role (read from the function: planning needs lambda:GetFunction), into the SSM parameter durable_functions_parameter, which the worker and the API function read at cold start (their environments carry its name only, so that a function may take durable_functions_endpoint in the same root); those roles alone may call the API's data plane, and its URL's resource policy lets them through. A name may not also be in workflow_names, to which these names are added for the client, the CLI and the API. At most 3072 characters of JSON, about 20 to 30 functions: with their roles and timeouts they must fit the parameter's 8 KB. The parameter is Intelligent-Tiering: standard (free) while under 4 KB, about 9 functions, advanced ($0.05 a month) above. {}: none."
  type = map(object({
    function_arn = string
    qualifier    = optional(string)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = var.enable_api || length(var.durable_functions) == 0
    error_message = "durable_functions needs enable_api = true: a durable function's SDK checkpoints through the API (durable_functions_endpoint)."
  }

  validation {
    condition     = alltrue([for name in keys(var.durable_functions) : can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])
    error_message = "durable_functions' keys must be workflow names: 1-64 characters, a letter, then letters, digits, '_', '.' or '-'; bad: ${jsonencode([for name in keys(var.durable_functions) : name if !can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])}."
  }

  validation {
    condition     = length(setintersection(keys(var.durable_functions), coalesce(var.workflow_names, []))) == 0
    error_message = "durable_functions' names must not be in workflow_names (a workflow name runs either your registered code or your function); both hold: ${jsonencode(setintersection(keys(var.durable_functions), coalesce(var.workflow_names, [])))}."
  }

  validation {
    condition     = alltrue([for function in values(var.durable_functions) : can(regex("^arn:aws[a-z-]*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}$", function.function_arn))])
    error_message = "durable_functions' function_arn must be an unqualified Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME): the version or alias goes in qualifier; bad: ${jsonencode([for name, function in var.durable_functions : name if !can(regex("^arn:aws[a-z-]*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}$", function.function_arn))])}."
  }

  validation {
    condition = alltrue([
      for function in values(var.durable_functions) :
      function.qualifier == null || try(function.qualifier == "$LATEST" || can(regex("^[1-9][0-9]{0,9}$", function.qualifier)) || (can(regex("^[A-Za-z0-9_-]{1,128}$", function.qualifier)) && !can(regex("^[0-9]+$", function.qualifier))), false)
    ])
    error_message = "durable_functions' qualifier must be a version number (1, 2, ...), an alias name (1-128 letters, digits, '-' or '_', not all digits) or $LATEST, or null for the unqualified function."
  }

  validation {
    # The parameter adds each function's role ARN and timeout: 3072 characters keep it within an advanced
    # parameter's 8 KB for any mix of entries whose role ARNs are up to 114 characters (34 one-letter
    # entries at most); a longer role path is caught by modules/api's precondition on the document itself.
    condition     = length(jsonencode(var.durable_functions)) <= 3072
    error_message = "durable_functions may hold at most 3072 characters of JSON, about 20 to 30 functions (with each function's role and timeout the SSM parameter must stay within 8 KB, an advanced parameter's limit); got ${length(jsonencode(var.durable_functions))}: use fewer functions or shorter names."
  }
}

variable "api_timeout" {
  description = "Timeout of the API function in seconds, which is also how long an Invoke with InvocationType RequestResponse waits for the execution to end (past it the answer is the error type Stepwell.ExecutionStillRunning with the execution's ARN, and the execution goes on). Unused without enable_api."
  type        = number
  default     = 60
  nullable    = false

  validation {
    condition     = var.api_timeout >= 10 && var.api_timeout <= 900 && floor(var.api_timeout) == var.api_timeout
    error_message = "api_timeout must be a whole number of seconds from 10 to 900 (Lambda's longest)."
  }
}

variable "api_reserved_concurrency" {
  description = "Concurrent executions reserved for the API function, which are also its ceiling (beyond them callers get 429, TooManyRequestsException, and the SDKs retry). null: unreserved. Unused without enable_api."
  type        = number
  default     = 10

  validation {
    condition     = var.api_reserved_concurrency == null || try(var.api_reserved_concurrency >= 1 && floor(var.api_reserved_concurrency) == var.api_reserved_concurrency, false)
    error_message = "api_reserved_concurrency must be a whole number >= 1, or null for unreserved."
  }
}
