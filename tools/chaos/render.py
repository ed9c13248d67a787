"""A run's section of BENCHMARKS.md: the results, the faults, why step bodies ran again (its prose wrapped
and its tables laid out to fit the file's 120 characters a line)."""

from __future__ import annotations

import datetime as dt

from reporting import md_table, wrap_markdown

from chaos.checks import Report
from chaos.delays import percentile, summarise
from chaos.settings import JOURNEY, MIX

# Each backend's run has its section of BENCHMARKS.md between markers of its own (`make bench` keeps both).
SECTION_NAMES = {"moto": "chaos", "localstack": "chaos-localstack"}
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
            "schedules fired / clock skips / reconciler runs",
            f"{data.fired_schedules:,} / {len(data.jumps):,} / {data.reconciles:,}",
        ),
        (
            "messages redriven from the DLQ (every receive of theirs met a fault or a kill)",
            f"{data.redriven:,}",
        ),
        (
            "direct wake-ups: attempts (the client's and Scheduler's invokes of the worker's alias, each "
            "sent twice)",
            f"{report.async_invocations:,}",
        ),
        (
            "direct wake-ups sent to the work queue after 3 failed or killed attempts",
            f"{report.async_destinations:,}",
        ),
    ]
    rerun_rows = [(cause, f"{count:,}") for cause, count in report.reruns.most_common()]
    totals = [delay.total for delay in report.delay_parts]
    delay_rows = [
        (
            part.name,
            f"{part.p50:.2f}",
            f"{part.p90:.2f}",
            f"{part.p99:.2f}",
            f"{100 * part.tail_share:.0f} %",
        )
        for part in summarise(report.delay_parts)
    ] + [
        (
            f"total ({len(totals):,} runs of a wake-up)",
            *(f"{percentile(totals, share):.2f}" for share in (0.5, 0.9, 0.99)),
            "100 %",
        )
    ]
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
        "`slow` step's first run outlives it; every SQS message (engine, client and schedules) is sent "
        f"twice, each copy with a random 0-{settings.max_extra_delay} s extra delay, and batches are "
        "shuffled. How it runs and what it checks: docs/engine.md, Load and faults. Throughput and the "
        f"due-to-run delay measure this machine, not the engine: {shared}.",
        "",
        md_table(["result", "value"], rows),
        "",
        md_table(["fault", "count"], fault_rows),
        "",
        md_table(["why a step body ran again", "re-runs"], rerun_rows),
        "",
        "Where the due-to-run delay goes (real seconds; each part's percentiles over every run of a wake-up, "
        "and its share of the delay of the slowest 1 %; the parts: docs/testing.md, Load and faults):",
        "",
        md_table(["part of the delay", "p50", "p90", "p99", "share of the slowest 1 %"], delay_rows),
    ]
    problems = (
        report.lost + report.double_results + report.double_events + report.bad_event_ids + report.unexplained
    )
    if problems:
        lines += ["", "Problems (first 20):", "", *(f"- {problem}" for problem in problems[:20])]
    return wrap_markdown("\n".join(lines)) + "\n"
