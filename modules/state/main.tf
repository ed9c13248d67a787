locals {
  provisioned = var.billing_mode == "PROVISIONED"

  # Index names the engine relies on (docs/architecture.md); only the subject index is configurable.
  status_index_name   = "status-index"
  workflow_index_name = "workflow-index"
  version_index_name  = "version-index"
  due_index_name      = "due-index"
}

resource "aws_dynamodb_table" "definitions" {
  #checkov:skip=CKV_AWS_119:A customer managed key is optional (kms_key_arn); without one the AWS owned key encrypts the table.
  name                        = "${var.name}-definitions"
  billing_mode                = var.billing_mode
  read_capacity               = local.provisioned ? var.read_capacity : null
  write_capacity              = local.provisioned ? var.write_capacity : null
  hash_key                    = "domain"
  range_key                   = "workflowId"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "domain"
    type = "S"
  }

  attribute {
    name = "workflowId"
    type = "S"
  }

  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled     = var.kms_key_arn != null
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}

resource "aws_dynamodb_table" "executions" {
  #checkov:skip=CKV_AWS_119:A customer managed key is optional (kms_key_arn); without one the AWS owned key encrypts the table.
  name                        = "${var.name}-executions"
  billing_mode                = var.billing_mode
  read_capacity               = local.provisioned ? var.read_capacity : null
  write_capacity              = local.provisioned ? var.write_capacity : null
  hash_key                    = "contextKey"
  range_key                   = "instanceId"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "contextKey"
    type = "S"
  }

  attribute {
    name = "instanceId"
    type = "S"
  }

  attribute {
    name = "domain"
    type = "S"
  }

  attribute {
    name = "subjectId"
    type = "S"
  }

  attribute {
    name = "status"
    type = "S"
  }

  attribute {
    name = "updatedAt"
    type = "N"
  }

  attribute {
    name = "workflowId"
    type = "S"
  }

  attribute {
    name = "createdAt"
    type = "N"
  }

  attribute {
    name = "pinnedVersion"
    type = "S"
  }

  global_secondary_index {
    name            = var.subject_index_name
    hash_key        = "domain"
    range_key       = "subjectId"
    projection_type = "ALL"
    read_capacity   = local.provisioned ? var.read_capacity : null
    write_capacity  = local.provisioned ? var.write_capacity : null
  }

  # Lists executions by status, newest updatedAt first. KEYS_ONLY: an entry is 1 write unit whatever the
  # execution's size, and only a change of status or updatedAt touches it; the store reads the listed
  # items from the table (BatchGetItem).
  global_secondary_index {
    name            = local.status_index_name
    hash_key        = "status"
    range_key       = "updatedAt"
    projection_type = "KEYS_ONLY"
    read_capacity   = local.provisioned ? var.read_capacity : null
    write_capacity  = local.provisioned ? var.write_capacity : null
  }

  # Lists executions by workflow, newest first. KEYS_ONLY for the same reason: its keys never change, so
  # ending an execution does not write to it.
  global_secondary_index {
    name            = local.workflow_index_name
    hash_key        = "workflowId"
    range_key       = "createdAt"
    projection_type = "KEYS_ONLY"
    read_capacity   = local.provisioned ? var.read_capacity : null
    write_capacity  = local.provisioned ? var.write_capacity : null
  }

  # Running executions by the worker version they are pinned to (how many still need a version, which
  # to move on an upgrade). Sparse: an item carries pinnedVersion only while RUNNING, so ended executions
  # cost the index nothing. KEYS_ONLY like the others.
  global_secondary_index {
    name            = local.version_index_name
    hash_key        = "pinnedVersion"
    range_key       = "createdAt"
    projection_type = "KEYS_ONLY"
    read_capacity   = local.provisioned ? var.read_capacity : null
    write_capacity  = local.provisioned ? var.write_capacity : null
  }

  # Finished executions get a `ttl` so they expire after the retention period.
  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled     = var.kms_key_arn != null
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}

resource "aws_dynamodb_table" "operations" {
  #checkov:skip=CKV_AWS_119:A customer managed key is optional (kms_key_arn); without one the AWS owned key encrypts the table.
  name                        = "${var.name}-operations"
  billing_mode                = var.billing_mode
  read_capacity               = local.provisioned ? var.read_capacity : null
  write_capacity              = local.provisioned ? var.write_capacity : null
  hash_key                    = "executionId"
  range_key                   = "sk"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "executionId"
    type = "S"
  }

  attribute {
    name = "sk"
    type = "S"
  }

  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled     = var.kms_key_arn != null
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}

resource "aws_dynamodb_table" "coordination" {
  #checkov:skip=CKV_AWS_119:A customer managed key is optional (kms_key_arn); without one the AWS owned key encrypts the table.
  name                        = "${var.name}-coordination"
  billing_mode                = var.billing_mode
  read_capacity               = local.provisioned ? var.read_capacity : null
  write_capacity              = local.provisioned ? var.write_capacity : null
  hash_key                    = "key"
  deletion_protection_enabled = var.deletion_protection

  attribute {
    name = "key"
    type = "S"
  }

  attribute {
    name = "dueShard"
    type = "S"
  }

  attribute {
    name = "dueAt"
    type = "N"
  }

  # Flow control keys to sweep per shard (flow#0..3) and rejected definitions events, oldest first: a
  # Query, never a Scan. Executions' coordination records are in no index.
  global_secondary_index {
    name            = local.due_index_name
    hash_key        = "dueShard"
    range_key       = "dueAt"
    projection_type = "ALL"
    read_capacity   = local.provisioned ? var.read_capacity : null
    write_capacity  = local.provisioned ? var.write_capacity : null
  }

  # Leases and de-duplication records expire on their own.
  ttl {
    attribute_name = "ttl"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  server_side_encryption {
    enabled     = var.kms_key_arn != null
    kms_key_arn = var.kms_key_arn
  }

  tags = var.tags
}
