"""What the reports of `make bench`, `make chaos` and `make soak` share: markdown tables, the marked
sections of BENCHMARKS.md, and how a checked run (chaos, soak) reports.

`make bench` rewrites BENCHMARKS.md whole. `make chaos` (one section per backend) and `make soak` each write
a section of their own between the markers `<!-- NAME:start -->` and `<!-- NAME:end -->`; a bench run keeps
every marked section whose NAME starts with `chaos` (the soak's is `chaos-soak` for that reason).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

# The marked sections a bench run keeps when it rewrites the file.
_KEPT_SECTION = re.compile(r"<!-- (chaos[a-z-]*):start -->.*?<!-- \1:end -->", re.DOTALL)


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    """The start and end markers of the section `name`."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def write_section(path: Path, section: str, name: str) -> None:
    """Replaces the text between the markers of `name` (or appends the markers and the section)."""
    start, end = markers(name)
    block = f"{start}\n{section.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        before, _, rest = text.partition(start)
        _, _, after = rest.partition(end)
        text = before + block.rstrip("\n") + after
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block
    path.write_text(text)


def kept_sections(path: Path) -> str:
    """The sections of the file at `path` that a bench run keeps, with their markers ("" when it has none)."""
    text = path.read_text() if path.exists() else ""
    return "".join("\n" + match.group(0) + "\n" for match in _KEPT_SECTION.finditer(text))


def report_checked_run(section: str, failed_checks: Sequence[str], write: Path | None, name: str) -> int:
    """Prints a checked run's section, writes it into `write` (when given) between the markers of `name`,
    and prints each failed check; returns the exit code: 1 when a check failed."""
    print(section)
    if write:
        write_section(write, section, name)
        print(f"wrote the {name} section of {write}")
    for failure in failed_checks:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failed_checks else 0
