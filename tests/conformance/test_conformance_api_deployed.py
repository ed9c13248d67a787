"""A subset of the conformance cases (api_backend.SUBSET) through AWS's durable execution API on the deployed
stack, on each backend: boto3's own `lambda` client, signed as the stack's operator role, starts each case
with `Invoke`, reads it with `GetDurableExecution` and `GetDurableExecutionHistory`, answers its callbacks
and stops it through the API function's URL (behind the AWS_IAM front end the API's deployed tests use),
while the harness runs the worker and the virtual clock as for the client's run
(tests/deploy/test_conformance_deployed.py). The cases are judged by the runner's rules.

It shares the stack every deployed test applies (one apply per backend): the fixtures below are the
deployed tests' own (the conformance package in the stack's workflows, the harness's target, the API's
front end), and the backend in each test id (`[moto-...]`, `[localstack-...]`) puts these tests in that
backend's pytest-xdist unit (tests/conftest.py). Passes per suite are printed as "conformance (deployed
stack on <backend> through the Lambda API)" with the time of the whole subset."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from api_backend import SUBSET, LambdaApiExecutions
from deployed_backend import DeployedTarget, run_cases
from runner import REPO_ROOT, SHARED_CONFORMANCE_DIR, CaseResult, discover_cases
from stepwell.testing.deployed_fixtures import DeployedStack

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import tests.deploy.conftest as deploy_fixtures
import tests.deploy.test_lambda_api_deployed as api_tests
from tests.conftest import DEPLOYED_CONFORMANCE

# The deployed tests' own fixtures, so that this module's stack is theirs (same workflows and Terraform
# files, one apply: whichever module's test comes first makes the session's stack).
stepwell_workflows_writer = deploy_fixtures.stepwell_workflows_writer
stepwell_stack_writer = deploy_fixtures.stepwell_stack_writer
deployed_client = deploy_fixtures.deployed_client
deployed_target = deploy_fixtures.deployed_target
deployed_api = api_tests.deployed_api

CASES = [case for case in discover_cases() if case.test_id in SUBSET]
NO_SHARED_CASES = "no-shared-cases"
THROUGH = "through the Lambda API"


@dataclass(frozen=True)
class ApiRun:
    backend: str
    seconds: float
    results: dict[str, CaseResult]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case_id" in metafunc.fixturenames:
        ids = [case.test_id for case in CASES]
        metafunc.parametrize("case_id", ids + ([] if SHARED_CONFORMANCE_DIR.is_dir() else [NO_SHARED_CASES]))


@pytest.fixture(scope="module")
def api_conformance(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, deployed_api: api_tests.DeployedApi
) -> ApiRun:
    """The subset run at once through the API, as the operator role."""
    api = LambdaApiExecutions(deployed_api.client("operator"), deployed_api.arns)
    started = time.monotonic()
    results = run_cases(list(CASES), deployed_target, api=api)
    seconds = time.monotonic() - started
    return ApiRun(deployed_stack.backend.name, seconds, {result.case.test_id: result for result in results})


# The first case's setup may apply the stack and runs the whole subset: more than the default limit.
@pytest.mark.timeout(1800)
def test_case_through_the_api(
    api_conformance: ApiRun, case_id: str, record_property: Callable[[str, object], None]
) -> None:
    if case_id == NO_SHARED_CASES:
        assert os.environ.get("CI", "").lower() != "true", (
            f"CI=true but AWS's shared conformance cases were not found: {SHARED_CONFORMANCE_DIR} is absent"
        )
        pytest.skip(f"AWS's shared conformance cases are absent: no {SHARED_CONFORMANCE_DIR}")
    result = api_conformance.results[case_id]
    record_property(
        DEPLOYED_CONFORMANCE,
        (f"{api_conformance.backend} {THROUGH}", result.case.suite, api_conformance.seconds),
    )
    assert result.passed, "\n".join(
        [*result.errors, "actual history:", *(str(event) for event in result.history)]
    )
