# Traces to your OpenTelemetry collector and to X-Ray (docs/reference/traces.md#exporting-traces).
# The collector's URL and headers (its credentials) live in a Secrets Manager secret this root creates from
# sensitive variables; the module is given only the secret's ARN, and the worker reads it at cold start.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

variable "collector_endpoint" {
  description = "Your collector's OTLP/HTTP base URL (spans go to <url>/v1/traces), reachable from the worker."
  type        = string
  default     = "https://otel-collector.example.com:4318"

  validation {
    condition     = can(regex("^https?://[^/?#@]+(/[^?#]*)?$", var.collector_endpoint))
    error_message = "collector_endpoint must be an http(s) URL with a host and no user, query or fragment."
  }
}

variable "collector_headers" {
  description = "Headers each export sends (an API key, an Authorization header); kept in the secret only."
  type        = map(string)
  default     = {}
  sensitive   = true
}

resource "aws_secretsmanager_secret" "otlp" {
  #checkov:skip=CKV2_AWS_57:The collector's key is rotated where the collector issues it, not by a Lambda here.
  #checkov:skip=CKV_AWS_149:An example: give kms_key_id (and traces.otlp_kms_key_arn) to use your own key.
  name_prefix = "stepwell-tracing-otlp-"
  description = "OTLP/HTTP endpoint and headers the Stepwell worker sends its spans to."
}

resource "aws_secretsmanager_secret_version" "otlp" {
  secret_id = aws_secretsmanager_secret.otlp.id
  secret_string = jsonencode({
    endpoint = var.collector_endpoint
    headers  = var.collector_headers
  })
}

module "stepwell" {
  source = "../.."

  name = "stepwell-tracing"

  traces = {
    # Lambda's own segment of each worker invocation in X-Ray.
    xray = true
    # The worker's spans (lease, load, run, checkpoint, release) in each execution's trace, to the collector.
    otlp_secret_arn = aws_secretsmanager_secret.otlp.arn
    worker_spans    = true
  }

  # The secret's value must exist before the worker's first cold start reads it.
  depends_on = [aws_secretsmanager_secret_version.otlp]
}

output "client_config" {
  description = "What the Stepwell client and CLI read to reach this deployment."
  value       = module.stepwell.client_config
}
