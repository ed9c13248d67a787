"""Section `api`: AWS requests and cost per call of the durable execution API (stepwell.features.lambda_api).

Each operation is driven through the API function's handler (`LambdaApiHandler`) with a function URL event,
as the `<name>-api` function answers it, on an engine built as stepwell.wiring.api_function builds it
(unversioned, any workflow), over the moto stack's counted and metered clients. Only the call itself is
counted: the executions it works on are started and run before it (through the stack's own client and
worker), and the counters are reset right before it. Each operation is called CALLS times and averaged.

The cost of a call is its Lambda request, its duration at the API function's memory, its DynamoDB units,
SQS and S3 requests, at list prices. moto answers in-process, so its time says nothing of AWS's: the
duration is modelled as the handler's own time (its wall time less the time inside AWS calls, measured
around each call) plus ASSUMED_REQUEST_MS per AWS request, and billed per millisecond as Lambda does.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bench_workflows
from reporting import md_table

from bench.moto_stack import MotoStack
from bench.prices import PRICES
from bench.section import REGION, ROOT, Options, SectionResult, log
from bench.text import fmt, prose, usd

CALLS = 20
# The API function's memory (modules/api's memory_size default) and Lambda's x86 duration price.
API_MEMORY_MB = 256
LAMBDA_GB_SECOND_USD = 0.0000166667  # aws.amazon.com/lambda/pricing, us-east-1, x86, first tier
# A typical round trip from a Lambda function to DynamoDB, SQS or S3 in its region (an assumption, not
# measured here: moto answers in-process).
ASSUMED_REQUEST_MS = 8.0
ACCOUNT = "123456789012"
CALLER = f"arn:aws:sts::{ACCOUNT}:assumed-role/bench-operator/bench"
OPERATOR_ROLE = f"arn:aws:iam::{ACCOUNT}:role/bench-operator"
# A reader limited to the default tenant (STEPWELL_API_TENANT_PRINCIPALS), and the other tenant's
# executions its listing reads past.
SCOPED_CALLER = f"arn:aws:sts::{ACCOUNT}:assumed-role/bench-tenant/bench"
SCOPED_ROLE = f"arn:aws:iam::{ACCOUNT}:role/bench-tenant"
OTHER_TENANT = "bench-other"
OTHER_TENANT_EXECUTIONS = 30


class CallTimer:
    """Time spent inside AWS calls of the clients it is attached to (before-call to after-call)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0
        self._started = 0.0

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-call", self._before)
        client.meta.events.register("after-call", self._after)

    def _before(self, **_: Any) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1

    def _after(self, **_: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._started


@dataclass
class Tally:
    """What CALLS calls of one operation counted, in all."""

    calls: int = 0
    requests: Counter[str] = field(default_factory=Counter)
    read_units: float = 0.0
    write_units: float = 0.0
    own_seconds: float = 0.0

    def per_call(self, value: float) -> float:
        return value / max(1, self.calls)

    def service(self, name: str) -> int:
        return sum(count for key, count in self.requests.items() if key.startswith(name + "."))

    @property
    def duration_ms(self) -> float:
        """The modelled duration of one call, billed per millisecond (rounded up)."""
        requests = self.per_call(sum(self.requests.values()))
        return math.ceil(self.per_call(self.own_seconds) * 1000 + requests * ASSUMED_REQUEST_MS)

    def usd_per_million(self) -> dict[str, float]:
        s3_puts = sum(self.requests.get(key, 0) for key in ("s3.PutObject", "s3.ListObjectsV2"))
        per_call = {
            "Lambda": PRICES["lambda_request"].per_unit
            + LAMBDA_GB_SECOND_USD * API_MEMORY_MB / 1024 * self.duration_ms / 1000,
            "DynamoDB": self.per_call(self.write_units) * PRICES["dynamodb_wru"].per_unit
            + self.per_call(self.read_units) * PRICES["dynamodb_rru"].per_unit,
            "SQS": self.per_call(self.service("sqs")) * PRICES["sqs"].per_unit,
            "S3": self.per_call(s3_puts) * PRICES["s3_put"].per_unit
            + self.per_call(self.requests.get("s3.GetObject", 0)) * PRICES["s3_get"].per_unit,
        }
        return {key: value * 1_000_000 for key, value in per_call.items()}


@dataclass(frozen=True)
class Call:
    """One request to the endpoint: method, path, query, headers, body, and the status it must answer."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    status: int = 200
    caller: str = CALLER

    def event(self) -> dict[str, Any]:
        return {
            "version": "2.0",
            "rawPath": self.path,
            "rawQueryString": urllib.parse.urlencode(self.query),
            "headers": {"content-type": "application/json", **self.headers},
            "requestContext": {
                "http": {"method": self.method},
                "authorizer": {"iam": {"userArn": self.caller}},
            },
            "body": self.body,
            "isBase64Encoded": False,
        }


def _execution_path(arn: str, suffix: str = "") -> str:
    return f"/2025-12-01/durable-executions/{urllib.parse.quote(arn, safe='')}{suffix}"


def _callback_path(callback_id: str, action: str) -> str:
    return f"/2025-12-01/durable-execution-callbacks/{urllib.parse.quote(callback_id, safe='')}/{action}"


class ApiBench:
    """The API handler on the moto stack, and the executions its calls work on."""

    def __init__(self, stack: MotoStack) -> None:
        from stepwell.features.lambda_api.access import AccessPolicy
        from stepwell.features.lambda_api.arns import ArnContext
        from stepwell.features.lambda_api.context import ApiSettings
        from stepwell.features.lambda_api.handler import LambdaApiHandler
        from stepwell.features.lambda_api.tenants import TenantLimits
        from stepwell.wiring.build import AnyWorkflowRegistry, build_engine

        self.stack = stack
        engine = build_engine(stack.config, stack.clients, AnyWorkflowRegistry(), stack.clock)
        engine.code_version = None  # as the API function's: it never pins nor forwards
        self.arns = ArnContext("aws", REGION, ACCOUNT)
        settings = ApiSettings(
            arns=self.arns,
            access=AccessPolicy.from_lists([OPERATOR_ROLE, SCOPED_ROLE], [OPERATOR_ROLE], [OPERATOR_ROLE]),
            tenants=TenantLimits.from_json(json.dumps({"default": [SCOPED_ROLE]})),
            workflows=frozenset(bench_workflows.WORKFLOWS),
        )
        self.handler = LambdaApiHandler(engine, settings)
        self.timer = CallTimer()
        clients = stack.clients
        for client in (clients.dynamodb, clients.sqs, clients.s3, clients.scheduler, clients.lambda_):
            self.timer.attach(client)
        self._names = 0

    # --- executions to work on (not counted) ---

    def name(self, prefix: str) -> str:
        self._names += 1
        return f"api-{prefix}-{self._names}"

    def started(self, workflow: str, prefix: str) -> str:
        """The ARN of a new execution of `workflow`, run as far as it goes without a callback result."""
        execution_id = self.stack.client.start_execution(workflow, {}, execution_name=self.name(prefix))
        self.stack.drain(fire_schedules=False)
        return self.arns.execution_arn(execution_id)

    def ended(self, prefix: str) -> str:
        return self.started("single-step", prefix)

    def waiting_callback(self, prefix: str) -> tuple[str, str]:
        """A single-callback execution waiting for its result, and its callback id."""
        arn = self.started("single-callback", prefix)
        return arn, bench_workflows.CALLBACKS.pop()

    # --- measuring ---

    def measure(self, prepare: Callable[[], Call]) -> Tally:
        """CALLS calls, each prepared (uncounted) by `prepare`, then made with the counters reset."""
        tally = Tally()
        for _ in range(CALLS):
            call = prepare()
            self.stack.reset_counters()
            in_calls = self.timer.seconds
            started = time.perf_counter()
            answer = self.handler.handle(call.event(), 60.0)
            wall = time.perf_counter() - started
            snapshot = self.stack.clients.counter.snapshot()
            if answer["statusCode"] != call.status:
                raise RuntimeError(f"{call.method} {call.path}: {answer['statusCode']} {answer.get('body')}")
            tally.calls += 1
            tally.requests.update(snapshot["calls"])
            tally.read_units += sum(t.read_units for t in self.stack.meter.tally.values())
            tally.write_units += sum(t.write_units for t in self.stack.meter.tally.values())
            tally.own_seconds += max(0.0, wall - (self.timer.seconds - in_calls))
        return tally

    def settle(self) -> None:
        """Run what the calls left to the worker (uncounted)."""
        self.stack.drain(fire_schedules=False)


def _operations(bench: ApiBench) -> list[tuple[str, Callable[[], Call]]]:
    """(label, prepare) of each operation measured."""
    ended = [bench.ended("read") for _ in range(12)]
    paused: list[str] = []

    def invoke() -> Call:
        return Call(
            "POST",
            "/2015-03-31/functions/single-step/invocations",
            headers={"x-amz-invocation-type": "Event", "x-amz-durable-execution-name": bench.name("invoke")},
            body="{}",
            status=202,
        )

    def stop() -> Call:
        return Call("POST", _execution_path(bench.started("single-long-wait", "stop"), "/stop"), body="{}")

    def pause() -> Call:
        arn, _ = bench.waiting_callback("pause")
        paused.append(arn)
        return Call("POST", _execution_path(arn, "/pause"), body="{}", status=202)

    def resume() -> Call:
        return Call("POST", _execution_path(paused.pop(0), "/resume"), body="{}", status=202)

    def succeed() -> Call:
        _, callback_id = bench.waiting_callback("succeed")
        return Call("POST", _callback_path(callback_id, "succeed"), body='{"approved": true}')

    def heartbeat() -> Call:
        _, callback_id = bench.waiting_callback("heartbeat")
        return Call("POST", _callback_path(callback_id, "heartbeat"))

    def fail() -> Call:
        _, callback_id = bench.waiting_callback("fail")
        return Call("POST", _callback_path(callback_id, "fail"), body='{"ErrorType": "Declined"}')

    def delete() -> Call:
        return Call("DELETE", _execution_path(bench.ended("delete")), status=202)

    def other_tenant() -> None:
        for _ in range(OTHER_TENANT_EXECUTIONS):
            bench.stack.client.start_execution(
                "single-step", {}, execution_name=bench.name("other"), domain=OTHER_TENANT
            )
        bench.stack.drain(fire_schedules=False)

    def scoped_listing() -> Call:
        if not others:
            other_tenant()
            others.append(OTHER_TENANT)
        return Call("GET", listing, query={"MaxItems": "10"}, caller=SCOPED_CALLER)

    others: list[str] = []
    listing = "/2025-12-01/functions/single-step/durable-executions"
    return [
        ("Invoke (Event)", invoke),
        ("GetDurableExecution", lambda: Call("GET", _execution_path(ended[0]))),
        ("GetDurableExecutionHistory", lambda: Call("GET", _execution_path(ended[1], "/history"))),
        (
            "ListDurableExecutionsByFunction (MaxItems 10)",
            lambda: Call("GET", listing, query={"MaxItems": "10"}),
        ),
        (
            "... oldest first (ReverseOrder)",
            lambda: Call("GET", listing, query={"MaxItems": "10", "ReverseOrder": "true"}),
        ),
        (
            "... Statuses=SUCCEEDED",
            lambda: Call("GET", listing, query={"MaxItems": "10", "Statuses": "SUCCEEDED"}),
        ),
        (f"... by a tenant-scoped caller, past {OTHER_TENANT_EXECUTIONS} of another tenant", scoped_listing),
        ("StopDurableExecution (a 2 h wait)", stop),
        ("PauseDurableExecution (waiting)", pause),
        ("ResumeDurableExecution", resume),
        ("SendDurableExecutionCallbackSuccess", succeed),
        ("SendDurableExecutionCallbackFailure", fail),
        ("SendDurableExecutionCallbackHeartbeat", heartbeat),
        ("DeleteDurableExecution (ended)", delete),
    ]


def section_api(options: Options) -> SectionResult:
    stack = options.stacks.moto()
    log("api: the durable execution API's handler on moto")
    bench = ApiBench(stack)
    rows: list[list[str]] = []
    summary: list[str] = []
    for label, prepare in _operations(bench):
        log(f"api: {label}")
        tally = bench.measure(prepare)
        bench.settle()
        costs = tally.usd_per_million()
        rows.append(
            [
                label,
                fmt(tally.per_call(tally.service("dynamodb"))),
                fmt(tally.per_call(tally.service("sqs"))),
                fmt(tally.per_call(tally.service("s3"))),
                fmt(tally.per_call(tally.service("scheduler") + tally.service("lambda"))),
                fmt(tally.per_call(tally.read_units)),
                fmt(tally.per_call(tally.write_units)),
                f"{tally.duration_ms:.0f}",
                usd(costs["Lambda"]),
                usd(costs["DynamoDB"] + costs["SQS"] + costs["S3"]),
                usd(sum(costs.values())),
            ]
        )
        summary.append(
            f"  {label:>46}: {tally.per_call(sum(tally.requests.values())):.1f} AWS requests, "
            f"{tally.per_call(tally.read_units):.1f} RU, {tally.per_call(tally.write_units):.1f} WU, "
            f"${sum(costs.values()):.2f} per million calls"
        )
    _clean_up(bench)
    table = md_table(
        [
            "call",
            "DynamoDB",
            "SQS",
            "S3",
            "other",
            "RU",
            "WU",
            "ms",
            "Lambda $/M",
            "data $/M",
            "$ / M calls",
        ],
        rows,
    )
    intro = _INTRO.format(
        calls=CALLS,
        others=OTHER_TENANT_EXECUTIONS,
        memory=API_MEMORY_MB,
        assumed=f"{ASSUMED_REQUEST_MS:.0f}",
        gbs=f"{LAMBDA_GB_SECOND_USD:.10f}",
        run=_run_line(),
    )
    return SectionResult(
        "Durable execution API: requests and cost per call (moto backend)",
        "\n\n".join([intro, table, _LEGEND]),
        ["Durable execution API, per call:", *summary],
    )


def _clean_up(bench: ApiBench) -> None:
    """Stop what the section left waiting (paused, or a callback not sent), so later sections' drains
    fire none of its schedules."""
    for status in ("RUNNING", "PAUSED", "PAUSING"):
        page = bench.stack.client.list_executions(status=status, limit=1000)
        for record in page.items:
            if record.execution_name.startswith("api-"):
                bench.stack.client.stop_execution(record.execution_id, {"ErrorMessage": "bench clean-up"})
    bench.stack.drain(fire_schedules=False)
    bench_workflows.CALLBACKS.clear()


def _run_line() -> str:
    """When and on which commit this section ran (it may be run alone, `--sections api`)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        commit = done.stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    return f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, commit {commit}"


_INTRO = prose(
    """
    This section's run: {run}. Each call of the durable execution API (`stepwell.features.lambda_api`)
    driven through the API function's handler with a function URL event, on an engine built as
    `stepwell.wiring.api_function` builds it, over the same moto deployment and counted clients as the
    sections above. Only the call is counted: the execution it works on is started and run before it, the
    counters reset right before it. {calls} calls of each, figures per call. The executions read are
    one-step executions that have ended; the listing reads a workflow with about {calls} such executions
    or more; the tenant-scoped caller's (a principal limited to the default tenant) lists it once {others}
    executions of another tenant were started last, which its page reads past (newest first) and leaves
    out; stop, pause, the callback sends work on executions waiting (a 2 h wait, a callback); delete on an
    ended one (the worker deletes its items afterwards, not counted here). Cost: one Lambda request and
    its duration at the API function's {memory} MB (${gbs} per GB-second), DynamoDB read and write units
    (from item sizes, as the other sections, and a BatchGetItem's per item returned), SQS and S3 requests,
    at the list prices above. moto answers in-process, so the duration is modelled: the handler's own time
    (wall time less the time inside AWS calls) plus {assumed} ms per AWS request (an assumed in-region
    round trip), rounded up to the millisecond.
    """
)
_LEGEND = prose(
    """
    DynamoDB, SQS, S3: requests per call; other: EventBridge Scheduler and Lambda API requests (a stop
    deletes the execution's schedules; not billed); RU, WU: read and write units; ms: the modelled
    duration; Lambda $/M: request and duration per million calls; data $/M: DynamoDB, SQS and S3 per
    million calls; M: million.
    """
)
