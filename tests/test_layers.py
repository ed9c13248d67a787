"""The package layers of lambda_src/stepwell run one way (pyproject.toml's [tool.importlinter] contracts):
`lint-imports` keeps every contract on the tree, and breaks the layer contract on a copy where the core
imports the wiring (so the check itself can fail)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(source_root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), str(config), "--no-cache"],
        cwd=source_root,
        env={"PYTHONPATH": str(source_root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_tree_keeps_every_contract() -> None:
    result = _lint(ROOT / "lambda_src", ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


def test_an_import_up_the_layers_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "lambda_src"
    shutil.copytree(
        ROOT / "lambda_src" / "stepwell", copy / "stepwell", ignore=shutil.ignore_patterns("__pycache__")
    )
    journal = copy / "stepwell" / "core" / "journal.py"
    journal.write_text(journal.read_text() + "\nfrom stepwell.wiring import entry as _entry  # noqa\n")
    result = _lint(copy, ROOT / "pyproject.toml")
    assert result.returncode != 0
    assert "Layers run one way" in result.stdout and "BROKEN" in result.stdout
    assert "stepwell.core.journal -> stepwell.wiring.entry" in result.stdout
