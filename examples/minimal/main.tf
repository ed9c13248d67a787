# The least you need: a name. Everything else takes the module's defaults.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

module "stepwell" {
  source = "../.."

  name = "stepwell-minimal"
}

output "client_config" {
  description = "What the Stepwell client and CLI read to reach this deployment."
  value       = module.stepwell.client_config
}
