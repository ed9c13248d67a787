"""The tables the moto sections share: per operation, requests by API, cost by service (each laid out to
fit the file's 120 characters a line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reporting import md_table

from bench.measurement import Measurement
from bench.meter import ApiTally
from bench.prices import DURABLE_FUNCTIONS_PER_MILLION, STEP_FUNCTIONS_PER_MILLION
from bench.text import fmt, usd


def per_op_tables(measurements: Sequence[Measurement]) -> str:
    """Per operation, one row per measurement, in two tables (one would be too wide for the file); the
    cost per million operations is in the cost table (`cost_rows`)."""
    first = [
        [
            m.label,
            f"{m.operations:,}",
            f"{m.modelled.lambda_invocations:,}",
            fmt(m.per_op(m.service_calls("dynamodb"))),
            fmt(m.per_op(m.write_units)),
            fmt(m.per_op(m.read_units)),
        ]
        for m in measurements
    ]
    second = [
        [
            m.label,
            fmt(m.per_op(m.sqs_requests)),
            fmt(m.per_op(m.modelled.scheduler_invocations)),
            fmt(m.per_op(m.s3_puts + m.s3_gets)),
            fmt(m.wall_seconds, 1),
        ]
        for m in measurements
    ]
    return "\n\n".join([md_table(PER_OP_HEADERS[0], first), md_table(PER_OP_HEADERS[1], second)])


PER_OP_HEADERS = (
    [
        "workflow",
        "operations",
        "Lambda invocations",
        "DynamoDB requests / op",
        "write units / op",
        "read units / op",
    ],
    ["workflow", "SQS requests / op", "Scheduler invocations / op", "S3 requests / op", "wall s (moto)"],
)


def api_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    """Requests per operation by API (DynamoDB split by table, with units), one column per measurement."""
    keys: list[str] = []
    for m in measurements:
        for key in m.dynamo:
            if key not in keys:
                keys.append(key)
    rows: list[list[str]] = []
    for key in sorted(keys):
        cells = [f"dynamodb {key}"]
        for m in measurements:
            tally = m.dynamo.get(key, ApiTally())
            text = fmt(m.per_op(tally.calls))
            units = []
            if tally.write_units:
                units.append(f"{fmt(m.per_op(tally.write_units))} WU")
            if tally.read_units:
                units.append(f"{fmt(m.per_op(tally.read_units))} RU")
            cells.append(f"{text} ({', '.join(units)})" if units else text)
        rows.append(cells)
    others = sorted({k for m in measurements for k in m.calls if not k.startswith("dynamodb.")})
    for key in others:
        rows.append([key.replace(".", " ", 1)] + [fmt(m.per_op(m.calls.get(key, 0))) for m in measurements])
    modelled: list[tuple[str, Callable[[Measurement], int]]] = [
        ("sqs ReceiveMessage (event source mapping, modelled)", lambda m: m.modelled.esm_receives),
        ("sqs DeleteMessageBatch (event source mapping, modelled)", lambda m: m.modelled.esm_deletes),
        ("sqs SendMessage (by Scheduler, modelled)", lambda m: m.modelled.scheduler_sends),
        ("lambda Invoke (by Scheduler, modelled)", lambda m: m.modelled.scheduler_invokes),
        ("scheduler invocation (modelled)", lambda m: m.modelled.scheduler_invocations),
        ("lambda invocation (modelled)", lambda m: m.modelled.lambda_invocations),
        ("of which forwards to a pinned version (modelled)", lambda m: m.modelled.forwarded_invocations),
    ]
    for label, get in modelled:
        if any(get(m) for m in measurements):
            rows.append([label] + [fmt(m.per_op(get(m))) for m in measurements])
    return rows


def cost_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    rows: list[list[str]] = []
    for service in measurements[0].costs():
        rows.append([service] + [usd(m.per_op(m.costs()[service]) * 1_000_000) for m in measurements])
    rows.append(["**total**"] + [f"**{usd(m.usd_per_million_ops())}**" for m in measurements])
    rows.append(["AWS Lambda durable functions"] + [usd(DURABLE_FUNCTIONS_PER_MILLION) for _ in measurements])
    rows.append(
        ["Stepwell's total as a share of durable functions"]
        + [f"{m.usd_per_million_ops() / DURABLE_FUNCTIONS_PER_MILLION:.0%}" for m in measurements]
    )
    rows.append(
        ["Step Functions Standard (1 transition / op)"]
        + [usd(STEP_FUNCTIONS_PER_MILLION) for _ in measurements]
    )
    rows.append(
        ["Stepwell's total as a share of Step Functions"]
        + [f"{m.usd_per_million_ops() / STEP_FUNCTIONS_PER_MILLION:.0%}" for m in measurements]
    )
    return rows
