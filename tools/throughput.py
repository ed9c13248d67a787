"""`make throughput`: executions per second and the due-to-run delay with 1, 2 and 4 worker processes.

    .venv/bin/python tools/throughput.py                               # LocalStack, 150 executions a run
    .venv/bin/python tools/throughput.py --write BENCHMARKS.md         # ... and its section of the file
    .venv/bin/python tools/throughput.py --workers 1,2 --executions 60 --backend moto   # a short look

Each run is a chaos run (tools/chaos/) with no fault injected: the module's resources on a LocalStack of
its own, worker processes playing the SQS event source mapping and Lambda's asynchronous invocations, the
parent starting `--executions` executions of `three_steps` (a step, a one-second wait, two steps) as fast
as its client can, and the same checks (nothing lost, no double result). It reports, per worker count,
executions per second (from the first execution's start to the last one's end, as their records have
them), the due-to-run delay of the waits (p50/p99, with the part spent in the queue and in a batch), and
the ratios to one worker. A ratio, not a timed test: the figures measure this machine, whose cores the
workers, LocalStack and DynamoDB Local share.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import tool_paths  # tools/ is on the path

tool_paths.add()

import chaos_workflows  # noqa: E402
from chaos.checks import Report, real_time  # noqa: E402
from chaos.delays import percentile  # noqa: E402
from chaos.run import run  # noqa: E402
from chaos.settings import Settings, log  # noqa: E402
from reporting import md_table, report_checked_run, wrap_markdown  # noqa: E402
from stepwell.testing.backends import DEPLOYED_BACKEND_NAMES  # noqa: E402

SECTION_NAME = "chaos-throughput"  # a chaos section: `make bench` keeps it (reporting.kept_sections)
DEFAULT_WORKERS = (1, 2, 4)
DEFAULT_EXECUTIONS = 150


@dataclasses.dataclass(frozen=True)
class Measured:
    """One run's figures."""

    workers: int
    executions: int
    seconds: float  # first start to last end (real seconds)
    delay_p50: float
    delay_p99: float
    queue_p99: float  # the delay's part in the queue
    batch_p99: float  # the delay's part in a batch, behind its other messages
    failed_checks: tuple[str, ...]

    @property
    def per_second(self) -> float:
        return self.executions / max(self.seconds, 1e-9)


def throughput_settings(workers: int, executions: int, backend: str) -> Settings:
    """A chaos run's settings with no fault: no error, kill or duplicate, the one kind started."""
    return Settings(
        executions=executions,
        workers=workers,
        fault_rate=0.0,
        burst_rate=0.0,
        kill_rate=0.0,
        step_kill_rate=0.0,
        kill_by=None,
        start_rate=1000.0,  # as fast as the client starts them
        timeout=900.0,
        backend=backend,
        kinds=(chaos_workflows.THROUGHPUT,),
        duplicates=False,
    )


def measured(report: Report, workers: int) -> Measured:
    """The figures of one run's report."""
    jumps = report.data.jumps
    starts = [real_time(value, jumps) for value in report.start_times]
    ends = [real_time(value, jumps) for value in report.end_times]
    seconds = max(ends) - min(starts) if starts and ends else 0.0
    delays = report.delay_parts
    return Measured(
        workers=workers,
        executions=len(ends),
        seconds=seconds,
        delay_p50=percentile([delay.total for delay in delays], 0.5),
        delay_p99=percentile([delay.total for delay in delays], 0.99),
        queue_p99=percentile([delay.part("in the queue") for delay in delays], 0.99),
        batch_p99=percentile([delay.part("in the batch") for delay in delays], 0.99),
        failed_checks=tuple(report.failed_checks),
    )


def ratios(runs: Sequence[Measured]) -> dict[int, float]:
    """Each run's executions per second over the one-worker run's (an empty map without one)."""
    base = next((run_ for run_ in runs if run_.workers == 1), None)
    if base is None or base.per_second <= 0:
        return {}
    return {run_.workers: run_.per_second / base.per_second for run_ in runs}


def render(runs: Sequence[Measured], backend: str, wall_seconds: float) -> str:
    shares = ratios(runs)
    rows = [
        (
            str(run_.workers),
            f"{run_.executions:,}",
            f"{run_.seconds:.1f}",
            f"{run_.per_second:.2f}",
            f"{shares[run_.workers]:.2f}" if run_.workers in shares else "-",
            f"{run_.delay_p50:.2f} / {run_.delay_p99:.2f}",
            f"{run_.queue_p99:.2f} / {run_.batch_p99:.2f}",
            "PASSED" if not run_.failed_checks else "FAILED: " + "; ".join(run_.failed_checks),
        )
        for run_ in runs
    ]
    flags = f" --backend {backend}" if backend != "localstack" else ""
    on = "LocalStack" if backend == "localstack" else "moto's server"
    cores = os.cpu_count() or 1
    lines = [
        "## Throughput on LocalStack" if backend == "localstack" else f"## Throughput on {on}",
        "",
        f"Generated by `make throughput` (`tools/throughput.py{flags} --executions {runs[0].executions} "
        f"--write BENCHMARKS.md`) on {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC in {wall_seconds:.0f} s, "
        f"on a machine with {cores} cores.",
        "",
        f"Each run starts its executions of `three_steps` (a step, a "
        f"{chaos_workflows.THROUGHPUT_WAIT_SECONDS} s wait, two steps) on a {on} of its own holding the "
        "module's resources, with that many worker processes playing the SQS event source mapping (batches "
        "of up to 10) and no fault injected, and checks nothing was lost (the chaos run's checks). "
        "Executions per second: from the first start to the last end, as the records have them; the delay: "
        "from a wait's due time to the start of its run (the chaos run's split: docs/testing.md, Load "
        "and faults). A ratio, not a timed test: the workers, the run's parent and the backend share the "
        f"machine's {cores} cores. What stops the scaling: a worker spends part of each run waiting on the "
        "backend, so workers past the cores still add some throughput, until the workers' processes, "
        "LocalStack and DynamoDB Local keep every core busy and take turns on them.",
        "",
        md_table(
            [
                "workers",
                "executions",
                "seconds",
                "executions/s",
                "vs 1 worker",
                "delay p50 / p99 s",
                "p99 queue / batch s",
                "checks",
            ],
            rows,
        ),
    ]
    return wrap_markdown("\n".join(lines)) + "\n"


def parse_workers(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--workers must be counts separated by commas, got {text!r}"
        ) from None
    if not counts or any(count < 1 or count > 16 for count in counts):
        raise argparse.ArgumentTypeError(f"--workers counts must be from 1 to 16, got {text!r}")
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=parse_workers, default=DEFAULT_WORKERS, help="e.g. 1,2,4")
    parser.add_argument("--executions", type=int, default=DEFAULT_EXECUTIONS, help="executions a run")
    parser.add_argument("--backend", choices=DEPLOYED_BACKEND_NAMES, default="localstack")
    parser.add_argument("--write", type=Path, help="write the report's section into this markdown file")
    args = parser.parse_args(argv)
    if not 1 <= args.executions <= 10_000:
        parser.error(f"--executions must be from 1 to 10,000, got {args.executions}")
    started = time.perf_counter()
    runs = []
    for workers in args.workers:
        settings = throughput_settings(workers, args.executions, args.backend)
        with tempfile.TemporaryDirectory(prefix="stepwell-throughput-") as workdir:
            report = run(settings, Path(workdir))
        runs.append(measured(report, workers))
        log(f"{workers} worker(s): {runs[-1].per_second:.2f} executions/s")
    failed = [f"{run_.workers} worker(s): {check}" for run_ in runs for check in run_.failed_checks]
    section = render(runs, args.backend, time.perf_counter() - started)
    return report_checked_run(section, failed, args.write, SECTION_NAME)


if __name__ == "__main__":
    sys.exit(main())
