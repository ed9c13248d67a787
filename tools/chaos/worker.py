"""One worker process of the run: plays the SQS event source mapping and Lambda's asynchronous
invocations for the engine's entry handler, with faults injected and kills of its own."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import chaos_workflows

from chaos.settings import REGION, Settings
from chaos.workdir import ASYNC_QUEUE_FILE

# Lambda runs an asynchronous invocation at most this often (the module's maximum_retry_attempts 2 + 1).
ASYNC_ATTEMPTS = 3


def worker_process(workdir: Path) -> None:
    """One worker: plays the event source mapping for the engine's entry handler until `stop` appears."""
    import boto3
    from botocore.retries.standard import ExponentialBackoff
    from stepwell.aws.clients import AwsClients
    from stepwell.clock import OffsetFileClock
    from stepwell.config import StepwellConfig
    from stepwell.core.logs import install_json_logging
    from stepwell.core.metrics import EmfMetrics
    from stepwell.core.registry import Registry
    from stepwell.features.definitions.service import install
    from stepwell.testing.async_invoke import destination_record, handler_error
    from stepwell.testing.faults import FaultInjector, SqsDuplicator
    from stepwell.wiring.entry import EntryRuntime

    settings = Settings(**json.loads((workdir / "settings.json").read_text()))
    config = StepwellConfig.from_client_config(json.loads((workdir / "config.json").read_text()))
    pid = os.getpid()
    install_json_logging(config.log_level)  # as the Lambda entry does: JSON lines on stdout
    # botocore's private default, which its stubs do not declare.
    ExponentialBackoff._DEFAULT_BACKOFF_CONFIG = {  # type: ignore[attr-defined]
        **ExponentialBackoff._DEFAULT_BACKOFF_CONFIG,  # type: ignore[attr-defined]
        "throttling_base_scale": settings.throttling_backoff_seconds,
    }
    rng = random.Random(settings.seed * 1_000_003 + pid)
    registry = Registry()
    for name, handler in chaos_workflows.ALL_HANDLERS.items():
        registry.register(name, handler)
    clients = AwsClients(region=REGION, max_attempts=settings.max_attempts)
    faults = FaultInjector(settings.fault_rate, settings.burst_rate, seed=rng.randrange(2**32))
    for client in (clients.dynamodb, clients.sqs, clients.scheduler):
        faults.attach(client)
    SqsDuplicator(
        boto3.client("sqs", region_name=REGION), settings.max_extra_delay, rng.randrange(2**32)
    ).attach(clients.sqs)
    clock = OffsetFileClock(workdir / "clock")
    runtime = EntryRuntime.from_config(
        config, clients, registry=registry, clock=clock, metrics=EmfMetrics(config.name, now=clock.now)
    )
    runtime.engine.lease_seconds = settings.lease_seconds
    runtime.engine.code_version = settings.worker_version or None
    chaos_workflows.register_actions()
    runtime.event_router = install(runtime.engine, config, clients, registry)  # as the Lambda entry does
    invocations_log = workdir / "invocations.jsonl"
    faults_log = workdir / f"faults-{pid}.json"

    def note(record: dict[str, Any]) -> None:
        with invocations_log.open("a") as handle:
            handle.write(json.dumps({"pid": pid, **record}) + "\n")

    def save_faults() -> None:
        faults_log.write_text(json.dumps({"counts": faults.counts, "attempts": faults.attempts}))

    dying = threading.Lock()

    def die(where: str) -> None:
        if not dying.acquire(blocking=False):  # the timer's thread is killing the worker already
            time.sleep(60)
        note({"invocation": chaos_workflows.INVOCATION, "killed": where})
        save_faults()
        os.kill(pid, signal.SIGKILL)

    def maybe_die_in_step() -> None:
        if rng.random() < settings.step_kill_rate:
            die("step body, before its checkpoint")

    chaos_workflows.CLOCK = clock.now
    chaos_workflows.LEASE_SECONDS = settings.lease_seconds
    chaos_workflows.AFTER_RECORD = maybe_die_in_step
    poller = boto3.client("sqs", region_name=REGION)  # the event source mapping's, not the engine's

    def deliver_again(execution_id: str) -> None:
        body = json.dumps({"kind": "invoke", "executionId": execution_id})
        poller.send_message(QueueUrl=config.work_queue_url, MessageBody=body)

    chaos_workflows.TAKE_OVER = deliver_again
    async_queue_url = (workdir / ASYNC_QUEUE_FILE).read_text()
    count = 0

    def begin_invocation(messages: int, via: str) -> threading.Timer | None:
        """Number the invocation, and arm the timer that kills a share of them while they run."""
        nonlocal count
        count += 1
        chaos_workflows.INVOCATION = f"{pid}-{count}"
        note({"invocation": chaos_workflows.INVOCATION, "messages": messages, "via": via})
        if rng.random() < settings.kill_rate or (settings.kill_by is not None and count >= settings.kill_by):
            timer = threading.Timer(rng.uniform(0.0, 0.25), die, args=("timer, mid-invocation",))
            timer.daemon = True
            timer.start()
            return timer
        return None

    def end_invocation(timer: threading.Timer | None) -> None:
        if timer is not None:
            timer.cancel()
            # The invocation ran faster than the timer: the worker dies now, before its work is acknowledged.
            die("timer, after its invocation and before acknowledging it")

    def to_destination(message: Mapping[str, Any], attempts: int, error: dict[str, Any]) -> None:
        """Lambda's on-failure destination: the work queue gets the record, the invocation is done."""
        envelope = json.loads(message["Body"])
        record = destination_record(envelope["payload"], envelope["functionArn"], attempts, error)
        poller.send_message(QueueUrl=config.work_queue_url, MessageBody=json.dumps(record))
        poller.delete_message(QueueUrl=async_queue_url, ReceiptHandle=message["ReceiptHandle"])
        note({"invocation": f"{pid}-{count}", "destination": attempts})

    def run_async_invocation() -> bool:
        """One asynchronous invocation of the worker's alias, if one waits; False when none did."""
        waiting = poller.receive_message(
            QueueUrl=async_queue_url, MaxNumberOfMessages=1, AttributeNames=["ApproximateReceiveCount"]
        ).get("Messages", [])
        if not waiting:
            return False
        message = waiting[0]
        attempt = int(message["Attributes"]["ApproximateReceiveCount"])
        if attempt > ASYNC_ATTEMPTS:  # the last attempt's worker was killed
            to_destination(message, ASYNC_ATTEMPTS, {"errorType": "Runtime.ExitError"})
            return True
        timer = begin_invocation(1, "async")
        error = None
        try:
            runtime.handle_event(json.loads(message["Body"])["payload"], None)
        except Exception as raised:
            error = handler_error(raised)
        end_invocation(timer)
        if error is None:
            poller.delete_message(QueueUrl=async_queue_url, ReceiptHandle=message["ReceiptHandle"])
        elif attempt >= ASYNC_ATTEMPTS:
            to_destination(message, attempt, error)
        # Otherwise Lambda runs it again later: here, after the visibility timeout.
        note({"invocation": chaos_workflows.INVOCATION, "failed": 0 if error is None else 1})
        return True

    def run_sqs_batch(wait_seconds: int = 0) -> bool:
        """One batch of the event source mapping, if the work queue has messages; False when it had none."""
        messages = poller.receive_message(
            QueueUrl=config.work_queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds
        ).get("Messages", [])
        if not messages:
            return False
        rng.shuffle(messages)
        timer = begin_invocation(len(messages), "sqs")
        records = [
            {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"]}
            for m in messages
        ]
        answer = runtime.handle_event({"Records": records, "eventSource": "aws:sqs"}, None)
        end_invocation(timer)
        failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            poller.delete_message_batch(
                QueueUrl=config.work_queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )
        note({"invocation": chaos_workflows.INVOCATION, "failed": len(failed)})
        if count % 20 == 0:
            save_faults()
        return True

    # Lambda runs asynchronous invocations and the mapping's batches side by side, in environments of
    # their own: a worker here takes from each source in turn, so neither waits for the other to drain.
    async_first = False
    while not (workdir / "stop").exists():
        async_first = not async_first
        sources = (
            (run_async_invocation, run_sqs_batch) if async_first else (run_sqs_batch, run_async_invocation)
        )
        if not any(source() for source in sources):
            run_sqs_batch(wait_seconds=1)  # both idle: long-poll the work queue for a second
    save_faults()
