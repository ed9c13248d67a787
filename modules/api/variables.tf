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

variable "principals" {
  description = "Who may call the API, per class of operation: read (GetDurableExecution, its history, ListDurableExecutionsByFunction), operate (Invoke, StopDurableExecution, and pause, resume and delete once served) and callbacks (SendDurableExecutionCallbackSuccess, Failure, Heartbeat). Each is an account id, an account's root ARN, an IAM role ARN or an IAM user ARN; a principal is in as many lists as it needs."
  type = object({
    read      = optional(list(string), [])
    operate   = optional(list(string), [])
    callbacks = optional(list(string), [])
  })
  nullable = false

  validation {
    condition = alltrue([
      for principal in concat(var.principals.read, var.principals.operate, var.principals.callbacks) :
      can(regex("^([0-9]{12}|arn:aws[a-z-]*:iam::[0-9]{12}:(root|(role|user)/([A-Za-z0-9+=,.@_/-]*/)?[A-Za-z0-9+=,.@_-]{1,128}))$", principal))
    ])
    error_message = "principals must be account ids (123456789012), account root ARNs (arn:aws:iam::123456789012:root), IAM role ARNs (arn:aws:iam::123456789012:role/NAME) or IAM user ARNs (arn:aws:iam::123456789012:user/NAME)."
  }

  validation {
    condition     = length(concat(var.principals.read, var.principals.operate, var.principals.callbacks)) > 0
    error_message = "principals must name at least one principal (read, operate or callbacks): with none every request is refused."
  }

  validation {
    # The lists travel in the function's environment (4 KB in all) and one resource policy statement
    # each (20 KB in all).
    condition     = length(jsonencode(var.principals)) <= 2048 && length(concat(var.principals.read, var.principals.operate, var.principals.callbacks)) <= 30
    error_message = "principals may hold at most 30 entries in all three lists, in at most 2048 characters of JSON (the function's environment and its resource policy, a statement per entry, are limited); use account ids or fewer roles."
  }
}

variable "tables" {
  description = "Names and ARNs of the tables the API reads and writes: executions (with the subject index's name), operations (the log) and coordination (callback records)."
  type = object({
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
  description = "The work queue that wakes a started, stopped or called-back execution: url and arn."
  type = object({
    url = string
    arn = string
  })
}

variable "payload_bucket" {
  description = "The payload bucket (inputs, results and callback results over the inline limit): name and arn."
  type = object({
    name = string
    arn  = string
  })
}

variable "schedule_group" {
  description = "The engine's schedule group (a stopped execution's pending wake-ups are deleted there): name and arn."
  type = object({
    name = string
    arn  = string
  })
}

variable "worker" {
  description = "The worker function (its versions and alias answer Invoke's Qualifier): function_name, function_arn (unqualified) and alias_name."
  type = object({
    function_name = string
    function_arn  = string
    alias_name    = string
  })
}

variable "package" {
  description = "The worker's Lambda package (the same zip; its own handler): path and source_code_hash."
  type = object({
    path      = string
    code_hash = string
  })
}

variable "workflow_names" {
  description = "The deployment's durable workflows: Invoke of any other answers ResourceNotFoundException. null: not listed (any valid name starts, and the worker fails one it does not have)."
  type        = list(string)
  default     = null
}

variable "payload_limits" {
  description = "The deployment's limits in bytes on an execution's input and a callback's result (the worker's)."
  type = object({
    execution_input_bytes = number
    callback_result_bytes = number
  })
  default = {
    execution_input_bytes = 262144
    callback_result_bytes = 262144
  }
}

variable "kms_key_arn" {
  description = "Customer managed KMS key of the tables, queue, logs and function environment; null for AWS managed encryption."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "permissions_boundary_arn" {
  description = "IAM permissions boundary of the function's role; null for none."
  type        = string
  default     = null

  validation {
    condition     = var.permissions_boundary_arn == null || can(regex("^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$", var.permissions_boundary_arn))
    error_message = "permissions_boundary_arn must be an IAM policy ARN (arn:aws:iam::ACCOUNT:policy/NAME) or null."
  }
}

variable "runtime" {
  description = "Lambda Python runtime (the worker's)."
  type        = string
  default     = "python3.13"

  validation {
    condition     = contains(["python3.11", "python3.12", "python3.13"], var.runtime)
    error_message = "runtime must be one of python3.11, python3.12, python3.13."
  }
}

variable "architecture" {
  description = "Lambda instruction set architecture (the worker's: the package's dependencies are built for it)."
  type        = string
  default     = "arm64"

  validation {
    condition     = contains(["arm64", "x86_64"], var.architecture)
    error_message = "architecture must be arm64 or x86_64."
  }
}

variable "memory_size" {
  description = "Memory of the API function in MB."
  type        = number
  default     = 256

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240 && floor(var.memory_size) == var.memory_size
    error_message = "memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "timeout" {
  description = "Timeout of the API function in seconds: how long an Invoke with InvocationType RequestResponse waits for the execution to end at most (then it answers the error type Stepwell.ExecutionStillRunning and the execution goes on)."
  type        = number
  default     = 60

  validation {
    condition     = var.timeout >= 10 && var.timeout <= 900 && floor(var.timeout) == var.timeout
    error_message = "timeout must be a whole number of seconds from 10 to 900 (Lambda's longest)."
  }
}

variable "log_retention_days" {
  description = "Retention of the function's log group in days."
  type        = number
  default     = 30

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch's values: 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653."
  }
}

variable "log_level" {
  description = "Log level of the function."
  type        = string
  default     = "INFO"

  validation {
    condition     = contains(["DEBUG", "INFO", "WARNING", "ERROR"], var.log_level)
    error_message = "log_level must be one of DEBUG, INFO, WARNING, ERROR."
  }
}

variable "retention_days" {
  description = "Days finished executions are kept (the engine's setting: an execution past it is not found)."
  type        = number
  default     = 30

  validation {
    condition     = var.retention_days >= 1 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number of days, at least 1."
  }
}

variable "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for (and capping) the API function; null: unreserved."
  type        = number
  default     = 10

  validation {
    condition     = var.reserved_concurrent_executions == null || try(var.reserved_concurrent_executions >= 1 && floor(var.reserved_concurrent_executions) == var.reserved_concurrent_executions, false)
    error_message = "reserved_concurrent_executions must be a whole number >= 1, or null."
  }
}

variable "tenant_principals" {
  description = "Principals limited to one tenant: a tenant id (an execution's domain) to the principals that may act only on that tenant's executions, in the classes principals gives them. Each principal must also be listed in principals (which lets it through the function URL's resource policy); the function gets the map as STEPWELL_API_TENANT_PRINCIPALS (JSON). {}: no principal is limited to a tenant."
  type        = map(list(string))
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for tenant in keys(var.tenant_principals) : can(regex("^[A-Za-z0-9][A-Za-z0-9_.:@+=,-]{0,127}$", tenant))])
    error_message = "tenant_principals' keys must be tenant ids (an execution's domain): 1-128 letters, digits and _ . : @ + = , - characters, not starting with a symbol (no spaces, '/' or '#')."
  }

  validation {
    condition     = alltrue([for tenant, principals in var.tenant_principals : length(principals) > 0 && length(distinct(principals)) == length(principals)])
    error_message = "tenant_principals must list at least one principal for each tenant, each once (a tenant without principals limits nobody)."
  }

  validation {
    condition = alltrue([
      for principal in flatten(values(var.tenant_principals)) :
      can(regex("^([0-9]{12}|arn:aws[a-z-]*:iam::[0-9]{12}:(root|(role|user)/([A-Za-z0-9+=,.@_/-]*/)?[A-Za-z0-9+=,.@_-]{1,128}))$", principal))
    ])
    error_message = "tenant_principals' principals must be account ids (123456789012), account root ARNs (arn:aws:iam::123456789012:root), IAM role ARNs (arn:aws:iam::123456789012:role/NAME) or IAM user ARNs (arn:aws:iam::123456789012:user/NAME), as in principals."
  }

  validation {
    # The resource policy lets through the principals it lists (a statement each): a tenant's principal
    # outside them could never call the URL.
    condition = alltrue([
      for principal in flatten(values(var.tenant_principals)) :
      contains(concat(var.principals.read, var.principals.operate, var.principals.callbacks), principal)
    ])
    error_message = "Every principal in tenant_principals must also be listed in principals (read, operate or callbacks): that gives it its classes of operation and lets it through the function URL's resource policy."
  }

  validation {
    # It travels in the function's environment, 4 KB in all with principals' lists (at most 2048).
    condition     = length(jsonencode(var.tenant_principals)) <= 1024
    error_message = "tenant_principals may hold at most 1024 characters of JSON (it travels in the function's environment, which Lambda limits to 4 KB in all); use fewer tenants, or account ids."
  }
}

variable "durable_functions_parameter" {
  description = "The name of the SSM parameter this module writes the durable functions' registrations to (the worker reads it too): derived from the name only, so that neither function depends on durable_functions. null: /stepwell/<name>/durable-functions."
  type        = string
  default     = null

  validation {
    condition     = var.durable_functions_parameter == null || can(regex("^/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", var.durable_functions_parameter))
    error_message = "durable_functions_parameter must be an SSM parameter path (/a/b/c: letters, digits, '_', '.', '-'), or null."
  }
}

variable "durable_functions" {
  description = "Users' Lambda functions (any runtime) that run as workflows, by workflow name: function_arn (unqualified) and qualifier (a version, an alias or $LATEST; null: unqualified), as the engine's durable_functions. The module writes them, with each function's timeout and execution role (read from the function), into the SSM parameter durable_functions_parameter, which the worker and this function read at cold start; those roles are the only callers of the data plane; the URL's resource policy lets those roles through. At most 3072 characters of JSON: with roles and timeouts the parameter (Intelligent-Tiering: standard under 4 KB, advanced above) holds 8 KB. {}: none."
  type = map(object({
    function_arn = string
    qualifier    = optional(string)
  }))
  default  = {}
  nullable = false

  validation {
    condition     = alltrue([for name in keys(var.durable_functions) : can(regex("^[A-Za-z][A-Za-z0-9_.-]{0,63}$", name))])
    error_message = "durable_functions' keys must be workflow names: 1-64 characters, a letter, then letters, digits, '_', '.' or '-'."
  }

  validation {
    condition     = alltrue([for function in values(var.durable_functions) : can(regex("^arn:aws[a-z-]*:lambda:[a-z]{2}(-[a-z]+)+-[0-9]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}$", function.function_arn))])
    error_message = "durable_functions' function_arn must be an unqualified Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME): the version or alias goes in qualifier."
  }

  validation {
    condition = alltrue([
      for function in values(var.durable_functions) :
      function.qualifier == null || try(function.qualifier == "$LATEST" || can(regex("^[1-9][0-9]{0,9}$", function.qualifier)) || (can(regex("^[A-Za-z0-9_-]{1,128}$", function.qualifier)) && !can(regex("^[0-9]+$", function.qualifier))), false)
    ])
    error_message = "durable_functions' qualifier must be a version number (1, 2, ...), an alias name (1-128 letters, digits, '-' or '_', not all digits) or $LATEST, or null for the unqualified function."
  }

  validation {
    # With each function's role ARN (up to 114 characters) and timeout the document stays within 8 KB, an
    # advanced parameter's limit; the parameter's precondition checks the document itself.
    condition     = length(jsonencode(var.durable_functions)) <= 3072
    error_message = "durable_functions may hold at most 3072 characters of JSON (with each function's role and timeout the SSM parameter must stay within 8 KB, an advanced parameter's limit); got ${length(jsonencode(var.durable_functions))}."
  }
}

variable "xray_tracing" {
  description = "Lambda active tracing on the function with xray:PutTraceSegments and xray:PutTelemetryRecords (the root's traces.xray). The function sends no spans of its own, so it takes no OTLP endpoint."
  type        = bool
  default     = false
  nullable    = false
}
