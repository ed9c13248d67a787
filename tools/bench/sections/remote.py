"""Section `remote`: what a remote durable function (issue 41) costs per run beside the same workflow run
in the worker: AWS requests by service and operation, DynamoDB units, Lambda invocations and GB-seconds
(the worker's and the API function's apart from the user's function's), and dollars per million runs.

On the moto stack in-process (bench.moto_stack): the worker's entry runtime as deployed, with the remote
functions registered (Registry.allow_remote_functions, the Event invoke through BotoLambdaInvoker on a
counted client, answered 202 and kept as Lambda keeps it); the API function's handler behind a local
function URL (an HTTP server making payload-2.0 events, the caller the function's role); each remote
function a warm worker process of the harness's Lambda runtime (stepwell.testing.lambda_runtime's
WorkerProcess: python, or node with @aws/durable-execution-sdk-js from tools/node) whose SDK checkpoints
through AWS_ENDPOINT_URL_LAMBDA; its end sent to the work queue as Lambda's on-success destination record.

The stack and its measuring are in bench/remote_stack.py. Durations are modelled (moto answers
in-process, the machine is shared): a worker or API invocation's own time is the bench process's CPU time
while it runs less the CPU time inside AWS calls, plus ASSUMED_REQUEST_MS per AWS request (as the api
section models it); a remote function's is its process's CPU time plus, per data-plane call, the round
trip and the API invocation's billed time (the function waits for the data plane's answer); each rounded
up to the millisecond as Lambda bills.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from reporting import md_table

from bench.measurement import Measurement
from bench.prices import PRICES
from bench.remote_stack import (
    API_MEMORY_MB,
    BURN_MS,
    FUNCTION_MEMORY_MB,
    FUNCTION_TIMEOUT_SECONDS,
    RUNS,
    SIZES,
    WORKER_MEMORY_MB,
    Place,
    RemoteBench,
    Result,
    Role,
    Usage,
    node_missing,
    worker_swapped,
)
from bench.section import Options, SectionResult, log
from bench.sections.api import ASSUMED_REQUEST_MS
from bench.tables import api_rows
from bench.text import fmt, prose, usd


def run_costs(measurement: Measurement, usage: Usage) -> dict[str, float]:
    """USD per run by item: the measurement's DynamoDB, SQS, Scheduler, EventBridge and S3 charges, the
    destination records' SQS sends, every Lambda invocation (worker, API, function) and their duration."""
    costs = measurement.costs()
    costs.pop("Lambda requests")
    invocations = sum(usage.invocations(role) for role in Role)
    gbs = PRICES["lambda_gb_second"].per_unit
    per_run = {
        "DynamoDB": costs.pop("DynamoDB writes") + costs.pop("DynamoDB reads"),
        "SQS": costs.pop("SQS") + usage.destination_sends * PRICES["sqs"].per_unit,
        "Scheduler, EventBridge, S3": sum(costs.values()),
        "Lambda requests": invocations * PRICES["lambda_request"].per_unit,
        "Lambda GB-s, worker and API": (usage.gb_seconds(Role.WORKER) + usage.gb_seconds(Role.API)) * gbs,
        "Lambda GB-s, your function": usage.gb_seconds(Role.FUNCTION) * gbs,
    }
    return {key: usage.per_run(value) for key, value in per_run.items()}


# --- the section ---

SHORT = {Place.WORKER: "worker", Place.PYTHON: "Python fn", Place.JAVASCRIPT: "JS fn"}


def _short(result: Result) -> str:
    burn = f" +{result.burn_ms} ms" if result.burn_ms else ""
    return f"{result.steps} steps{burn}, {SHORT[result.place]}"


def _requests_row(result: Result) -> list[str]:
    m, u = result.measurement, result.usage
    invocations = "/".join(fmt(u.per_run(u.invocations(role))) for role in Role)
    sqs = m.sqs_requests + u.destination_sends
    return [
        _short(result),
        invocations,
        fmt(u.per_run(sum(u.data_plane.values()))),
        fmt(u.per_run(m.calls.get("lambda.Invoke", 0))),
        fmt(u.per_run(m.service_calls("dynamodb"))),
        fmt(u.per_run(m.write_units)),
        fmt(u.per_run(m.read_units)),
        fmt(u.per_run(sqs)),
        fmt(u.per_run(m.service_calls("scheduler"))),
    ]


def _duration_row(result: Result) -> list[str]:
    u = result.usage
    return [
        _short(result),
        *(fmt(u.per_run(u.milliseconds(role))) for role in Role),
        fmt(u.per_run(sum(u.function_wall_ms))),
        fmt(u.per_run(u.gb_seconds(Role.WORKER) + u.gb_seconds(Role.API)), 4),
        fmt(u.per_run(u.gb_seconds(Role.FUNCTION)), 4),
    ]


def _cost_row(result: Result) -> list[str]:
    costs = run_costs(result.measurement, result.usage)
    cells = [usd(value * 1_000_000) for value in costs.values()]
    return [_short(result), *cells, f"**{usd(sum(costs.values()) * 1_000_000)}**"]


def _api_table(results: list[Result]) -> str:
    """Requests per run by API for one size, one column per place (tables.api_rows, its per-operation
    figures made per run), with the invocations and calls the stack's counters do not see."""
    per_run = [dataclasses.replace(r.measurement, operations=r.usage.runs) for r in results]
    rows = api_rows(per_run)
    extra: list[tuple[str, Any]] = [
        ("lambda invocation of the API function (data plane)", lambda u: u.invocations(Role.API)),
        *((f"... {name}", lambda u, name=name: u.data_plane[name]) for name in sorted(_operations(results))),
        ("lambda invocation of your function", lambda u: u.invocations(Role.FUNCTION)),
        ("sqs SendMessage (Lambda's destination record, modelled)", lambda u: u.destination_sends),
        ("AWS requests the worker made", lambda u: sum(u.requests[Role.WORKER].values())),
        ("AWS requests the API function made", lambda u: sum(u.requests[Role.API].values())),
    ]
    for label, get in extra:
        if any(get(r.usage) for r in results):
            rows.append([label] + [fmt(r.usage.per_run(get(r.usage))) for r in results])
    return md_table(["API (per run)"] + [r.place.value for r in results], rows)


def _operations(results: list[Result]) -> set[str]:
    return {name for r in results for name in r.usage.data_plane}


def section_remote(options: Options) -> SectionResult:
    stack = options.stacks.moto()
    places = [Place.WORKER, Place.PYTHON]
    missing = node_missing()
    if missing is None:
        places.append(Place.JAVASCRIPT)
    else:
        log(f"remote: no JavaScript function: {missing}")
    bench = RemoteBench(stack, places)
    results: list[Result] = []
    try:
        with worker_swapped(stack, bench.runtime):
            for steps, burn in [*((size, 0) for size in SIZES), (SIZES[0], BURN_MS)]:
                for place in places:
                    log(f"remote: {steps} steps{f' (+{burn} ms CPU)' if burn else ''}, {place.value}")
                    results.append(bench.measure(place, steps, burn))
    finally:
        bench.close()
    return _result(results, missing)


def _burn_growth(results: list[Result], place: Place, role: Role) -> float:
    """How much the billed milliseconds per run of `role` grew with the first step's burn, for `place`."""
    runs = {r.burn_ms: r.usage for r in results if r.place is place and r.steps == SIZES[0]}
    return runs[BURN_MS].per_run(runs[BURN_MS].milliseconds(role)) - runs[0].per_run(
        runs[0].milliseconds(role)
    )


def _steps_per_second(result: Result) -> float:
    seconds = result.measurement.wall_seconds / max(1, result.usage.runs)
    return result.steps / seconds if seconds else 0.0


def _calls_text(results: list[Result], place: Place) -> str:
    """The data-plane calls per run without and with the burn (the API's time follows them)."""
    runs = {r.burn_ms: r.usage for r in results if r.place is place and r.steps == SIZES[0]}
    calls = [usage.per_run(sum(usage.data_plane.values())) for usage in (runs[0], runs[BURN_MS])]
    return f" (data-plane calls per run: {fmt(calls[0])}, then {fmt(calls[1])})" if any(calls) else ""


def _result(results: list[Result], missing: str | None) -> SectionResult:
    from bench.targets import TARGET_REMOTE_WORKER_SHARE_OF_FUNCTION_TIME

    places = list(dict.fromkeys(r.place for r in results))
    remote = [place for place in places if place is not Place.WORKER]
    burn_lines = [
        f"{place.value}: the worker's billed time per run grew by "
        f"{fmt(_burn_growth(results, place, Role.WORKER))} ms, the API's by "
        f"{fmt(_burn_growth(results, place, Role.API))} ms, the function's by "
        f"{fmt(_burn_growth(results, place, Role.FUNCTION))} ms{_calls_text(results, place)}"
        for place in places
    ]
    share_limit = TARGET_REMOTE_WORKER_SHARE_OF_FUNCTION_TIME
    target_rows: list[tuple[str, str, str]] = []
    for place in remote:
        worker = _burn_growth(results, place, Role.WORKER)
        target_rows.append(
            (
                f"issue 41: worker ms per remote run ({SHORT[place]}) grow by <= {share_limit:.0%} of "
                f"the fn's +{BURN_MS} ms CPU",
                f"{fmt(worker, 1)} ms",
                "met" if worker <= share_limit * BURN_MS else "NOT met",
            )
        )
    intro = _INTRO.format(
        run=_run_line(),
        runs=RUNS,
        burn=BURN_MS,
        worker=WORKER_MEMORY_MB,
        api=API_MEMORY_MB,
        function=FUNCTION_MEMORY_MB,
        timeout=FUNCTION_TIMEOUT_SECONDS,
        assumed=f"{ASSUMED_REQUEST_MS:.0f}",
        gbs=f"{PRICES['lambda_gb_second'].usd:.4f}",
    )
    parts = [intro]
    if missing is not None:
        parts.append(f"No JavaScript function in this run: {missing}.")
    parts += [
        "Per run: Lambda invocations (worker / API / function), data-plane calls (the function's "
        "CheckpointDurableExecution and GetDurableExecutionState), the worker's Lambda Invoke requests, "
        "DynamoDB requests and units, SQS requests (the event source mapping's and Lambda's destination "
        "record included), Scheduler requests:",
        md_table(
            ["run", "invocations", "data plane", "Invoke", "DynamoDB", "WU", "RU", "SQS", "Scheduler"],
            [_requests_row(r) for r in results],
        ),
        "Billed Lambda time per run (ms, summed over the run's invocations) and GB-seconds:",
        md_table(
            [
                "run",
                "worker ms",
                "API ms",
                "function ms",
                "(its wall ms)",
                "GB-s worker + API",
                "GB-s function",
            ],
            [_duration_row(r) for r in results],
        ),
        "Cost per million runs (us-east-1 list prices above; Lambda at the arm64 duration price):",
        md_table(
            [
                "run",
                "DynamoDB",
                "SQS",
                "Sched., EB, S3",
                "Lambda req.",
                "GB-s worker+API",
                "GB-s fn",
                "total",
            ],
            [_cost_row(r) for r in results],
        ),
        f"The worker does not pay for the function's run. With the first step burning {BURN_MS} ms of CPU "
        "(3 steps), per run:",
        "\n".join(f"- {line}." for line in burn_lines),
        *(
            [md_table(["target", "measured", "verdict"], [list(row) for row in target_rows])]
            if target_rows
            else []
        ),
    ]
    largest = [r for r in results if r.steps == SIZES[-1] and not r.burn_ms]
    parts.append(
        f"Steps per second of a {SIZES[-1]}-step run on this machine (wall time, moto in-process: every "
        "data-plane call is a real HTTP request to the bench's process, every AWS request an in-process "
        "moto call, so only the ratio means something): "
        + ", ".join(f"{r.place.value} {fmt(_steps_per_second(r))}" for r in largest)
        + "."
    )
    for size in SIZES:
        chosen = [r for r in results if r.steps == size and not r.burn_ms]
        parts += [
            f"AWS requests per run of {size} steps by API (DynamoDB by table, with its units):",
            _api_table(chosen),
        ]
    parts.append(_LEGEND)
    summary = ["Remote durable functions, per run:"]
    for r in results:
        costs = run_costs(r.measurement, r.usage)
        u = r.usage
        summary.append(
            f"  {_short(r):>28}: {fmt(u.per_run(sum(r.measurement.calls.values())))} counted requests, "
            f"GB-s worker+API {fmt(u.per_run(u.gb_seconds(Role.WORKER) + u.gb_seconds(Role.API)), 4)}, "
            f"function {fmt(u.per_run(u.gb_seconds(Role.FUNCTION)), 4)}, "
            f"${sum(costs.values()) * 1_000_000:.2f} per million runs"
        )
    summary += [f"  {line}" for line in burn_lines]
    return SectionResult(
        "Remote durable functions: requests, GB-seconds and cost per run (moto backend)",
        "\n\n".join(parts),
        summary,
        target_rows,
    )


def _run_line() -> str:
    from bench.sections.api import _run_line as run_line

    return run_line()


_INTRO = prose(
    """
    This section's run: {run}. The workflow `tools/bench/remote_functions/steps.py` (N `context.step` calls
    in a row; its JavaScript twin `steps.mjs`, written with @aws/durable-execution-sdk-js) run three ways on
    the moto deployment: registered in the worker; as the user's own Python function; as the user's own
    JavaScript function (issue 41: the worker invokes it asynchronously, the function checkpoints through the
    API function's data plane, its end comes back to the work queue as Lambda's destination record). Each
    function runs in a warm worker process of the harness's Lambda runtime
    (`stepwell.testing.lambda_runtime`), its SDK's client pointed at the API function's URL by
    AWS_ENDPOINT_URL_LAMBDA; the API function's handler
    and the worker run in the bench's process on the same counted clients. {runs} runs of each after one
    warm-up run (cold starts not counted), figures per run from the client's StartExecution to the end. Lambda
    time is modelled, since moto answers in-process and the machine is shared: a worker or API invocation's
    own time is the bench process's CPU time while it runs less the CPU time inside AWS calls (the
    invocations run one at a time), plus {assumed} ms per AWS request it makes (an assumed in-region round
    trip, as in the API section); a function invocation's own time is its process's CPU time (user and
    system, all threads, from /proc in 10 ms ticks), plus per data-plane call the round trip and the API
    invocation's billed time, which the function waits for; each rounded up to the millisecond as Lambda
    bills. "its wall ms" is the function's wall time in the harness, shown as a cross-check only (it
    includes moto's time and the machine's load).
    Memory: the worker {worker} MB (the module's memory_size default), the API function {api} MB (its
    default), your function {function} MB (its configured size here), all at the arm64 price (${gbs} per
    million GB-seconds; the module's default architecture). Your function's timeout is {timeout} s, so a run's
    lease wake-up is a Scheduler schedule its result withdraws (with a timeout up to 780 s it is a delayed
    SQS message instead, which later wakes the worker once for nothing). The burn runs make the first step
    busy the CPU for {burn} ms.
    """
)
_LEGEND = prose(
    """
    invocations: Lambda invocations of the worker / the API function / your function; data plane: its calls
    of CheckpointDurableExecution and GetDurableExecutionState (each an API invocation); Invoke: the worker's
    Event invokes of your function (counted on its client); WU, RU: DynamoDB write and read units from item
    sizes; Sched., EB, S3: EventBridge Scheduler, EventBridge and S3; fn: your function. Not included: the
    API function URL's and the functions' data transfer, CloudWatch Logs, free tiers.
    """
)
