"""AWS's conformance cases and our own (tests/conformance/cases) on the deployed stack, on each backend:
every case's handler is packaged into the deployed worker (tests/deploy/conftest.py), all cases start at
once through the client, the deployed worker runs them (on moto through the harness's runtime, on
LocalStack through its own mapping), and each is checked with the runner's checks (see
tests/conformance/deployed_backend.py). The passes per suite are reported at the end of the run."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from deployed_backend import DeployedTarget, run_cases
from runner import SHARED_CONFORMANCE_DIR, CaseResult, discover_cases
from stepwell.testing.deployed_fixtures import DeployedStack

CASES = discover_cases()


NO_SHARED_CASES = "no-shared-cases"
# Each case's report carries (backend, suite, seconds for all cases) for tests/deploy/conftest.py's summary.
SUMMARY_PROPERTY = "stepwell_deployed_conformance"


@dataclass(frozen=True)
class DeployedRun:
    backend: str
    seconds: float
    results: dict[str, CaseResult]


def _ids() -> list[str]:
    # Our own cases always run; the shared suites' absence shows as one skip (a failure with CI=true).
    return [case.test_id for case in CASES] + ([] if SHARED_CONFORMANCE_DIR.is_dir() else [NO_SHARED_CASES])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case_id" in metafunc.fixturenames:
        metafunc.parametrize("case_id", _ids())


@pytest.fixture(scope="session")
def deployed_conformance(deployed_stack: DeployedStack, deployed_target: DeployedTarget) -> DeployedRun:
    """Every case run at once on this backend's stack."""
    started = time.monotonic()
    results = run_cases(list(CASES), deployed_target) if CASES else []
    seconds = time.monotonic() - started
    return DeployedRun(
        deployed_stack.backend.name, seconds, {result.case.test_id: result for result in results}
    )


# The first case's setup applies the stack and runs every case at once (run_cases gives up after 900 s):
# its time is the whole suite's, not one case's, so it gets more than the default per-test limit.
@pytest.mark.timeout(1800)
def test_conformance_case(
    deployed_conformance: DeployedRun, case_id: str, record_property: Callable[[str, object], None]
) -> None:
    if case_id == NO_SHARED_CASES:
        assert os.environ.get("CI", "").lower() != "true", (
            f"CI=true but AWS's shared conformance cases were not found: {SHARED_CONFORMANCE_DIR} is absent"
        )
        pytest.skip(f"AWS's shared conformance cases are absent: no {SHARED_CONFORMANCE_DIR}")
    result = deployed_conformance.results[case_id]
    run = deployed_conformance
    record_property(SUMMARY_PROPERTY, (run.backend, result.case.suite, run.seconds))
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
