"""Section `operations`: a mixed workflow on moto, and the marginal cost of each kind of non-step
operation over a one-step workflow."""

from __future__ import annotations

from collections import Counter

import bench_workflows
from reporting import md_table

from bench.measurement import Measurement
from bench.section import MIXED_EXECUTIONS, Options, SectionResult, log
from bench.tables import api_rows, cost_rows, per_op_tables
from bench.targets import (
    TARGET_MIXED_USD_PER_MILLION,
    TARGET_RESUME_SQS_REQUESTS,
    TARGET_RESUME_WRITE_UNITS,
)
from bench.text import fmt, prose, usd

# The marginal rows that are one resume of a suspended execution, and what each includes (the rows of a
# table of the targets).
_RESUMES = {
    "single-short-wait": "a 2 s wait that ends",
    "single-long-wait": "a 2 h wait that ends",
    "single-callback": "a callback that arrives; its row includes the callback's three operations",
    "single-callback-timeout": "a callback with a 1-day deadline that arrives first; as the row above",
}
_MARGINAL = (
    ("single-short-wait", "wait of 2 s (SQS DelaySeconds)"),
    ("single-long-wait", "wait of 2 h (EventBridge Scheduler)"),
    ("single-callback", "wait_for_callback (result sent by the client)"),
    ("single-callback-timeout", "wait_for_callback, 1-day timeout, result sent first"),
    ("single-parallel", f"parallel of {bench_workflows.PARALLEL_BRANCHES} one-step branches"),
    ("single-large-step", f"step with a {bench_workflows.LARGE_RESULT_BYTES // 1024} KB result (S3)"),
)


def _totals(m: Measurement) -> dict[str, float]:
    """Per execution of the measurement."""
    totals = {
        "operations": m.operations,
        "Lambda invocations": m.modelled.lambda_invocations,
        "DynamoDB requests": m.service_calls("dynamodb"),
        "write units": m.write_units,
        "read units": m.read_units,
        "SQS requests": m.sqs_requests,
        "Scheduler invocations": m.modelled.scheduler_invocations,
        "S3 requests": m.s3_puts + m.s3_gets,
        "usd": sum(m.costs().values()),
    }
    return {key: value / max(1, m.executions) for key, value in totals.items()}


def section_operations(options: Options) -> SectionResult:
    """A mixed workflow, and the marginal cost of each kind of non-step operation."""
    stack = options.stacks.moto()
    log("operations: mixed workflow on moto")
    mixed = stack.run_workflow("mixed", {"order": 7}, label="mixed", executions=MIXED_EXECUTIONS)
    log("operations: single-operation workflows on moto")
    base = stack.run_workflow("single-step", {}, label="single step")
    base_totals = _totals(base)
    base_kinds = ", ".join(f"{k} {v}" for k, v in sorted(base.operation_kinds.items()))
    rows: list[list[str]] = [
        [
            "baseline: one step",
            *(fmt(base_totals[key]) for key in _MARGINAL_COLUMNS),
            usd(base_totals["usd"] * 1_000_000) + " (executions)",
            usd(base_totals["usd"] * 1_000_000 / max(1.0, base_totals["operations"])),
        ]
    ]
    summary = [
        f"Mixed workflow: {mixed.operations} operations, {mixed.per_op(mixed.write_units):.3f} WU/op, "
        f"{mixed.per_op(mixed.read_units):.3f} RU/op, ${mixed.usd_per_million_ops():.3f} per million ops",
        "Marginal cost of non-step operations (per operation of that kind, over a one-step workflow):",
    ]
    mixed_usd = mixed.usd_per_million_ops()
    targets = [
        (
            f"mixed workflow <= ${TARGET_MIXED_USD_PER_MILLION:.2f} per million operations",
            usd(mixed_usd),
            "met" if mixed_usd <= TARGET_MIXED_USD_PER_MILLION else "NOT met",
        )
    ]
    resume_rows: list[list[str]] = []
    kinds_rows: list[list[str]] = [["baseline: one step", base_kinds]]
    for workflow, label in _MARGINAL:
        runs = MIXED_EXECUTIONS if workflow in _THREADED else 1
        variant = stack.run_workflow(workflow, {}, label=label, executions=runs)
        totals = _totals(variant)
        diff = {key: totals[key] - base_totals[key] for key in totals}
        if workflow in _RESUMES:
            wu, sqs = diff["write units"], diff["SQS requests"]
            met = wu <= TARGET_RESUME_WRITE_UNITS and sqs <= TARGET_RESUME_SQS_REQUESTS
            resume_rows.append(
                [
                    _RESUMES[workflow],
                    fmt(wu),
                    fmt(sqs),
                    "met"
                    if met
                    else "NOT met" + (" (write units met)" if wu <= TARGET_RESUME_WRITE_UNITS else ""),
                ]
            )
        per_execution = Counter({k: v // variant.executions for k, v in variant.operation_kinds.items()})
        kinds = per_execution - base.operation_kinds
        kinds_rows.append([label, "+ " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))])
        rows.append(
            [
                label,
                *(fmt(diff[key]) for key in _MARGINAL_COLUMNS),
                usd(diff["usd"] * 1_000_000),
                usd(diff["usd"] * 1_000_000 / max(1.0, diff["operations"])),
            ]
        )
        summary.append(
            f"  {label:>48}: +{diff['operations']:.0f} ops, +{diff['write units']:.1f} WU, "
            f"+{diff['read units']:.1f} RU, +{diff['SQS requests']:.0f} SQS, "
            f"+{diff['Scheduler invocations']:.0f} Scheduler: ${diff['usd'] * 1e6:.2f} per million"
        )
    resume_table = md_table(["resume", "write units", "SQS requests", "verdict"], resume_rows)
    markdown = "\n\n".join(
        [
            _MIXED_INTRO.format(branches=bench_workflows.PARALLEL_BRANCHES, executions=MIXED_EXECUTIONS)
            + ", ".join(f"{k} {v}" for k, v in sorted(mixed.operation_kinds.items()))
            + ".",
            per_op_tables([mixed]),
            md_table(["API", "mixed"], api_rows([mixed])),
            md_table(["service", "mixed"], cost_rows([mixed])),
            _MARGINAL_INTRO.format(executions=MIXED_EXECUTIONS),
            md_table(["operation", "operations added"], kinds_rows),
            "Added per execution (the baseline's own figures in its row):",
            md_table(["operation", *_MARGINAL_HEADERS], rows),
            _MARGINAL_LEGEND,
        ]
    )
    resumes = (
        f"Per resume, all-in (the marginal rows of the non-step operations): <= {TARGET_RESUME_WRITE_UNITS} "
        f"write units and <= {TARGET_RESUME_SQS_REQUESTS} SQS requests:\n\n{resume_table}"
    )
    return SectionResult("Non-step operations (moto backend)", markdown, summary, targets, [resumes])


_MIXED_INTRO = (
    prose(
        """
    Workflow `mixed` (`tools/bench_workflows.py`): a step, a 2 s wait (an SQS message with DelaySeconds), a
    step, a 2 h wait (a one-time EventBridge Scheduler schedule; the virtual clock skips to it), a
    `wait_for_callback` whose result the client sends (as `stepwell callback succeed` does), a `parallel` of
    {branches} one-step branches and a last step. {executions} executions one after the other, each from
    StartExecution to its end, figures per operation over all of them (the SDK runs a parallel's branches on
    threads, so how their checkpoints fall into batches varies from one execution to the next). Operations
    by kind (all executions):
    """
    )
    + " "
)
_MARGINAL_INTRO = prose(
    """
    Marginal cost of one non-step operation: a workflow of one step plus that operation, minus the
    one-step workflow (per execution, all requests from StartExecution on; one execution each,
    {executions} for the parallel, whose branches' checkpoints fall into batches differently from run to
    run). `$ / M of these` is the added cost of a million such calls; a wait_for_callback is three SDK
    operations (its context, the callback and the submitter step), a parallel is its context, one context
    per branch and the branches' steps, hence the last column, `$ / M SDK ops`: the added cost per million
    SDK operations added. A wait suspends the execution: its
    cost is mostly that of the extra invocation (lease, log load, wake-up message). Results are sent
    before any schedule fires, and each run goes on until no message or schedule is left, so a wake-up an
    execution leaves behind (a deadline that was not needed) is counted with it.
    """
)

# Workflows whose SDK threads (a parallel's branches) make their batches vary: run MIXED_EXECUTIONS times.
_THREADED = frozenset({"single-parallel"})

_MARGINAL_COLUMNS = (
    "Lambda invocations",
    "DynamoDB requests",
    "write units",
    "read units",
    "SQS requests",
    "Scheduler invocations",
    "S3 requests",
)
# The marginal table's headers, short to fit the file's width (_MARGINAL_COLUMNS, then the cost per million
# of these calls and per million SDK operations added), and the legend below the table.
_MARGINAL_HEADERS = (
    "invocations",
    "DynamoDB",
    "WU",
    "RU",
    "SQS",
    "Scheduler",
    "S3",
    "$ / M of these",
    "$ / M SDK ops",
)
_MARGINAL_LEGEND = prose(
    """
    invocations: Lambda invocations; DynamoDB, SQS, S3: requests; WU, RU: write and read units; Scheduler:
    EventBridge Scheduler invocations; M: million.
    """
)
