variable "function_name" {
  description = "Name of the function, of its role, and of its log group (/aws/lambda/NAME)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.function_name))
    error_message = "function_name must be 1-64 letters, digits, hyphens or underscores (a Lambda function's and an IAM role's name)."
  }
}

variable "function_description" {
  description = "Description of the function."
  type        = string

  validation {
    condition     = length(var.function_description) <= 256
    error_message = "function_description must be at most 256 characters (Lambda's limit)."
  }
}

variable "role_description" {
  description = "Description of the function's IAM role."
  type        = string

  validation {
    condition     = length(var.role_description) <= 1000 && !can(regex("[^\\x{0009}\\x{000A}\\x{000D}\\x{0020}-\\x{007E}\\x{00A1}-\\x{00FF}]", var.role_description))
    error_message = "role_description must be at most 1000 characters of IAM's set (printable Latin-1, tabs and line breaks)."
  }
}

variable "handler" {
  description = "The function's handler in the package: a Python module path and a function name (stepwell.wiring.api_function.handler)."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+$", var.handler))
    error_message = "handler must be a dotted Python path ending in the function's name, such as stepwell.wiring.api_function.handler."
  }
}

variable "package" {
  description = "The Lambda package the function runs from (the worker's zip): path and source_code_hash."
  type = object({
    path      = string
    code_hash = string
  })

  validation {
    condition     = length(var.package.path) > 0 && length(var.package.code_hash) > 0
    error_message = "package needs a path and a code_hash (the engine module's package output)."
  }
}

variable "environment" {
  description = "Environment of the function (names of resources and settings, never secrets)."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for key in keys(var.environment) : can(regex("^[A-Za-z][A-Za-z0-9_]*$", key))])
    error_message = "environment's names must start with a letter and hold only letters, digits and underscores."
  }

  validation {
    # Lambda refuses an environment over 4 KB (names and values); refused at plan instead of at apply.
    condition     = sum(concat([0], [for key, value in var.environment : length(key) + length(value)])) <= 4096
    error_message = "environment must hold at most 4096 characters of names and values in all (Lambda's limit of 4 KB)."
  }
}

variable "policy_name" {
  description = "Name of the role's inline policy."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9+=,.@_-]{1,128}$", var.policy_name))
    error_message = "policy_name must be 1-128 letters, digits or +=,.@_- (an IAM policy name)."
  }
}

variable "policy_statements" {
  description = "The statements (a JSON array, as jsonencode writes it) of the role's inline policy besides those the module adds: Logs (writing to its own log group), with kms_key_arn CustomerKey, and with xray_tracing XRayTraces. Each names its Sid, Effect, Action and Resource."
  type        = string

  validation {
    condition = try(
      startswith(trimspace(var.policy_statements), "[") &&
      length(jsondecode(var.policy_statements)) > 0 &&
      alltrue([
        for statement in jsondecode(var.policy_statements) :
        can(regex("^[A-Za-z0-9]{1,128}$", statement.Sid)) && contains(["Allow", "Deny"], statement.Effect) &&
        can(statement.Action) && can(statement.Resource) && !contains(["Logs", "CustomerKey", "XRayTraces"], statement.Sid)
      ]) &&
      length(distinct([for statement in jsondecode(var.policy_statements) : statement.Sid])) == length(jsondecode(var.policy_statements)),
      false
    )
    error_message = "policy_statements must be a JSON array of at least one IAM statement, each with a distinct alphanumeric Sid (not Logs, CustomerKey or XRayTraces, which the module adds), an Effect (Allow or Deny), an Action and a Resource."
  }
}

variable "authorization_type" {
  description = "Auth type of the function URL: AWS_IAM (SigV4-signed requests of principals the resource policy lets in) or NONE (anyone; the function checks each request itself)."
  type        = string

  validation {
    condition     = contains(["AWS_IAM", "NONE"], var.authorization_type)
    error_message = "authorization_type must be AWS_IAM or NONE."
  }
}

variable "tags" {
  description = "Tags applied to every resource."
  type        = map(string)
  default     = {}
}

variable "kms_key_arn" {
  description = "Customer managed KMS key of the logs and the function's environment (and of the tables and queue the function uses: the role may use it); null for AWS managed encryption."
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
  description = "Memory of the function in MB."
  type        = number
  default     = 256

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240 && floor(var.memory_size) == var.memory_size
    error_message = "memory_size must be a whole number of MB from 128 to 10240."
  }
}

variable "timeout" {
  description = "Timeout of the function in seconds."
  type        = number
  default     = 30

  validation {
    condition     = var.timeout >= 1 && var.timeout <= 900 && floor(var.timeout) == var.timeout
    error_message = "timeout must be a whole number of seconds from 1 to 900 (Lambda's longest)."
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

variable "reserved_concurrent_executions" {
  description = "Concurrent executions reserved for (and capping) the function; null: unreserved."
  type        = number
  default     = 10

  validation {
    condition     = var.reserved_concurrent_executions == null || try(var.reserved_concurrent_executions >= 1 && floor(var.reserved_concurrent_executions) == var.reserved_concurrent_executions, false)
    error_message = "reserved_concurrent_executions must be a whole number >= 1, or null."
  }
}

variable "xray_tracing" {
  description = "Lambda active tracing on the function (`tracing_config { mode = \"Active\" }`) with xray:PutTraceSegments and xray:PutTelemetryRecords (the XRayTraces statement); the root's traces.xray."
  type        = bool
  default     = false
  nullable    = false
}
