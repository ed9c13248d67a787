"""The reports BENCHMARKS.md is made of fit its 120 characters a line (tests/test_docs.py): the one wrapping
helper the three writers share (tools/reporting.py), and the tables of `make chaos`, `make soak` and the
bench's request sections laid out to fit, with figures larger than a run makes today."""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from reporting import MAX_LINE, md_table, overlong_lines, wrap_markdown  # noqa: E402

_BLOCK_STARTS = {"-", "1.", "#", ">", "|", "```"}
LONG_PARAGRAPH = " ".join(f"word{n} - 1. # > | ``` `code span` **bold {n}**" for n in range(40))


def _words(text: str) -> list[str]:
    return text.split()


def test_a_paragraph_is_wrapped_within_the_width_and_keeps_its_words() -> None:
    wrapped = wrap_markdown(LONG_PARAGRAPH)
    lines = wrapped.split("\n")
    assert len(lines) > 1 and all(len(line) <= MAX_LINE for line in lines)
    assert _words(wrapped) == _words(LONG_PARAGRAPH)
    # A word that would start a block (a list item, a heading...) never begins a line: it comes down with
    # the words before it. Otherwise the lines are filled: a line's first word did not fit on the one before.
    for line, following in itertools.pairwise(lines):
        first, second = following.split()[:2]
        assert first not in _BLOCK_STARTS, following
        if second not in _BLOCK_STARTS:
            assert len(line) + 1 + len(first) > MAX_LINE, (line, following)
    # Wrapping is stable: the writers' text can go through it again.
    assert wrap_markdown(wrapped) == wrapped


def test_a_list_item_is_wrapped_under_its_text_and_the_items_stay_apart() -> None:
    text = "- " + LONG_PARAGRAPH + "\n  its old continuation line\n- a short item\n10. " + LONG_PARAGRAPH
    wrapped = wrap_markdown(text, width=80)
    lines = wrapped.split("\n")
    assert all(len(line) <= 80 for line in lines)
    first_item = lines[: lines.index("- a short item")]
    assert first_item[0].startswith("- word0 ")
    assert all(line.startswith("  ") and line[2] != " " for line in first_item[1:])
    assert " ".join(first_item).split()[-4:] == ["its", "old", "continuation", "line"]
    numbered = lines[lines.index("- a short item") + 1 :]
    assert numbered[0].startswith("10. word0 ") and all(line.startswith("    ") for line in numbered[1:])
    assert _words(wrapped) == _words(text)


def test_tables_headings_markers_and_code_are_left_as_they_are() -> None:
    table = md_table(["a" * 70, "b" * 70], [["c" * 70, "d" * 70]])
    block = "\n".join(
        [
            "# " + "heading " * 20,
            "",
            "<!-- chaos:start -->",
            table,
            "",
            "```",
            "code " * 40,
            "```",
            "",
            "    indented code " * 10,
            "<!-- chaos:end -->",
        ]
    )
    assert wrap_markdown(block) == block
    assert [problem.split(" has ")[0] for problem in overlong_lines(block)] == [
        "line 1",
        "line 4",
        "line 6",
        "line 9",
        "line 12",
    ]


def test_a_word_longer_than_the_width_gets_a_line_of_its_own() -> None:
    word = "x" * (MAX_LINE + 5)
    assert wrap_markdown(f"before {word} after") == f"before\n{word}\nafter"


# ----------------------------------------------------------------------------------------- the writers


def _fits(text: str) -> None:
    assert overlong_lines(text) == [], text


def test_the_chaos_section_fits_with_large_counts() -> None:
    from chaos.checks import Report
    from chaos.record import RunData
    from chaos.render import render
    from chaos.settings import Settings

    for backend in ("moto", "localstack"):
        data = RunData(Settings(backend=backend, executions=1_000_000), first_start=0.0, last_end=123_456.0)
        data.started = {f"e{n}": "retrying" for n in range(1_000)}
        data.callbacks_sent = data.callback_repeats_refused = 1_234_567
        data.fired_schedules = data.reconciles = data.redriven = 1_234_567
        report = Report(data, executions=1_234_567, step_runs=12_345_678, invocations=12_345_678)
        report.ended = Counter({"SUCCEEDED": 1_234_000, "FAILED": 567})
        report.reruns = Counter(
            {
                "retried by its retry strategy (the attempt raised)": 123_456,
                "its checkpoint was not stored (an error reached the engine, or its lease lapsed)": 123_456,
            }
        )
        report.kills = Counter({"timer, after its invocation and before acknowledging it": 123_456})
        report.faults = Counter({"dynamodb throttle (every attempt)": 1_234_567})
        report.fault_attempts = 12_345_678
        report.lags = [0.5, 12_345.67]
        report.async_invocations, report.async_destinations = 12_345_678, 123_456
        # A failed run lists its problems.
        report.lost = ["default#retrying#e1 (retrying): " + "not ended after the run's timeout " * 8]
        section = render(report)
        _fits(section)
        assert (
            "| direct wake-ups sent to the work queue after 3 failed or killed attempts | 123,456 |"
            in section
        )
        assert "each copy with a random 0-3 s extra delay" in " ".join(section.split())


def test_the_soak_section_fits_with_large_counts() -> None:
    import soak

    report = soak.Report(soak.Settings(per_kind=1_000), retention_days=3650, skipped_days=4000.0)
    report.ended = {kind: Counter({status: 1_000}) for kind, (_, status) in soak.KINDS.items()}
    report.before = Counter({("coordination", "fc#c#…#t# (ticket)"): 12_345_678})
    report.expired = Counter(report.before)
    report.resources = {"Scheduler group: schedules": 1_234_567}  # fails the run: left at the end
    report.examples = ["coordination fc#c#a#t#" + "x" * 80]
    report.pruned_versions = [str(n) for n in range(40)]
    section = soak.render(report)
    _fits(section)
    assert ": FAILED." in section


# How much each workflow the fake stack runs does beyond a step: its requests and units grow with it, to
# figures larger than a run makes today (per execution: tens of requests, where a run has a few).
_WEIGHTS = {
    "sequential-steps": 0,
    "single-step": 1,
    "single-short-wait": 4,
    "single-long-wait": 5,
    "single-callback": 7,
    "single-callback-timeout": 9,
    "single-parallel": 8,
    "single-large-step": 6,
    "mixed": 9,
}


class _FakeStack:
    """A moto stack whose runs are made up: what the bench's request sections lay out, not what they
    measure (the bench itself runs the real thing)."""

    def run_workflow(self, workflow: str, payload: dict[str, Any], label: str, executions: int = 1) -> Any:
        from bench.measurement import Measurement, ModelledCharges
        from bench.meter import ApiTally

        steps, weight, runs = int(payload.get("steps", 1)), _WEIGHTS[workflow], executions
        kinds = Counter({"STEP": (steps + weight) * runs})
        kinds.update({"CONTEXT/WaitForCallback": weight * runs, "CONTEXT/ParallelBranch": weight * runs})
        dynamo = {
            "PutItem (operations)": ApiTally(
                calls=(steps + 2 * weight) * runs, write_units=1.25 * steps * runs
            ),
            "UpdateItem (coordination)": ApiTally(
                calls=(2 + 3 * weight) * runs, write_units=(2 + 3.5 * weight) * runs
            ),
            "PutItem (executions)": ApiTally(calls=runs, write_units=4.0 * runs),
            "GetItem (executions)": ApiTally(calls=(2 + weight) * runs, read_units=(2 + weight) * runs),
            "Query (operations)": ApiTally(calls=weight * runs, read_units=1.5 * weight * runs),
            "BatchGetItem ()": ApiTally(calls=weight * runs, read_units=0.5 * weight * runs),
        }
        apis = (
            "events.PutEvents",
            "lambda.Invoke",
            "scheduler.CreateSchedule",
            "sqs.SendMessage",
            "s3.PutObject",
        )
        return Measurement(
            label=label,
            executions=runs,
            operations=(steps + 2 * weight) * runs,
            operation_kinds=kinds,
            calls={api: (1 + weight) * runs for api in apis},
            dynamo=dynamo,
            modelled=ModelledCharges(*((1 + weight) * runs for _ in range(7))),
            reported_read_units=1.5 * steps * runs,
            reported_write_units=2.5 * steps * runs,
            wall_seconds=1_234.5,
        )


def test_the_bench_request_sections_and_the_targets_fit_with_large_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench import document
    from bench.moto_stack import Stacks
    from bench.section import Options
    from bench.sections.aws import section_aws
    from bench.sections.operations import section_operations

    with contextlib.ExitStack() as exits:
        stacks = Stacks(exits)
        monkeypatch.setattr(stacks, "moto", _FakeStack)
        options = Options(sizes=(10, 100, 1_000, 10_000), sdk_timeout=1.0, stacks=stacks)
        results = [section_aws(options), section_operations(options)]
    text = document.render(results, 0.0, ["aws", "operations"])
    _fits(text)
    # Every figure of the wide tables is still there, in tables of their own.
    assert (
        "| workflow | SQS requests / op | Scheduler invocations / op | S3 requests / op | wall s (moto) |"
        in text
    )
    assert "| resume | write units | SQS requests | verdict |" in text
    assert "Stepwell's total as a share of durable functions" in text
