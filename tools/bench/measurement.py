"""What a measurement holds (requests by API, units, the requests AWS makes on the deployment's
behalf) and what follows from it: per operation, per message, in dollars."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.meter import ApiTally
from bench.prices import PRICES
from bench.text import fmt, usd

if TYPE_CHECKING:
    from bench.moto_stack import MotoStack


@dataclass
class ModelledCharges:
    """Requests AWS makes on the deployment's behalf, which the bench plays: the Lambda event source
    mapping's SQS ReceiveMessage and DeleteMessageBatch, Lambda invocations, Scheduler invocations and the
    SQS SendMessage or Lambda Invoke (of the worker's alias) each one makes. `forwarded_invocations` are the
    Lambda invocations one worker version makes of another (a synchronous Invoke, also counted in
    `lambda_invocations`)."""

    esm_receives: int = 0
    esm_deletes: int = 0
    lambda_invocations: int = 0
    scheduler_invocations: int = 0
    scheduler_sends: int = 0
    scheduler_invokes: int = 0
    forwarded_invocations: int = 0

    def reset(self) -> None:
        self.esm_receives = self.esm_deletes = self.lambda_invocations = 0
        self.scheduler_invocations = self.scheduler_sends = self.scheduler_invokes = 0
        self.forwarded_invocations = 0


@dataclass
class Measurement:
    label: str
    executions: int
    operations: int
    operation_kinds: Counter[str]
    calls: dict[str, int]
    dynamo: dict[str, ApiTally]
    modelled: ModelledCharges
    reported_read_units: float
    reported_write_units: float
    wall_seconds: float

    # --- derived ---

    def per_op(self, value: float) -> float:
        return value / self.operations if self.operations else 0.0

    @property
    def write_units(self) -> float:
        return sum(tally.write_units for tally in self.dynamo.values())

    @property
    def read_units(self) -> float:
        return sum(tally.read_units for tally in self.dynamo.values())

    def service_calls(self, service: str) -> int:
        return sum(count for key, count in self.calls.items() if key.startswith(service + "."))

    @property
    def sqs_requests(self) -> int:
        engine = self.service_calls("sqs")
        return engine + self.modelled.esm_receives + self.modelled.esm_deletes + self.modelled.scheduler_sends

    @property
    def s3_puts(self) -> int:
        return sum(count for key, count in self.calls.items() if key in ("s3.PutObject", "s3.ListObjectsV2"))

    @property
    def s3_gets(self) -> int:
        return self.calls.get("s3.GetObject", 0)

    def costs(self) -> dict[str, float]:
        """USD for the whole measurement, by service."""
        return {
            "DynamoDB writes": self.write_units * PRICES["dynamodb_wru"].per_unit,
            "DynamoDB reads": self.read_units * PRICES["dynamodb_rru"].per_unit,
            "SQS": self.sqs_requests * PRICES["sqs"].per_unit,
            "Scheduler": self.modelled.scheduler_invocations * PRICES["scheduler"].per_unit,
            "EventBridge events": self.calls.get("events.PutEvents", 0) * PRICES["events"].per_unit,
            "S3": self.s3_puts * PRICES["s3_put"].per_unit + self.s3_gets * PRICES["s3_get"].per_unit,
            "Lambda requests": self.modelled.lambda_invocations * PRICES["lambda_request"].per_unit,
        }

    def usd_per_million_ops(self) -> float:
        return self.per_op(sum(self.costs().values())) * 1_000_000


@dataclass
class PerMessage:
    """One phase of a set of executions, per message the worker received (an SQS message, or a direct
    invocation: the wake-up Scheduler invoked)."""

    label: str
    measurement: Measurement
    messages: int

    def per(self, value: float) -> float:
        return value / self.messages if self.messages else 0.0

    @property
    def requests(self) -> int:
        """Every AWS request: the engine's, and those made on its behalf (the mapping's SQS requests,
        Scheduler's SendMessage or Invoke, the forwarding Invoke)."""
        m = self.measurement
        modelled = m.modelled
        return (
            sum(m.calls.values())
            + modelled.esm_receives
            + modelled.esm_deletes
            + modelled.scheduler_sends
            + modelled.scheduler_invokes
            + modelled.forwarded_invocations
        )

    def row(self) -> list[str]:
        m = self.measurement
        return [
            self.label,
            f"{m.executions:,}",
            f"{self.messages:,}",
            fmt(self.per(m.modelled.lambda_invocations)),
            fmt(self.per(m.modelled.forwarded_invocations)),
            fmt(self.per(self.requests)),
            fmt(self.per(m.service_calls("dynamodb"))),
            fmt(self.per(m.write_units)),
            fmt(self.per(m.read_units)),
            usd(self.per(sum(m.costs().values())) * 1_000_000),
        ]


def per_message(stack: MotoStack, label: str, execution_ids: Sequence[str], started: float) -> PerMessage:
    measurement = stack.measure(label, execution_ids, time.perf_counter() - started)
    return PerMessage(label, measurement, stack.delivered_messages)
