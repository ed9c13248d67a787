"""Section `definitions-replay`: CPU per wake-up of a definition's loop (trigger, condition, wait 1 s,
condition) at wake-up 10 and 500, on the local backend with a virtual clock: a replay reads the decided
conditions from the log, and a long context continues in a new execution, so a wake-up costs its new work
(issue 37)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from reporting import md_table

from bench.section import Options, SectionResult, log
from bench.text import prose

REPLAY_WAKE_UPS = (10, 500)
REPLAY_SAMPLES = 3  # wake-ups measured from each of REPLAY_WAKE_UPS on, averaged


def _replay_loop(expression: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "id": "loop",
        "nodes": [
            {"id": "t", "type": "trigger", "event": "start"},
            {"id": "c1", "type": "condition", "expression": expression},
            {"id": "w", "type": "wait", "duration": 1},
            {"id": "c2", "type": "condition", "expression": expression},
            {"id": "e", "type": "end"},
        ],
        "edges": [
            {"from": "t", "to": "c1"},
            {"from": "c1", "to": "w", "branch": "true"},
            {"from": "c1", "to": "e", "branch": "false"},
            {"from": "w", "to": "c2"},
            {"from": "c2", "to": "c1", "branch": "true"},
            {"from": "c2", "to": "e", "branch": "false"},
        ],
    }


def _replay_cpu(expression: str, data: Mapping[str, Any]) -> dict[int, float]:
    """CPU seconds (time.process_time: every thread, the SDK's checkpointing too) of the wake-ups from each
    of REPLAY_WAKE_UPS on, averaged, for one context of the loop on the local backend."""
    from stepwell.core.registry import Registry
    from stepwell.features.definitions.actions import ActionRegistry
    from stepwell.features.definitions.interpreter import register_interpreter
    from stepwell.features.definitions.router import EventSources, PathExtractor, Router
    from stepwell.features.definitions.runtime import DefinitionsRuntime
    from stepwell.testing.local import LocalStepwell

    local = LocalStepwell(registry=Registry())
    runtime = DefinitionsRuntime.in_memory(clock=local.clock, actions=ActionRegistry(builtins=False))
    register_interpreter(local.registry, runtime)
    router = Router(local.engine, runtime, extractor=PathExtractor(), sources=EventSources({"bench": ["*"]}))
    runtime.definitions.set_workflow("bench", _replay_loop(expression))
    detail = {"domain": "bench", "subjectId": "s1", "data": dict(data)}
    router.process_event(
        {"version": "0", "id": "e1", "detail-type": "start", "source": "bench", "detail": detail}
    )
    local.run_until_idle()
    spent: dict[int, list[float]] = {wake_up: [] for wake_up in REPLAY_WAKE_UPS}
    for wake_up in range(1, max(REPLAY_WAKE_UPS) + REPLAY_SAMPLES):
        due = local.queue.next_due_at()
        if due is None:
            raise RuntimeError(f"definitions-replay: the loop ended at wake-up {wake_up}")
        local.clock.advance_to(due)
        started = time.process_time()
        local.run_until_idle()
        took = time.process_time() - started
        for first in REPLAY_WAKE_UPS:
            if first <= wake_up < first + REPLAY_SAMPLES:
                spent[first].append(took)
    return {wake_up: sum(values) / len(values) for wake_up, values in spent.items()}


def section_definitions_replay(options: Options) -> SectionResult:
    """CPU per wake-up of a definition's loop, early and late in its life."""
    from stepwell.features.definitions.budgets import EXPRESSION_COST_LIMIT, ROOT_BYTES
    from stepwell.features.definitions.expressions import compile_expression, estimate_cost

    heavy = " and ".join(f'"needle{n}" not in event.data.tags' for n in range(8))
    tags = [f"t{n:05d}" for n in range(26_000)]  # about 230 KB as JSON: within the event's 256 KiB
    # (the row's label, what its conditions are: below the table, the expression, the event's tags).
    loops = [
        (
            "conditions reading the whole event",
            "8 list walks each, the most validation allows is 16",
            heavy,
            tags,
        ),
        (
            "cheap conditions",
            "a comparison with a constant: evaluated in place, no step",
            "event.data.go == true",
            [],
        ),
    ]
    rows: list[list[str]] = []
    summary = ["Definitions: CPU per wake-up of a trigger/condition/wait 1 s/condition loop:"]
    targets: list[tuple[str, str, str]] = []
    for label, _, expression, values in loops:
        log(f"definitions-replay: {label}")
        cost = estimate_cost(compile_expression(expression), ROOT_BYTES)
        measured = _replay_cpu(expression, {"tags": values, "go": True})
        early, late = (measured[wake_up] for wake_up in REPLAY_WAKE_UPS)
        ratio = late / early
        rows.append(
            [
                label,
                f"{cost:,} / {EXPRESSION_COST_LIMIT:,}",
                f"{early * 1000:.1f}",
                f"{late * 1000:.1f}",
                f"{ratio:.2f}x",
            ]
        )
        summary.append(f"  {label}: {early * 1000:.1f} ms at 10, {late * 1000:.1f} ms at 500 ({ratio:.2f}x)")
        targets.append(
            (
                f"definitions: CPU per wake-up at 500 within 1.5x of wake-up 10 ({label})",
                f"{ratio:.2f}x",
                "met" if ratio <= 1.5 else "NOT met",
            )
        )
    markdown = "\n\n".join(
        [
            prose(
                """
                One context of a loop (trigger, condition, wait 1 s, condition, back to the first condition)
                on `stepwell.testing.local.LocalStepwell` (memory stores, a virtual clock), one wake-up per
                second. CPU is `time.process_time()` (every thread: the SDK's checkpointing too) of each
                wake-up's run, averaged over three wake-ups from wake-up 10 and from wake-up 500. A costly
                condition is decided in a step whose result the log keeps, so a replay reads it rather than
                evaluating it again (before, wake-up k evaluated 2k conditions). The replay of the log's
                operations by the SDK and the engine (each wait, each decision step, tens of microseconds
                each) is bounded too: after 64 node visits the context continues in a new execution
                (continue-as-new, docs/reference/definitions.md), so a wake-up replays at most that many,
                at wake-up 500 as at wake-up 10. A wake-up that hands off also starts and runs the new
                execution: in the average when it falls among the three.
                """
            ),
            md_table(
                [
                    "conditions",
                    "estimated cost / limit (bytes read)",
                    "ms CPU at wake-up 10",
                    "ms CPU at wake-up 500",
                    "500 / 10",
                ],
                rows,
            ),
            ". ".join(f"{label.capitalize()}: {what}" for label, what, _, _ in loops) + ".",
        ]
    )
    return SectionResult(
        "Definitions: CPU per wake-up of a long loop (local backend)", markdown, summary, targets
    )
