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
# SQS's attributes of each received message the run records (chaos.delays splits the delays with them).
RECEIVE_ATTRIBUTES = ["ApproximateReceiveCount", "SentTimestamp"]
# The files of every receive and every wake-up handled (chaos.delays).
RECEIPTS_FILE = "receipts.jsonl"
WAKEUPS_FILE = "wakeups.jsonl"


def append_line(path: Path, record: Mapping[str, Any]) -> None:
    """One write of one line to a file opened for appending: concurrent writers never interleave."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, (json.dumps(record, separators=(",", ":")) + "\n").encode())
    finally:
        os.close(descriptor)


def wake_up_of(body_text: str, queue: str) -> tuple[tuple[str, float] | None, bool]:
    """The (execution id, due time) of a message that wakes an execution at a due time (None otherwise),
    and whether it is an asynchronous invocation's on-failure destination record."""
    try:
        body = json.loads(body_text)
    except json.JSONDecodeError:
        return None, False
    if not isinstance(body, dict):
        return None, False
    if queue == "async":
        body = body.get("payload")
    destination = isinstance(body, dict) and "kind" not in body and "requestPayload" in body
    if destination:
        body = body["requestPayload"]
    if not isinstance(body, dict) or body.get("kind") != "invoke" or body.get("dueAt") is None:
        return None, destination
    return (str(body.get("executionId")), float(body["dueAt"])), destination


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

    saved = json.loads((workdir / "settings.json").read_text())
    settings = Settings(**{**saved, "kinds": tuple(saved["kinds"])})
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
    duplicator_seed = rng.randrange(2**32)
    if settings.duplicates:
        SqsDuplicator(
            boto3.client("sqs", region_name=REGION), settings.max_extra_delay, duplicator_seed
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
    # The wake-up messages of the invocation running, by (execution id, due time): what the engine's
    # handling of each is matched to.
    received_wake_ups: dict[tuple[str, float], list[dict[str, Any]]] = {}

    def receipts(messages: list[dict[str, Any]], queue: str) -> None:
        received_wake_ups.clear()
        received = time.time()
        for message in messages:
            key, destination = wake_up_of(message["Body"], queue)
            attributes = message.get("Attributes", {})
            record = {
                "message": message["MessageId"],
                "queue": queue,
                "received": received,
                "count": int(attributes.get("ApproximateReceiveCount", 1)),
                "sent": int(attributes["SentTimestamp"]) / 1000 if "SentTimestamp" in attributes else None,
                "execution": key[0] if key else None,
                "due": key[1] if key else None,
            }
            append_line(workdir / RECEIPTS_FILE, record)
            if key is not None:
                meta = {"message": record["message"], "received": received, "via": queue}
                received_wake_ups.setdefault(key, []).append({**meta, "destination": destination})

    handle_message = runtime.worker.handle_message

    def timed_handle_message(body: Mapping[str, Any], lambda_context: Any | None = None) -> Any:
        started = time.time()
        outcome = handle_message(body, lambda_context)
        due = body.get("dueAt")
        if due is not None:
            key = (str(body.get("executionId")), float(due))
            waiting = received_wake_ups.get(key)
            meta = waiting.pop(0) if waiting else {}
            record = {**meta, "execution": key[0], "due": key[1], "started": started}
            append_line(workdir / WAKEUPS_FILE, {**record, "action": str(outcome.action.value)})
        return outcome

    runtime.worker.handle_message = timed_handle_message  # type: ignore[method-assign]

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
            QueueUrl=async_queue_url, MaxNumberOfMessages=1, AttributeNames=RECEIVE_ATTRIBUTES
        ).get("Messages", [])
        if not waiting:
            return False
        receipts(waiting, "async")
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
            QueueUrl=config.work_queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait_seconds,
            AttributeNames=RECEIVE_ATTRIBUTES,
        ).get("Messages", [])
        if not messages:
            return False
        receipts(messages, "work")
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
