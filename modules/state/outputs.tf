output "definitions_table_name" {
  description = "Name of the definitions table."
  value       = try(aws_dynamodb_table.definitions.name, null)
}

output "definitions_table_arn" {
  description = "ARN of the definitions table."
  value       = try(aws_dynamodb_table.definitions.arn, null)
}

output "executions_table_name" {
  description = "Name of the executions table."
  value       = try(aws_dynamodb_table.executions.name, null)
}

output "executions_table_arn" {
  description = "ARN of the executions table."
  value       = try(aws_dynamodb_table.executions.arn, null)
}

output "operations_table_name" {
  description = "Name of the operations table."
  value       = try(aws_dynamodb_table.operations.name, null)
}

output "operations_table_arn" {
  description = "ARN of the operations table."
  value       = try(aws_dynamodb_table.operations.arn, null)
}

output "coordination_table_name" {
  description = "Name of the coordination table."
  value       = try(aws_dynamodb_table.coordination.name, null)
}

output "coordination_table_arn" {
  description = "ARN of the coordination table."
  value       = try(aws_dynamodb_table.coordination.arn, null)
}

output "table_arns" {
  description = "ARNs of all four tables."
  value = try([
    aws_dynamodb_table.definitions.arn,
    aws_dynamodb_table.executions.arn,
    aws_dynamodb_table.operations.arn,
    aws_dynamodb_table.coordination.arn,
  ], [])
}

output "subject_index_name" {
  description = "Name of the executions (domain, subjectId) GSI."
  value       = var.subject_index_name
}

output "status_index_name" {
  description = "Name of the executions (status, updatedAt) GSI."
  value       = local.status_index_name
}

output "workflow_index_name" {
  description = "Name of the executions (workflowId, createdAt) GSI."
  value       = local.workflow_index_name
}

output "version_index_name" {
  description = "Name of the executions (pinnedVersion, createdAt) GSI: running executions by the worker version they are pinned to."
  value       = local.version_index_name
}

output "due_index_name" {
  description = "Name of the coordination (dueShard, dueAt) GSI."
  value       = local.due_index_name
}

output "index_shards" {
  description = "The sharded index keys' shard counts: write (index_shards) and read (index_read_shards, or index_shards when null)."
  value = {
    write = var.index_shards
    read  = coalesce(var.index_read_shards, var.index_shards)
  }
}
