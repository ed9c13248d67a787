"""Deployed tests: what goes into the deployed package besides examples/complete's workflows (the
per-backend conformance summary is tests/conftest.py's).

The stack (one apply per backend, shared by every deployed test) carries:
- the conformance handlers (`stepwell_conformance`, written by tests/conformance/deployed_backend.py):
  our own cases' (tests/conformance/cases) and, when present, AWS's shared cases' (its plugin suite's
  too: tests/conformance/plugin_cases.py), and
- `stepwell_test_workflows` (tests/deploy/workflows/): the failure tests' workflows, and
- `stepwell_versioned` (tests/deploy/workflows/versions/v1.py; test_versions_deployed.py deploys v2.py);
and, beside the module in the stack's root, users' own durable functions (tests/deploy/remote_functions.py:
one JavaScript and one Python function with a subset of the cases' handlers, registered with
durable_functions; test_remote_functions_deployed.py runs them).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CONFORMANCE_DIR = Path(__file__).resolve().parents[1] / "conformance"
TEST_WORKFLOWS = Path(__file__).resolve().parent / "workflows" / "stepwell_test_workflows.py"
if str(CONFORMANCE_DIR) not in sys.path:
    sys.path.insert(0, str(CONFORMANCE_DIR))

from deployed_backend import DeployedTarget, write_conformance_workflows  # noqa: E402
from plugin_cases import plugin_cases  # noqa: E402
from runner import discover_cases  # noqa: E402
from stepwell.client import StepwellClient  # noqa: E402
from stepwell.config import StepwellConfig  # noqa: E402
from stepwell.testing.backends import Backend  # noqa: E402
from stepwell.testing.deployed_fixtures import DeployedStack  # noqa: E402
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime  # noqa: E402
from stepwell.testing.scheduler import SchedulerFirer, VirtualClock  # noqa: E402

from deploy.remote_functions import write_stack_files  # noqa: E402
from deploy.versioned import VERSIONED_MODULE, VERSIONED_SOURCES  # noqa: E402


@pytest.fixture(scope="session")
def stepwell_workflows_writer() -> Callable[[Path], None]:
    def write(workflows_dir: Path) -> None:
        cases = discover_cases() + plugin_cases()
        if cases:
            write_conformance_workflows(workflows_dir, cases)
        shutil.copyfile(TEST_WORKFLOWS, workflows_dir / TEST_WORKFLOWS.name)
        shutil.copyfile(VERSIONED_SOURCES["v1"], workflows_dir / VERSIONED_MODULE)

    return write


# The deployed remote-functions suite (test_remote_functions_deployed.py) runs only when asked: registered in
# the shared stack, its functions widen the worker's role and their executions' leftovers unsettle the smoke
# tests' drained queue, so it waits for a stack of its own before make test runs it (issue 41).
REMOTE_FUNCTIONS_ENV = "STEPWELL_REMOTE_FUNCTIONS_DEPLOYED"
collect_ignore = [] if os.environ.get(REMOTE_FUNCTIONS_ENV) else ["test_remote_functions_deployed.py"]


@pytest.fixture(scope="session")
def stepwell_stack_writer(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path, Backend], None] | None:
    """The remote functions' zips built and their Terraform written into the stack's root before apply, when
    the remote-functions suite runs (STEPWELL_REMOTE_FUNCTIONS_DEPLOYED=1)."""
    if not os.environ.get(REMOTE_FUNCTIONS_ENV):
        return None

    def write(root: Path, backend: Backend) -> None:
        write_stack_files(root, tmp_path_factory.mktemp(f"remote-cases-{backend.name}"))

    return write


class ClockForClient:
    """The client's engine reads the harness's virtual clock (callbacks and heartbeats are stamped by it)."""

    def __init__(self, clock: VirtualClock) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock.now_epoch()


def _log_reader(
    stack: DeployedStack, runtime: LambdaRuntime | BackendLambdaDriver
) -> Callable[[], list[str]]:
    """The worker's log lines: the harness runtime's log file on moto, CloudWatch Logs on LocalStack."""
    function_name = stack.client_config["worker_function_name"]

    def moto_lines() -> list[str]:
        assert isinstance(runtime, LambdaRuntime)
        path = runtime.log_path(function_name)
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def cloudwatch_lines() -> list[str]:
        logs = stack.backend.client("logs")
        lines: list[str] = []
        for page in logs.get_paginator("filter_log_events").paginate(
            logGroupName=f"/aws/lambda/{function_name}"
        ):
            for event in page.get("events", []):
                lines.extend(str(event.get("message", "")).splitlines())
        return lines

    return moto_lines if isinstance(runtime, LambdaRuntime) else cloudwatch_lines


@pytest.fixture(scope="session")
def deployed_client(
    deployed_stack: DeployedStack,
    deployed_clock: VirtualClock,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
) -> StepwellClient:
    """A client of the deployed stack on the harness's virtual clock. It wakes executions through the work
    queue: the drivers here (process_queue, the conformance runner) run an execution until its queue is
    quiet, and a direct wake-up is invisible to them on LocalStack, which runs it by itself. test_smoke's
    clients and `make demo` wake directly, as the module's client_config says."""
    clients = deployed_stack.backend.aws_clients(lambda_runtime.lambda_endpoint_url)
    config = StepwellConfig.from_client_config({**deployed_stack.client_config, "direct_wake_ups": False})
    return StepwellClient(config, clients, clock=ClockForClient(deployed_clock))


@pytest.fixture(scope="session")
def deployed_target(
    deployed_stack: DeployedStack,
    deployed_client: StepwellClient,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
    scheduler_firer: SchedulerFirer,
    deployed_clock: VirtualClock,
) -> DeployedTarget:
    """The deployed stack as the conformance runner and the failure tests drive it."""
    backend = deployed_stack.backend
    return DeployedTarget(
        client=deployed_client,
        sqs=backend.client("sqs"),
        dynamodb=backend.client("dynamodb"),
        config=deployed_stack.client_config,
        runtime=lambda_runtime,
        harness_polls=isinstance(lambda_runtime, LambdaRuntime),
        clock=deployed_clock,
        fire_schedules=scheduler_firer.fire_due,
        log_lines=_log_reader(deployed_stack, lambda_runtime),
    )
