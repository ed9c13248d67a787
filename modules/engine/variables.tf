variable "name" {
  description = "Prefix of every resource name."
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

# --- The resources the worker uses (from the sibling modules or an infra repo) ---

variable "tables" {
  description = "Names and ARNs of the four Stepwell tables (see modules/state)."
  type = object({
    definitions_name   = string
    definitions_arn    = string
    executions_name    = string
    executions_arn     = string
    operations_name    = string
    operations_arn     = string
    coordination_name  = string
    coordination_arn   = string
    subject_index_name = string
    # Sharded index keys (modules/state's index_shards, index_read_shards).
    index_shards      = optional(number, 1)
    index_read_shards = optional(number)
  })
}

variable "work_queue" {
  description = "The work queue the worker consumes: url, arn and visibility timeout in seconds."
  type = object({
    url                        = string
    arn                        = string
    visibility_timeout_seconds = number
  })
}

variable "dlq" {
  description = "The work queue's dead-letter queue: url and arn."
  type = object({
    url = string
    arn = string
  })
}

variable "event_bus" {
  description = "The event bus the worker puts events on: name and arn."
  type = object({
    name = string
    arn  = string
  })
}

variable "schedule_group_name" {
  description = "Schedule group where the worker creates one-time timer schedules."
  type        = string
}

variable "scheduler_role_arn" {
  description = "Role the worker's one-time schedules assume (passed with iam:PassRole)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.scheduler_role_arn))
    error_message = "scheduler_role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "payload_bucket" {
  description = "S3 bucket for large payloads: name and arn."
  type = object({
    name = string
    arn  = string
  })
}

variable "kms_key_arn" {
  description = "Customer managed KMS key of the tables, queues, bucket and logs; the worker gets the KMS actions using them needs. Null: none."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "permissions_boundary_arn" {
  description = "IAM permissions boundary attached to the worker role; null for none."
  type        = string
  default     = null

  validation {
    condition     = var.permissions_boundary_arn == null || can(regex("^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$", var.permissions_boundary_arn))
    error_message = "permissions_boundary_arn must be an IAM policy ARN (arn:aws:iam::ACCOUNT:policy/NAME) or null."
  }
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
  description = "CPU seconds one run of a definition's context may take (STEPWELL_DEFINITIONS_RUN_CPU_SECONDS): more than 0 and less than timeout. The root module's variable says more."
  type        = number
  default     = 10
  nullable    = false

  validation {
    condition     = var.definitions_run_cpu_seconds > 0 && var.definitions_run_cpu_seconds < var.timeout
    error_message = "definitions_run_cpu_seconds must be more than 0 and less than timeout (${var.timeout} s), so a run over its budget fails its context before Lambda kills the invocation; got ${var.definitions_run_cpu_seconds}."
  }
}

variable "definitions_expression_cpu_seconds" {
  description = "CPU seconds one evaluation of a definition's expression may take (STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS): more than 0 and at most definitions_run_cpu_seconds."
  type        = number
  default     = 0.25
  nullable    = false

  validation {
    condition     = var.definitions_expression_cpu_seconds > 0 && var.definitions_expression_cpu_seconds <= var.definitions_run_cpu_seconds
    error_message = "definitions_expression_cpu_seconds must be more than 0 and at most definitions_run_cpu_seconds (${var.definitions_run_cpu_seconds} s); got ${var.definitions_expression_cpu_seconds}."
  }
}

# --- The function ---

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
  description = "Log level of the engine (STEPWELL_LOG_LEVEL)."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR."
  }
}

variable "retention_days" {
  description = "Days finished executions are kept (STEPWELL_RETENTION_DAYS)."
  type        = number
  default     = 30

  validation {
    condition     = var.retention_days >= 1 && var.retention_days <= 3650 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number between 1 and 3650."
  }
}

variable "keep_versions" {
  description = "Published worker versions the reconciler keeps however idle (the newest N); older ones are deleted once no running execution is pinned to them (STEPWELL_KEEP_VERSIONS)."
  type        = number
  default     = 3
  nullable    = false

  validation {
    condition     = var.keep_versions >= 1 && var.keep_versions <= 100 && floor(var.keep_versions) == var.keep_versions
    error_message = "keep_versions must be a whole number between 1 and 100; got ${var.keep_versions}."
  }
}

variable "payload_limits" {
  description = "Payload limits in bytes (stepwell.limits): an execution's input and result, one operation's payload, a callback's result (STEPWELL_MAX_*_BYTES). The root module's max_*_bytes variables say what each bounds."
  type = object({
    execution_input_bytes   = optional(number, 262144)
    execution_result_bytes  = optional(number, 1048576)
    operation_payload_bytes = optional(number, 262144)
    callback_result_bytes   = optional(number, 262144)
  })
  default  = {}
  nullable = false

  validation {
    condition = alltrue([
      for value in values(var.payload_limits) : value >= 1024 && floor(value) == value
      ]) && var.payload_limits.execution_input_bytes <= 6291456 && var.payload_limits.execution_result_bytes <= 6291456 && (
      var.payload_limits.operation_payload_bytes <= 6291456 && var.payload_limits.callback_result_bytes <= 1048576
    )
    error_message = "payload_limits are whole numbers of bytes from 1024 up to AWS's limits: 6291456 for execution_input_bytes, execution_result_bytes and operation_payload_bytes, 1048576 for callback_result_bytes."
  }
}

variable "status_change_events" {
  description = "Whether the worker puts each execution status change on the bus (source stepwell.executions, STEPWELL_STATUS_EVENTS)."
  type        = bool
  default     = true
  nullable    = false
}

variable "event_extractor" {
  description = "Paths mapping a bus event to the engine's (domain, subject, name, data) (STEPWELL_EVENT_EXTRACTOR); empty uses the engine's defaults."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for key in keys(var.event_extractor) : contains(["domain", "subject", "name", "data"], key)])
    error_message = "event_extractor keys must be among domain, subject, name, data."
  }
}

variable "event_sources" {
  description = "STEPWELL_EVENT_SOURCES: which bus event sources may speak for which domains (tenants): source (or \"ACCOUNT:source\" to require that account too) -> domain ids, prefixes ending in '*' or '*' for every domain. Bus events whose source may not speak for their domain are rejected; empty: no domain event from the bus is accepted. Grant producers events:PutEvents only for their own source (events:source condition)."
  type        = map(list(string))
  default     = {}

  validation {
    condition     = alltrue([for source in keys(var.event_sources) : can(regex("^([0-9]{12}:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])
    error_message = "event_sources keys must be an event source (1-256 letters, digits and . _ / -, starting with a letter or digit), optionally after \"ACCOUNT:\" (12 digits); got ${jsonencode([for source in keys(var.event_sources) : source if !can(regex("^([0-9]{12}:)?[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])}."
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
}

# --- The SQS event source mapping ---

variable "batch_size" {
  description = "Messages per worker invocation."
  type        = number
  default     = 10

  validation {
    condition     = var.batch_size >= 1 && var.batch_size <= 10000 && floor(var.batch_size) == var.batch_size
    error_message = "batch_size must be a whole number between 1 and 10000."
  }
}

variable "maximum_batching_window_seconds" {
  description = "Seconds Lambda gathers messages before invoking the worker (required > 0 when batch_size > 10)."
  type        = number
  default     = 0

  validation {
    condition     = var.maximum_batching_window_seconds >= 0 && var.maximum_batching_window_seconds <= 300 && floor(var.maximum_batching_window_seconds) == var.maximum_batching_window_seconds
    error_message = "maximum_batching_window_seconds must be a whole number between 0 and 300."
  }
}

variable "maximum_concurrency" {
  description = "Most concurrent worker invocations the SQS mapping starts; null: no limit beyond the function's. The long wake-ups Scheduler invokes directly are not counted here: reserved_concurrent_executions caps every invocation (Lambda retries a throttled wake-up for up to 6 hours, then hands it to the work queue)."
  type        = number
  default     = null

  validation {
    condition     = var.maximum_concurrency == null || try(var.maximum_concurrency >= 2 && var.maximum_concurrency <= 1000, false)
    error_message = "maximum_concurrency must be between 2 and 1000, or null."
  }
}

# --- The package ---

variable "lambda_package_path" {
  description = "Path of a prebuilt worker zip; null builds one from lambda_src, requirements and workflows_dir."
  type        = string
  default     = null

  validation {
    condition     = var.lambda_package_path == null || can(regex("\\.zip$", var.lambda_package_path))
    error_message = "lambda_package_path must be the path of a .zip file, or null."
  }
}

variable "workflows_dir" {
  description = "Directory of the user's workflow code, copied into the package under workflows/; null: none."
  type        = string
  default     = null
}

variable "workflow_modules" {
  description = "Modules the engine imports at start (STEPWELL_WORKFLOW_MODULES); null lists each top-level module of workflows_dir as workflows.<module>."
  type        = list(string)
  default     = null

  validation {
    condition     = var.workflow_modules == null || alltrue([for module in coalesce(var.workflow_modules, []) : can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)*$", module))])
    error_message = "workflow_modules must hold dotted Python module names (e.g. workflows.orders)."
  }
}

variable "source_dir" {
  description = "Directory holding the engine package `stepwell/` and `requirements.txt`; null: this repository's lambda_src."
  type        = string
  default     = null
}

variable "package_build_dir" {
  description = "Where the built zip is written, relative to the working directory (kept out of version control)."
  type        = string
  default     = ".terraform/stepwell-build"
}

variable "python_executable" {
  description = "Python (3.9+, with pip) that runs the package builder."
  type        = string
  default     = "python3"
}

variable "callback_url" {
  description = "Base URL of the deployment's callback URLs (the callbacks function's URL), set on the worker as STEPWELL_CALLBACK_URL for stepwell.callback_url(); null when callback URLs are off."
  type        = string
  default     = null

  validation {
    condition     = var.callback_url == null || can(regex("^https?://[^\\s/]+/?$", var.callback_url))
    error_message = "callback_url must be an http(s) URL with no path (a Lambda function URL), or null."
  }
}

variable "durable_functions_parameter" {
  description = "The name of the SSM parameter holding the durable functions' registrations (modules/api writes it), which the worker reads at cold start (STEPWELL_DURABLE_FUNCTIONS_PARAMETER) and may read (ssm:GetParameter); null: none (no API). A name, not the parameter: the worker must not depend on durable_functions, whose functions take the API's URL, itself depending on the worker."
  type        = string
  default     = null

  validation {
    condition     = var.durable_functions_parameter == null || can(regex("^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", var.durable_functions_parameter))
    error_message = "durable_functions_parameter must be an SSM parameter path (/a/b/c: letters, digits, '_', '.', '-'), or null."
  }
}

variable "durable_functions" {
  description = "Lambda functions you deploy yourself (any runtime, with AWS's durable execution SDK) that run as Stepwell workflows, by workflow name: the function's unqualified ARN and the qualifier it is invoked with (a version, an alias or $LATEST; null: unqualified). The worker reads them from the SSM parameter durable_functions_parameter names (modules/api writes it) and may invoke exactly those functions; each gets an event invoke config that sends its results (success and failure) to the work queue, without Lambda's retries. At most 3072 characters of JSON, as the root's. {}: none."
  type = map(object({
    function_arn = string
    qualifier    = optional(string)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for name in keys(var.durable_functions) : can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])
    error_message = "durable_functions' keys must be workflow names: 1-64 characters, a letter, then letters, digits, '_', '.' or '-'; bad: ${jsonencode([for name in keys(var.durable_functions) : name if !can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])}."
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
    # The same bound as the root's: the registrations travel in the SSM parameter modules/api writes.
    condition     = length(jsonencode(var.durable_functions)) <= 3072
    error_message = "durable_functions may hold at most 3072 characters of JSON (as the root module allows); got ${length(jsonencode(var.durable_functions))}: use fewer functions or shorter names."
  }
}

variable "long_wait_wakeups" {
  description = "How the worker wakes waits over 900 s: \"schedules\" (one Scheduler schedule each) or \"sweep\" (due items the recurring wake-sweep schedule sends)."
  type        = string
  default     = "schedules"
  nullable    = false

  validation {
    condition     = contains(["schedules", "sweep"], var.long_wait_wakeups)
    error_message = "long_wait_wakeups must be \"schedules\" or \"sweep\"."
  }
}

variable "traces" {
  description = "Exporting traces (docs/reference/traces.md#exporting-traces). `xray`: Lambda active tracing on the worker function (`tracing_config { mode = \"Active\" }`) with xray:PutTraceSegments and xray:PutTelemetryRecords. `otlp_secret_arn` (a Secrets Manager secret ARN) or `otlp_parameter` (an SSM parameter name from the root, `/path/name`), one of them: where the OTLP/HTTP endpoint's URL and headers are kept, as JSON `{\"endpoint\": \"https://collector:4318\", \"headers\": {\"name\": \"value\"}}` (never in plain variables); the worker's role may read exactly that secret or parameter. `otlp_kms_key_arn`: the customer key that encrypts it (kms:Decrypt), if any. `worker_spans`: the worker sends its own spans (lease, load, run, checkpoint, release) to that endpoint as children of each execution's trace; off by default."
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
