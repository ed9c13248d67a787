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

variable "tables" {
  description = "Names and ARNs of the tables completing a callback touches: executions (read), operations (the external input) and coordination (the callback record)."
  type = object({
    executions_name   = string
    executions_arn    = string
    operations_name   = string
    operations_arn    = string
    coordination_name = string
    coordination_arn  = string
  })
}

variable "work_queue" {
  description = "The work queue the wake-up message of a completed callback goes to: url and arn."
  type = object({
    url = string
    arn = string
  })
}

variable "package" {
  description = "The worker's Lambda package (the same zip; its own handler): path and source_code_hash."
  type = object({
    path      = string
    code_hash = string
  })
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
  description = "Days finished executions are kept (the engine's setting; the function never ends one)."
  type        = number
  default     = 30

  validation {
    condition     = var.retention_days >= 1 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number of days, at least 1."
  }
}

variable "max_body_bytes" {
  description = "Largest request body (bytes) a callback URL accepts; larger ones are answered 413. At most 204800 (200 KB), so a result is never offloaded to the payload bucket."
  type        = number
  default     = 65536

  validation {
    condition     = var.max_body_bytes >= 1 && var.max_body_bytes <= 204800 && floor(var.max_body_bytes) == var.max_body_bytes
    error_message = "max_body_bytes must be a whole number of bytes from 1 to 204800 (200 KB)."
  }
}

variable "max_callback_result_bytes" {
  description = "Largest callback result (bytes) the callbacks function completes a callback with; larger ones are answered 413 naming the limit (STEPWELL_MAX_CALLBACK_RESULT_BYTES, as the worker's)."
  type        = number
  default     = 262144
  nullable    = false

  validation {
    condition     = var.max_callback_result_bytes >= 1024 && var.max_callback_result_bytes <= 1048576 && floor(var.max_callback_result_bytes) == var.max_callback_result_bytes
    error_message = "max_callback_result_bytes must be a whole number of bytes from 1024 to 1048576 (1 MiB, AWS's limit)."
  }
}

variable "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for (and capping) the callbacks function; null: unreserved."
  type        = number
  default     = 10

  validation {
    condition     = var.reserved_concurrent_executions == null || try(var.reserved_concurrent_executions >= 1 && floor(var.reserved_concurrent_executions) == var.reserved_concurrent_executions, false)
    error_message = "reserved_concurrent_executions must be a whole number >= 1, or null."
  }
}

variable "secret_arn" {
  description = "Secrets Manager secret ARN or SSM (SecureString) parameter ARN holding the HMAC-SHA256 key requests must be signed with; null: requests are not signed."
  type        = string
  default     = null

  validation {
    condition     = var.secret_arn == null || can(regex("^arn:aws[a-z-]*:(secretsmanager:[a-z0-9-]+:[0-9]{12}:secret:[A-Za-z0-9/_+=.@-]+|ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9/_.-]+)$", var.secret_arn))
    error_message = "secret_arn must be a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME) or an SSM parameter ARN (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME), or null."
  }
}

variable "xray_tracing" {
  description = "Lambda active tracing on the function with xray:PutTraceSegments and xray:PutTelemetryRecords (the root's traces.xray). The function sends no spans of its own, so it takes no OTLP endpoint."
  type        = bool
  default     = false
  nullable    = false
}
