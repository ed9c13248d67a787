variable "name" {
  description = "Prefix of the bucket name."
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

variable "bucket_name" {
  description = "Bucket name; null derives `{name}-payloads-{account id}` (bucket names are global)."
  type        = string
  default     = null

  validation {
    condition     = var.bucket_name == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3-63 lowercase letters, digits, '.' or '-', starting and ending with a letter or digit, or null."
  }
}

variable "kms_key_arn" {
  description = "Customer managed KMS key for SSE-KMS; null uses SSE-S3 (AES256)."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[A-Za-z0-9-]+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID) or null."
  }
}

variable "retention_days" {
  description = "Days an ended execution's payload objects are kept, counted from its end (objects of running executions never expire)."
  type        = number
  default     = 30

  validation {
    condition     = var.retention_days >= 1 && var.retention_days <= 3650 && floor(var.retention_days) == var.retention_days
    error_message = "retention_days must be a whole number between 1 and 3650."
  }
}

variable "force_destroy" {
  description = "Let `terraform destroy` delete the bucket while it still holds payloads."
  type        = bool
  default     = false
}
