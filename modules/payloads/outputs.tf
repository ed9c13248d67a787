output "bucket_name" {
  description = "Name of the payload bucket."
  value       = try(aws_s3_bucket.payloads.id, null)
}

output "bucket_arn" {
  description = "ARN of the payload bucket."
  value       = try(aws_s3_bucket.payloads.arn, null)
}
