data "aws_caller_identity" "current" {}

locals {
  bucket_name = coalesce(var.bucket_name, "${var.name}-payloads-${data.aws_caller_identity.current.account_id}")
}

resource "aws_s3_bucket" "payloads" {
  #checkov:skip=CKV_AWS_18:Payloads are transient engine data; access logging is the account's choice, not the module's.
  #checkov:skip=CKV_AWS_144:Cross-region replication of short-lived payloads is not wanted; tables hold the state.
  #checkov:skip=CKV2_AWS_62:Nothing consumes bucket event notifications; the engine reads objects it wrote.
  #checkov:skip=CKV_AWS_21:Objects are written once and expire with retention after their execution ends; versions would only outlive that retention.
  #checkov:skip=CKV_AWS_145:SSE-KMS with a customer key is supported through kms_key_arn; SSE-S3 is the keyless default.
  bucket        = local.bucket_name
  force_destroy = var.force_destroy
  tags          = var.tags
}

resource "aws_s3_bucket_ownership_controls" "payloads" {
  bucket = aws_s3_bucket.payloads.id

  rule {
    object_ownership = "BucketOwnerEnforced"
  }
}

resource "aws_s3_bucket_public_access_block" "payloads" {
  bucket                  = aws_s3_bucket.payloads.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "payloads" {
  bucket = aws_s3_bucket.payloads.id

  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = var.kms_key_arn == null ? "AES256" : "aws:kms"
      kms_master_key_id = var.kms_key_arn
    }
    bucket_key_enabled = var.kms_key_arn != null
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "payloads" {
  bucket = aws_s3_bucket.payloads.id

  # Only objects of ended executions expire: the engine writes payloads untagged and, when an execution
  # ends, copies them onto themselves with this tag (a new object, so the days count from the end).
  # Untagged objects belong to running executions, however long they wait, and are never expired.
  rule {
    id     = "expire-ended-executions"
    status = "Enabled"

    filter {
      tag {
        key   = "stepwell-retention"
        value = "ended"
      }
    }

    expiration {
      days = var.retention_days
    }
  }

  # A separate rule: S3 refuses a tag filter on a rule that aborts multipart uploads.
  rule {
    id     = "abort-incomplete-uploads"
    status = "Enabled"

    filter {}

    abort_incomplete_multipart_upload {
      days_after_initiation = 1
    }
  }
}

resource "aws_s3_bucket_policy" "payloads" {
  bucket = aws_s3_bucket.payloads.id

  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Sid       = "DenyInsecureTransport"
      Effect    = "Deny"
      Principal = "*"
      # Every action: a wildcard in a Deny grants nothing, and a list would miss actions added later.
      Action   = "s3:*"
      Resource = [aws_s3_bucket.payloads.arn, "${aws_s3_bucket.payloads.arn}/*"]
      Condition = {
        Bool = { "aws:SecureTransport" = "false" }
      }
    }]
  })

  # Blocking public access first keeps AWS from treating this policy as a public grant mid-apply.
  depends_on = [aws_s3_bucket_public_access_block.payloads]
}
