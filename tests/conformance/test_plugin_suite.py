"""AWS's `plugin` conformance suite (../shared/conformance-plugin/plugin: the SDK's instrumentation plugin
hooks, judged by history and ExpectedLogs) on the local backend, with our handlers in
tests/conformance/handlers/plugin. Kept apart from the core suites (test_conformance.py reads every suite
of ../shared/conformance); tests/deploy/test_plugin_suite_deployed.py runs it on the deployed stack."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from local_backend import LocalBackend
from runner import OWN_HANDLERS_DIR, REPO_ROOT, Case, _case_sort_key, run_case

# ../shared/conformance-plugin beside the repository; STEPWELL_SHARED_PLUGIN_DIR points elsewhere.
PLUGIN_DIR = Path(
    os.environ.get("STEPWELL_SHARED_PLUGIN_DIR") or (REPO_ROOT / ".." / "shared" / "conformance-plugin")
).resolve()
SUITE = "plugin"


def plugin_cases() -> list[Case]:
    """The suite's cases, each with its handler in tests/conformance/handlers/plugin."""
    suite_dir = PLUGIN_DIR / SUITE
    if not suite_dir.is_dir():
        return []
    return [
        Case(
            suite=SUITE,
            case_id=path.stem,
            yaml_path=path,
            handler_path=OWN_HANDLERS_DIR / SUITE / f"{path.stem}.py",
            data=yaml.safe_load(path.read_text()),
        )
        for path in sorted(suite_dir.glob("*.yaml"), key=_case_sort_key)
    ]


CASES = plugin_cases()


def _params() -> list[object]:
    if CASES:
        return [pytest.param(case, id=case.test_id) for case in CASES]
    # Absent shared cases: a skip, a failure with CI=true.
    marks = [] if os.environ.get("CI", "").lower() == "true" else [pytest.mark.skip(reason="no plugin suite")]
    return [pytest.param(None, marks=marks, id="no-plugin-suite")]


@pytest.mark.parametrize("plugin_case", _params())
def test_plugin_case(plugin_case: Case | None) -> None:
    assert plugin_case is not None, f"CI=true but AWS's plugin suite was not found: no {PLUGIN_DIR / SUITE}"
    result = run_case(plugin_case, LocalBackend())
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
