"""What a section of the bench is: a function of the run's `Options` that returns a `SectionResult`
(markdown for the file, lines for the stdout summary); the run's defaults and its log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.moto_stack import Stacks
    from bench.sections.definitions import Background

TOOLS = Path(__file__).resolve().parents[1]
ROOT = TOOLS.parent
# The script that runs the bench (`make bench`); the CPU section runs each of its probes in a fresh one.
ENTRY_SCRIPT = TOOLS / "bench.py"

DEFAULT_SIZES = (10, 100, 1_000, 10_000)
REGION = "us-east-1"
SDK_TIMEOUT_SECONDS = 300  # one SDK-runner size in its subprocess; beyond this the size is reported skipped
LOCAL_TIMEOUT_SECONDS = 300
# The definitions bench runs in the background from the start of the run, with the 1,000 subjects its
# issue asks for. On moto in-process its time grows faster than linearly with the subjects (moto's Query
# walks the whole table, so it answers slower as the tables grow), so it gets a generous time limit.
DEFINITIONS_SUBJECTS = 1000
DEFINITIONS_TIMEOUT_SECONDS = 1500
MIN_MEASURED_OPERATIONS = 1_000  # small sizes run several executions so fixed costs are averaged
# Executions of `mixed` (and of the marginal parallel) per measurement: a parallel's checkpoints batch
# differently from run to run.
MIXED_EXECUTIONS = 10


@dataclass
class SectionResult:
    title: str
    markdown: str
    summary: list[str] = field(default_factory=list)
    # Rows of the summary against the targets at the top of the file: (target, measured, verdict).
    targets: list[tuple[str, str, str]] = field(default_factory=list)
    # Targets the summary shows as tables of their own (markdown: a line saying what they are, a table), for
    # targets met or not at each of several sizes or cases, which a row of the summary could not hold.
    target_tables: list[str] = field(default_factory=list)


@dataclass
class Options:
    sizes: tuple[int, ...]
    sdk_timeout: float
    stacks: Stacks
    definitions_subjects: int = DEFINITIONS_SUBJECTS
    long_lived_cycles: int = 500
    background: dict[str, Background] = field(default_factory=dict)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
