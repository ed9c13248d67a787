"""The list prices the bench applies to what it counts, and what the alternatives charge."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    label: str
    usd: float  # per `per` units
    per: int
    source: str

    @property
    def per_unit(self) -> float:
        return self.usd / self.per


# us-east-1 on-demand list prices, as published on the AWS pricing pages (checked 2026-11; the DynamoDB
# on-demand prices are those in force since the 50 % cut of 2024-11-01). Free tiers are ignored.
PRICES: dict[str, Price] = {
    "dynamodb_wru": Price(
        "DynamoDB on-demand write request unit", 0.625, 1_000_000, "aws.amazon.com/dynamodb/pricing/on-demand"
    ),
    "dynamodb_rru": Price(
        "DynamoDB on-demand read request unit", 0.125, 1_000_000, "aws.amazon.com/dynamodb/pricing/on-demand"
    ),
    "sqs": Price(
        "SQS standard request (per 64 KB chunk)", 0.40, 1_000_000, "aws.amazon.com/sqs/pricing (first tier)"
    ),
    "scheduler": Price(
        "EventBridge Scheduler invocation", 1.00, 1_000_000, "aws.amazon.com/eventbridge/pricing (Scheduler)"
    ),
    # The engine's status-change events (one entry per PutEvents request, as it announces them).
    "events": Price(
        "EventBridge custom event (PutEvents entry)", 1.00, 1_000_000, "aws.amazon.com/eventbridge/pricing"
    ),
    "s3_put": Price("S3 Standard PUT/LIST request", 0.005, 1_000, "aws.amazon.com/s3/pricing"),
    "s3_get": Price("S3 Standard GET request", 0.0004, 1_000, "aws.amazon.com/s3/pricing"),
    "lambda_request": Price("Lambda request (invocation)", 0.20, 1_000_000, "aws.amazon.com/lambda/pricing"),
    # arm64, the module's default architecture (x86: $16.6667 per million GB-s), first tier (up to 7.5 billion
    # GB-s a month).
    "lambda_gb_second": Price(
        "Lambda duration, arm64 (GB-second)", 13.3334, 1_000_000, "aws.amazon.com/lambda/pricing"
    ),
}
DURABLE_FUNCTIONS_PER_MILLION = 8.00  # AWS Lambda durable functions, per million durable operations
STEP_FUNCTIONS_PER_MILLION = 25.00  # Step Functions Standard, per million state transitions
