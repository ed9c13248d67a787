"""The remote-function bench's stack (section `remote`, issue 41): the moto deployment's worker with the
user's own durable functions registered, the API function's handler behind a local function URL, each
function in a warm worker process of the harness's Lambda runtime, and every invocation measured (AWS
requests, billed milliseconds) by whose it is: the worker's, the API function's, the function's.

The worker's Event invokes of a function go through BotoLambdaInvoker on a counted client of their own and
are answered 202 and kept, as Lambda keeps them; the function's SDK checkpoints through
AWS_ENDPOINT_URL_LAMBDA; its end goes to the work queue as Lambda's on-success destination record.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from bench.measurement import Measurement
from bench.moto_stack import MotoStack
from bench.section import REGION, ROOT

RUNS = 3  # measured runs of each variant, after one warm-up run (not counted)
SIZES = (3, 100)
BURN_MS = 200  # the CPU the first step burns in the burn variants
# The worker's memory (the root module's memory_size default), the API function's (modules/api), and the
# remote function's configured size here.
WORKER_MEMORY_MB = 512
API_MEMORY_MB = 256
FUNCTION_MEMORY_MB = 512
# The function's timeout (Lambda's longest): the run's lease is this + 120 s, so its wake-up is a
# Scheduler schedule the result withdraws (up to 780 s it would be a delayed SQS message).
FUNCTION_TIMEOUT_SECONDS = 900
ACCOUNT = "123456789012"  # moto's
FUNCTION_ROLE = f"arn:aws:iam::{ACCOUNT}:role/bench-function"
FUNCTION_CALLER = f"arn:aws:sts::{ACCOUNT}:assumed-role/bench-function/bench"
FUNCTIONS_DIR = Path(__file__).resolve().parent / "remote_functions"
NODE_MODULES = ROOT / "tools" / "node" / "node_modules"
WORKFLOW = "bench-steps"  # the in-worker registration of steps.py


class Place(Enum):
    """Where the workflow's code runs."""

    WORKER = "in the worker"
    PYTHON = "remote Python function"
    JAVASCRIPT = "remote JavaScript function"


class Role(Enum):
    """Whose Lambda invocation: the module's worker, the module's API function, the user's function."""

    WORKER = "worker"
    API = "API"
    FUNCTION = "function"


# --- arithmetic (tests/chaos/test_bench_remote.py) ---


def billed_ms(own_seconds: float, requests: int, waited_ms: float = 0.0) -> int:
    """An invocation's modelled duration as Lambda bills it: its own time, ASSUMED_REQUEST_MS per AWS
    request, and `waited_ms` spent waiting for another function's answer, rounded up to 1 ms (at least
    1 ms)."""
    from bench.sections.api import ASSUMED_REQUEST_MS  # here: bench.sections imports this module

    if own_seconds < 0 or requests < 0 or waited_ms < 0:
        raise ValueError(f"durations and requests must be >= 0, got {own_seconds}, {requests}, {waited_ms}")
    return max(1, math.ceil(round(own_seconds * 1000 + requests * ASSUMED_REQUEST_MS + waited_ms, 6)))


def gb_seconds(memory_mb: int, milliseconds: int) -> float:
    """GB-seconds of one invocation: memory in GB (1,024 MB) times billed seconds."""
    return memory_mb / 1024 * milliseconds / 1000


@dataclass
class Usage:
    """The Lambda side of a variant's runs: billed milliseconds of each invocation by role, the AWS
    requests each role made (by `service.Operation`), the data-plane calls by operation, and the
    destination records Lambda sent to the work queue."""

    runs: int = 0
    billed: dict[Role, list[int]] = field(default_factory=lambda: {role: [] for role in Role})
    requests: dict[Role, Counter[str]] = field(default_factory=lambda: {role: Counter() for role in Role})
    data_plane: Counter[str] = field(default_factory=Counter)
    destination_sends: int = 0
    # Each function invocation's wall time in the harness (not billed here: a cross-check of the model).
    function_wall_ms: list[float] = field(default_factory=list)

    def per_run(self, value: float) -> float:
        return value / self.runs if self.runs else 0.0

    def invocations(self, role: Role) -> int:
        return len(self.billed[role])

    def milliseconds(self, role: Role) -> int:
        return sum(self.billed[role])

    def gb_seconds(self, role: Role) -> float:
        memory = {Role.WORKER: WORKER_MEMORY_MB, Role.API: API_MEMORY_MB, Role.FUNCTION: FUNCTION_MEMORY_MB}
        return sum(gb_seconds(memory[role], ms) for ms in self.billed[role])


# --- measuring ---


class CallTimer:
    """The bench process's CPU time inside AWS calls of the clients it is attached to (before-call to
    after-call: moto answers in the caller's thread); detached when the section ends. Invocations run one
    at a time (the worker's, or the API's while the function waits), so the process's CPU is theirs."""

    def __init__(self, clients: list[Any]) -> None:
        self.total = 0.0
        self._depth = 0
        self._started = 0.0
        self._lock = threading.Lock()
        self._clients = clients
        for client in clients:
            client.meta.events.register("before-call", self._before)
            client.meta.events.register("after-call", self._after)

    def seconds(self) -> float:
        return self.total

    def _before(self, **_: Any) -> None:
        with self._lock:
            if self._depth == 0:
                self._started = time.process_time()
            self._depth += 1

    def _after(self, **_: Any) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self.total += time.process_time() - self._started

    def detach(self) -> None:
        for client in self._clients:
            client.meta.events.unregister("before-call", self._before)
            client.meta.events.unregister("after-call", self._after)


def process_cpu_seconds(pid: int) -> float:
    """A process's CPU time, user and system, all its threads (Linux /proc: clock ticks of 10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # After the command's closing parenthesis: state is field 3, utime and stime fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class InvocationMeter:
    """Measures each worker and API invocation: its AWS requests (the counter's difference) and its
    billed duration from the bench process's CPU time while it ran; remote functions' invocations are
    measured by RemoteFunction."""

    def __init__(self, stack: MotoStack, timer: CallTimer) -> None:
        self._counter = stack.clients.counter
        self._timer = timer
        self.usage = Usage()
        self.api_ms = 0  # the API invocations' billed time, which the function waits for

    @contextlib.contextmanager
    def invocation(self, role: Role) -> Iterator[None]:
        before = Counter(self._counter.snapshot()["calls"])
        in_calls = self._timer.seconds()
        started = time.process_time()
        try:
            yield
        finally:
            cpu = time.process_time() - started
            requests = Counter(self._counter.snapshot()["calls"])
            requests.subtract(before)
            made = +requests
            ms = billed_ms(max(0.0, cpu - (self._timer.seconds() - in_calls)), sum(made.values()))
            self.usage.billed[role].append(ms)
            self.usage.requests[role].update(made)
            if role is Role.API:
                self.api_ms += ms


class TimedRuntime:
    """The worker's entry runtime, each invocation measured (stands in for MotoStack.runtime)."""

    def __init__(self, runtime: Any, meter: InvocationMeter) -> None:
        self._runtime = runtime
        self._meter = meter
        self.engine = runtime.engine

    def handle_event(self, event: Any, context: Any = None) -> Any:
        with self._meter.invocation(Role.WORKER):
            return self._runtime.handle_event(event, context)


class FunctionUrl:
    """The API function's URL on 127.0.0.1: each request a payload-2.0 event to LambdaApiHandler, the
    caller the remote function's role (the URL's AWS_IAM check is Lambda's, not billed to the function, and
    not repeated here), one at a time, each measured as an API invocation."""

    def __init__(self, handler: Any, meter: InvocationMeter) -> None:
        from stepwell.testing.lambda_runtime import (
            InvocationResult,
            function_url_event,
            function_url_response,
        )

        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                event = function_url_event(
                    "benchapi",
                    self.command,
                    self.path,
                    list(self.headers.items()),
                    body=body,
                    source_ip="127.0.0.1",
                )
                event["requestContext"]["authorizer"] = {
                    "iam": {"userArn": FUNCTION_CALLER, "accountId": ACCOUNT}
                }
                operation = (
                    "GetDurableExecutionState" if self.command == "GET" else "CheckpointDurableExecution"
                )
                with lock, meter.invocation(Role.API):
                    meter.usage.data_plane[operation] += 1
                    answer = handler.handle(event, 60.0)
                status, headers, payload = function_url_response(InvocationResult("api", answer))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="bench-api-url", daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class RemoteFunction:
    """One remote function (steps.py or steps.mjs) in a warm worker process of the harness's Lambda
    runtime; each invocation measured as the user's function."""

    def __init__(self, place: Place, name: str, endpoint_url: str, meter: InvocationMeter) -> None:
        from stepwell.testing.lambda_runtime import FunctionSpec

        self.arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        self._meter = meter
        self._workdir = Path(tempfile.mkdtemp(prefix="stepwell-bench-fn-"))
        self._code = self._workdir / "code"
        self._code.mkdir()
        node = place is Place.JAVASCRIPT
        source = FUNCTIONS_DIR / ("steps.mjs" if node else "steps.py")
        shutil.copy(source, self._code / source.name)
        if node:
            (self._code / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
        runtime = "nodejs20.x" if node else "python3.13"
        self.spec = FunctionSpec(
            name=name,
            arn=self.arn,
            version="$LATEST",
            handler="steps.handler",
            timeout_seconds=FUNCTION_TIMEOUT_SECONDS,
            memory_mb=FUNCTION_MEMORY_MB,
            environment={},
            code_sha256="",
            last_modified="",
            role=FUNCTION_ROLE,
            runtime=runtime,
        )
        self._environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self._workdir),
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ENDPOINT_URL_LAMBDA": endpoint_url,
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(FUNCTION_MEMORY_MB),
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(FUNCTION_TIMEOUT_SECONDS),
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{runtime}",
            "LAMBDA_TASK_ROOT": str(self._code),
            "PYTHONPATH": str(self._code),
            "PYTHONUNBUFFERED": "1",
            **({"NODE_PATH": str(self._code)} if node else {}),
        }
        self._log: IO[bytes] = open(self._workdir / "function.log", "ab")  # noqa: SIM115 (the worker's life)
        self._node = shutil.which("node") if node else None
        self._worker: Any = None

    def invoke(self, payload: Any) -> dict[str, Any]:
        """Run one Event invoke; Lambda's destination record of it (on success or failure)."""
        from stepwell.testing.async_invoke import destination_record, success_record
        from stepwell.testing.lambda_runtime.worker import WorkerProcess

        if self._worker is None or not self._worker.alive():
            self._worker = WorkerProcess(
                self.spec,
                self._code,
                self._environment,
                self._log,
                python_executable=sys.executable,
                node_executable=self._node,
            )
        request_id = str(uuid.uuid4())
        pid = self._worker.process.pid
        api_ms, calls, cpu = self._meter.api_ms, self._invocations(), process_cpu_seconds(pid)
        started = time.perf_counter()
        answer = self._worker.invoke(payload, request_id, self.arn)
        wall = time.perf_counter() - started
        self._meter.usage.function_wall_ms.append(wall * 1000)
        own = process_cpu_seconds(pid) - cpu if self._worker.alive() else wall
        waited_ms = self._meter.api_ms - api_ms
        self._meter.usage.billed[Role.FUNCTION].append(billed_ms(own, self._invocations() - calls, waited_ms))
        qualified = self.spec.qualified_arn
        if answer.get("error") is not None:
            return destination_record(payload, qualified, 1, answer["error"], request_id=request_id)
        return success_record(payload, qualified, 1, answer.get("result"), request_id=request_id)

    def _invocations(self) -> int:
        return self._meter.usage.invocations(Role.API)

    def log_tail(self) -> str:
        self._log.flush()
        return (self._workdir / "function.log").read_text(errors="replace")[-3000:]

    def close(self) -> None:
        if self._worker is not None:
            self._worker.kill()
        self._log.close()
        shutil.rmtree(self._workdir, ignore_errors=True)


def _load_steps() -> ModuleType:
    """steps.py as the worker imports a workflow module."""
    spec = importlib.util.spec_from_file_location("bench_remote_steps", FUNCTIONS_DIR / "steps.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def node_missing() -> str | None:
    """Why the JavaScript function cannot run here, else None."""
    if shutil.which("node") is None:
        return "no node on PATH"
    if not (NODE_MODULES / "@aws" / "durable-execution-sdk-js" / "package.json").is_file():
        return "@aws/durable-execution-sdk-js is not installed (make node)"
    return None


@dataclass(frozen=True)
class Result:
    place: Place
    steps: int
    burn_ms: int
    measurement: Measurement
    usage: Usage

    @property
    def label(self) -> str:
        burn = f", {self.burn_ms} ms CPU" if self.burn_ms else ""
        return f"{self.steps} steps{burn}, {self.place.value}"


class RemoteBench:
    """The worker with the remote functions registered, the API's URL, the functions' processes."""

    def __init__(self, stack: MotoStack, places: list[Place]) -> None:
        from stepwell.aws.clients import AwsClients
        from stepwell.aws.lambda_invoker import BotoLambdaInvoker
        from stepwell.client import StepwellClient
        from stepwell.core.registry import Registry
        from stepwell.core.remote_functions import RemoteFunction as Registration
        from stepwell.features.lambda_api.access import AccessPolicy
        from stepwell.features.lambda_api.arns import ArnContext
        from stepwell.features.lambda_api.context import ApiSettings
        from stepwell.features.lambda_api.handler import LambdaApiHandler
        from stepwell.testing.async_invoke import take_event_invokes
        from stepwell.wiring.build import AnyWorkflowRegistry, build_engine
        from stepwell.wiring.entry import EntryRuntime

        self.stack = stack
        clients = stack.clients
        # The worker's Event invokes of the functions, on a client of its own sharing the stack's counter
        # (so `lambda.Invoke` is counted), answered 202 and kept to run here.
        invoking = AwsClients(region=REGION, counter=clients.counter)
        self.pending: list[tuple[str, Any]] = []
        take_event_invokes(
            invoking.lambda_, lambda function, payload: self.pending.append((function, payload))
        )
        self.timer = CallTimer(
            [
                clients.dynamodb,
                clients.sqs,
                clients.s3,
                clients.scheduler,
                clients.events,
                clients.lambda_wake,
                invoking.lambda_,
            ]
        )
        self.meter = InvocationMeter(stack, self.timer)
        names = {Place.PYTHON: "bench-steps-py", Place.JAVASCRIPT: "bench-steps-js"}
        arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
        registrations = {
            names[place]: Registration(arn + names[place], None, FUNCTION_TIMEOUT_SECONDS)
            for place in places
            if place is not Place.WORKER
        }
        invoker = BotoLambdaInvoker(invoking)
        registry = Registry()
        registry.register(WORKFLOW, _load_steps().handler)
        registry.allow_remote_functions(registrations, invoker)
        self.runtime = TimedRuntime(
            EntryRuntime.from_config(stack.config, clients, registry=registry, clock=stack.clock), self.meter
        )
        self.client = StepwellClient(
            dataclasses.replace(stack.config, direct_wake_ups=True),
            clients,
            registry=registry,
            clock=stack.clock,
        )
        # The API function, as stepwell.wiring.api_function builds it, the functions' role its callers.
        api_registry = AnyWorkflowRegistry()
        api_registry.allow_remote_functions(registrations, invoker)
        engine = build_engine(stack.config, clients, api_registry, stack.clock)
        engine.code_version = None
        settings = ApiSettings(
            arns=ArnContext("aws", REGION, ACCOUNT),
            access=AccessPolicy.from_lists([], [], [], [FUNCTION_ROLE]),
            workflows=frozenset([WORKFLOW, *registrations]),
        )
        self.url = FunctionUrl(LambdaApiHandler(engine, settings), self.meter)
        self.functions = {
            arn + names[place]: RemoteFunction(place, names[place], self.url.url, self.meter)
            for place in places
            if place is not Place.WORKER
        }
        self.workflows = {place: names.get(place, WORKFLOW) for place in places}
        self._runs = 0

    def run_once(self, place: Place, payload: dict[str, Any]) -> str:
        """One execution of the workflow where `place` runs it, from the client's start to its end."""
        self._runs += 1
        execution_id = self.client.start_execution(
            self.workflows[place], payload, execution_name=f"remote-{self._runs}"
        )
        for _ in range(10_000):
            self.stack.drain(fire_schedules=False)
            if not self.pending:
                break
            while self.pending:
                function, event = self.pending.pop(0)
                record = self.functions[function].invoke(event)
                # Lambda sends the record to the on-success (or on-failure) destination: the work queue.
                self.meter.usage.destination_sends += 1
                self.stack.sqs.send_message(
                    QueueUrl=self.stack.config.work_queue_url, MessageBody=json.dumps(record)
                )
        status = self.client.describe_execution(execution_id)["Status"]
        if status != "SUCCEEDED":
            logs = [function.log_tail() for function in self.functions.values()]
            raise RuntimeError(f"{place.value}: {execution_id} ended {status}; function logs: {logs}")
        return execution_id

    def measure(self, place: Place, steps: int, burn_ms: int) -> Result:
        payload = {"steps": steps, "burn_ms": burn_ms}
        self.meter.usage = Usage()
        self.run_once(place, payload)  # warm: the function's process, the SDK's client
        self.stack.reset_counters()
        self.meter.usage = Usage()
        # What the deployment and earlier runs left is collected now and frozen, so the garbage collector's
        # passes within an invocation walk only what the measured runs make (else an invocation pays, at
        # random, for walking moto's whole heap).
        gc.collect()
        gc.freeze()
        started = time.perf_counter()
        try:
            ids = [self.run_once(place, payload) for _ in range(RUNS)]
        finally:
            gc.unfreeze()
        measurement = self.stack.measure(f"{steps} steps, {place.value}", ids, time.perf_counter() - started)
        self.meter.usage.runs = RUNS
        return Result(place, steps, burn_ms, measurement, self.meter.usage)

    def close(self) -> None:
        self.timer.detach()
        self.url.close()
        for function in self.functions.values():
            function.close()


@contextlib.contextmanager
def worker_swapped(stack: MotoStack, runtime: TimedRuntime) -> Iterator[None]:
    """The stack's drain runs this section's worker (which knows the remote functions) while it runs."""
    previous = stack.runtime
    stack.runtime = runtime  # type: ignore[assignment]
    try:
        yield
    finally:
        stack.runtime = previous
