# Bring your durable functions: the team's own TypeScript durable function (src/orders.ts, written with
# @aws/durable-execution-sdk-js) deployed as the team deploys it, and registered as the Stepwell workflow
# "shop.fulfil". The two lines a team changes are marked (1) and (2); README.md says more.

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy into."
  type        = string
  default     = "eu-west-1"
}

variable "function_zip" {
  description = "The function's package: build/function (tsc's output of src/) and its node_modules, zipped (build.py)."
  type        = string
  default     = "build/orders.zip"
}

# -- The team's function, as it was before Stepwell ------------------------------------------------------

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "orders" {
  name               = "shop-orders-fulfil"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_lambda_function" "orders" {
  function_name    = "shop-orders-fulfil"
  role             = aws_iam_role.orders.arn
  runtime          = "nodejs20.x"
  handler          = "orders.handler"
  filename         = var.function_zip
  source_code_hash = filebase64sha256(var.function_zip)
  timeout          = 60
  memory_size      = 256
  publish          = true # each deploy is a version; Stepwell invokes the one registered below

  environment {
    variables = {
      # (2) The SDK's Lambda client checkpoints through Stepwell's API instead of AWS's service.
      AWS_ENDPOINT_URL_LAMBDA = module.stepwell.durable_functions_endpoint
    }
  }
}

# (2) ...and the function's role may call that API and send its results to the work queue.
resource "aws_iam_role_policy" "orders_stepwell" {
  name   = "stepwell-durable-function"
  role   = aws_iam_role.orders.id
  policy = module.stepwell.durable_function_policy_json
}

resource "aws_iam_role" "payments" {
  name               = "shop-payments"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

# -- Stepwell -------------------------------------------------------------------------------------------

module "stepwell" {
  # In your own repo: source = "git::https://example.com/your-org/stepwell.git?ref=v0.1.0"
  source = "../.."

  name       = "shop-durable"
  enable_api = true
  # The payment service answers the function's callbacks through the API (the test answers with the client).
  api_principals = { callbacks = [aws_iam_role.payments.arn] }

  # (1) The function is the workflow "shop.fulfil": started, listed, stopped and answered like any other.
  durable_functions = {
    "shop.fulfil" = { function_arn = aws_lambda_function.orders.arn, qualifier = aws_lambda_function.orders.version }
  }

  # A throwaway example: destroyable with objects in the payload bucket.
  payload_bucket_force_destroy = true
}

output "client_config" {
  description = "What the Stepwell client, the CLI and the deployed_stack fixture read to reach this deployment."
  value       = module.stepwell.client_config
}

output "function_name" {
  description = "The team's durable function."
  value       = aws_lambda_function.orders.function_name
}

output "function_role_arn" {
  description = "The function's execution role: the one principal the API's data plane admits for it."
  value       = aws_iam_role.orders.arn
}

output "api_function_name" {
  description = "The Lambda function behind durable_functions_endpoint (the API's AWS_IAM function URL)."
  value       = module.stepwell.api_function_name
}
