"""What this example's deployed test needs besides Stepwell's pytest plugin.

- `deployed_stack`: ../main.tf applied to the backend (as examples/testing does: the session's own
  `deployed_stack` is examples/complete), with the function's zip built first by ../build.py (tsc, then the
  zip; Terraform's archive provider is not used) and passed as `function_zip`.
- `durable_function` (moto and LocalStack): what Lambda's front end does for the API's AWS_IAM function URL,
  which the harness's runtime refuses (it checks no signatures) and LocalStack serves unchecked on a host no
  DNS resolves here: tests/api/iam_url_front.py checks each request's SigV4 signature against the keys it
  knows and the API function's resource policy, and names the caller. The team's function runs with its
  execution role's credentials (an STS session of that role, as Lambda gives a function) and its
  AWS_ENDPOINT_URL_LAMBDA is that front, so its SDK's checkpoints reach the deployed API function signed as
  the role the module admits to the data plane.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from durable_function_harness import (
    EXAMPLE,
    DurableFunction,
    IamFunctionUrlFront,
    build_function_zip,
)
from stepwell.testing.backends import Backend
from stepwell.testing.deployed_fixtures import DeployedStack
from stepwell.testing.lambda_runtime import BackendLambdaDriver, FunctionSpec, LambdaRuntime
from stepwell.testing.localstack import set_function_environment
from stepwell.testing.terraform import TerraformStack

from tests.api.iam_url_front import role_session, url_principals

REPO = EXAMPLE.parents[1]


@pytest.fixture(scope="session")
def deployed_stack(
    stepwell_backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DeployedStack]:
    """examples/durable-functions/main.tf applied to the backend, destroyed at the end of the session (the
    teardown fails when anything it created is left)."""
    work_root = tmp_path_factory.mktemp(f"durable-functions-{stepwell_backend.name}")
    stack = TerraformStack(
        stepwell_backend,
        module_dir=EXAMPLE.relative_to(REPO).as_posix(),
        work_root=work_root / "terraform",
        source_root=REPO,
    )
    stack.variables["region"] = stepwell_backend.region
    stack.variables["function_zip"] = str(build_function_zip(work_root / "orders.zip"))
    try:
        outputs = stack.apply()
    except Exception:
        with contextlib.suppress(Exception):  # the apply's error is the one to report
            stack.destroy()
        raise
    deployed = DeployedStack(stepwell_backend, stack, outputs)
    try:
        yield deployed
    finally:
        leftovers = deployed.destroy()
        assert not leftovers, f"terraform destroy left these behind on {stepwell_backend.name}: {leftovers}"
        stack.cleanup()


@pytest.fixture(scope="session")
def durable_function(
    deployed_stack: DeployedStack, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> Iterator[DurableFunction]:
    """The team's function, checkpointing through the API as its role: on moto the harness's runtime runs it,
    on LocalStack LocalStack's executor does (its variables put there by set_function_environment)."""
    outputs = deployed_stack.outputs
    api_function, function_name = str(outputs["api_function_name"]), str(outputs["function_name"])
    backend = deployed_stack.backend

    def invoke_api(event: dict[str, Any]) -> Any:
        result = lambda_runtime.invoke(api_function, event)
        if result.error is not None:
            raise RuntimeError(f"the API function failed: {result.error}")
        return result.payload

    front = IamFunctionUrlFront(
        invoke_api, backend.region, url_principals(backend.client("lambda"), api_function)
    )
    identity = front.register(
        role_session(backend.client("sts"), str(outputs["function_role_arn"]), function_name)
    )
    # Where the deployed AWS_ENDPOINT_URL_LAMBDA (the API's URL, a host no DNS resolves here) is reached, and
    # the role's keys, which the front knows.
    variables = {"AWS_ENDPOINT_URL_LAMBDA": front.url, **identity.environment()}
    if not isinstance(lambda_runtime, LambdaRuntime):
        set_function_environment(backend.endpoint_url, function_name, variables)
        try:
            yield DurableFunction(function_name, identity, front)
        finally:
            set_function_environment(backend.endpoint_url, function_name, None)
            front.close()
        return
    before = lambda_runtime.function_environment

    def environment(spec: FunctionSpec) -> Mapping[str, str]:
        if spec.name != function_name:
            return before(spec) if before is not None else {}
        return variables

    lambda_runtime.function_environment = environment
    try:
        yield DurableFunction(function_name, identity, front)
    finally:
        lambda_runtime.function_environment = before
        front.close()


def pytest_configure(config: pytest.Config) -> None:
    # tests/conftest.py registers it too; this keeps `pytest examples/durable-functions` quiet on its own.
    config.addinivalue_line("markers", "moto: runs only on the moto backend (the harness's own runtime)")
