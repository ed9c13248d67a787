"""Conformance cases as pytest tests; each call report carries its suite for the end-of-run summary
(tests/conftest.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner import SHARED_CONFORMANCE_DIR, discover_cases


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


# Read by tests/conftest.py, which prints the summary (the controller of a pytest-xdist run loads only that
# conftest: this one is loaded where the tests are collected).
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
