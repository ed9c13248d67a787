# modules/payloads: a private, encrypted, TLS-only bucket whose objects expire with retention after their
# execution ends (never while it runs).

mock_provider "aws" {
  override_during = plan
  source          = "./tests/terraform/mocks"
}

run "private_encrypted_tls_only_expiring" {
  command = plan

  module {
    source = "./modules/payloads"
  }

  variables {
    name           = "unit"
    retention_days = 45
  }

  assert {
    condition     = aws_s3_bucket.payloads.bucket == "unit-payloads-123456789012"
    error_message = "The bucket name must default to {name}-payloads-{account id}."
  }

  assert {
    condition = (
      aws_s3_bucket_public_access_block.payloads.block_public_acls && aws_s3_bucket_public_access_block.payloads.block_public_policy &&
      aws_s3_bucket_public_access_block.payloads.ignore_public_acls && aws_s3_bucket_public_access_block.payloads.restrict_public_buckets
    )
    error_message = "All public access must be blocked."
  }

  assert {
    condition     = aws_s3_bucket_ownership_controls.payloads.rule[0].object_ownership == "BucketOwnerEnforced"
    error_message = "Object ownership must be BucketOwnerEnforced."
  }

  assert {
    condition     = one([for rule in aws_s3_bucket_server_side_encryption_configuration.payloads.rule : one(rule.apply_server_side_encryption_by_default).sse_algorithm]) == "AES256"
    error_message = "Without a key the bucket uses SSE-S3."
  }

  assert {
    condition = [
      for rule in aws_s3_bucket_lifecycle_configuration.payloads.rule : {
        id   = rule.id
        days = one(rule.expiration[*].days)
        tags = [for tag in flatten(rule.filter[*].tag) : { (tag.key) = tag.value }]
      } if rule.status == "Enabled" && length(rule.expiration) > 0
    ] == [{ id = "expire-ended-executions", days = 45, tags = [{ "stepwell-retention" = "ended" }] }]
    error_message = "Only objects tagged stepwell-retention=ended (by the engine, when their execution ends) may expire, after retention_days."
  }

  assert {
    condition = [
      for rule in aws_s3_bucket_lifecycle_configuration.payloads.rule : one(rule.abort_incomplete_multipart_upload[*].days_after_initiation)
      if length(rule.expiration) == 0 && rule.status == "Enabled"
    ] == [1]
    error_message = "Incomplete multipart uploads must be aborted after a day, by a rule that expires nothing."
  }

  assert {
    condition = [
      for statement in jsondecode(aws_s3_bucket_policy.payloads.policy).Statement :
      [statement.Effect, statement.Action, statement.Condition.Bool["aws:SecureTransport"]]
    ] == [["Deny", "s3:*", "false"]]
    error_message = "The bucket policy must deny every action (s3:*) without TLS."
  }
}

run "customer_key_and_name" {
  command = plan

  module {
    source = "./modules/payloads"
  }

  variables {
    name        = "unit"
    bucket_name = "my-payloads"
    kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  assert {
    condition     = aws_s3_bucket.payloads.bucket == "my-payloads"
    error_message = "bucket_name must be used when given."
  }

  assert {
    condition = one([
      for rule in aws_s3_bucket_server_side_encryption_configuration.payloads.rule :
      [one(rule.apply_server_side_encryption_by_default).sse_algorithm, one(rule.apply_server_side_encryption_by_default).kms_master_key_id, rule.bucket_key_enabled]
    ]) == ["aws:kms", "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab", true]
    error_message = "With a key the bucket uses SSE-KMS with it and a bucket key."
  }
}

run "rejects_retention_over_ten_years" {
  command = plan

  module {
    source = "./modules/payloads"
  }

  variables {
    name           = "unit"
    retention_days = 3651
  }

  expect_failures = [var.retention_days]
}
