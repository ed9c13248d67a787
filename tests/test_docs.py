"""The repository's Markdown reads well and leads somewhere: every line at most 120 characters, and every
relative link names a file that exists (and, with a #fragment, a heading of that file)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINE = 120
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCED = re.compile(r"^\s*```.*?^\s*```", re.S | re.M)
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)


def _markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (but - and _), spaces as -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _HEADING.findall(_FENCED.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(_FENCED.sub("", path.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # an absolute URL (https:, mailto:)
        file_part, _, fragment = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and destination.suffix == ".md" and fragment not in _anchors(destination):
            broken.append(f"{target} (no such heading)")
    return broken


def long_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    numbered = enumerate(lines, 1)
    return [f"line {number}: {len(line)} characters" for number, line in numbered if len(line) > MAX_LINE]


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_line_fits_and_every_relative_link_resolves(path: Path) -> None:
    assert long_lines(path) == []
    assert broken_links(path) == []


def test_the_checks_find_a_long_line_and_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# A heading\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[ok](other.md#a-heading) [file](missing.md) [anchor](other.md#nowhere) "
        "[web](https://example.com/x)\n\n```\n[in code](not-a-link.md)\n```\n" + "x" * 121 + "\n"
    )
    assert broken_links(page) == ["missing.md (no such file)", "other.md#nowhere (no such heading)"]
    assert long_lines(page) == ["line 8: 121 characters"]
