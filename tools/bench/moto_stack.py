"""One Stepwell deployment in moto's in-process mock, driven as AWS would drive it, with every request
counted and metered."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import bench_workflows
from fake_aws import fake_aws_environment

from bench.measurement import Measurement, ModelledCharges
from bench.meter import ApiTally, DynamoMeter
from bench.section import REGION, log


class MotoStack:
    """One Stepwell deployment in moto's in-process mock, the worker's entry runtime and a client on a
    shared virtual clock, with every engine-side AWS request counted and metered, and a driver that plays
    SQS's event source mapping and EventBridge Scheduler with its own, uncounted clients."""

    def __init__(self) -> None:
        import boto3
        from stepwell.aws.clients import AwsClients
        from stepwell.client import StepwellClient
        from stepwell.clock import VirtualClock
        from stepwell.core.registry import Registry
        from stepwell.testing.async_invoke import take_event_invokes
        from stepwell.testing.mock_deployment import create_deployment
        from stepwell.wiring.entry import EntryRuntime

        self.config = create_deployment(name="sw-bench", region=REGION)
        self.registry = Registry()
        for name, (handler, _) in bench_workflows.WORKFLOWS.items():
            self.registry.register(name, handler)
        self.clock = VirtualClock()
        self.clients = AwsClients(region=REGION)
        self.meter = DynamoMeter(boto3.client("dynamodb", region_name=REGION), prefix=self.config.name + "-")
        dynamodb = self.clients.dynamodb
        dynamodb.meta.events.register("before-parameter-build.dynamodb", self.meter.read_context_hook)
        self.meter.attach(dynamodb)
        # The client wakes executions as the module's client_config has it: by invoking the worker's
        # alias asynchronously. The bench keeps each event (one Lambda request) and runs it in `drain`.
        self.client = StepwellClient(
            dataclasses.replace(self.config, direct_wake_ups=True),
            self.clients,
            registry=self.registry,
            clock=self.clock,
        )
        self._wake_ups: list[Any] = []
        take_event_invokes(self.clients.lambda_wake, lambda _alias, payload: self._wake_ups.append(payload))
        self.runtime = EntryRuntime.from_config(
            self.config, self.clients, registry=self.registry, clock=self.clock
        )
        self.sqs: Any = boto3.client("sqs", region_name=REGION)
        self.scheduler: Any = boto3.client("scheduler", region_name=REGION)
        self.modelled = ModelledCharges()
        # SQS messages and direct invocations handed to the worker (not a charge: a per-message unit)
        self.delivered_messages = 0
        self._runs = 0

    def reset_counters(self) -> None:
        self.clients.counter.reset()
        self.meter.reset()
        self.modelled.reset()
        self.delivered_messages = 0

    # --- driving ---

    def run_workflow(
        self, workflow: str, payload: Mapping[str, Any], label: str, executions: int = 1
    ) -> Measurement:
        """Start `executions` executions of `workflow` one after the other and run each to its end, sending
        callback results when it waits for one. Counts everything from the start request on."""
        _, needs_callback = bench_workflows.WORKFLOWS[workflow]
        self.reset_counters()
        started = time.perf_counter()
        execution_ids: list[str] = []
        for _ in range(executions):
            self._runs += 1
            execution_id = self.client.start_execution(
                workflow, dict(payload), execution_name=f"run-{self._runs}"
            )
            execution_ids.append(execution_id)
            for _round in range(1_000):
                # A result is sent before any schedule fires: a callback's deadline is a schedule too.
                self.drain(fire_schedules=False)
                if bench_workflows.CALLBACKS:
                    while bench_workflows.CALLBACKS:
                        self.client.send_callback_success(
                            bench_workflows.CALLBACKS.pop(0), {"approved": True}
                        )
                    continue
                self.drain()  # long waits, and any wake-up left behind, fire
                if not bench_workflows.CALLBACKS:
                    break
            status = self.client.describe_execution(execution_id)["Status"]
            for _retry in range(3):  # a message SQS had not made visible yet: look again
                if status != "RUNNING" or bench_workflows.CALLBACKS:
                    break
                time.sleep(1.0)
                self.drain()
                status = self.client.describe_execution(execution_id)["Status"]
            if status != "SUCCEEDED":
                raise RuntimeError(f"{workflow} ended {status}, not SUCCEEDED: {execution_id}")
            if needs_callback and bench_workflows.CALLBACKS:
                raise RuntimeError(f"{workflow}: callbacks left unanswered")
        return self.measure(label, execution_ids, time.perf_counter() - started)

    def measure(self, label: str, execution_ids: Sequence[str], wall_seconds: float) -> Measurement:
        """Everything counted since `reset_counters`, over the operations of `execution_ids`. (Sections
        that drive executions their own way call `reset_counters`, start them, `drain`, then this.)"""
        snapshot = self.clients.counter.snapshot()
        dynamo = {
            key: ApiTally(t.calls, t.write_units, t.read_units, t.bytes_written)
            for key, t in self.meter.tally.items()
        }
        modelled = ModelledCharges(
            **{k: getattr(self.modelled, k) for k in ModelledCharges.__dataclass_fields__}
        )
        kinds: Counter[str] = Counter()
        for execution_id in execution_ids:  # read after the snapshot: not counted
            kinds.update(self._operation_kinds(execution_id))
        return Measurement(
            label=label,
            executions=len(execution_ids),
            operations=sum(kinds.values()),
            operation_kinds=kinds,
            calls=dict(snapshot["calls"]),
            dynamo=dynamo,
            modelled=modelled,
            reported_read_units=float(snapshot["read_units"]),
            reported_write_units=float(snapshot["write_units"]),
            wall_seconds=wall_seconds,
        )

    def _operation_kinds(self, execution_id: str) -> Counter[str]:
        """Durable operations of an execution (the execution itself not counted), by type."""
        journal = self.runtime.engine.load_journal(execution_id)
        kinds: Counter[str] = Counter()
        for operation in journal.operations.values():
            kind = operation.operation_type.value
            if kind == "EXECUTION":
                continue
            sub = operation.sub_type
            kinds[f"{kind}/{sub}" if sub and kind == "CONTEXT" else kind] += 1
        return kinds

    def drain(self, fire_schedules: bool = True) -> None:
        """Deliver messages and fire schedules until nothing is left (waiting out short SQS delays); without
        `fire_schedules`, stop when only schedules are left (executions waiting on a long wait)."""
        queue_url = self.config.work_queue_url
        for _ in range(100_000):
            if self._wake_ups:  # a client's wake-up: an asynchronous invocation of the alias
                self._invoke_async(self._wake_ups.pop(0))
                continue
            self.modelled.esm_receives += 1
            messages = self.sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if messages:
                self._deliver(messages)
                continue
            self.modelled.esm_receives -= 1  # idle polling is a fixed cost, not a per-operation one
            # Visible too: a delayed message may have become visible since the receive above.
            waiting = self.sqs.get_queue_attributes(
                QueueUrl=queue_url,
                AttributeNames=["ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages"],
            )["Attributes"]
            if int(waiting.get("ApproximateNumberOfMessages", "0")):
                continue
            if int(waiting.get("ApproximateNumberOfMessagesDelayed", "0")):
                time.sleep(0.1)
                continue
            # Not while a callback waits for its result: its sender answers first (see run_workflow), before
            # any later wake-up (its deadline, or the one its log's expiry armed) fires.
            if fire_schedules and not bench_workflows.CALLBACKS and self.fire_next_schedule():
                continue
            return
        raise RuntimeError("the work queue did not go quiet")

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        records = [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "eventSource": "aws:sqs",
            }
            for m in messages
        ]
        self.modelled.lambda_invocations += 1
        self.delivered_messages += len(records)
        response = self.runtime.handle_event({"Records": records}, None)
        failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
        if failed:
            raise RuntimeError(f"the worker failed messages {sorted(failed)}")
        self.modelled.esm_deletes += 1
        self.sqs.delete_message_batch(
            QueueUrl=self.config.work_queue_url,
            Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)],
        )

    def fire_next_schedule(self) -> bool:
        group = self.config.schedule_group_name
        summaries = self.scheduler.list_schedules(GroupName=group).get("Schedules", [])
        if not summaries:
            return False
        schedules = [self.scheduler.get_schedule(Name=s["Name"], GroupName=group) for s in summaries]

        def at(schedule: Mapping[str, Any]) -> float:
            stamp = str(schedule["ScheduleExpression"])[3:-1]
            return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC).timestamp()

        earliest = min(schedules, key=at)
        self.clock.advance_to(at(earliest))
        self.modelled.scheduler_invocations += 1
        target = earliest["Target"]
        if target["Arn"] == self.config.wake_function_arn:
            # An asynchronous invocation of the worker's alias: one Lambda invocation, no SQS request.
            self.modelled.scheduler_invokes += 1
            self._invoke_async(json.loads(target["Input"]))
        else:
            self.modelled.scheduler_sends += 1
            self.sqs.send_message(QueueUrl=self.config.work_queue_url, MessageBody=target["Input"])
        self.scheduler.delete_schedule(Name=earliest["Name"], GroupName=group)  # ActionAfterCompletion=DELETE
        return True

    def _invoke_async(self, payload: Any) -> None:
        from stepwell.testing.async_invoke import attempt_in_process, invoke_asynchronously

        attempt = attempt_in_process(self.runtime.handle_event)

        def counted(event: Any) -> dict[str, Any] | None:
            self.modelled.lambda_invocations += 1
            self.delivered_messages += 1
            return attempt(event)

        outcome = invoke_asynchronously(counted, payload, self.config.wake_function_arn)
        if outcome.error is not None:
            raise RuntimeError(f"the worker failed a direct wake-up {payload}: {outcome.error}")


@contextlib.contextmanager
def moto_stack() -> Iterator[MotoStack]:
    from moto import mock_aws

    with fake_aws_environment(REGION), mock_aws():
        yield MotoStack()


class Stacks:
    """The sections that run on moto share one mock and one deployment, created on first use and torn
    down when the run ends."""

    def __init__(self, exits: contextlib.ExitStack) -> None:
        self._exits = exits
        self._moto: MotoStack | None = None

    def moto(self) -> MotoStack:
        if self._moto is None:
            log("creating the deployment in moto (in-process mock_aws)")
            self._moto = self._exits.enter_context(moto_stack())
        return self._moto
