"""The bench's command line: runs the sections asked for, prints their summaries, writes the file."""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

from bench import document
from bench.moto_stack import Stacks
from bench.section import DEFAULT_SIZES, DEFINITIONS_SUBJECTS, SDK_TIMEOUT_SECONDS, Options, SectionResult
from bench.sections import SECTIONS, STARTERS
from bench.sections.cpu import cpu_probe

DESCRIPTION = "`make bench`: measure Stepwell and write BENCHMARKS.md."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--write", type=Path, help="write the results to this markdown file")
    parser.add_argument(
        "--update",
        action="store_true",
        help="with --write: replace only the sections run (and the prices table), keep the rest of the file",
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="step counts")
    parser.add_argument(
        "--sections", default=",".join(name for name, _ in SECTIONS), help="sections to run, comma-separated"
    )
    parser.add_argument("--sdk-timeout", type=float, default=SDK_TIMEOUT_SECONDS, help="seconds per SDK size")
    parser.add_argument(
        "--definitions-subjects",
        type=int,
        default=DEFINITIONS_SUBJECTS,
        help="subjects in the definitions bench",
    )
    parser.add_argument(
        "--long-lived-cycles",
        type=int,
        default=Options.long_lived_cycles,
        help="step-and-wait cycles of the long-lived execution (at least 10)",
    )
    parser.add_argument("--cpu-probe", choices=("local", "sdk"), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=10, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.update and not args.write:
        parser.error("--update needs --write (the file whose sections it replaces)")
    if args.cpu_probe:
        print(json.dumps(cpu_probe(args.cpu_probe, args.steps)))
        return 0
    if args.long_lived_cycles < 10:
        parser.error(
            f"--long-lived-cycles must be at least 10 (cycle 10 is the baseline), got "
            f"{args.long_lived_cycles}"
        )
    sizes = tuple(int(size) for size in args.sizes.split(",") if size.strip())
    wanted = [name.strip() for name in args.sections.split(",") if name.strip()]
    unknown = set(wanted) - {name for name, _ in SECTIONS}
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; known: {[name for name, _ in SECTIONS]}")
    started = time.perf_counter()
    results: list[SectionResult] = []
    with contextlib.ExitStack() as exits:
        options = Options(
            sizes=sizes,
            sdk_timeout=args.sdk_timeout,
            stacks=Stacks(exits),
            definitions_subjects=args.definitions_subjects,
            long_lived_cycles=args.long_lived_cycles,
        )
        for name, starter in STARTERS.items():
            if name in wanted:
                starter(options)
        for name, section in SECTIONS:
            if name in wanted:
                results.append(section(options))
    print()
    for result in results:
        print(f"== {result.title}")
        for line in result.summary:
            print(line)
        print()
    if args.write and args.update:
        existing = args.write.read_text() if args.write.exists() else ""
        args.write.write_text(document.update(existing, results))
        print(f"updated {', '.join(wanted)} in {args.write} in {time.perf_counter() - started:.0f} s")
    elif args.write:
        text = document.render(results, started, [name for name, _ in SECTIONS if name in wanted])
        document.write(args.write, text)
        print(f"wrote {args.write} in {time.perf_counter() - started:.0f} s")
    return 0
