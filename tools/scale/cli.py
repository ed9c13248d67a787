"""`make scale`: run the mix on moto, build the profiles, project them to the targets, print the report
and (with --write) put it in its section of BENCHMARKS.md."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from bench.moto_stack import moto_stack
from bench.section import ROOT, log
from reporting import write_section

from scale.model import KindProfile, build_profiles, project, schedule_slope
from scale.report import SECTION_NAME, render
from scale.targets import targets
from scale.workload import Sizes, Workload, make_recorder


def _commit() -> str:
    """HEAD's short id, and whether the engine or the tools measured differ from it (another change in the
    working tree is measured too)."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)

    commit = git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    changed = git("diff", "--quiet", "HEAD", "--", "lambda_src", "tools").returncode == 1
    return f"{commit} (with uncommitted changes to lambda_src or tools)" if changed else commit


def measure(sizes: Sizes, overrides: Mapping[str, str]) -> tuple[dict[str, KindProfile], int]:
    """Runs the mix on a deployment with `overrides` to its settings; (profiles by kind, requests)."""
    with moto_stack() as stack:
        recorder = make_recorder(stack)
        workload = Workload(stack, recorder)
        if overrides:
            workload.reconfigure(overrides)
        workload.run_all(sizes)
        runs = workload.runs
        profiles = build_profiles(
            recorder.requests,
            units={kind: run.units for kind, run in runs.items()},
            groups={kind: run.groups for kind, run in runs.items()},
            charges={kind: run.modelled for kind, run in runs.items()},
            schedules={
                kind: schedule_slope(run.schedules_at) for kind, run in runs.items() if run.schedules_at
            },
            events_per_unit={"definitions": 2},
            sweeps={kind: run.sweeps for kind, run in runs.items()},
        )
        return profiles, len(recorder.requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", type=Path, help="write the section into this file (BENCHMARKS.md)")
    defaults = Sizes()
    parser.add_argument("--plain", type=int, default=defaults.plain, help="executions of each plain kind")
    parser.add_argument("--waits", type=int, default=defaults.waits, help="executions of each wait kind")
    parser.add_argument("--tenants", type=int, default=defaults.tenants, help="definitions tenants")
    parser.add_argument(
        "--subjects", type=int, default=defaults.subjects_per_tenant, help="subjects per tenant"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a deployment setting (a StepwellConfig field), e.g. index_shards=16 or long_wait_wakeups=sweep",
    )
    parser.add_argument(
        "--commit",
        help="the commit measured, for a run on an export without git (`git archive HEAD`); default: HEAD",
    )
    args = parser.parse_args(argv)
    if args.commit is not None and not re.fullmatch(r"[0-9a-f]{7,40}", args.commit):
        parser.error(f"--commit {args.commit!r}: a commit id, 7 to 40 hexadecimal digits")
    overrides: dict[str, str] = {}
    for item in args.set:
        name, equals, value = item.partition("=")
        if not equals or not name.strip():
            parser.error(f"--set {item!r}: NAME=VALUE")
        overrides[name.strip()] = value.strip()
    try:
        sizes = Sizes(args.plain, args.waits, args.tenants, args.subjects)
    except ValueError as error:
        parser.error(str(error))
    commit = (
        args.commit or _commit()
    )  # what is measured: before the run, while HEAD is still what was checked out
    started = time.perf_counter()
    try:
        profiles, requests = measure(sizes, overrides)
    except ValueError as error:
        if str(error).startswith("--set"):
            parser.error(str(error))
        raise
    settings_text = (
        ", ".join(f"`{name}={value}`" for name, value in overrides.items()) or "the default settings"
    )
    seconds = time.perf_counter() - started
    log(f"scale: measured in {seconds:.0f} s; projecting")
    projections = [project(target, profiles) for target in targets()]
    section = render(
        projections, profiles, commit=commit, seconds=seconds, requests=requests, settings=settings_text
    )
    print(section)
    if args.write:
        write_section(args.write, section, SECTION_NAME)
        print(f"wrote the {SECTION_NAME} section of {args.write}", file=sys.stderr)
    return 0
