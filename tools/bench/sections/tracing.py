"""Section `tracing`: what the worker's own spans (issue 43; stepwell.core.run_spans) cost, on and off side
by side: CPU per operation on the local backend, and AWS requests and OTLP exports per operation through the
worker's entry on moto. Spans go to an OTLP/HTTP receiver in a process of its own, so its CPU is not
counted."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bench_workflows
from reporting import md_table

from bench.section import Options, SectionResult, log
from bench.text import fmt, prose

# (workflow, its input, operations it records, executions per CPU measurement, label)
_CASES: list[tuple[str, dict[str, int], int, int, str]] = [
    ("sequential-steps", {"steps": 100}, 100, 10, "100 steps in one run"),
    ("long-lived", {"cycles": 20}, 40, 10, "20 step + wait cycles (21 runs)"),
]
_REPEATS = 3  # CPU: the lowest of this many measurements, alternating off and on
_RECEIVER = """
import sys, time
from stepwell.testing.otlp_receiver import OtlpReceiver
receiver = OtlpReceiver(port=int(sys.argv[1])).start()
print("ready", flush=True)
sys.stdin.read()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def _receiver() -> Iterator[str]:
    """An OTLP/HTTP receiver in a child process: its traces URL."""
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", _RECEIVER, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise RuntimeError("the OTLP receiver did not start")
        yield f"http://127.0.0.1:{port}/v1/traces"
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)


def _recorder(url: str) -> Any:
    from stepwell.aws.otlp_endpoint import OtlpEndpoint
    from stepwell.aws.otlp_spans import OtlpSpanRecorder

    return OtlpSpanRecorder(OtlpEndpoint(url))


def _cpu_ms_per_op(
    workflow: str, *, payload: dict[str, int], operations: int, executions: int, spans: Any
) -> float:
    from stepwell.ports.spans import NoSpans
    from stepwell.testing.local import LocalStepwell

    local = LocalStepwell()
    local.register(workflow, bench_workflows.WORKFLOWS[workflow][0])
    local.worker.spans = spans or NoSpans()
    warm = local.start(workflow, payload, execution_name="warm-up")
    local.run_to_completion(warm)
    started = time.process_time()
    for index in range(executions):
        execution_id = local.start(workflow, payload, execution_name=f"e-{index}")
        if local.run_to_completion(execution_id).status.value != "SUCCEEDED":
            raise RuntimeError(f"tracing: {workflow} did not succeed")
    return (time.process_time() - started) * 1000 / (operations * executions)


def _requests(stack: Any, workflow: str, payload: dict[str, int], label: str, spans: Any) -> dict[str, float]:
    from stepwell.ports.spans import NoSpans

    stack.runtime.worker.spans = spans or NoSpans()
    try:
        m = stack.run_workflow(workflow, payload, label=label)
    finally:
        stack.runtime.worker.spans = NoSpans()
    aws = sum(m.calls.values()) + m.modelled.esm_receives + m.modelled.esm_deletes
    return {
        "aws": m.per_op(aws),
        "dynamodb": m.per_op(m.service_calls("dynamodb")),
        "otlp": m.per_op(spans.exports) if spans is not None else 0.0,
        "failed": float(spans.failed_exports) if spans is not None else 0.0,
    }


def section_tracing(options: Options) -> SectionResult:
    rows: list[list[str]] = []
    summary = ["The worker's spans (off / on, per durable operation):"]
    stack = options.stacks.moto()
    with _receiver() as url:
        for workflow, payload, operations, executions, label in _CASES:
            log(f"tracing: {label}, CPU off/on")
            shape: dict[str, Any] = {"payload": payload, "operations": operations, "executions": executions}
            off: list[float] = []
            on: list[float] = []
            for _ in range(_REPEATS):
                off.append(_cpu_ms_per_op(workflow, **shape, spans=None))
                on.append(_cpu_ms_per_op(workflow, **shape, spans=_recorder(url)))
            log(f"tracing: {label}, AWS requests off/on on moto")
            requests_off = _requests(stack, workflow, payload, label, None)
            spans = _recorder(url)
            requests_on = _requests(stack, workflow, payload, label, spans)
            if requests_on["failed"]:
                raise RuntimeError(f"tracing: {int(requests_on['failed'])} span exports failed")
            cpu_off, cpu_on = min(off), min(on)
            rows.append(
                [
                    label,
                    f"{cpu_off:.3f}",
                    f"{cpu_on:.3f}",
                    f"{(cpu_on / cpu_off - 1) * 100:+.0f} %",
                    fmt(requests_off["aws"]),
                    fmt(requests_on["aws"]),
                    fmt(requests_on["otlp"]),
                ]
            )
            summary.append(
                f"  {label}: CPU {cpu_off:.3f} / {cpu_on:.3f} ms, AWS requests {fmt(requests_off['aws'])} / "
                f"{fmt(requests_on['aws'])}, OTLP exports {fmt(requests_on['otlp'])}"
            )
    markdown = "\n\n".join(
        [
            _INTRO,
            md_table(
                [
                    "workflow",
                    "CPU ms/op, off",
                    "CPU ms/op, on",
                    "CPU added",
                    "AWS requests/op, off",
                    "AWS requests/op, on",
                    "OTLP POSTs/op",
                ],
                rows,
            ),
            _NOTES,
        ]
    )
    return SectionResult("The worker's spans: cost on and off", markdown, summary)


_INTRO = prose(
    """
    Workflows of `tools/bench_workflows.py`: `sequential_steps` (100 steps, one invocation) and `long_lived`
    (20 cycles of a step and a one-hour wait: an invocation per cycle). CPU: `time.process_time` per durable
    operation on the local backend (in-process, virtual clock), the lowest of three measurements of ten
    executions each, spans off (the default) and on (to an OTLP/HTTP receiver in another process, so only
    the worker's side is counted: making the spans, encoding them as OTLP/JSON, one POST per run). AWS
    requests: every request the engine makes plus the queue's receives and deletes, per operation, through
    the worker's Lambda entry on moto, off and on; OTLP exports are the POSTs to the collector.
    """
)
_NOTES = prose(
    """
    Spans add no AWS request: they are kept in memory and sent in one OTLP/HTTP request after each run
    (the endpoint's secret or parameter is read once per cold start, not counted here). Each run records a
    `stepwell.worker` span with lease, load, run and release children and one span per written checkpoint,
    so the cost per operation is highest where a run records few operations (one step per run in
    `long_lived`). CPU figures move from run to run when other work shares the machine.
    """
)
