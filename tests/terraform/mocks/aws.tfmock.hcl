# Shared mock values for the hashicorp/aws provider: well-formed ARNs and URLs, so the modules'
# ARN-shape validations and the policy documents can be checked at plan time without AWS.

mock_data "aws_caller_identity" {
  defaults = {
    account_id = "123456789012"
  }
}

mock_data "aws_region" {
  defaults = {
    name = "eu-west-1"
  }
}

mock_data "aws_partition" {
  defaults = {
    partition = "aws"
  }
}

mock_resource "aws_sqs_queue" {
  defaults = {
    arn = "arn:aws:sqs:eu-west-1:123456789012:unit-work"
    id  = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work"
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/unit-work"
  }
}

mock_resource "aws_iam_role" {
  defaults = {
    arn = "arn:aws:iam::123456789012:role/unit-role"
  }
}

mock_resource "aws_cloudwatch_event_bus" {
  defaults = {
    arn = "arn:aws:events:eu-west-1:123456789012:event-bus/unit"
  }
}

mock_resource "aws_cloudwatch_event_rule" {
  defaults = {
    arn = "arn:aws:events:eu-west-1:123456789012:rule/unit/unit-engine"
  }
}

mock_resource "aws_dynamodb_table" {
  defaults = {
    arn = "arn:aws:dynamodb:eu-west-1:123456789012:table/unit-table"
  }
}

mock_resource "aws_s3_bucket" {
  defaults = {
    arn = "arn:aws:s3:::unit-payloads-123456789012"
    id  = "unit-payloads-123456789012"
  }
}

mock_resource "aws_cloudwatch_log_group" {
  defaults = {
    arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/unit-worker"
  }
}

mock_resource "aws_lambda_function" {
  defaults = {
    arn           = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker"
    version       = "7"
    qualified_arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:7"
  }
}

# A durable function's configuration (modules/api reads its execution role).
mock_data "aws_lambda_function" {
  defaults = {
    arn     = "arn:aws:lambda:eu-west-1:123456789012:function:durable"
    role    = "arn:aws:iam::123456789012:role/durable-function"
    timeout = 45
  }
}

mock_resource "aws_lambda_alias" {
  defaults = {
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:unit-worker:live"
  }
}

mock_resource "aws_scheduler_schedule_group" {
  defaults = {
    arn = "arn:aws:scheduler:eu-west-1:123456789012:schedule-group/unit"
  }
}

mock_resource "aws_sns_topic" {
  defaults = {
    arn = "arn:aws:sns:eu-west-1:123456789012:unit-alarms"
  }
}

mock_resource "aws_cloudwatch_metric_alarm" {
  defaults = {
    arn = "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:unit-alarm"
  }
}

mock_resource "aws_lambda_function_url" {
  defaults = {
    function_url = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/"
    url_id       = "abcdefghijklmnopqrstuvwxyz012345"
  }
}
