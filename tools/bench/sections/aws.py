"""Section `aws`: N sequential steps through the worker's Lambda entry handler on moto: AWS requests per
durable operation by API, DynamoDB units from item sizes, cost per million operations."""

from __future__ import annotations

import math

from reporting import md_table

from bench.measurement import Measurement
from bench.meter import ApiTally
from bench.section import Options, SectionResult, log
from bench.tables import api_rows, cost_rows, per_op_tables
from bench.targets import (
    TARGET_FIXED_WRITE_UNITS,
    TARGET_READ_UNITS_PER_STEP,
    TARGET_USD_PER_MILLION,
    TARGET_WRITE_UNITS_PER_STEP,
)
from bench.text import fmt, prose, usd


def _fixed_write_units(small: Measurement, large: Measurement) -> float:
    """The fixed write units of an execution, fitted on two sizes of the same workflow."""
    per_step = (large.write_units - small.write_units) / (large.operations - small.operations)
    return small.write_units - small.operations * per_step


def _fixed_cost_text(small: Measurement, large: Measurement) -> str:
    """The per-execution and per-step write units, fitted on two sizes of the same workflow (the write
    units of an N-step execution are fixed + N x per step), and which requests make the fixed part."""
    span = large.operations - small.operations
    per_step = (large.write_units - small.write_units) / span
    fixed = _fixed_write_units(small, large)
    lines = [
        f"Write units per execution, fitted on the {small.label} and {large.label} runs: "
        f"**{fmt(fixed)} fixed + {fmt(per_step)} per step**. At N steps that is {fmt(per_step)} + "
        f"{fmt(fixed)} / N per step, so the {TARGET_WRITE_UNITS_PER_STEP} target holds from "
        f"N = {math.ceil(fixed / max(TARGET_WRITE_UNITS_PER_STEP - per_step, 1e-9)):,} steps on. "
        "The fixed part, by request (write units per execution):",
        "",
    ]
    for key in sorted(set(small.dynamo) | set(large.dynamo)):
        units_small = small.dynamo.get(key, ApiTally()).write_units
        units_large = large.dynamo.get(key, ApiTally()).write_units
        part = units_small - small.operations * (units_large - units_small) / span
        if part >= 0.5:
            lines.append(f"- {key}: {fmt(part)}")
    return "\n".join(lines)


def section_aws(options: Options) -> SectionResult:
    """N sequential steps on the moto backend, driven through the worker's Lambda entry handler."""
    stack = options.stacks.moto()
    measurements: list[Measurement] = []
    for steps in options.sizes:
        log(f"aws: {steps:,} sequential steps on moto")
        measurement = stack.run_workflow("sequential-steps", {"steps": steps}, label=f"{steps:,} steps")
        measurements.append(measurement)
        log(
            f"aws: {steps:,} steps: {measurement.per_op(measurement.write_units):.3f} WU/op, "
            f"{measurement.per_op(measurement.read_units):.3f} RU/op, "
            f"${measurement.usd_per_million_ops():.3f}/M ops, {measurement.wall_seconds:.1f}s"
        )
    by_size = {int(m.label.split(" ")[0].replace(",", "")): m for m in measurements}
    targets: list[list[str]] = []
    for m in measurements:
        wu, ru, cost = m.per_op(m.write_units), m.per_op(m.read_units), m.usd_per_million_ops()
        targets.append(
            [
                m.label,
                f"{fmt(wu)} ({'met' if wu <= TARGET_WRITE_UNITS_PER_STEP else 'NOT met'})",
                f"{fmt(ru)} ({'met' if ru <= TARGET_READ_UNITS_PER_STEP else 'NOT met'})",
                f"{usd(cost)} ({'met' if cost < TARGET_USD_PER_MILLION else 'NOT met'})",
            ]
        )
    flat = ""
    if 100 in by_size and 10_000 in by_size:
        ratio = by_size[10_000].usd_per_million_ops() / by_size[100].usd_per_million_ops()
        flat = (
            f"Cost per operation at 10,000 steps / at 100 steps: **{ratio:.3f}** "
            f"({'the same or lower: met' if ratio <= 1.02 else 'higher: NOT met'}; "
            "the log is folded once per invocation, never replayed per step)."
        )
    cost_by = {size: m.usd_per_million_ops() for size, m in by_size.items()}
    target_rows: list[tuple[str, str, str]] = []
    if 100 in cost_by and 10_000 in cost_by:
        ratio = cost_by[10_000] / cost_by[100]
        target_rows.append(
            (
                "cost per operation at 10,000 steps the same as at 100",
                f"10,000 / 100 = {ratio:.3f}",
                "met" if ratio <= 1.02 else "NOT met",
            )
        )
    fixed_cost = ""
    if len(measurements) >= 2 and measurements[1].operations > measurements[0].operations:
        fixed_cost = _fixed_cost_text(measurements[0], measurements[1])
        fixed = _fixed_write_units(measurements[0], measurements[1])
        target_rows.append(
            (
                f"fixed write units per execution <= {TARGET_FIXED_WRITE_UNITS}",
                fmt(fixed),
                "met" if fixed <= TARGET_FIXED_WRITE_UNITS + 0.01 else "NOT met",
            )
        )
    targets_table = md_table(
        [
            "workflow",
            f"write units / step (<= {TARGET_WRITE_UNITS_PER_STEP})",
            f"read units / step (<= {TARGET_READ_UNITS_PER_STEP:g})",
            f"$ / million ops (< ${TARGET_USD_PER_MILLION:.2f})",
        ],
        targets,
    )
    markdown = "\n\n".join(
        [
            _STEPS_INTRO,
            per_op_tables(measurements),
            "Requests per durable operation by API (DynamoDB by table; WU/RU = write/read units per "
            "operation from item sizes):",
            md_table(["API"] + [m.label for m in measurements], api_rows(measurements)),
            "Estimated cost per million durable operations (us-east-1 list prices below):",
            md_table(["service"] + [m.label for m in measurements], cost_rows(measurements)),
            "Targets (per step, on average over the workflow; computed, not asserted):",
            targets_table,
            *([flat] if flat else []),
            *([fixed_cost] if fixed_cost else []),
            "moto's own ConsumedCapacity answers (a constant per request, whatever the item size; shown as a "
            "cross-check of the request counts only): "
            + ", ".join(
                f"{m.label}: {fmt(m.per_op(m.reported_write_units))} WU/op, "
                f"{fmt(m.per_op(m.reported_read_units))} RU/op"
                for m in measurements
            )
            + ".",
        ]
    )
    summary = ["AWS requests on moto (per durable operation):"]
    if fixed_cost:
        summary.append("  " + fixed_cost.splitlines()[0].replace("**", ""))
    summary += [
        f"  {m.label:>14}: {m.per_op(m.service_calls('dynamodb')):.3f} DynamoDB req, "
        f"{m.per_op(m.write_units):.3f} WU, {m.per_op(m.read_units):.3f} RU, "
        f"{m.per_op(m.sqs_requests):.4f} SQS, "
        f"${m.usd_per_million_ops():.3f} per million ops (durable functions $8.00, Step Functions $25.00)"
        for m in measurements
    ]
    return SectionResult(
        "AWS requests and cost per operation (moto backend)",
        markdown,
        summary,
        target_rows,
        ["Per step of `sequential_steps` (N steps in a row), on average, at each size:\n\n" + targets_table],
    )


_STEPS_INTRO = prose(
    """
    Workflow: `sequential_steps` in `tools/bench_workflows.py`, N `context.step` calls in a row, run by one
    Lambda invocation (no step suspends). Operations = the durable operations the execution recorded (N
    steps; the execution itself not counted). Each size is one execution, from the client's StartExecution
    to its end.
    """
)
