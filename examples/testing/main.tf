# The infra root of docs/testing-your-workflows.md: one Stepwell deployment carrying ./workflows (the order
# workflow). Its tests are in ./tests: in-process ones, and one against this root applied to moto.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

module "stepwell" {
  # In your own repo: source = "git::https://example.com/your-org/stepwell.git?ref=v0.1.0"
  source = "../.."

  name          = "shop-orders"
  workflows_dir = "${path.module}/workflows"

  # A throwaway example: destroyable with objects in the payload bucket.
  payload_bucket_force_destroy = true
}

output "client_config" {
  description = "What the Stepwell client, the CLI and the deployed_stack fixture read to reach this deployment."
  value       = module.stepwell.client_config
}
