# modules/state: the tables, keys, indexes and protections of docs/architecture.md.

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

run "tables_keys_and_indexes" {
  command = plan

  module {
    source = "./modules/state"
  }

  variables {
    name = "unit"
  }

  assert {
    condition = [for t in [aws_dynamodb_table.definitions, aws_dynamodb_table.executions, aws_dynamodb_table.operations, aws_dynamodb_table.coordination] : t.name] == [
      "unit-definitions", "unit-executions", "unit-operations", "unit-coordination",
    ]
    error_message = "Table names must be {name}-definitions, -executions, -operations, -coordination."
  }

  assert {
    condition = (
      aws_dynamodb_table.definitions.hash_key == "domain" && aws_dynamodb_table.definitions.range_key == "workflowId" &&
      aws_dynamodb_table.executions.hash_key == "contextKey" && aws_dynamodb_table.executions.range_key == "instanceId" &&
      aws_dynamodb_table.operations.hash_key == "executionId" && aws_dynamodb_table.operations.range_key == "sk" &&
      aws_dynamodb_table.coordination.hash_key == "key" && aws_dynamodb_table.coordination.range_key == null
    )
    error_message = "Table keys differ from docs/architecture.md."
  }

  assert {
    condition = {
      for index in aws_dynamodb_table.executions.global_secondary_index :
      index.name => [index.hash_key, index.range_key, index.projection_type]
      } == {
      "domain-subjectId-index" = ["domain", "subjectId", "ALL"]
      "status-index"           = ["status", "updatedAt", "KEYS_ONLY"]
      "workflow-index"         = ["workflowId", "createdAt", "KEYS_ONLY"]
      "version-index"          = ["pinnedVersion", "createdAt", "KEYS_ONLY"]
    }
    error_message = "The executions table must have the subject GSI (projection ALL) and the KEYS_ONLY status, workflow and version GSIs."
  }

  assert {
    condition = (
      contains([for a in aws_dynamodb_table.executions.attribute : "${a.name}:${a.type}"], "pinnedVersion:S") &&
      !contains([aws_dynamodb_table.executions.hash_key, aws_dynamodb_table.executions.range_key], "pinnedVersion") &&
      output.version_index_name == "version-index"
    )
    error_message = "The version index is keyed on pinnedVersion (a string no table key requires, so only pinned running executions are in it)."
  }

  assert {
    condition = {
      for index in aws_dynamodb_table.coordination.global_secondary_index :
      index.name => [index.hash_key, index.range_key, index.projection_type]
    } == { "due-index" = ["dueShard", "dueAt", "ALL"] }
    error_message = "The coordination table must have the due-index GSI (dueShard, dueAt)."
  }

  assert {
    condition = contains(
      [for a in aws_dynamodb_table.executions.attribute : "${a.name}:${a.type}"], "updatedAt:N"
    ) && contains([for a in aws_dynamodb_table.coordination.attribute : "${a.name}:${a.type}"], "dueAt:N")
    error_message = "updatedAt and dueAt must be numbers (epoch seconds)."
  }

  assert {
    condition = alltrue([
      for t in [aws_dynamodb_table.definitions, aws_dynamodb_table.executions, aws_dynamodb_table.operations, aws_dynamodb_table.coordination] :
      t.ttl[0].enabled && t.ttl[0].attribute_name == "ttl"
    ])
    error_message = "Every table must have TTL on the attribute ttl."
  }

  assert {
    condition = alltrue([
      for t in [aws_dynamodb_table.definitions, aws_dynamodb_table.executions, aws_dynamodb_table.operations, aws_dynamodb_table.coordination] :
      t.billing_mode == "PAY_PER_REQUEST" && t.point_in_time_recovery[0].enabled && !t.deletion_protection_enabled
    ])
    error_message = "Defaults: on-demand, PITR on, deletion protection off."
  }

  assert {
    condition     = output.subject_index_name == "domain-subjectId-index"
    error_message = "The subject index name output must be the default name."
  }
}

run "provisioned_encrypted_and_protected" {
  command = plan

  module {
    source = "./modules/state"
  }

  variables {
    name                   = "unit"
    billing_mode           = "PROVISIONED"
    read_capacity          = 7
    write_capacity         = 3
    kms_key_arn            = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    deletion_protection    = true
    point_in_time_recovery = false
    subject_index_name     = "by-subject"
  }

  assert {
    condition = alltrue([
      for t in [aws_dynamodb_table.definitions, aws_dynamodb_table.executions, aws_dynamodb_table.operations, aws_dynamodb_table.coordination] :
      t.billing_mode == "PROVISIONED" && t.read_capacity == 7 && t.write_capacity == 3 &&
      t.deletion_protection_enabled && !t.point_in_time_recovery[0].enabled &&
      t.server_side_encryption[0].enabled &&
      t.server_side_encryption[0].kms_key_arn == "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    ])
    error_message = "Provisioned capacity, the customer key, deletion protection and the PITR switch must reach every table."
  }

  assert {
    condition = alltrue([
      for index in aws_dynamodb_table.executions.global_secondary_index : index.read_capacity == 7 && index.write_capacity == 3
    ])
    error_message = "Provisioned capacity must reach the indexes."
  }

  assert {
    condition     = contains([for index in aws_dynamodb_table.executions.global_secondary_index : index.name], "by-subject")
    error_message = "The subject index must take its configured name."
  }
}
