"""Conformance cases as pytest tests, with a per-suite pass summary at the end of the run."""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner import SHARED_CONFORMANCE_DIR, SUITES, discover_cases

_passed: Counter[str] = Counter()
_total: Counter[str] = Counter()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_case" not in metafunc.fixturenames:
        return
    params = [pytest.param(case, id=case.test_id) for case in discover_cases()]
    if not SHARED_CONFORMANCE_DIR.is_dir():
        # Our own cases always run; the shared suites' absence shows as a skip (a failure with CI=true).
        message = f"AWS's shared conformance cases are absent: no {SHARED_CONFORMANCE_DIR}"
        marks = [pytest.mark.skip(reason=message)] if os.environ.get("CI", "").lower() != "true" else []
        params.append(pytest.param(None, marks=marks, id="no-shared-cases"))
    metafunc.parametrize("conformance_case", params)


SUITE_PROPERTY = "stepwell_conformance_suite"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    outcome = yield
    report = outcome.get_result()
    case = getattr(item, "callspec", None) and item.callspec.params.get("conformance_case")
    if report.when == "call" and case is not None:
        # The suite travels on the report, so the process that prints the summary counts it (with
        # pytest-xdist the tests run in workers and the reports reach the controller).
        report.user_properties.append((SUITE_PROPERTY, case.suite))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    suite = dict(report.user_properties).get(SUITE_PROPERTY) if report.when == "call" else None
    if suite is not None:
        _total[suite] += 1
        if report.passed:
            _passed[suite] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _total:
        return
    backend = os.environ.get("STEPWELL_CONFORMANCE_BACKEND", "local") or "local"
    terminalreporter.section(f"conformance ({backend} backend)")
    for suite in [suite for suite in SUITES if suite in _total] + sorted(set(_total) - set(SUITES)):
        terminalreporter.write_line(f"{suite:<20} {_passed[suite]:>3}/{_total[suite]}")
    terminalreporter.write_line(f"{'total':<20} {sum(_passed.values()):>3}/{sum(_total.values())}")
