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

variable "kms_key_arn" {
  description = "Customer managed KMS key for the queues; null uses SQS managed encryption (SSE-SQS)."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "kms_data_key_reuse_period_seconds" {
  description = "How long SQS reuses a data key before calling KMS again (only with kms_key_arn)."
  type        = number
  default     = 300

  validation {
    condition     = var.kms_data_key_reuse_period_seconds >= 60 && var.kms_data_key_reuse_period_seconds <= 86400
    error_message = "kms_data_key_reuse_period_seconds must be between 60 and 86400."
  }
}

variable "visibility_timeout_seconds" {
  description = "Visibility timeout of the work queue; keep it at least six times the worker's timeout."
  type        = number
  default     = 360

  validation {
    condition     = var.visibility_timeout_seconds >= 0 && var.visibility_timeout_seconds <= 43200 && floor(var.visibility_timeout_seconds) == var.visibility_timeout_seconds
    error_message = "visibility_timeout_seconds must be a whole number between 0 and 43200."
  }
}

variable "message_retention_seconds" {
  description = "How long the work queue keeps a message."
  type        = number
  default     = 345600

  validation {
    condition     = var.message_retention_seconds >= 60 && var.message_retention_seconds <= 1209600
    error_message = "message_retention_seconds must be between 60 (1 minute) and 1209600 (14 days)."
  }
}

variable "dlq_message_retention_seconds" {
  description = "How long the dead-letter queue keeps a message; longer than the work queue's, because a message's age counts from its first enqueue."
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

variable "create_event_bus" {
  description = "Create a custom event bus named after var.name; false uses the bus given in event_bus_arn."
  type        = bool
  default     = true
}

variable "event_bus_arn" {
  description = "ARN of an existing event bus (required when create_event_bus is false)."
  type        = string
  default     = null

  validation {
    condition     = var.event_bus_arn == null || can(regex("^arn:aws[a-z-]*:events:[a-z0-9-]+:[0-9]{12}:event-bus/[A-Za-z0-9._/-]+$", var.event_bus_arn))
    error_message = "event_bus_arn must be an event bus ARN (arn:aws:events:REGION:ACCOUNT:event-bus/NAME) or null."
  }
}

variable "event_pattern" {
  description = "EventBridge event pattern (JSON) of the rule that sends events to the work queue; null matches every event on the bus but the worker's status-change events (status_event_source)."
  type        = string
  default     = null

  validation {
    condition     = var.event_pattern == null || can(keys(jsondecode(var.event_pattern)))
    error_message = "event_pattern must be a JSON object (an EventBridge event pattern) or null."
  }
}

variable "sender_role_arns" {
  description = "IAM roles the queue policy admits to send to the work queue besides the bus rule (the scheduler role)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for arn in var.sender_role_arns : can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", arn))])
    error_message = "sender_role_arns must hold IAM role ARNs (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "engine_event_sources" {
  description = "Event sources only the engine emits (its definitions' events, its status-change events); on a bus this module creates, only engine_role_arn may put events with them. Empty: no such restriction."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for source in var.engine_event_sources : can(regex("^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])
    error_message = "engine_event_sources must hold event sources (1-256 letters, digits and . _ / -, starting with a letter or digit); got ${jsonencode([for source in var.engine_event_sources : source if !can(regex("^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", source))])}."
  }
}

variable "status_event_source" {
  description = "Source of the worker's status-change events: the rule's default pattern (event_pattern null) takes every event but these."
  type        = string
  default     = "stepwell.executions"

  validation {
    condition     = can(regex("^[A-Za-z0-9][A-Za-z0-9._/-]{0,255}$", var.status_event_source))
    error_message = "status_event_source must be an event source (1-256 letters, digits and . _ / -, starting with a letter or digit); got ${jsonencode(var.status_event_source)}."
  }
}

variable "engine_role_arn" {
  description = "The worker's IAM role: the only principal the created bus lets put events with engine_event_sources (required with engine_event_sources)."
  type        = string
  default     = null

  validation {
    condition     = var.engine_role_arn == null || can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.engine_role_arn))
    error_message = "engine_role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME) or null."
  }
}
