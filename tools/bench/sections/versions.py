"""Section `versions`: what pinning executions to worker versions costs: once per execution, per
message outside a transition, and per message while executions run on an older version."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reporting import md_table

from bench.measurement import PerMessage, per_message
from bench.moto_stack import MotoStack
from bench.section import MIXED_EXECUTIONS, Options, SectionResult, log
from bench.targets import TARGET_MIXED_USD_PER_MILLION, TARGET_USD_PER_MILLION
from bench.text import fmt, prose, usd

VERSIONS_WORKFLOW = "single-long-wait"
VERSIONS_QUICK = "single-step"  # ends in its first run
VERSIONS_EXECUTIONS = 25
_QUICK_UNVERSIONED = f"unversioned: {VERSIONS_QUICK}, start to the end"
_QUICK_PINNED = f"pinned to the live version: {VERSIONS_QUICK}, start to the end"


class BenchVersions:
    """The worker function's published versions for the bench (the FunctionVersions port): each version
    is an entry runtime in this process whose engine runs as that version; the live one is the runtime the
    played event source mapping reaches. A forward runs its event on the pinned version's runtime and is
    counted as one Lambda invocation (modelled): the synchronous Invoke request is that invocation."""

    def __init__(self, stack: MotoStack) -> None:
        self._stack = stack
        self._unversioned = stack.runtime
        self.runtimes: dict[str, Any] = {}
        self.live: str | None = None

    def publish(self) -> Any:
        """A new version, made live; returns its runtime."""
        from stepwell.wiring.entry import EntryRuntime

        version = str(len(self.runtimes) + 1)
        engine = dataclasses.replace(self._unversioned.engine, code_version=version, functions=self)
        self.runtimes[version] = EntryRuntime(engine)
        self.live = version
        return self.runtimes[version]

    def current_version(self) -> str | None:
        return self.live

    def list_versions(self) -> list[Any]:
        from stepwell.model import FunctionVersion

        return [FunctionVersion(v, ("live",) if v == self.live else ()) for v in self.runtimes]

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        self._stack.modelled.lambda_invocations += 1
        self._stack.modelled.forwarded_invocations += 1
        answer: dict[str, Any] = self.runtimes[version].handle_event(dict(event), None)
        return answer

    def delete_version(self, version: str) -> None:
        del self.runtimes[version]


def _start_phase(
    stack: MotoStack, label: str, prefix: str, workflow: str = VERSIONS_WORKFLOW
) -> tuple[PerMessage, list[str]]:
    """Start the executions and run them to their wait (or their end, for a workflow that ends in its
    first run), counting from the StartExecution requests on."""
    stack.reset_counters()
    started = time.perf_counter()
    execution_ids = [
        stack.client.start_execution(workflow, {}, execution_name=f"{prefix}-{index}")
        for index in range(VERSIONS_EXECUTIONS)
    ]
    stack.drain(fire_schedules=False)
    return per_message(stack, label, execution_ids, started), execution_ids


def _end_phase(stack: MotoStack, label: str, execution_ids: Sequence[str]) -> PerMessage:
    """Fire the waiting executions' wake-ups and run them to their end, counting from the first wake-up."""
    stack.reset_counters()
    started = time.perf_counter()
    stack.drain()
    return per_message(stack, label, execution_ids, started)


def _write_units_by_request(*phases: PerMessage) -> dict[str, float]:
    units: dict[str, float] = {}
    for phase in phases:
        for key, tally in phase.measurement.dynamo.items():
            units[key] = units.get(key, 0.0) + tally.write_units
    return units


def _check_ended_on(stack: MotoStack, execution_ids: Sequence[str], version: str | None) -> None:
    for execution_id in execution_ids:
        description = stack.client.describe_execution(execution_id)
        if description["Status"] != "SUCCEEDED" or description.get("Version") != version:
            raise RuntimeError(
                f"{execution_id} ended {description['Status']} on version {description.get('Version')}, "
                f"not SUCCEEDED on {version}"
            )


def section_versions(options: Options) -> SectionResult:
    """What pinning executions to code versions costs: per execution, and per message outside and during a
    transition (a deploy while executions wait)."""
    stack = options.stacks.moto()
    versions = BenchVersions(stack)
    unversioned_runtime = stack.runtime
    phases: dict[str, PerMessage] = {}
    try:
        log(f"versions: {VERSIONS_EXECUTIONS} executions of {VERSIONS_WORKFLOW} per row on moto")
        phases["u1"], ids = _start_phase(stack, "unversioned: start to the wait", "unversioned")
        phases["u2"] = _end_phase(stack, "unversioned: wake-up to the end", ids)
        _check_ended_on(stack, ids, None)
        phases["uq"], ids = _start_phase(stack, _QUICK_UNVERSIONED, "unversioned-quick", VERSIONS_QUICK)
        _check_ended_on(stack, ids, None)

        stack.runtime = versions.publish()  # version 1 is live
        phases["p1"], ids = _start_phase(stack, "pinned to the live version: start to the wait", "pinned")
        phases["p2"] = _end_phase(stack, "pinned to the live version: wake-up to the end", ids)
        _check_ended_on(stack, ids, "1")
        phases["pq"], ids = _start_phase(stack, _QUICK_PINNED, "pinned-quick", VERSIONS_QUICK)
        _check_ended_on(stack, ids, "1")
        # The headline workflows as the module deploys them: every execution runs on a published version.
        log("versions: 10 steps and mixed, pinned to the live version")
        deployed = [
            stack.run_workflow("sequential-steps", {"steps": 10}, label="10 steps, pinned"),
            stack.run_workflow("mixed", {"order": 7}, label="mixed, pinned", executions=MIXED_EXECUTIONS),
        ]

        _, ids = _start_phase(stack, "", "transition")  # they wait, pinned to version 1
        stack.runtime = versions.publish()  # the deploy: version 2 is live, the mapping reaches it
        phases["t2"] = _end_phase(stack, "pinned to an older version (a transition): wake-up to the end", ids)
        _check_ended_on(stack, ids, "1")
    finally:
        stack.runtime = unversioned_runtime
    u1, u2, p1, p2, t2 = (phases[key] for key in ("u1", "u2", "p1", "p2", "t2"))
    uq, pq = phases["uq"], phases["pq"]
    executions = VERSIONS_EXECUTIONS

    def per_execution(first: PerMessage, second: PerMessage, value: Callable[[PerMessage], float]) -> float:
        return (value(first) + value(second)) / executions

    pin_units = per_execution(p1, p2, lambda p: p.measurement.write_units) - per_execution(
        u1, u2, lambda p: p.measurement.write_units
    )
    pin_requests = per_execution(p1, p2, lambda p: p.requests) - per_execution(u1, u2, lambda p: p.requests)
    pin_usd = per_execution(p1, p2, lambda p: sum(p.measurement.costs().values())) - per_execution(
        u1, u2, lambda p: sum(p.measurement.costs().values())
    )
    steady_invocations = p2.per(p2.measurement.modelled.lambda_invocations) - u2.per(
        u2.measurement.modelled.lambda_invocations
    )
    steady_requests = p2.per(p2.requests) - u2.per(u2.requests)
    extra_invocations = t2.per(t2.measurement.modelled.lambda_invocations) - p2.per(
        p2.measurement.modelled.lambda_invocations
    )
    extra_requests = t2.per(t2.requests) - p2.per(p2.requests)
    extra_dynamodb = t2.per(t2.measurement.service_calls("dynamodb")) - p2.per(
        p2.measurement.service_calls("dynamodb")
    )
    extra_reads = t2.per(t2.measurement.read_units) - p2.per(p2.measurement.read_units)
    extra_usd = (
        t2.per(sum(t2.measurement.costs().values())) - p2.per(sum(p2.measurement.costs().values()))
    ) * 1_000_000
    by_request = _write_units_by_request(p1, p2)
    for key, units in _write_units_by_request(u1, u2).items():
        by_request[key] = by_request.get(key, 0.0) - units
    pin_parts = ", ".join(
        f"{key} {fmt(units / executions)}" for key, units in sorted(by_request.items()) if units
    )
    quick_units = (pq.measurement.write_units - uq.measurement.write_units) / executions
    quick_requests = (pq.requests - uq.requests) / executions
    findings = [
        f"**Pinning an execution that ends in its first run: {fmt(quick_units)} write units, "
        f"{fmt(quick_requests)} requests** ({VERSIONS_QUICK}, pinned minus unversioned): its end's "
        "UpdateItem names the version, and it never enters the `version-index`.",
        f"**Pinning an execution that goes on past its first run: {fmt(pin_units)} write units, "
        f"{fmt(pin_requests)} request(s)** ({usd(pin_usd * 1_000_000)} per million executions): the "
        "conditional UpdateItem that pins it as its first run ends (the item, its new `version-index` entry "
        "and its entry in the subject index, which projects every attribute) and the `version-index` "
        "entry's removal when it ends "
        f"(write units per execution by request, pinned minus unversioned: {pin_parts}).",
        f"**Outside a transition: {fmt(steady_invocations)} extra Lambda invocations and "
        f"{fmt(steady_requests)} extra requests per message** (a wake-up of an execution pinned to the live "
        "version against the same wake-up unversioned).",
        f"**During a transition: {fmt(extra_invocations)} extra Lambda invocation and {fmt(extra_requests)} "
        f"extra requests per message** ({fmt(extra_dynamodb)} DynamoDB, {fmt(extra_reads)} read units; "
        f"{usd(extra_usd)} per million messages) for an execution pinned to an older version: the live "
        "version reads the execution, finds it pinned elsewhere and forwards the message with one "
        "synchronous Invoke of that version, which then runs it as usual.",
    ]
    ten_steps_usd, mixed_usd = (measurement.usd_per_million_ops() for measurement in deployed)
    findings.append(
        f"**As the module deploys them** (the worker runs as a published version, so every execution is "
        f"pinned): 10 steps {usd(ten_steps_usd)}, `mixed` {usd(mixed_usd)} per million operations. The "
        "sections above run an unversioned worker; `mixed` waits, so its pin is the difference."
    )
    targets = [
        (
            f"10 steps < ${TARGET_USD_PER_MILLION:.2f} per million operations, pinned (as deployed)",
            usd(ten_steps_usd),
            "met" if ten_steps_usd < TARGET_USD_PER_MILLION else "NOT met",
        ),
        (
            f"mixed workflow <= ${TARGET_MIXED_USD_PER_MILLION:.2f} per million operations, pinned (as "
            "deployed)",
            usd(mixed_usd),
            "met" if mixed_usd <= TARGET_MIXED_USD_PER_MILLION else "NOT met",
        ),
        (
            "versions: nothing extra per message outside a transition",
            f"+{fmt(steady_invocations)} invocations, +{fmt(steady_requests)} requests per message",
            "met" if steady_invocations == 0 and steady_requests == 0 else "NOT met",
        ),
        (
            "versions: one extra invocation per message during a transition",
            f"+{fmt(extra_invocations)} invocations per message",
            "met" if extra_invocations <= 1.0 else "NOT met",
        ),
    ]
    phase_rows = [phase.row() for phase in (u1, u2, uq, p1, p2, pq, t2)]
    markdown = "\n\n".join(
        [
            _VERSIONS_INTRO.format(executions=executions, workflow=VERSIONS_WORKFLOW, quick=VERSIONS_QUICK),
            md_table(_PHASE_HEADERS[0], [row[:6] for row in phase_rows]),
            md_table(_PHASE_HEADERS[1], [row[:1] + row[6:] for row in phase_rows]),
            "\n".join(f"- {finding}" for finding in findings),
            _VERSIONS_NOTES,
        ]
    )
    summary = ["Code versions (per message; per execution for the pin):"] + [
        "  " + finding.replace("**", "") for finding in findings
    ]
    return SectionResult("Code versions: pinning and forwarding (moto backend)", markdown, summary, targets)


# The headers of PerMessage.row()'s columns, in two tables (one would be too wide for the file).
_PHASE_HEADERS = (
    [
        "phase",
        "executions",
        "messages",
        "Lambda invocations / message",
        "of which forwards",
        "AWS requests / message",
    ],
    [
        "phase",
        "DynamoDB requests / message",
        "write units / message",
        "read units / message",
        "$ / million messages",
    ],
)
_VERSIONS_INTRO = prose(
    """
    Workflow `{workflow}` (`tools/bench_workflows.py`: a 2 h wait, then a step), {executions} executions per
    row, driven as in the sections above, in two phases each: from the start to the wait (the first message:
    the execution's first run, which pins it) and from the wake-up (a fired schedule's direct invocation of
    the worker's alias, counted as a message) to the end. The `{quick}` rows (one step) end in their first
    run.
    Unversioned: the worker without a version (`AWS_LAMBDA_FUNCTION_VERSION` unset or `$LATEST`), which never
    pins nor forwards. Pinned to the live version: the worker runs as version 1, the version the queue's
    alias reaches. A transition: executions started on version 1 wait; version 2 is published and made
    live (a deploy); each wake-up reaches version 2, which forwards it to version 1. The worker's versions
    are entry runtimes in this process (`BenchVersions` in `tools/bench/sections/versions.py`); a forward
    runs the event on the pinned version's runtime and counts as one Lambda invocation.
    """
)
_VERSIONS_NOTES = prose(
    """
    Here each wake-up comes alone (one fired schedule, one direct invocation), as Scheduler's wake-ups always
    do; a batch of up to 10 SQS messages pinned to one version is forwarded with one invoke, so a busy
    transition's messages cost less than one extra invocation each. Not included (as everywhere in this
    file): Lambda duration; the forwarding invocation waits for the invoke it makes, so a forwarded message
    is billed about twice the handler's duration, during a transition only.
    """
)
