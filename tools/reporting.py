"""What the reports of `make bench`, `make chaos` and `make soak` share: markdown tables, prose wrapped to
the docs' line length, the marked sections of BENCHMARKS.md, and how a checked run (chaos, soak) reports.

`make bench` rewrites BENCHMARKS.md whole. `make chaos` (one section per backend) and `make soak` each write
a section of their own between the markers `<!-- NAME:start -->` and `<!-- NAME:end -->`; a bench run keeps
every marked section whose NAME starts with `chaos` (the soak's is `chaos-soak`), and `make scale`'s `scale`.

Every writer passes its text through `wrap_markdown`, which wraps paragraphs and list items at `MAX_LINE`
characters (the limit tests/test_docs.py holds every Markdown file to). It leaves tables alone: a table
whose rows would not fit is laid out to fit by its writer (split in two, shorter headers with a legend).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

# The longest line of the docs (tests/test_docs.py).
MAX_LINE = 120
# The marked sections a bench run keeps when it rewrites the file.
_KEPT_SECTION = re.compile(r"<!-- (chaos[a-z-]*|scale):start -->.*?<!-- \1:end -->", re.DOTALL)
# A list item: its indentation, its marker and the spaces after it, its text.
_LIST_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])( +)(\S.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A word that would start a block if a wrapped line began with it (a list item, a heading, a quote, a
# fence, a table, HTML, a setext underline), so the wrap never puts it first on a line.
_BLOCK_START = re.compile(r"^([-*+]|\d{1,9}[.)]|#{1,6}|[=-]+|>.*|`{3}.*|~{3}.*|\|.*|<[A-Za-z/!?].*)$")


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _fill(words: Sequence[str], first: str, rest: str, width: int) -> list[str]:
    """The words in lines of at most `width` characters (a longer word on a line of its own), the first
    line starting with `first`, the others with `rest`; no line but the first starts with a block start."""
    lines: list[list[str]] = [[]]
    for word in words:
        line = lines[-1]
        prefix = first if len(lines) == 1 else rest
        if not line or len(prefix) + len(" ".join([*line, word])) <= width:
            line.append(word)
            continue
        below = [word]
        while _BLOCK_START.match(below[0]) and len(line) > 1:
            below.insert(0, line.pop())  # the words it follows come down with it
        lines.append(below)
    return [(first if index == 0 else rest) + " ".join(line) for index, line in enumerate(lines)]


def _is_block_line(line: str) -> bool:
    """A line that is not prose: a table row, a heading, HTML (the section markers), a fence."""
    stripped = line.strip()
    return stripped.startswith(("|", "#", "<")) or bool(_FENCE.match(line))


def wrap_markdown(text: str, width: int = MAX_LINE) -> str:
    """`text` with its paragraphs and list items wrapped at `width` characters (a list item's lines
    indented under its text); tables, headings, HTML and fenced code as they are."""
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _FENCE.match(line):
            end = index + 1
            while end < len(lines) and not _FENCE.match(lines[end]):
                end += 1
            out += lines[index : end + 1]
            index = end + 1
            continue
        if not line.strip() or _is_block_line(line) or line.startswith("    "):
            out.append(line)  # a blank line, a block, indented code
            index += 1
            continue
        item = _LIST_ITEM.match(line)
        end = index + 1
        # The block's further lines: a list item's are indented; a paragraph's are any prose line.
        while end < len(lines):
            following = lines[end]
            if not following.strip() or _is_block_line(following) or _LIST_ITEM.match(following):
                break
            if item and not following[:1].isspace():
                break
            end += 1
        words = " ".join(lines[index:end]).split()
        if item:
            first = item.group(1) + item.group(2) + item.group(3)
            out += _fill(words[1:], first, " " * len(first), width)
        else:
            indent = line[: len(line) - len(line.lstrip())]
            out += _fill(words, indent, indent, width)
        index = end
    return "\n".join(out)


def overlong_lines(text: str, width: int = MAX_LINE) -> list[str]:
    """The lines of `text` over `width` characters (a table a writer did not lay out to fit), numbered."""
    return [
        f"line {number} has {len(line)} characters: {line[:60]}..."
        for number, line in enumerate(text.split("\n"), 1)
        if len(line) > width
    ]


def warn_overlong(path: Path) -> None:
    """Prints a warning for each line of the file at `path` over MAX_LINE characters."""
    for problem in overlong_lines(path.read_text()):
        print(f"warning: {path}: {problem}", file=sys.stderr)


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
    warn_overlong(path)


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
