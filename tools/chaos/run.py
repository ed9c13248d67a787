"""A chaos run: the backend and the module's resources, the worker processes and the parent's threads,
then the checks."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import chaos_workflows
from fake_aws import fake_aws_environment

from chaos.checks import Report, analyse
from chaos.delays import split_delays
from chaos.drive import ScheduleWatch, drive, send_callbacks, start_all
from chaos.record import RunData
from chaos.settings import REGION, Settings, log
from chaos.workdir import ASYNC_QUEUE_FILE, read_lines
from chaos.worker import RECEIPTS_FILE, WAKEUPS_FILE
from chaos.worker_pool import Workers

MODULE_MAX_RECEIVE_COUNT = 5  # variables.tf's max_receive_count default


class EpochClock:
    """stepwell.ports.Clock over the harness's VirtualClock (which answers datetimes)."""

    def __init__(self, clock: Any) -> None:
        self._clock = clock

    def now(self) -> float:
        return float(self._clock.now_epoch())


def run(settings: Settings, workdir: Path, endpoint: str | None = None) -> Report:
    """The run on `settings.backend`, started here, or on the one already running at `endpoint` (a test
    session's)."""
    import boto3
    from stepwell.aws.clients import AwsClients
    from stepwell.client import StepwellClient
    from stepwell.core.registry import Registry
    from stepwell.testing.async_invoke import take_event_invokes
    from stepwell.testing.backends import start_backend
    from stepwell.testing.faults import SqsDuplicator
    from stepwell.testing.mock_deployment import create_deployment
    from stepwell.testing.scheduler import SchedulerFirer, VirtualClock, write_clock_file

    data = RunData(settings)
    log(f"{settings.backend}: {settings.executions} executions, {settings.workers} workers; in {workdir}")
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            endpoint = stack.enter_context(start_backend(settings.backend, REGION, str(workdir))).endpoint_url
        env = stack.enter_context(fake_aws_environment(REGION, endpoint))
        config = dataclasses.replace(
            create_deployment(name="sw-chaos", region=REGION),
            event_sources={chaos_workflows.JOURNEY_SOURCE: [chaos_workflows.JOURNEY_DOMAIN]},
        )
        sqs = boto3.client("sqs", region_name=REGION)
        redrive = sqs.get_queue_attributes(QueueUrl=config.work_queue_url, AttributeNames=["RedrivePolicy"])
        policy = json.loads(redrive["Attributes"]["RedrivePolicy"])
        policy["maxReceiveCount"] = str(MODULE_MAX_RECEIVE_COUNT)
        sqs.set_queue_attributes(
            QueueUrl=config.work_queue_url,
            Attributes={
                "VisibilityTimeout": str(settings.visibility_timeout),
                "RedrivePolicy": json.dumps(policy),
            },
        )
        (workdir / "config.json").write_text(json.dumps(config.to_client_config()))
        (workdir / "settings.json").write_text(json.dumps(dataclasses.asdict(settings)))
        virtual = VirtualClock(listeners=[write_clock_file(str(workdir / "clock"))])
        virtual.advance_seconds(0)  # writes the file
        duplicating_sqs = boto3.client("sqs", region_name=REGION)
        if settings.duplicates:
            SqsDuplicator(sqs, settings.max_extra_delay, settings.seed).attach(duplicating_sqs)
        # Lambda's queue of asynchronous invocations (what a client's wake-up and a wake-up schedule's
        # Scheduler invoke enter).
        async_queue_url = sqs.create_queue(
            QueueName="sw-chaos-async", Attributes={"VisibilityTimeout": str(settings.visibility_timeout)}
        )["QueueUrl"]
        (workdir / ASYNC_QUEUE_FILE).write_text(async_queue_url)

        def enter_async(function_arn: str, event: Any) -> None:
            # At least once, as Lambda's asynchronous invocations are: sent twice like every message here.
            body = {"functionArn": function_arn, "payload": event}
            duplicating_sqs.send_message(QueueUrl=async_queue_url, MessageBody=json.dumps(body))

        def invoke_async(function_arn: str, payload: bytes) -> None:  # Scheduler's target input, as sent
            enter_async(function_arn, json.loads(payload))

        def factory(service: str) -> Any:
            return duplicating_sqs if service == "sqs" else boto3.client(service, region_name=REGION)  # type: ignore[call-overload]

        firer = SchedulerFirer(
            factory, group_name=config.schedule_group_name, clock=virtual, lambda_invoker=invoke_async
        )
        registry = Registry()
        for name, handler in chaos_workflows.ALL_HANDLERS.items():
            registry.register(name, handler)
        client_aws = AwsClients(region=REGION)
        if settings.duplicates:
            SqsDuplicator(sqs, settings.max_extra_delay, settings.seed + 1).attach(client_aws.sqs)
        # The client wakes executions as the module's client_config has it, by invoking the worker's alias
        # asynchronously: those invocations join Lambda's queue of them, with their faults and kills.
        take_event_invokes(client_aws.lambda_wake, enter_async)
        client = StepwellClient(
            dataclasses.replace(config, direct_wake_ups=True),
            client_aws,
            registry=registry,
            clock=EpochClock(virtual),
        )
        chaos_workflows.register_actions()
        client.definitions().put_definition(chaos_workflows.JOURNEY_DOMAIN, chaos_workflows.JOURNEY)
        (workdir / "slow").mkdir()
        worker_env = {
            **env,
            chaos_workflows.LEDGER_ENV: str(workdir / "ledger.jsonl"),
            chaos_workflows.CALLBACKS_ENV: str(workdir / "callbacks.jsonl"),
            chaos_workflows.SLOW_MARKS_ENV: str(workdir / "slow"),
            "PYTHONUNBUFFERED": "1",  # a killed worker's metric lines are not lost in a buffer
        }
        started_at = time.perf_counter()
        workers = Workers(workdir, settings.workers, worker_env)
        stopping = threading.Event()
        threads = [
            threading.Thread(target=start_all, args=(client, data), daemon=True),
            threading.Thread(target=send_callbacks, args=(client, data, workdir, stopping), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            schedules = ScheduleWatch(firer, factory("scheduler"), config.schedule_group_name)
            drive(client, data, workers, schedules, virtual, sqs, config, threads[0], async_queue_url)
        finally:
            stopping.set()
            workers.stop()
        data.wall_seconds = time.perf_counter() - started_at
        (workdir / "jumps.json").write_text(json.dumps([dataclasses.asdict(jump) for jump in data.jumps]))
        data.worker_exits = workers.exits
        log("checking the tables and the ledger")
        report = analyse(client, data, workdir)
        report.delay_parts = split_delays(
            read_lines(workdir / WAKEUPS_FILE), read_lines(workdir / RECEIPTS_FILE), data.jumps
        )
        return report
