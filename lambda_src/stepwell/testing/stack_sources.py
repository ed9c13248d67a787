"""What a copy of a Terraform root module must hold for its local module sources to resolve.

The harness applies a root module from a copy (stepwell.testing.terraform), so every local module source
it calls (``source = "../stepwell"``, recursively) must be in the copy at the same relative place. The
copy holds the root's tree (a folder holding the root module: the repository) and every local module
directory outside it, each placed under their common ancestor. Copying a tree into itself would never
end (a work folder inside the tree): ``check_copy_destination`` refuses it, naming both paths.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

# A local module source: "./x" or "../x" (Terraform's only local forms; registry and git sources start
# otherwise). Matched on any `source = "..."` line of a .tf file: module blocks are where it appears.
_LOCAL_SOURCE = re.compile(r'^\s*source\s*=\s*"(?P<path>\.{1,2}/[^"]*)"', re.MULTILINE)


class StackCopyError(ValueError):
    """A copy of a stack's sources would contain itself."""


def local_module_dirs(root_module: Path) -> list[Path]:
    """The root module's directory and every directory its local module sources name, recursively."""
    seen: set[Path] = set()
    pending = [root_module.resolve()]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        for path in sorted(current.glob("*.tf")):
            for match in _LOCAL_SOURCE.finditer(path.read_text(errors="replace")):
                target = (current / match["path"]).resolve()
                if target.is_dir():
                    pending.append(target)
    return sorted(seen)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def copied_trees(source_root: Path, root_module: Path) -> list[Path]:
    """The trees a copy needs: ``source_root`` and every local module directory outside it (none inside
    another), resolved."""
    trees = [source_root.resolve()]
    for directory in local_module_dirs(root_module):
        if not any(_inside(directory, tree) for tree in trees):
            trees = [tree for tree in trees if not _inside(tree, directory)] + [directory]
    return sorted(trees)


def common_base(trees: Iterable[Path]) -> Path:
    """The deepest folder holding every tree: the copy puts each tree at its path relative to it."""
    return Path(os.path.commonpath([str(tree) for tree in trees]))


def check_copy_destination(source: Path, destination: Path, skipped: Callable[[str], bool]) -> None:
    """Refuse a copy of ``source`` into a folder inside it that the copy would enter (one not under a
    skipped name, such as ``.terraform``): it would copy its own copy until the disk or the stack ends."""
    source_path = source.resolve()
    destination_path = destination.resolve()
    if not _inside(destination_path, source_path):
        return
    parts = destination_path.relative_to(source_path).parts
    if any(skipped(part) for part in parts):
        return
    raise StackCopyError(
        f"cannot copy {source_path} into {destination_path}: the work folder is inside the tree it copies, "
        "so the copy would contain itself; choose a work folder outside it (for pytest, a --basetemp "
        f"outside {source_path}) or a narrower root (STEPWELL_STACK_ROOT)"
    )
