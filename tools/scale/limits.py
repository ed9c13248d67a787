"""The AWS limits the model holds the projected rates to: us-east-1 defaults, each with the page it comes
from (docs/reference/scale.md lists them with the same sources)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

DYNAMODB_PARTITIONS = (
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html"
)
SCHEDULER = "https://docs.aws.amazon.com/scheduler/latest/UserGuide/scheduler-quotas.html"
LAMBDA_QUOTAS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
LAMBDA_SCALING = "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"
EVENTBRIDGE = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
SQS = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html"
KMS = "https://docs.aws.amazon.com/kms/latest/developerguide/requests-per-second.html"

# Per partition of a table or of a global secondary index, whatever the table's capacity mode.
PARTITION_WRITE_UNITS = 1_000
PARTITION_READ_UNITS = 3_000
# The design goal of issue 42: no partition above half its limit at the targets.
PARTITION_HEADROOM = 0.5


class Measure(Enum):
    """What a quota counts."""

    RATE = "per second"
    COUNT = "at once"


@dataclass(frozen=True)
class Quota:
    key: str
    name: str
    default: float
    measure: Measure
    source: str
    note: str = ""
    # Whether AWS raises it on request (Service Quotas): issue 42 accepts a raise listed in the README.
    adjustable: bool = True


QUOTAS: tuple[Quota, ...] = (
    Quota("schedules", "Scheduler: schedules", 10_000_000, Measure.COUNT, SCHEDULER),
    Quota("create_schedule", "Scheduler: CreateSchedule", 5_000, Measure.RATE, SCHEDULER),
    Quota(
        "delete_schedule",
        "Scheduler: DeleteSchedule",
        1_000,
        Measure.RATE,
        SCHEDULER,
        "the page's table gives 1,000 in us-east-1 (its note names only CreateSchedule's raise to 5,000)",
    ),
    Quota("scheduler_invocations", "Scheduler: invocations", 1_000, Measure.RATE, SCHEDULER),
    Quota("lambda_concurrency", "Lambda: concurrent executions", 1_000, Measure.COUNT, LAMBDA_QUOTAS),
    Quota(
        "lambda_scaling",
        "Lambda: scaling, environments per 10 s",
        1_000,
        Measure.COUNT,
        LAMBDA_SCALING,
        "per function: a burst needs its concurrency added within the 10 s it arrives in; not a quota to "
        "raise (a burst from the work queue waits there meanwhile)",
        adjustable=False,
    ),
    Quota("put_events", "EventBridge: PutEvents requests", 10_000, Measure.RATE, EVENTBRIDGE),
    Quota(
        "rule_invocations",
        "EventBridge: rule target invocations",
        18_750,
        Measure.RATE,
        EVENTBRIDGE,
        "a bus event the module's rule sends to the work queue is one invocation",
    ),
    Quota(
        "kms",
        "KMS: symmetric cryptographic operations",
        5_500,
        Measure.RATE,
        KMS,
        "only with kms_key_arn; the default varies by Region and the model takes 5,500, so it errs high",
    ),
)
QUOTA_BY_KEY = {quota.key: quota for quota in QUOTAS}
# SQS standard queues (the work queue and the DLQ) support a nearly unlimited number of API calls per
# second per action (SQS): reported as a rate with no quota.
SQS_NOTE = "standard queue: nearly unlimited API calls per second per action"
