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

variable "work_queue_arn" {
  description = "ARN of the work queue the schedules send to."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.work_queue_arn))
    error_message = "work_queue_arn must be an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)."
  }
}

variable "wake_function_arn" {
  description = "ARN of the worker's alias the engine's one-time wake-up schedules invoke: the role may invoke it."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$", var.wake_function_arn))
    error_message = "wake_function_arn must be a qualified Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME:ALIAS)."
  }
}

variable "dead_letter_queue_arn" {
  description = "ARN of the dead-letter queue every schedule names (the engine's wake-ups, the reconcile schedule, the workflow schedules): the role may send what Scheduler cannot deliver there."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]+$", var.dead_letter_queue_arn))
    error_message = "dead_letter_queue_arn must be an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME)."
  }
}

variable "event_bus_arn" {
  description = "ARN of the event bus schedules may put events on."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]+$", var.event_bus_arn))
    error_message = "event_bus_arn must be an event bus ARN (arn:aws:events:REGION:ACCOUNT:event-bus/NAME)."
  }
}

variable "kms_key_arn" {
  description = "Customer managed KMS key encrypting the queue (and bus); the scheduler role gets the KMS actions sending needs. Null: none."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "permissions_boundary_arn" {
  description = "IAM permissions boundary attached to the scheduler role; null for none."
  type        = string
  default     = null

  validation {
    condition     = var.permissions_boundary_arn == null || can(regex("^arn:aws[a-z-]*:iam::([0-9]{12}|aws):policy/.+$", var.permissions_boundary_arn))
    error_message = "permissions_boundary_arn must be an IAM policy ARN (arn:aws:iam::ACCOUNT:policy/NAME) or null."
  }
}

variable "reconcile_interval_minutes" {
  description = "Minutes between the recurring reconcile messages to the work queue."
  type        = number
  default     = 5

  validation {
    condition     = var.reconcile_interval_minutes >= 1 && var.reconcile_interval_minutes <= 1440 && floor(var.reconcile_interval_minutes) == var.reconcile_interval_minutes
    error_message = "reconcile_interval_minutes must be a whole number between 1 and 1440."
  }
}

variable "reconcile_schedule_enabled" {
  description = "Whether the recurring reconcile schedule is ENABLED (true) or DISABLED (false)."
  type        = bool
  default     = true
}

variable "long_wait_wakeups" {
  description = "\"sweep\" creates the recurring schedule `<name>-wake-sweep` (rate(1 minute), {\"kind\":\"wake-sweep\"} to the work queue) that sends the long waits kept as due items; \"schedules\" (one schedule per wait) creates none."
  type        = string
  default     = "schedules"
  nullable    = false

  validation {
    condition     = contains(["schedules", "sweep"], var.long_wait_wakeups)
    error_message = "long_wait_wakeups must be \"schedules\" or \"sweep\"."
  }
}

variable "schedules" {
  description = "Workflow schedules (the root module's `schedules`, validated there): each becomes `start.<key>` in the group, sending a scheduled-start message to the work queue."
  type = map(object({
    workflow   = string
    expression = string
    timezone   = string
    input      = string
    enabled    = bool
    overlap    = string
  }))
  default = {}
}
