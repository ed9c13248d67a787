variable "name" {
  description = "Prefix of every table name (`{name}-definitions`, ...)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,30}[a-z0-9]$", var.name))
    error_message = "name must match ^[a-z][a-z0-9-]{1,30}[a-z0-9]$ (3-32 lowercase letters, digits or hyphens, starting with a letter)."
  }
}

variable "tags" {
  description = "Tags applied to every table."
  type        = map(string)
  default     = {}
}

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

variable "kms_key_arn" {
  description = "Customer managed KMS key for table encryption; null uses the AWS owned key."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
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
