"""Section `cpu`: CPU time per operation (time.process_time) on the local backend
(stepwell.testing.local) and in the SDK's own local test runner, each size in a fresh subprocess."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import bench_workflows
from reporting import md_table

from bench.section import (
    ENTRY_SCRIPT,
    LOCAL_TIMEOUT_SECONDS,
    MIN_MEASURED_OPERATIONS,
    Options,
    SectionResult,
    log,
)
from bench.text import prose


def cpu_probe(runner: str, steps: int) -> dict[str, Any]:
    """Run in a fresh process: CPU seconds (time.process_time, all threads) per operation for executions
    of `steps` sequential steps, after one unmeasured warm-up execution."""
    handler = bench_workflows.sequential_steps
    executions = max(1, math.ceil(MIN_MEASURED_OPERATIONS / steps))
    run_one: Callable[[int, int], None]
    if runner == "local":
        from stepwell.testing.local import LocalStepwell

        local = LocalStepwell()
        local.register("sequential-steps", handler)

        def run_local(index: int, count: int) -> None:
            execution_id = local.start("sequential-steps", {"steps": count}, execution_name=f"e-{index}")
            status = local.run_to_completion(execution_id).status.value
            if status != "SUCCEEDED":
                raise RuntimeError(f"local run ended {status}")

        run_one = run_local
    elif runner == "sdk":
        from aws_durable_execution_sdk_python_testing.runner import DurableFunctionTestRunner

        sdk = DurableFunctionTestRunner(handler=handler)

        def run_sdk(index: int, count: int) -> None:
            result = sdk.run(
                input=json.dumps({"steps": count}), execution_timeout=3_600, execution_name=f"e-{index}"
            )
            if str(getattr(result.status, "value", result.status)) != "SUCCEEDED":
                raise RuntimeError(f"SDK runner ended {result.status}")

        run_one = run_sdk
    else:
        raise ValueError(f"unknown runner {runner!r}")
    run_one(0, 10)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    for index in range(1, executions + 1):
        run_one(index, steps)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
    if runner == "sdk":
        sdk.close()  # type: ignore[no-untyped-call]
    operations = executions * steps
    return {
        "runner": runner,
        "steps": steps,
        "executions": executions,
        "operations": operations,
        "cpu_ms_per_op": cpu * 1000 / operations,
        "wall_seconds": wall,
    }


def _probe(runner: str, steps: int, timeout: float) -> dict[str, Any] | None:
    command = [sys.executable, str(ENTRY_SCRIPT), "--cpu-probe", runner, "--steps", str(steps)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        log(f"cpu: {runner} at {steps:,} steps exceeded {timeout:.0f}s: skipped")
        return None
    if done.returncode != 0:
        raise RuntimeError(f"cpu probe {runner} {steps} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def section_cpu(options: Options) -> SectionResult:
    """CPU per operation in-process: Stepwell's local backend against the SDK's own local test runner."""
    rows: list[list[str]] = []
    summary = ["CPU per operation in-process (time.process_time, ms per step):"]
    measured: dict[str, dict[int, dict[str, Any]]] = {"local": {}, "sdk": {}}
    skipped: list[str] = []
    for steps in options.sizes:
        log(f"cpu: {steps:,} steps, local backend")
        local = _probe("local", steps, LOCAL_TIMEOUT_SECONDS)
        log(f"cpu: {steps:,} steps, SDK runner")
        sdk = _probe("sdk", steps, options.sdk_timeout)
        for name, result in (("local", local), ("sdk", sdk)):
            if result is not None:
                measured[name][steps] = result
        if sdk is None:
            skipped.append(f"{steps:,}")

        def cpu(result: dict[str, Any] | None) -> str:
            return f"{result['cpu_ms_per_op']:.3f}" if result else "skipped"

        def wall(result: dict[str, Any] | None) -> str:
            if not result:
                return ""
            return f"{result['wall_seconds'] * 1000 / result['operations']:.3f}"

        ratio = sdk["cpu_ms_per_op"] / local["cpu_ms_per_op"] if sdk and local else None
        rows.append(
            [
                f"{steps:,}",
                cpu(local),
                wall(local),
                cpu(sdk) if sdk else f"skipped (over {options.sdk_timeout:.0f} s)",
                wall(sdk),
                f"{ratio:.2f}x" if ratio else "",
                ("yes" if ratio > 1 else "NO") if ratio else "n/a",
                f"{local['executions'] if local else '-'} / {sdk['executions'] if sdk else '-'}",
            ]
        )
        summary.append(
            f"  {steps:>6,} steps: Stepwell local {cpu(local)}, SDK runner {cpu(sdk)}"
            + (f" (SDK / Stepwell {ratio:.2f}x)" if ratio else "")
        )
    notes: list[str] = []
    local_values = {steps: r["cpu_ms_per_op"] for steps, r in measured["local"].items()}
    if len(local_values) > 1:
        spread = max(local_values.values()) / min(local_values.values())
        notes.append(
            f"Stepwell local, largest / smallest CPU per operation across sizes: **{spread:.2f}**"
            + (
                f"; at 10,000 steps / at 100 steps: **{local_values[10_000] / local_values[100]:.2f}**"
                if 100 in local_values and 10_000 in local_values
                else ""
            )
            + "."
        )
    ratios = {
        steps: measured["sdk"][steps]["cpu_ms_per_op"] / measured["local"][steps]["cpu_ms_per_op"]
        for steps in options.sizes
        if steps in measured["sdk"] and steps in measured["local"]
    }
    target_tables: list[str] = []
    if len(local_values) > 1 or ratios:
        largest = max(local_values) if local_values else 0
        reference = local_values.get(largest, 0.0)

        def flat(steps: int) -> str:
            if steps not in local_values:
                return "not measured"
            value = local_values[steps]
            return f"{value:.3f} ({'met' if 0.8 * reference <= value <= 1.25 * reference else 'NOT met'})"

        def below(steps: int) -> str:
            if steps not in ratios:
                return f"skipped (over {options.sdk_timeout:.0f} s)" if f"{steps:,}" in skipped else "n/a"
            return f"{ratios[steps]:.2f}x ({'met' if ratios[steps] > 1.0 else 'NOT met'})"

        target_tables.append(
            "CPU per step flat across sizes (Stepwell local) and below the SDK's test runner at every size:"
            + "\n\n"
            + md_table(
                [
                    "steps",
                    f"Stepwell local: ms CPU / op (within 25 % of {largest:,} steps)",
                    "SDK / Stepwell (CPU; over 1x)",
                ],
                [[f"{steps:,}", flat(steps), below(steps)] for steps in options.sizes],
            )
        )
    notes.append(
        "At 10 steps the fixed costs of an execution (its start, the invocation, the SDK's set-up of its "
        "checkpoint thread) are shared by 10 operations only, in both columns. CPU figures move from run to "
        "run when other work shares the machine."
    )
    if skipped:
        notes.append(
            f"The SDK runner was skipped at {', '.join(skipped)} steps: the size did not finish within "
            f"{options.sdk_timeout:.0f} s of wall time in its subprocess."
        )
    markdown = "\n\n".join(
        [
            _CPU_INTRO.format(minimum=f"{MIN_MEASURED_OPERATIONS:,}"),
            md_table(_CPU_HEADERS[0], [row[:5] for row in rows]),
            md_table(_CPU_HEADERS[1], [row[:1] + row[5:] for row in rows]),
            *notes,
        ]
    )
    summary += ["  " + note.replace("**", "") for note in notes]
    return SectionResult(
        "CPU per operation in-process (local backend vs the SDK's test runner)",
        markdown,
        summary,
        target_tables=target_tables,
    )


# The headers of the rows' columns, in two tables (one would be too wide for the file).
_CPU_HEADERS = (
    ["steps", "Stepwell local: ms CPU / op", "wall ms / op", "SDK runner: ms CPU / op", "wall ms / op"],
    [
        "steps",
        "SDK / Stepwell (CPU)",
        "Stepwell below the SDK runner",
        "executions measured (Stepwell / SDK)",
    ],
)
_CPU_INTRO = prose(
    """
    Workflow: the same `sequential_steps` handler, run by `stepwell.testing.local.LocalStepwell` (the
    engine over the memory store, a local queue and a virtual clock) and by the SDK's own
    `DurableFunctionTestRunner` (aws-durable-execution-sdk-python-testing, in-process, time skipping on).
    Each cell is one fresh Python process: one unmeasured 10-step warm-up execution, then enough
    executions to make at least {minimum} operations; CPU is `time.process_time()` over those executions
    (all threads of the process, so the SDK's checkpoint thread and the runner's scheduler count), divided
    by the operations. Wall time is shown for information: both run the SDK's background checkpointing,
    whose waits are not CPU.
    """
)
