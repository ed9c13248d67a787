"""AWS's `plugin` conformance suite (../shared/conformance-plugin/plugin: the SDK's instrumentation plugin
hooks, judged by history and ExpectedLogs) on the local backend, with our handlers in
tests/conformance/handlers/plugin. Kept apart from the core suites (test_conformance.py reads every suite
of ../shared/conformance); test_plugin_suite_deployed.py runs it on the deployed stack."""

from __future__ import annotations

import os

import pytest
from local_backend import LocalBackend
from plugin_cases import PLUGIN_DIR, SUITE, plugin_cases
from runner import Case, run_case

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
