"""One Terraform version constraint for the whole module: every submodule and example states the root's
`required_version` (and the same AWS provider constraint) in its versions.tf, and nowhere else, so a user
calling any one of them gets the same answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRED_VERSION = re.compile(r'^\s*required_version\s*=\s*"([^"]*)"', re.MULTILINE)
AWS_PROVIDER = re.compile(r'aws\s*=\s*\{\s*source\s*=\s*"hashicorp/aws"\s*version\s*=\s*"([^"]*)"')


def _module_dirs() -> list[Path]:
    """The root and every directory of .tf files under modules/ and examples/ (not examples/definitions)."""
    nested = [d for parent in ("modules", "examples") for d in sorted((REPO / parent).iterdir())]
    return [REPO, *(d for d in nested if d.is_dir() and any(d.glob("*.tf")))]


def _constraints(pattern: re.Pattern[str], module_dir: Path) -> dict[str, list[str]]:
    """Each .tf file of the directory (not its .terraform) that states the constraint -> what it states."""
    found: dict[str, list[str]] = {}
    for path in sorted(module_dir.glob("*.tf")):
        values = pattern.findall(path.read_text(encoding="utf-8"))
        if values:
            found[path.name] = values
    return found


ROOT_VERSION = _constraints(REQUIRED_VERSION, REPO)["versions.tf"][0]
ROOT_PROVIDER = _constraints(AWS_PROVIDER, REPO)["versions.tf"][0]


def test_the_root_needs_the_terraform_its_validations_need() -> None:
    # Cross-variable validation rules (variables.tf) need Terraform 1.9.
    assert ROOT_VERSION == ">= 1.9"


@pytest.mark.parametrize("module_dir", _module_dirs(), ids=lambda d: d.relative_to(REPO).as_posix() or ".")
def test_every_module_and_example_states_the_roots_constraints_in_versions_tf(module_dir: Path) -> None:
    assert _constraints(REQUIRED_VERSION, module_dir) == {"versions.tf": [ROOT_VERSION]}
    assert _constraints(AWS_PROVIDER, module_dir) == {"versions.tf": [ROOT_PROVIDER]}


def test_every_submodule_and_example_is_checked() -> None:
    checked = {d.relative_to(REPO).as_posix() for d in _module_dirs()}
    submodules = {f"modules/{d.name}" for d in (REPO / "modules").iterdir() if d.is_dir()}
    assert submodules <= checked
    assert {"examples/minimal", "examples/complete", "examples/composition"} <= checked
