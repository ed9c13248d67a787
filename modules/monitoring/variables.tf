variable "name" {
  description = "Prefix of every resource name; also the Deployment dimension of the engine's metrics (STEPWELL_NAME)."
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
  description = "Customer managed KMS key the alarm topic the module creates is encrypted with; null: unencrypted (CloudWatch cannot publish to a topic under the AWS managed SNS key). Its key policy must let cloudwatch.amazonaws.com use it (kms:Decrypt, kms:GenerateDataKey*)."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "alarm_topic_arn" {
  description = "SNS topic the alarms notify (alarm and OK); null creates `{name}-alarms` when any alarm is enabled."
  type        = string
  default     = null

  validation {
    condition     = var.alarm_topic_arn == null || can(regex("^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\\.fifo)?$", var.alarm_topic_arn))
    error_message = "alarm_topic_arn must be an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME) or null; got ${jsonencode(var.alarm_topic_arn)}."
  }
}

variable "alarms" {
  description = "Every alarm of the module by key (dlq_messages, oldest_message_age, worker_errors, worker_throttles, failed_executions, stalled_executions, wake_up_lag): whether it exists, the threshold it must exceed, its period, evaluation periods and datapoints to alarm (null: all of them). The root module's `alarms` variable gives the defaults and validates the values."
  type = map(object({
    enabled             = bool
    threshold           = number
    period_seconds      = number
    evaluation_periods  = number
    datapoints_to_alarm = optional(number)
  }))

  validation {
    condition     = length(setsubtract(keys(var.alarms), ["dlq_messages", "oldest_message_age", "worker_errors", "worker_throttles", "failed_executions", "stalled_executions", "wake_up_lag"])) == 0
    error_message = "alarms keys must be among dlq_messages, oldest_message_age, worker_errors, worker_throttles, failed_executions, stalled_executions, wake_up_lag; unknown: ${jsonencode(setsubtract(keys(var.alarms), ["dlq_messages", "oldest_message_age", "worker_errors", "worker_throttles", "failed_executions", "stalled_executions", "wake_up_lag"]))}."
  }
}

variable "dashboard_enabled" {
  description = "Create the CloudWatch dashboard `{name}`."
  type        = bool
  default     = true
}

variable "work_queue_name" {
  description = "Name of the work queue (QueueName dimension of its SQS metrics)."
  type        = string
}

variable "dlq_name" {
  description = "Name of the dead-letter queue (QueueName dimension of its SQS metrics)."
  type        = string
}

variable "worker_function_name" {
  description = "Name of the worker Lambda (FunctionName dimension: every version and alias together)."
  type        = string
}

variable "event_bus_name" {
  description = "Name of the bus the worker puts its status-change events on."
  type        = string
}

variable "status_event_source" {
  description = "Source of the worker's status-change events (the engine's; docs/architecture.md)."
  type        = string
}

variable "notify_statuses" {
  description = "Execution statuses whose status-change events the module forwards to the alarm topic (an EventBridge rule on the bus): any of RUNNING, SUCCEEDED, FAILED, STOPPED, TIMED_OUT, PAUSED, DELETING (PAUSING is no event); [] creates no rule. Needs status_change_events."
  type        = list(string)
  default     = ["FAILED", "TIMED_OUT"]
  nullable    = false

  validation {
    condition     = length(setsubtract(var.notify_statuses, ["RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT", "PAUSED", "DELETING"])) == 0
    error_message = "notify_statuses must be among RUNNING, SUCCEEDED, FAILED, STOPPED, TIMED_OUT, PAUSED, DELETING (a pause is announced when the execution is PAUSED, never PAUSING); unknown: ${jsonencode(setsubtract(var.notify_statuses, ["RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "TIMED_OUT", "PAUSED", "DELETING"]))}."
  }
}
