# Two teams, two engines, one shared event bus owned by the platform (infra) repo.
# Each engine's rule takes only its team's events; both put events on the same bus.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

# The platform's bus: in a real infra repo this already exists and only its ARN is passed in.
resource "aws_cloudwatch_event_bus" "platform" {
  name = "platform-events"
}

module "orders_engine" {
  source = "../.."

  name             = "orders-wf"
  tags             = { team = "orders" }
  create_event_bus = false
  event_bus_arn    = aws_cloudwatch_event_bus.platform.arn
  event_pattern    = jsonencode({ source = [{ prefix = "orders." }] })
}

module "billing_engine" {
  source = "../.."

  name             = "billing-wf"
  tags             = { team = "billing" }
  create_event_bus = false
  event_bus_arn    = aws_cloudwatch_event_bus.platform.arn
  event_pattern    = jsonencode({ source = [{ prefix = "billing." }] })
}

output "orders_client_config" {
  description = "Client configuration of the orders team's engine."
  value       = module.orders_engine.client_config
}

output "billing_client_config" {
  description = "Client configuration of the billing team's engine."
  value       = module.billing_engine.client_config
}
