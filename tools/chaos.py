"""`make chaos`: run a mix of workflows under injected faults and check nothing is lost or done twice.

    .venv/bin/python tools/chaos.py                                  # 1,000 executions, report on stdout
    .venv/bin/python tools/chaos.py --write BENCHMARKS.md            # ... and its section of the file
    .venv/bin/python tools/chaos.py --executions 70 --workers 4      # a short run (tests/chaos)
    .venv/bin/python tools/chaos.py --backend localstack --write BENCHMARKS.md  # ... on LocalStack

The run: moto's server (stepwell.testing.moto_server), or LocalStack with `--backend localstack`
(stepwell.testing.backends), holds the module's resources (stepwell.testing.mock_deployment); several worker
PROCESSES each play the SQS event source mapping (receive up to 10 messages, hand them shuffled to
`stepwell.entry.EntryRuntime.handle_event`, delete the successes; the rest come back after the visibility
timeout) and Lambda's asynchronous invocations (the one-time wake-up schedules invoke the worker's alias:
each invocation waits in a queue of its own, as in Lambda, is run at least once, run again after a failure
or a kill up to 3 attempts, and then sent to the work queue as its on-failure destination record), taking
from the two sources in turn, on one virtual clock the parent keeps in a file.
The parent starts the executions (`tools/chaos_workflows.py`; every seventh is a definitions context: a
`chaos.begin` bus event starts it, a `chaos.next` event a few seconds later resumes it), completes
callbacks from a concurrent sender (each one twice: the second must be refused), fires due Scheduler
schedules, skips the clock to the next one, sends a `{"kind": "reconcile"}` message every few seconds, and
plays the operator the DLQ's alarm calls: what the DLQ holds (a message whose every receive met a fault or
a kill) goes back to the work queue every few seconds, as `stepwell dlq redrive` does (counted).
The workers run as published version 1 of the worker (`--worker-version`), as the module deploys them, so
every execution is pinned to it; `--worker-version ''` runs them unversioned.
Choices that keep the run bounded: botocore makes 3 attempts per call (8 deployed) and backs off 0.1 s,
not 1 s, after a throttle; the lease is 3 s (900 s deployed); the queue's visibility timeout is 8 s.

Faults (stepwell.testing.faults): a share of the engine's DynamoDB, SQS and Scheduler attempts fail with
throttling or 500s (botocore retries them; a share of calls fails every attempt, so errors reach the
engine); every SQS message the engine, the client or a schedule sends is sent twice, each copy with a
random extra delay, and each batch is shuffled; a worker kills itself with SIGKILL in a share of its
invocations (from a timer while the batch runs, or from a step body right after its ledger line: before
its checkpoint); the `slow` workflow's step outlives the engine's (shortened) lease, so another worker
takes the execution over while it still runs.

Checks, from the tables (a GetItem and the history per execution): every started execution ended; no
operation has two results; no history event is recorded twice (EventIds 1..N, no event repeated); no
callback completed twice; every ended execution names the worker version that ran it; every begin event
started its context; every step body (and definitions action)
re-run, from the ledger, began while that attempt had no stored result, with its cause named. Figures:
throughput, injected faults by kind, kills per invocation, and the due-to-run delay of wake-ups (the
WakeUpLag metric lines the workers write, less the clock skips in between). A run with any loss, double
result or unexplained re-run exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
for _path in (str(TOOLS), str(ROOT), str(ROOT / "lambda_src")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import chaos_workflows  # noqa: E402  (tools/ is put on the path above)
from stepwell.testing.backends import DEPLOYED_BACKEND_NAMES  # noqa: E402

DEFAULT_EXECUTIONS = 1000
DEFAULT_WORKERS = 5
REGION = "us-east-1"
# Each backend's run has its section of BENCHMARKS.md between markers of its own (`make bench` keeps both).
SECTION_MARKERS = {
    "moto": ("<!-- chaos:start -->", "<!-- chaos:end -->"),
    "localstack": ("<!-- chaos-localstack:start -->", "<!-- chaos-localstack:end -->"),
}
# What each backend is, and why the run's throughput and delays measure this machine rather than the engine.
_BACKEND_TEXT = {
    "moto": (
        "moto's server",
        "every worker and the run itself share moto's one server thread, so messages queue behind it while "
        "the starts arrive",
    ),
    "localstack": (
        "LocalStack (DynamoDB Local in memory, LocalStack's SQS, Scheduler, EventBridge and S3)",
        "every worker, the run, LocalStack and DynamoDB Local share this machine's cores",
    ),
}
# The kinds the run starts in turn: the code workflows, then a definitions context.
JOURNEY = "journey"
MIX = (*chaos_workflows.WORKFLOWS, JOURNEY)
# A context's `chaos.next` event comes this long (real seconds) after its `chaos.begin`.
JOURNEY_NEXT_AFTER_SECONDS = (1.0, 8.0)
RECONCILE_EVERY_SECONDS = 3.0
REDRIVE_EVERY_SECONDS = 15.0
LOOK_EVERY_SECONDS = 2.0
# How long after its time a step's result may land (the engine's retries of an injected error included).
STORE_MARGIN_SECONDS = 2.0  # how often the parent looks at which executions ended
# The clock skips to the next schedule at most this often, so short SQS delays still pass in real time.
CLOCK_SKIP_EVERY_SECONDS = 2.0
MODULE_MAX_RECEIVE_COUNT = 5  # variables.tf's max_receive_count default
# Lambda runs an asynchronous invocation at most this often (the module's maximum_retry_attempts 2 + 1).
ASYNC_ATTEMPTS = 3
ASYNC_QUEUE_FILE = "async_queue_url"
CALLBACK_SENDER_DELAY_SECONDS = (0.0, 1.0)
# Terminal history events: an operation may have at most one.
TERMINAL_SUFFIXES = ("Succeeded", "Failed", "TimedOut", "Stopped", "Cancelled")
_FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
}


@dataclass(frozen=True)
class Settings:
    executions: int = DEFAULT_EXECUTIONS
    workers: int = DEFAULT_WORKERS
    fault_rate: float = 0.12  # of HTTP attempts to DynamoDB, SQS and Scheduler
    burst_rate: float = 0.01  # of calls: every attempt fails, the error reaches the engine
    kill_rate: float = 0.08  # of invocations: a timer kills the worker while its batch runs
    # A worker still alive at its kill_by-th invocation is killed in it, so a short run's kills never fall
    # below the 5 % however the dice fall (None: the rate alone decides).
    kill_by: int | None = None
    step_kill_rate: float = 0.02  # of step bodies: the worker dies right after the ledger line
    max_attempts: int = 3  # botocore attempts per call (the deployed default is 8: see the report)
    # botocore's base backoff after a throttling error (1 s in botocore), compressed as the virtual clock
    # compresses waits: otherwise the run's time goes to sleeping out injected throttles.
    throttling_backoff_seconds: float = 0.1
    lease_seconds: float = 3.0
    visibility_timeout: int = 8
    max_extra_delay: int = 3  # seconds of random extra SQS delay per message copy
    start_rate: float = 40.0  # executions started per second
    seed: int = 12
    timeout: float = 2400.0  # seconds after the last start before the run gives up waiting
    # The published worker version the workers run as, as the module deploys them: every execution is
    # pinned to it (its end names it). "": unversioned workers, which never pin.
    worker_version: str = "1"
    backend: str = "moto"  # where the module's resources live: moto's server or LocalStack


def log(message: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an append-only file (a line cut short by a kill is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(line)
            if isinstance(value, dict):
                records.append(value)
    return records


class OffsetFileClock:
    """The engine's clock in a worker process: real time plus the offset the parent writes (in
    stepwell.testing.scheduler.write_clock_file's format), re-read when the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp = -1
        self._offset = 0.0

    def now(self) -> float:
        with contextlib.suppress(FileNotFoundError):
            stamp = os.stat(self._path).st_mtime_ns
            if stamp != self._stamp:
                self._offset = float(self._path.read_text().strip() or 0.0)
                self._stamp = stamp
        return time.time() + self._offset


class EpochClock:
    """stepwell.ports.Clock over the harness's VirtualClock (which answers datetimes)."""

    def __init__(self, clock: Any) -> None:
        self._clock = clock

    def now(self) -> float:
        return float(self._clock.now_epoch())


# ------------------------------------------------------------------------------------ worker process


def worker_process(workdir: Path) -> None:
    """One worker: plays the event source mapping for the engine's entry handler until `stop` appears."""
    import boto3
    from botocore.retries.standard import ExponentialBackoff
    from stepwell.aws import AwsClients
    from stepwell.config import StepwellConfig
    from stepwell.definitions.service import install
    from stepwell.entry import EntryRuntime
    from stepwell.logs import install_json_logging
    from stepwell.metrics import EmfMetrics
    from stepwell.registry import Registry
    from stepwell.testing.async_invoke import destination_record, handler_error
    from stepwell.testing.faults import FaultInjector, SqsDuplicator

    settings = Settings(**json.loads((workdir / "settings.json").read_text()))
    config = StepwellConfig.from_client_config(json.loads((workdir / "config.json").read_text()))
    pid = os.getpid()
    install_json_logging(config.log_level)  # as the Lambda entry does: JSON lines on stdout
    ExponentialBackoff._DEFAULT_BACKOFF_CONFIG = {
        **ExponentialBackoff._DEFAULT_BACKOFF_CONFIG,
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

    def to_destination(message: dict[str, Any], attempts: int, error: dict[str, Any]) -> None:
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


# ------------------------------------------------------------------------------------------ the run


@dataclass
class Jump:
    """A skip of the virtual clock: from `start` to `end` (virtual epoch seconds)."""

    start: float
    end: float


@dataclass
class RunData:
    settings: Settings
    started: dict[str, str] = field(default_factory=dict)  # execution id -> workflow
    start_failures: list[str] = field(default_factory=list)
    # Definitions contexts: subject -> its context's execution id, once found; (when, subject) of the
    # `chaos.next` events still to send.
    journeys: dict[str, str | None] = field(default_factory=dict)
    next_events: list[tuple[float, str]] = field(default_factory=list)
    jumps: list[Jump] = field(default_factory=list)
    worker_exits: Counter[str] = field(default_factory=Counter)
    callbacks_sent: int = 0
    callbacks_unknown: list[str] = field(default_factory=list)
    callback_repeats_refused: int = 0
    callback_repeats_accepted: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    first_start: float = 0.0
    last_end: float = 0.0
    fired_schedules: int = 0
    reconciles: int = 0
    redriven: int = 0  # messages moved from the DLQ back to the work queue


class Workers:
    """The worker processes; one that dies (killed) is replaced."""

    def __init__(self, workdir: Path, count: int, env: Mapping[str, str]) -> None:
        self.workdir = workdir
        self.env = dict(env)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.exits: Counter[str] = Counter()
        self._spawned = 0
        for _ in range(count):
            self.processes.append(self._spawn())

    def _spawn(self) -> subprocess.Popen[bytes]:
        self._spawned += 1
        out = (self.workdir / f"worker-{self._spawned}.out").open("wb")
        err = (self.workdir / f"worker-{self._spawned}.err").open("wb")
        return subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker-process", str(self.workdir)],
            stdout=out,
            stderr=err,
            env=self.env,
        )

    def replace_dead(self) -> None:
        for index, process in enumerate(self.processes):
            code = process.poll()
            if code is None:
                continue
            self.exits["killed (SIGKILL)" if code == -signal.SIGKILL else f"exit {code}"] += 1
            self.processes[index] = self._spawn()

    def stop(self) -> None:
        (self.workdir / "stop").touch()
        deadline = time.monotonic() + 30
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            if process.poll() is None:
                process.kill()
                process.wait()


@contextlib.contextmanager
def aws_environment(endpoint: str) -> Iterator[dict[str, str]]:
    """This process's AWS settings pointed at `endpoint` (restored after); yields the environment."""
    with mock.patch.dict(os.environ, {**_FAKE_AWS_ENV, "AWS_ENDPOINT_URL": endpoint}):
        os.environ.pop("AWS_PROFILE", None)
        yield dict(os.environ)


def run(settings: Settings, workdir: Path, endpoint: str | None = None) -> Report:
    """The run on `settings.backend`, started here, or on the one already running at `endpoint` (a test
    session's)."""
    import boto3
    from stepwell.aws import AwsClients
    from stepwell.client import StepwellClient
    from stepwell.registry import Registry
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
        env = stack.enter_context(aws_environment(endpoint))
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
            threading.Thread(target=_start_all, args=(client, data), daemon=True),
            threading.Thread(target=_send_callbacks, args=(client, data, workdir, stopping), daemon=True),
        ]
        for thread in threads:
            thread.start()
        try:
            schedules = ScheduleWatch(firer, factory("scheduler"), config.schedule_group_name)
            _drive(client, data, workers, schedules, virtual, sqs, config, threads[0])
        finally:
            stopping.set()
            workers.stop()
        data.wall_seconds = time.perf_counter() - started_at
        (workdir / "jumps.json").write_text(json.dumps([dataclasses.asdict(jump) for jump in data.jumps]))
        data.worker_exits = workers.exits
        log("checking the tables and the ledger")
        return analyse(client, data, workdir)


def _start_all(client: Any, data: RunData) -> None:
    rng = random.Random(data.settings.seed + 3)
    definitions = client.definitions()
    data.first_start = time.perf_counter()
    for index in range(data.settings.executions):
        kind = MIX[index % len(MIX)]
        try:
            if kind == JOURNEY:
                subject = f"subject-{index}"
                definitions.publish_event(
                    chaos_workflows.JOURNEY_DOMAIN,
                    subject,
                    chaos_workflows.JOURNEY_BEGIN,
                    {"index": index},
                    source=chaos_workflows.JOURNEY_SOURCE,
                )
                data.journeys[subject] = None
                data.next_events.append(
                    (time.monotonic() + rng.uniform(*JOURNEY_NEXT_AFTER_SECONDS), subject)
                )
            else:
                execution_id = client.start_execution(kind, {"index": index}, execution_name=f"run-{index}")
                data.started[execution_id] = kind
        except Exception as error:  # reported: a start the caller saw fail is not an execution
            data.start_failures.append(f"{kind} {index}: {type(error).__name__}: {error}")
        time.sleep(1.0 / data.settings.start_rate)


def _send_next_events(client: Any, data: RunData) -> None:
    definitions = client.definitions()
    now = time.monotonic()
    due = [subject for when, subject in data.next_events if when <= now]
    data.next_events = [(when, subject) for when, subject in data.next_events if when > now]
    for subject in due:
        definitions.publish_event(
            chaos_workflows.JOURNEY_DOMAIN,
            subject,
            chaos_workflows.JOURNEY_NEXT,
            source=chaos_workflows.JOURNEY_SOURCE,
        )


def _find_contexts(client: Any, data: RunData, per_pass: int = 20) -> list[str]:
    """The execution ids of contexts the `chaos.begin` events started, found since the last pass (a Query
    per subject, up to `per_pass` subjects)."""
    definitions = client.definitions()
    found = []
    for subject in [s for s, execution in data.journeys.items() if execution is None][:per_pass]:
        contexts = definitions.list_contexts(chaos_workflows.JOURNEY_DOMAIN, subject_id=subject).items
        if contexts:
            execution_id = str(contexts[0].execution_id)
            data.journeys[subject] = execution_id
            data.started[execution_id] = JOURNEY
            found.append(execution_id)
    return found


def _send_callbacks(client: Any, data: RunData, workdir: Path, stopping: threading.Event) -> None:
    """Completes each callback a submitter wrote, then completes it again: the repeat must be refused."""
    from stepwell.errors import CallbackNotFound

    rng = random.Random(data.settings.seed + 2)
    seen: set[str] = set()
    path = workdir / "callbacks.jsonl"
    while not stopping.is_set():
        for record in read_lines(path):
            callback_id = str(record["callback"])
            if callback_id in seen:
                continue
            seen.add(callback_id)
            time.sleep(rng.uniform(*CALLBACK_SENDER_DELAY_SECONDS) / 10)
            try:
                client.send_callback_success(callback_id, {"approved": True})
                data.callbacks_sent += 1
            except CallbackNotFound:
                # An id a submitter handed out that the execution does not know (reported, not retried).
                data.callbacks_unknown.append(callback_id)
                continue
            except Exception as error:  # a transient failure: try again on a later pass
                log(f"callback {callback_id[:12]}... not sent ({type(error).__name__}); trying again")
                seen.discard(callback_id)
                continue
            try:
                client.send_callback_success(callback_id, {"approved": "again"})
                data.callback_repeats_accepted.append(callback_id)
            except CallbackNotFound:
                data.callback_repeats_refused += 1
            except Exception as error:
                log(f"repeat of callback {callback_id[:12]}...: {type(error).__name__}: {error}")
                data.callback_repeats_refused += 1
        stopping.wait(0.5)


class ScheduleWatch:
    """The group's one-time schedules by due time, each read once (GetSchedule) and remembered by name and
    modification time: moto answers every request in one thread, so the run reads no more than it must."""

    def __init__(self, firer: Any, scheduler: Any, group: str) -> None:
        self._firer = firer
        self._scheduler = scheduler
        self._group = group
        self._known: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}

    def _due_times(self) -> list[tuple[float, dict[str, Any]]]:
        current: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        for page in self._scheduler.get_paginator("list_schedules").paginate(GroupName=self._group):
            for summary in page["Schedules"]:
                key = (str(summary["Name"]), str(summary.get("LastModificationDate")))
                known = self._known.get(key)
                if known is None:
                    try:
                        schedule = self._scheduler.get_schedule(GroupName=self._group, Name=summary["Name"])
                    except self._scheduler.exceptions.ResourceNotFoundException:
                        continue  # withdrawn by a worker since the listing: nothing to fire
                    expression = str(schedule["ScheduleExpression"])
                    if not expression.startswith("at("):
                        continue
                    moment = dt.datetime.strptime(expression[3:-1], "%Y-%m-%dT%H:%M:%S").replace(
                        tzinfo=dt.UTC
                    )
                    known = (moment.timestamp(), schedule)
                current[key] = known
        self._known = current
        return sorted(current.values(), key=lambda entry: entry[0])

    def fire_due(self, now: float) -> tuple[int, float | None]:
        """Fires (and deletes, as ActionAfterCompletion=DELETE does) the schedules due at `now`; returns how
        many fired and the next one's due time."""
        fired = 0
        for due_at, schedule in self._due_times():
            if due_at > now:
                return fired, due_at
            self._firer.fire(schedule, dt.datetime.fromtimestamp(due_at, dt.UTC))
            with contextlib.suppress(self._scheduler.exceptions.ResourceNotFoundException):
                self._scheduler.delete_schedule(GroupName=self._group, Name=schedule["Name"])
            fired += 1
        return fired, None


def _drive(
    client: Any,
    data: RunData,
    workers: Workers,
    schedules: ScheduleWatch,
    virtual: Any,
    sqs: Any,
    config: Any,
    starter: threading.Thread,
) -> None:
    """Fire schedules, skip the clock, reconcile, replace killed workers, until every execution ended."""
    last_skip = last_reconcile = last_redrive = last_progress = last_look = time.monotonic()
    deadline: float | None = None
    pending: list[str] = []
    while True:
        time.sleep(1.0)
        now = time.monotonic()
        workers.replace_dead()
        fired, upcoming = schedules.fire_due(virtual.now_epoch())
        data.fired_schedules += fired
        if not fired and upcoming is not None and now - last_skip >= CLOCK_SKIP_EVERY_SECONDS:
            last_skip = now
            current = virtual.now_epoch()
            if upcoming > current:
                virtual.advance_seconds(upcoming - current)
                data.jumps.append(Jump(current, upcoming))
        if now - last_reconcile >= RECONCILE_EVERY_SECONDS:
            last_reconcile = now
            sqs.send_message(QueueUrl=config.work_queue_url, MessageBody=json.dumps({"kind": "reconcile"}))
            data.reconciles += 1
        if now - last_redrive >= REDRIVE_EVERY_SECONDS:
            last_redrive = now
            data.redriven += _redrive(sqs, config.dlq_url, config.work_queue_url)
        _send_next_events(client, data)
        if starter.is_alive() or now - last_look < LOOK_EVERY_SECONDS:
            continue
        last_look = now
        if deadline is None:
            deadline = now + data.settings.timeout
            pending = list(data.started)
        pending += _find_contexts(client, data)
        pending = _still_running(client, pending)
        if now - last_progress >= 10:
            last_progress = now
            log(f"{len(data.started) - len(pending)} of {len(data.started)} ended")
        if not pending and None not in data.journeys.values():
            data.last_end = time.perf_counter()
            return
        if now >= deadline:
            unstarted = sum(1 for execution in data.journeys.values() if execution is None)
            log(
                f"giving up after {data.settings.timeout:.0f} s: {len(pending)} executions still "
                f"running, {unstarted} begin events without a context"
            )
            data.last_end = time.perf_counter()
            return


def _redrive(sqs: Any, dlq_url: str, work_queue_url: str) -> int:
    """What the DLQ holds, back to the work queue by `stepwell dlq redrive`'s function: how many."""
    from stepwell.work_queue import redrive_dead_letters

    attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    waiting = int(attributes["Attributes"]["ApproximateNumberOfMessages"])
    return redrive_dead_letters(sqs, dlq_url, work_queue_url, max_messages=waiting).moved if waiting else 0


def _still_running(client: Any, pending: list[str], per_pass: int = 50) -> list[str]:
    """Looks at up to `per_pass` of the executions not yet seen ended (one GetItem each); those still
    running go to the back, so the next pass looks at others. A context's execution may not exist yet:
    the router records the context before it starts the execution (a redelivery of its event finishes
    a start a fault cut short), so it counts as running."""
    from stepwell.errors import ExecutionNotFound

    looked_at, rest = pending[:per_pass], pending[per_pass:]
    running = []
    for execution_id in looked_at:
        try:
            status = str(client.describe_execution(execution_id)["Status"])
        except ExecutionNotFound:
            status = "RUNNING"
        if status == "RUNNING":
            running.append(execution_id)
    return rest + running


# ------------------------------------------------------------------------------------------ checks


@dataclass
class Report:
    data: RunData
    executions: int = 0  # started ones plus the children they invoked
    ended: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    double_results: list[str] = field(default_factory=list)
    double_events: list[str] = field(default_factory=list)
    bad_event_ids: list[str] = field(default_factory=list)
    step_runs: int = 0
    reruns: Counter[str] = field(default_factory=Counter)  # cause -> count
    unexplained: list[str] = field(default_factory=list)
    invocations: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    fault_attempts: int = 0
    lags: list[float] = field(default_factory=list)  # seconds from a due time to the run
    # Asynchronous invocations (direct wake-ups), and those whose attempts all failed or died: sent to the
    # work queue.
    async_invocations: int = 0
    async_destinations: int = 0
    # Ended executions whose record does not name the worker version that ran them.
    unpinned_ends: list[str] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[str]:
        checks = {
            "executions lost": len(self.lost),
            "operations with two results": len(self.double_results),
            "history events recorded twice": len(self.double_events),
            "histories whose EventIds are not 1..N": len(self.bad_event_ids),
            "step re-runs not explained": len(self.unexplained),
            "callbacks completed twice": len(self.data.callback_repeats_accepted),
            "starts that failed": len(self.data.start_failures),
            "ended executions without the version that ran them": len(self.unpinned_ends),
        }
        return [f"{name}: {count}" for name, count in checks.items() if count]


def _epoch(value: Any) -> float:
    return value.timestamp() if isinstance(value, dt.datetime) else float(value)


def _event_key(event: Mapping[str, Any]) -> str:
    """An event without its position: two events with the same key are one fact recorded twice."""
    return json.dumps({k: v for k, v in event.items() if k != "EventId"}, sort_keys=True, default=str)


def check_history(
    execution_id: str, events: Sequence[Mapping[str, Any]], report: Report
) -> dict[tuple[str, int], float]:
    """Checks one history; returns when each attempt of each operation (by name) got its result."""
    ids = [event.get("EventId") for event in events]
    if ids != list(range(1, len(events) + 1)):
        report.bad_event_ids.append(execution_id)
    repeated = [key for key, count in Counter(_event_key(event) for event in events).items() if count > 1]
    report.double_events.extend(f"{execution_id}: {key[:200]}" for key in repeated)
    results: Counter[tuple[str, int]] = Counter()
    finals: Counter[str] = Counter()
    stored: dict[tuple[str, int], float] = {}
    for event in events:
        event_type = str(event.get("EventType", ""))
        if event_type.startswith("Execution") or not event_type.endswith(TERMINAL_SUFFIXES):
            continue
        retry = (event.get(f"{event_type}Details") or {}).get("RetryDetails") or {}
        attempt = int(retry.get("CurrentAttempt", 1))
        operation = str(event.get("Id"))
        results[(operation, attempt)] += 1
        # A failed attempt the retry strategy retries names its next attempt's delay: not the result.
        if "NextAttemptDelaySeconds" not in retry:
            finals[operation] += 1
        if event.get("Name"):
            stored.setdefault((str(event["Name"]), attempt), _epoch(event["EventTimestamp"]))
    report.double_results.extend(
        f"{execution_id} operation {op} attempt {attempt}"
        for (op, attempt), count in results.items()
        if count > 1
    )
    report.double_results.extend(
        f"{execution_id} operation {op}" for op, count in finals.items() if count > 1
    )
    return stored


def explain_reruns(
    ledger: Sequence[Mapping[str, Any]],
    results: Mapping[str, Mapping[tuple[str, int], float]],
    killed_invocations: set[str],
    report: Report,
    jumps: Sequence[Jump] = (),
) -> None:
    """Each run of a step body after its first must have begun while the step had no stored result;
    its cause is what became of the run before it."""
    runs: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for entry in ledger:
        runs[(str(entry["execution"]), str(entry["step"]))].append(entry)
    report.step_runs = len(ledger)
    for (execution_id, step), entries in runs.items():
        entries.sort(key=lambda entry: float(entry["at"]))
        for earlier, later in itertools.pairwise(entries):
            if earlier["outcome"] == "raised":
                cause = "retried by its retry strategy (the attempt raised)"
            elif earlier["outcome"] == "outlived its lease":
                cause = "its lease expired while it still ran (another worker took over)"
            elif earlier["invocation"] in killed_invocations:
                cause = "its worker was killed before the checkpoint"
            else:
                cause = "its checkpoint was not stored (an error reached the engine, or its lease lapsed)"
            report.reruns[cause] += 1
            # Compared in real time (clock skips left out of the stored result's time), with a margin: the
            # result's time is read when the engine applies it, before its write lands (retries included).
            stored = results.get(execution_id, {}).get((step, int(later["attempt"])))
            began = float(later.get("real", later["at"]))
            if stored is not None and real_time(stored, jumps) < began - STORE_MARGIN_SECONDS:
                report.unexplained.append(
                    f"{execution_id} step {step}: ran again at {later['at']:.3f}, its result was stored at "
                    f"{stored:.3f} ({cause})"
                )


def real_time(virtual: float, jumps: Sequence[Jump]) -> float:
    """The real time a virtual clock reading was taken at: the reading less the skips before it."""
    return virtual - sum(max(0.0, min(jump.end, virtual) - jump.start) for jump in jumps)


def corrected_lag(lag: float, run_at: float, jumps: Sequence[Jump]) -> float:
    """A wake-up's lag in real time: the virtual lag less the clock skips between its due time and run."""
    due = run_at - lag
    skipped = sum(max(0.0, min(jump.end, run_at) - max(jump.start, due)) for jump in jumps)
    return max(0.0, lag - skipped)


def wake_up_lags(workdir: Path, jumps: Sequence[Jump]) -> list[float]:
    lags = []
    for path in sorted(workdir.glob("worker-*.out")):
        for record in read_lines(path):
            values = record.get("WakeUpLag")
            if not isinstance(values, list):
                continue
            run_at = float(record["_aws"]["Timestamp"]) / 1000
            lags.extend(corrected_lag(float(value) / 1000, run_at, jumps) for value in values)
    return lags


def analyse(client: Any, data: RunData, workdir: Path) -> Report:
    report = Report(data)
    ledger = [entry for entry in read_lines(workdir / "ledger.jsonl") if entry.get("execution")]
    executions = dict.fromkeys(data.started)
    executions.update(dict.fromkeys(str(entry["execution"]) for entry in ledger))  # children too
    report.executions = len(executions)
    report.lost.extend(
        f"{subject}: its begin event started no context" for subject, e in data.journeys.items() if e is None
    )
    results: dict[str, dict[tuple[str, int], float]] = {}
    version = data.settings.worker_version or None
    for execution_id in executions:
        description = client.describe_execution(execution_id)
        status = str(description["Status"])
        report.ended[status] += 1
        if status == "RUNNING":
            report.lost.append(execution_id)
        elif description.get("Version") != version:
            report.unpinned_ends.append(f"{execution_id}: {description.get('Version')!r}")
        results[execution_id] = check_history(
            execution_id, client.get_execution_history(execution_id), report
        )
    invocations = read_lines(workdir / "invocations.jsonl")
    report.invocations = sum(1 for record in invocations if "messages" in record)
    killed = {str(record["invocation"]) for record in invocations if "killed" in record}
    report.kills = Counter(str(record["killed"]) for record in invocations if "killed" in record)
    report.async_invocations = sum(1 for record in invocations if record.get("via") == "async")
    report.async_destinations = sum(1 for record in invocations if "destination" in record)
    explain_reruns(ledger, results, killed, report, data.jumps)
    for path in workdir.glob("faults-*.json"):
        saved = json.loads(path.read_text())
        report.faults.update(saved["counts"])
        report.fault_attempts += int(saved["attempts"])
    report.lags = wake_up_lags(workdir, data.jumps)
    return report


# ------------------------------------------------------------------------------------------ report


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def render(report: Report) -> str:
    data, settings = report.data, report.data.settings
    busy = max(1e-9, data.last_end - data.first_start)
    ended = sum(count for status, count in report.ended.items() if status != "RUNNING")
    injected = sum(report.faults.values())
    kill_total = sum(report.kills.values())
    verdict = "PASSED" if not report.failed_checks else "FAILED: " + "; ".join(report.failed_checks)
    rows = [
        (
            "executions started (plus the children they invoked)",
            f"{len(data.started):,} (+{report.executions - len(data.started):,})",
        ),
        (
            "executions ended",
            f"{ended:,} ({', '.join(f'{k} {v:,}' for k, v in sorted(report.ended.items()))})",
        ),
        ("executions lost (must be 0)", str(len(report.lost))),
        ("operations with two results (must be 0)", str(len(report.double_results))),
        ("history events recorded twice (must be 0)", str(len(report.double_events))),
        (
            "callbacks completed twice (must be 0)",
            f"{len(data.callback_repeats_accepted)} ({data.callbacks_sent:,} sent, "
            f"{data.callback_repeats_refused:,} repeats refused, {len(data.callbacks_unknown)} ids unknown)",
        ),
        ("step bodies run / re-run", f"{report.step_runs:,} / {sum(report.reruns.values()):,}"),
        ("re-runs not explained (must be 0)", str(len(report.unexplained))),
        (
            "ended executions that do not name the worker version that ran them (must be 0)",
            f"{len(report.unpinned_ends)} (workers run as "
            + (f"version {settings.worker_version}" if settings.worker_version else "unversioned")
            + ")",
        ),
        (
            "executions per second",
            f"{report.executions / busy:.1f} ({busy:.0f} s from the first start to the last end)",
        ),
        (
            "due time to run, p50 / p99 (real seconds)",
            f"{percentile(report.lags, 0.5):.2f} / {percentile(report.lags, 0.99):.2f} "
            f"over {len(report.lags):,} wake-ups",
        ),
    ]
    fault_rows = [(kind, f"{count:,}") for kind, count in sorted(report.faults.items())] + [
        (
            "all injected errors",
            f"{injected:,} of {report.fault_attempts:,} attempts "
            f"({100 * injected / max(1, report.fault_attempts):.1f} %)",
        ),
        ("worker invocations", f"{report.invocations:,}"),
        *((f"worker killed: {where}", f"{count:,}") for where, count in sorted(report.kills.items())),
        (
            "worker kills",
            f"{kill_total:,} ({100 * kill_total / max(1, report.invocations):.1f} % of invocations)",
        ),
        (
            "SQS messages sent twice / delayed",
            "every message (engine, client and schedules); random 0-"
            f"{settings.max_extra_delay} s extra delay per copy; batches shuffled",
        ),
        (
            "schedules fired / clock skips / reconciler runs",
            f"{data.fired_schedules:,} / {len(data.jumps):,} / {data.reconciles:,}",
        ),
        (
            "messages redriven from the DLQ (every receive of theirs met a fault or a kill)",
            f"{data.redriven:,}",
        ),
        (
            "direct wake-ups: attempts (the client's and Scheduler's invokes of the worker's alias, each "
            "sent twice) / sent to the work queue after 3 failed or killed attempts",
            f"{report.async_invocations:,} / {report.async_destinations:,}",
        ),
    ]
    rerun_rows = [(cause, f"{count:,}") for cause, count in report.reruns.most_common()]
    on_localstack = settings.backend == "localstack"
    backend_name, shared = _BACKEND_TEXT[settings.backend]
    flags = f"{' --backend localstack' if on_localstack else ''} --executions {settings.executions}"
    lines = [
        "## Load and faults" + (" on LocalStack" if on_localstack else ""),
        "",
        f"Generated by `make chaos` (`tools/chaos.py{flags} --write BENCHMARKS.md`) on "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC in {data.wall_seconds:.0f} s: {verdict}.",
        "",
        f"{settings.workers} worker processes on {backend_name}, {len(MIX)} kinds in turn "
        f"({', '.join(MIX)}; `parent` invokes `child`; `{JOURNEY}` is a definitions context started and "
        "resumed by bus events). Faults: "
        f"{settings.fault_rate:.0%} of DynamoDB, SQS and Scheduler attempts fail (throttling or 500), "
        f"{settings.burst_rate:.0%} of calls fail every one of their {settings.max_attempts} attempts; "
        f"{settings.kill_rate:.0%} of invocations get a kill timer and {settings.step_kill_rate:.0%} of step "
        f"bodies kill their worker before the checkpoint; the lease is {settings.lease_seconds:g} s and the "
        "`slow` step's first run outlives it. How it runs and what it "
        "checks: docs/engine.md, Load and faults. Throughput and the due-to-run delay measure this "
        f"machine, not the engine: {shared}.",
        "",
        "| result | value |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in rows),
        "",
        "| fault | count |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in fault_rows),
        "",
        "| why a step body ran again | re-runs |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in rerun_rows),
    ]
    problems = (
        report.lost + report.double_results + report.double_events + report.bad_event_ids + report.unexplained
    )
    if problems:
        lines += ["", "Problems (first 20):", "", *(f"- {problem}" for problem in problems[:20])]
    return "\n".join(lines) + "\n"


def write_section(path: Path, section: str, backend: str = "moto") -> None:
    """Replaces the text between the backend's chaos markers (or appends the markers and the section)."""
    start, end = SECTION_MARKERS[backend]
    block = f"{start}\n{section.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end)
        text = before + block.rstrip("\n") + after
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block
    path.write_text(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    defaults = Settings()
    parser.add_argument("--executions", type=int, default=defaults.executions, help="executions to start")
    parser.add_argument("--workers", type=int, default=defaults.workers, help="worker processes")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of the fault choices")
    parser.add_argument(
        "--timeout", type=float, default=defaults.timeout, help="seconds to wait for the ends"
    )
    parser.add_argument(
        "--worker-version",
        default=defaults.worker_version,
        help="the published worker version the workers run as (digits), as deployed; '' for unversioned",
    )
    parser.add_argument(
        "--backend",
        choices=DEPLOYED_BACKEND_NAMES,
        default=defaults.backend,
        help="the local AWS holding the module's resources (make chaos runs both)",
    )
    parser.add_argument("--write", type=Path, help="write the report's section into this markdown file")
    parser.add_argument("--workdir", type=Path, help="keep the run's files (ledger, logs) here")
    parser.add_argument("--worker-process", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker_process:
        worker_process(args.worker_process)
        return 0
    if args.executions < 1 or args.workers < 1:
        parser.error(
            f"--executions and --workers must be at least 1, got {args.executions} and {args.workers}"
        )
    if args.worker_version and not args.worker_version.isdigit():
        parser.error(
            f"--worker-version must be a published version number (digits) or '' for unversioned workers, "
            f"got {args.worker_version!r}"
        )
    settings = dataclasses.replace(
        defaults,
        executions=args.executions,
        workers=args.workers,
        seed=args.seed,
        timeout=args.timeout,
        worker_version=args.worker_version,
        backend=args.backend,
    )
    with contextlib.ExitStack() as exits:
        if args.workdir:
            args.workdir.mkdir(parents=True, exist_ok=False)
            workdir = args.workdir
        else:
            workdir = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="stepwell-chaos-")))
        report = run(settings, workdir)
    section = render(report)
    print(section)
    if args.write:
        write_section(args.write, section, settings.backend)
        print(f"wrote the chaos section of {args.write}")
    for failure in report.failed_checks:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if report.failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
