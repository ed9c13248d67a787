"""BENCHMARKS.md as a bench run writes it: the run, the targets, how it measures, the prices, then each
section, its prose wrapped at 120 characters (reporting.wrap_markdown); the sections `make chaos` and
`make soak` wrote are kept."""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from reporting import kept_sections, md_table, warn_overlong, wrap_markdown

from bench.prices import DURABLE_FUNCTIONS_PER_MILLION, PRICES, STEP_FUNCTIONS_PER_MILLION
from bench.section import ROOT, SectionResult


def _versions() -> str:
    names = ("aws-durable-execution-sdk-python", "aws-durable-execution-sdk-python-testing", "moto", "boto3")
    parts = []
    for name in names:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


HOW_MEASURED = """\
- **Backend.** moto in-process (`moto.mock_aws`, no server): the module's tables and indexes
  (`stepwell.testing.mock_deployment`, as docs/architecture.md describes them), the work queue and its
  DLQ, the payload bucket, the schedule group. The engine runs as deployed: every message goes through
  `stepwell.wiring.entry.EntryRuntime.handle_event` as an SQS batch event or as the asynchronous
  invocation of the worker's alias it is (the runtime `stepwell.wiring.entry.handler` builds from the
  Lambda's environment; here built from the same `StepwellConfig` with a virtual clock, so a 2-hour wait
  takes no real time) over `DynamoDbExecutionStore`, `SqsWorkQueue`, `WakeScheduler` (SQS delays up to
  900 s, EventBridge Scheduler beyond) and `S3PayloadStore`, wired by `stepwell.wiring.build.build_engine`.
  Executions are started and callbacks sent with `StepwellClient`, on the same counted clients, with
  `direct_wake_ups` as the module's client_config has it: the client wakes an execution by invoking the
  worker's alias asynchronously (its Invoke request is counted; the bench keeps the event,
  `stepwell.testing.async_invoke.take_event_invokes`, and runs it next).
- **What plays AWS.** The bench plays the SQS event source mapping (receive up to 10 messages, hand them to
  the entry handler as an SQS batch event, delete them in one batch) and EventBridge Scheduler (fire the
  earliest one-time schedule: skip the virtual clock to it, hand its input to the entry handler as the
  asynchronous invocation of the worker's alias it is, or send it to the queue when it targets the queue,
  delete it) and Lambda's asynchronous invocations (the client's and Scheduler's) with its own boto3
  clients, which are not counted. The requests AWS makes on your behalf there are counted as *modelled*:
  one ReceiveMessage per non-empty receive, one DeleteMessageBatch per batch, one Lambda invocation per
  batch and per direct invocation, one Scheduler invocation per fired schedule and one SQS SendMessage per
  schedule fired to the queue. The event source mapping's empty long
  polls are a fixed cost of an idle queue, not a per-operation one, and are left out.
- **Workflows.** `tools/bench_workflows.py`: unmodified `@durable_execution` handlers, the same objects on
  every backend and in the SDK's runner.
- **Counting.** Every request the engine and the client make goes through
  `stepwell.aws.clients.AwsClients`, whose `RequestCounter` counts calls by API. DynamoDB read and write
  units are computed from item sizes (moto's ConsumedCapacity is a constant per request): see `DynamoMeter`
  in `tools/bench/meter.py` (1 write unit per KB of the larger of the item before and after, plus each GSI
  entry written, changed or removed, sized by its projection, so a KEYS_ONLY index costs only when its key
  changes; 1 read unit per 4 KB, a Query summing its items, half for eventually consistent reads; a failed
  conditional write costs its units).
- **Operations.** The durable operations the execution recorded (steps, waits, callbacks, contexts), the
  execution itself not counted: the unit AWS Lambda durable functions bills ($8.00 per million). Step
  Functions Standard is taken as one state transition per operation ($25.00 per million).
- **Cost.** Counts times the list prices below. Lambda compute (GB-seconds) is counted only where a section
  says so: the remote section counts the worker's, the API function's and your function's (modelled
  durations), the API section the API function's per call; every other section leaves it out, on every
  side of its comparisons. Not included anywhere: storage, data transfer, free tiers.
- **CPU.** `time.process_time()` in a fresh process per size and runner; see that section.
"""


def _targets_summary(results: Sequence[SectionResult]) -> list[str]:
    rows = [list(row) for result in results for row in result.targets]
    tables = [table for result in results for table in result.target_tables]
    if not rows and not tables:
        return []
    return [
        "## Against the targets",
        "Computed from the measurements below (a report, not a test: nothing here fails the build).",
        *tables,
        *([md_table(["target", "measured", "verdict"], rows)] if rows else []),
    ]


def _price_text(value: float) -> str:
    text = f"{value:.4f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"${whole}.{fraction.ljust(2, '0')}"


def _prices_parts() -> list[str]:
    """The "Prices used" part: its heading, a line, the table of PRICES and the alternatives."""
    price_rows = [[p.label, f"{_price_text(p.usd)} per {p.per:,}", p.source] for p in PRICES.values()]
    price_rows.append(
        [
            "AWS Lambda durable functions",
            f"${DURABLE_FUNCTIONS_PER_MILLION:.2f} per 1,000,000 operations",
            "aws.amazon.com/lambda/pricing",
        ]
    )
    price_rows.append(
        [
            "Step Functions Standard",
            f"${STEP_FUNCTIONS_PER_MILLION:.2f} per 1,000,000 state transitions",
            "aws.amazon.com/step-functions/pricing",
        ]
    )
    return [
        PRICES_HEADING,
        "Published prices as of 2026-11 (DynamoDB on-demand: the prices in force since the cut of "
        "2024-11-01). Free tiers ignored.",
        md_table(["item", "price", "source"], price_rows),
    ]


PRICES_HEADING = "## Prices used (us-east-1, on-demand list prices)"


def render(results: Sequence[SectionResult], started: float, selected: Sequence[str]) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Stepwell benchmarks",
        "Generated by `make bench` (`tools/bench.py --write BENCHMARKS.md`); do not edit by hand. "
        "Every figure below was measured by the run that wrote this file.",
        f"- run: {now}, {time.perf_counter() - started:.0f} s, commit {_commit()}, "
        f"sections: {', '.join(selected)}\n"
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n"
        f"- packages: {_versions()}",
        *_targets_summary(results),
        "## How measured",
        HOW_MEASURED.rstrip(),
        *_prices_parts(),
    ]
    for result in results:
        parts += [f"## {result.title}", result.markdown]
    return wrap_markdown("\n\n".join(parts).rstrip()) + "\n"


def _block(lines: Sequence[str], heading: str) -> tuple[int, int] | None:
    """Where the part under `heading` is in `lines`: its heading's index and the index of the next heading
    of its level or section marker (or the end); None when the file has no such heading."""
    if heading not in lines:
        return None
    start = lines.index(heading)
    end = start + 1
    while end < len(lines) and not (lines[end].startswith("## ") or lines[end].startswith("<!--")):
        end += 1
    return start, end


def update(text: str, results: Sequence[SectionResult]) -> str:
    """`text` (BENCHMARKS.md as it is) with the parts of these sections replaced by theirs (a section the
    file does not have goes before the first section marker, or at the end) and the prices table rewritten;
    everything else as it is: a run of some sections (`--sections ... --update`) leaves the others' figures,
    the run line and the targets summary to the run that wrote them."""
    lines = text.rstrip("\n").split("\n")
    parts = [("\n\n".join(_prices_parts()), PRICES_HEADING)]
    parts += [(f"## {result.title}\n\n{result.markdown}", f"## {result.title}") for result in results]
    for part, heading in parts:
        new = [*wrap_markdown(part.rstrip()).split("\n"), ""]
        found = _block(lines, heading)
        if found is None:
            marker = next((i for i, line in enumerate(lines) if line.startswith("<!--")), len(lines))
            if marker == len(lines):
                lines.append("")
            lines[marker:marker] = new
        else:
            lines[found[0] : found[1]] = new
    return "\n".join(lines).rstrip("\n") + "\n"


def write(path: Path, text: str) -> None:
    """Writes the run's `text` to `path`, keeping the sections of `make chaos`, `soak` and `scale`."""
    path.write_text(text + kept_sections(path))
    warn_overlong(path)
