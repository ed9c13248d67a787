"""Section `long-lived`: one execution of N step-and-wait cycles through an entry runtime kept across
messages as a warm Lambda container keeps it: read and write units of the message that runs cycle 10, 100
and N, and of the same cycles on a worker without the journal cache."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

from reporting import md_table

from bench.measurement import PerMessage, per_message
from bench.moto_stack import MotoStack
from bench.section import Options, SectionResult, log
from bench.targets import TARGET_LONG_LIVED_READ_RATIO
from bench.text import fmt, prose

LONG_LIVED_WORKFLOW = "long-lived"
LONG_LIVED_MEASURED = (10, 100)  # and the last cycle


def _cold_runtime(stack: MotoStack) -> Any:
    """The stack's entry runtime without the journal cache: every message folds the whole log."""
    from stepwell.core.journal_cache import JournalCache, JournalCacheOptions
    from stepwell.wiring.entry import EntryRuntime

    cold = JournalCache(JournalCacheOptions(enabled=False))
    return EntryRuntime(dataclasses.replace(stack.runtime.engine, journals=cold))


def _run_cycles(
    stack: MotoStack, cycles: int, name: str, measured_on: Mapping[int, Any], reader: Any
) -> dict[int, PerMessage]:
    """Run one long-lived execution to its end, one wake-up at a time; the message of each cycle in
    `measured_on` (cycle -> the runtime that handles it) is measured alone. Cycle 1 is the start.
    `reader` (a runtime without the cache) counts the operations after a measurement, so that reading
    leaves the warm runtime's cache as the messages left it."""
    warm = stack.runtime
    results: dict[int, PerMessage] = {}
    execution_id = stack.client.start_execution(LONG_LIVED_WORKFLOW, {"cycles": cycles}, execution_name=name)
    stack.drain(fire_schedules=False)
    try:
        for cycle in range(2, cycles + 2):  # the message after the last cycle's wait ends it
            runtime = measured_on.get(cycle)
            if runtime is not None:
                stack.runtime = runtime
                stack.reset_counters()
            started = time.perf_counter()
            if not stack.fire_next_schedule():
                raise RuntimeError(f"{execution_id}: no wake-up scheduled after cycle {cycle - 1}")
            stack.drain(fire_schedules=False)
            if runtime is not None:
                stack.runtime = reader
                results[cycle] = per_message(stack, f"cycle {cycle:,}", [execution_id], started)
                stack.runtime = warm
            if cycle % 100 == 0:
                log(f"long-lived: {name} at cycle {cycle:,} of {cycles:,}")
    finally:
        stack.runtime = warm
    status = stack.client.describe_execution(execution_id)["Status"]
    if status != "SUCCEEDED":
        raise RuntimeError(f"{execution_id} ended {status}, not SUCCEEDED")
    return results


def section_long_lived(options: Options) -> SectionResult:
    """Read and write units per wake-up of one execution as its log grows, warm and cold."""
    stack = options.stacks.moto()
    cycles = options.long_lived_cycles
    measured = sorted({c for c in LONG_LIVED_MEASURED if c < cycles} | {cycles})
    warm_runtime, cold_runtime = stack.runtime, _cold_runtime(stack)
    log(f"long-lived: {cycles:,} step-and-wait cycles on a warm worker, measured at {measured}")
    warm = _run_cycles(stack, cycles, "long-lived-warm", dict.fromkeys(measured, warm_runtime), cold_runtime)
    log(f"long-lived: the same cycles on a worker without the journal cache at {measured}")
    cold = _run_cycles(stack, cycles, "long-lived-cold", dict.fromkeys(measured, cold_runtime), cold_runtime)

    def units(phase: PerMessage) -> tuple[float, float, float]:
        m = phase.measurement
        # The operations table holds the log and the pending inputs: one Query each per message.
        log_reads = sum(t.read_units for key, t in m.dynamo.items() if key == "Query (operations)")
        return phase.per(m.read_units), phase.per(m.write_units), phase.per(log_reads)

    rows = []
    for cycle in measured:
        warm_read, warm_write, warm_log = units(warm[cycle])
        cold_read, cold_write, cold_log = units(cold[cycle])
        rows.append(
            [
                f"{cycle:,}",
                fmt(warm_read),
                fmt(warm_log),
                fmt(warm_write),
                fmt(cold_read),
                fmt(cold_log),
                fmt(cold_write),
            ]
        )
    first, last = measured[0], measured[-1]
    first_reads, last_reads = units(warm[first])[0], units(warm[last])[0]
    ratio = last_reads / first_reads if first_reads else math.inf
    met = ratio <= TARGET_LONG_LIVED_READ_RATIO
    finding = (
        f"Read units per cycle on a warm worker: {fmt(first_reads)} at cycle {first:,}, {fmt(last_reads)} at "
        f"cycle {last:,} ({ratio:.2f}x); without the journal cache {fmt(units(cold[last])[0])} at cycle "
        f"{last:,}."
    )
    targets = [
        (
            f"read units per cycle at cycle {last:,} <= {TARGET_LONG_LIVED_READ_RATIO}x cycle {first:,} "
            "(long-lived, warm worker)",
            f"{fmt(first_reads)} -> {fmt(last_reads)} ({ratio:.2f}x)",
            "met" if met else "NOT met",
        )
    ]
    markdown = "\n\n".join(
        [
            _LONG_LIVED_INTRO.format(cycles=cycles, workflow=LONG_LIVED_WORKFLOW),
            "Warm worker (units per message):",
            md_table(_CYCLE_HEADER, [row[:4] for row in rows]),
            "Cold worker, without the journal cache (units per message):",
            md_table(_CYCLE_HEADER, [row[:1] + row[4:] for row in rows]),
            f"**{finding}**",
        ]
    )
    return SectionResult(
        "Long-lived executions: reads per wake-up as the log grows (moto backend)",
        markdown,
        ["Long-lived executions:", "  " + finding],
        targets,
    )


# The warm and the cold worker's units, a table each (side by side they would be too wide for the file).
_CYCLE_HEADER = ["cycle", "read units", "of which operations-table Queries (log, inputs)", "write units"]
_LONG_LIVED_INTRO = prose(
    """
    Workflow `{workflow}` (`tools/bench_workflows.py`): {cycles} cycles of a step then a one-hour wait, one
    execution, driven as in the sections above one wake-up at a time (each a fired schedule, one message).
    Warm: every message goes to the same entry runtime, as a warm Lambda container keeps its process, so
    the engine's journal cache (`stepwell.core.journal_cache`) holds the fold of the execution's log from the
    previous message and the load reads only the last batch it folded and any written since. Cold: a
    second execution runs the same way, but the measured cycles go to a runtime whose cache is disabled,
    which reads the whole log, as a new container does. Units are per message (per cycle), all DynamoDB
    requests of the message included (the execution's item, lease, inputs, the log, checkpoints, the
    wake-up's bookkeeping).
    """
)
