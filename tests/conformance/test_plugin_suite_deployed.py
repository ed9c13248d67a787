"""AWS's `plugin` conformance suite on the deployed stack, on each backend: the cases' handlers are in the
deployed package beside the core suites' (tests/deploy/conftest.py), every case starts at once through
the client and the deployed worker runs them as it runs the core suites (tests/deploy/
test_conformance_deployed.py, tests/conformance/deployed_backend.py); each is judged by the runner's rules,
its plugin records read from the worker's log. The backend in each test id puts these tests in that
backend's pytest-xdist unit (tests/conftest.py); the suite's time is printed with the passes per suite."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from deployed_backend import DeployedTarget, run_cases
from plugin_cases import PLUGIN_DIR, SUITE, plugin_cases
from runner import REPO_ROOT, CaseResult
from stepwell.testing.deployed_fixtures import DeployedStack

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import tests.deploy.conftest as deploy_fixtures
from tests.conftest import DEPLOYED_CONFORMANCE

# The deployed tests' own fixtures, so that this module's stack is theirs (same workflows and Terraform
# files, one apply: whichever module's test comes first makes the session's stack).
stepwell_workflows_writer = deploy_fixtures.stepwell_workflows_writer
stepwell_stack_writer = deploy_fixtures.stepwell_stack_writer
deployed_client = deploy_fixtures.deployed_client
deployed_target = deploy_fixtures.deployed_target

CASES = plugin_cases()
NO_PLUGIN_SUITE = "no-plugin-suite"


@dataclass(frozen=True)
class PluginRun:
    backend: str
    seconds: float
    results: dict[str, CaseResult]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case_id" in metafunc.fixturenames:
        metafunc.parametrize("case_id", [case.test_id for case in CASES] or [NO_PLUGIN_SUITE])


@pytest.fixture(scope="module")
def plugin_conformance(deployed_stack: DeployedStack, deployed_target: DeployedTarget) -> PluginRun:
    """Every plugin case run at once on this backend's stack."""
    started = time.monotonic()
    results = run_cases(list(CASES), deployed_target) if CASES else []
    seconds = time.monotonic() - started
    return PluginRun(
        deployed_stack.backend.name, seconds, {result.case.test_id: result for result in results}
    )


# The first case's setup may apply the stack and runs the whole suite: more than the default limit.
@pytest.mark.timeout(1800)
def test_plugin_case_deployed(
    plugin_conformance: PluginRun, case_id: str, record_property: Callable[[str, object], None]
) -> None:
    if case_id == NO_PLUGIN_SUITE:
        assert os.environ.get("CI", "").lower() != "true", (
            f"CI=true but AWS's plugin suite was not found: no {PLUGIN_DIR / SUITE}"
        )
        pytest.skip(f"AWS's plugin suite is absent: no {PLUGIN_DIR / SUITE}")
    result = plugin_conformance.results[case_id]
    record_property(
        DEPLOYED_CONFORMANCE, (plugin_conformance.backend, result.case.suite, plugin_conformance.seconds)
    )
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
