"""pytest fixtures for tests against a deployed Stepwell stack on a local AWS (moto or LocalStack).

Registered by ``stepwell.testing.pytest_plugin``. All are session-scoped, so users' own tests of
their workflows share one apply per backend:

- ``stepwell_backend``: a running backend (``stepwell.testing.backends.Backend``); tests that use it
  run once per backend in ``--stepwell-deployed-backends`` / ``STEPWELL_DEPLOYED_BACKENDS``, or only on
  ``--stepwell-backend`` / ``STEPWELL_BACKEND`` when that is set alone, else on the ini option
  ``stepwell_deployed_backends`` (this repository's pyproject.toml: ``moto localstack``), else on moto.
  A backend that cannot start skips its tests, and fails them when ``CI=true``.
- ``deployed_stack``: ``examples/complete`` (or ``STEPWELL_STACK_MODULE``, a root module path relative
  to ``STEPWELL_STACK_ROOT``, default pytest's rootdir: the tree copied for the run, with any local
  module source outside it) applied there; ``.outputs`` and ``.client_config`` (the root's
  ``client_config`` or ``stepwell_client_config`` output). Destroyed at the end of the session, and the
  teardown fails when anything it created is left.
- ``lambda_runtime``: on moto, the harness's ``LambdaRuntime`` (runs the deployed handlers on their
  queues' messages); on LocalStack, a driver with the same methods (LocalStack's own mappings run them).
- ``function_urls``: ``stepwell.testing.function_urls.FunctionUrls`` for the backend: sends requests to
  deployed function URLs (served by ``lambda_runtime`` on moto, by LocalStack itself there).
- ``scheduler_firer``: a ``SchedulerFirer`` over every schedule group, on ``deployed_clock`` (a virtual
  clock the deployed handlers' wall clock follows on both backends: see ``deployed_clock``).
- ``stepwell_workflows_writer``: override it to write further workflow modules into the deployed
  package (the stack's ``./workflows`` copy) before apply.
- ``stepwell_stack_writer``: override it to write further Terraform files into the stack's working copy
  of its root module before apply (resources of your own beside the module, an ``*_override.tf`` giving
  the module an input such as ``durable_functions``), as you would add them to your root.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stepwell.testing.backends import (
    BACKEND_ENV,
    DEFAULT_DEPLOYED_BACKENDS,
    DEPLOYED_BACKENDS_ENV,
    Backend,
    BackendUnavailable,
    deployed_backend_names,
    in_ci,
    selected_backend_name,
    start_backend,
)
from stepwell.testing.function_urls import FunctionUrls
from stepwell.testing.lambda_runtime import BackendLambdaDriver, LambdaRuntime
from stepwell.testing.scheduler import SchedulerFirer, VirtualClock, write_clock_file
from stepwell.testing.terraform import TerraformStack, module_variables

STACK_MODULE_ENV = "STEPWELL_STACK_MODULE"
STACK_ROOT_ENV = "STEPWELL_STACK_ROOT"
DEFAULT_STACK_MODULE = "examples/complete"
DEPLOYED_BACKENDS_INI = "stepwell_deployed_backends"
# The outputs a root module may hand the client config in: the module's name, or the README's.
CLIENT_CONFIG_OUTPUTS = ("client_config", "stepwell_client_config")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stepwell", "Stepwell local AWS backends")
    group.addoption(
        "--stepwell-backend",
        default=None,
        help="backend for this run: moto (default) or localstack; overrides STEPWELL_BACKEND",
    )
    group.addoption(
        "--stepwell-deployed-backends",
        default=None,
        help="backends the deployed tests run on (space or comma separated); "
        f"overrides STEPWELL_DEPLOYED_BACKENDS (default: the {DEPLOYED_BACKENDS_INI} ini option, "
        f"else {DEFAULT_DEPLOYED_BACKENDS!r})",
    )
    parser.addini(
        DEPLOYED_BACKENDS_INI,
        help="the project's default backends for deployed tests (space or comma separated; "
        f"STEPWELL_DEPLOYED_BACKENDS overrides it): default {DEFAULT_DEPLOYED_BACKENDS!r}",
        default="",
    )


def deployed_backends_for(config: pytest.Config) -> list[str]:
    """The backends deployed tests run on, from the options and environment (see module docstring)."""
    listed = config.getoption("stepwell_deployed_backends", None) or os.environ.get(DEPLOYED_BACKENDS_ENV)
    if listed:
        return deployed_backend_names(listed)
    single = config.getoption("stepwell_backend", None) or os.environ.get(BACKEND_ENV)
    if single and single.strip().lower() != "memory":
        return [selected_backend_name(single)]
    project_default = str(config.getini(DEPLOYED_BACKENDS_INI) or "").strip()
    return deployed_backend_names(project_default or DEFAULT_DEPLOYED_BACKENDS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "stepwell_backend" in metafunc.fixturenames:
        names = deployed_backends_for(metafunc.config)
        metafunc.parametrize("stepwell_backend", names, indirect=True, scope="session", ids=names)


@pytest.fixture(scope="session")
def stepwell_backend(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Backend]:
    name = getattr(request, "param", None) or selected_backend_name(
        request.config.getoption("stepwell_backend")
    )
    log_dir = tmp_path_factory.mktemp(f"backend-{name}")
    manager = start_backend(name, log_dir=str(log_dir))
    try:
        backend = manager.__enter__()
    except BackendUnavailable as error:
        if in_ci():
            pytest.fail(f"backend {name} is required in CI but could not start: {error}", pytrace=False)
        pytest.skip(f"backend {name} is not available here: {error}")
    try:
        yield backend
    finally:
        manager.__exit__(None, None, None)


@dataclass
class DeployedStack:
    """An applied root module: its outputs, its ``client_config``, and the Terraform runner."""

    backend: Backend
    terraform: TerraformStack
    outputs: dict[str, Any]

    @property
    def client_config(self) -> dict[str, Any]:
        return client_config_output(self.outputs)

    def leftovers(self) -> list[str]:
        """What of the stack still exists in the backend (after destroy this must be empty)."""
        return find_leftovers(self.backend, self.client_config)

    def destroy(self) -> list[str]:
        """``terraform destroy``; returns the leftovers (empty when everything is gone)."""
        config = self.client_config
        self.terraform.destroy()
        return find_leftovers(self.backend, config)


def client_config_output(outputs: dict[str, Any]) -> dict[str, Any]:
    """The module's client_config among a root module's outputs, under either accepted name."""
    for name in CLIENT_CONFIG_OUTPUTS:
        config = outputs.get(name)
        if isinstance(config, dict):
            return config
    raise KeyError(
        f"the stack has no {' or '.join(CLIENT_CONFIG_OUTPUTS)} output (an output whose value is the "
        f"module's client_config); its outputs are {sorted(outputs)}"
    )


def event_source_mappings_for(backend: Backend, function_name: str) -> list[dict[str, Any]]:
    """The event source mappings of one function. Lists all and filters by FunctionArn, because moto
    filters ListEventSourceMappings' FunctionName by the exact string the mapping was created with
    (Terraform passes the function's ARN), so a filter by name finds nothing there."""
    mappings: list[dict[str, Any]] = []
    for page in backend.client("lambda").get_paginator("list_event_source_mappings").paginate():
        for mapping in page["EventSourceMappings"]:
            if str(mapping.get("FunctionArn", "")).split(":")[6:7] == [function_name]:
                mappings.append(mapping)
    return mappings


def _exists(call: Any, **kwargs: Any) -> bool:
    try:
        call(**kwargs)
    except Exception as error:  # botocore's ClientError: any not-found code means gone
        code = getattr(error, "response", {}).get("Error", {}).get("Code", "")
        if code:
            return False
        raise
    return True


def find_leftovers(backend: Backend, config: dict[str, Any]) -> list[str]:
    """Names from ``client_config`` whose resources still exist."""
    dynamodb = backend.client("dynamodb")
    sqs = backend.client("sqs")
    leftovers: list[str] = []
    tables = set(dynamodb.list_tables().get("TableNames", []))
    for key in ("definitions_table", "executions_table", "operations_table", "coordination_table"):
        if config.get(key) in tables:
            leftovers.append(f"table {config[key]}")
    queues = set(sqs.list_queues().get("QueueUrls", []))
    for key in ("work_queue_url", "dlq_url"):
        name = str(config.get(key, "")).rsplit("/", 1)[-1]
        if any(url.rsplit("/", 1)[-1] == name for url in queues):
            leftovers.append(f"queue {name}")
    checks = [
        (
            "function",
            backend.client("lambda").get_function,
            {"FunctionName": config.get("worker_function_name")},
        ),
        ("bus", backend.client("events").describe_event_bus, {"Name": config.get("event_bus_name")}),
        (
            "schedule group",
            backend.client("scheduler").get_schedule_group,
            {"Name": config.get("schedule_group_name")},
        ),
        ("bucket", backend.client("s3").head_bucket, {"Bucket": config.get("payload_bucket")}),
    ]
    for label, call, kwargs in checks:
        value = next(iter(kwargs.values()))
        if value and value != "default" and _exists(call, **kwargs):
            leftovers.append(f"{label} {value}")
    return leftovers


WorkflowsWriter = Callable[[Path], None]


@pytest.fixture(scope="session")
def stepwell_workflows_writer() -> WorkflowsWriter | None:
    """Override to add workflow code to the deployed package: called with the stack's copy of its
    ``./workflows`` folder (its ``workflows_dir``) before apply. Default: nothing added."""
    return None


StackWriter = Callable[[Path, Backend], None]


@pytest.fixture(scope="session")
def stepwell_stack_writer() -> StackWriter | None:
    """Override to add Terraform files to the stack: called with the working copy of its root module (the
    folder `terraform apply` runs in) and the backend, before apply. Default: nothing added."""
    return None


@pytest.fixture(scope="session")
def deployed_stack(
    request: pytest.FixtureRequest,
    stepwell_backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    stepwell_workflows_writer: WorkflowsWriter | None,
    stepwell_stack_writer: StackWriter | None,
) -> Iterator[DeployedStack]:
    module_dir = os.environ.get(STACK_MODULE_ENV, DEFAULT_STACK_MODULE)
    source_root = Path(os.environ.get(STACK_ROOT_ENV) or request.config.rootpath)
    if not (source_root / module_dir).is_dir():
        pytest.fail(
            f"no Terraform root module at {source_root / module_dir}: set {STACK_MODULE_ENV} to your root "
            f"module's folder, relative to {STACK_ROOT_ENV} (default: pytest's rootdir)",
            pytrace=False,
        )
    work_root = tmp_path_factory.mktemp(f"stack-{stepwell_backend.name}")
    stack = TerraformStack(
        stepwell_backend, module_dir=module_dir, work_root=work_root, source_root=source_root
    )
    if stepwell_workflows_writer is not None:
        workflows_dir = stack.working_dir / "workflows"
        workflows_dir.mkdir(exist_ok=True)
        stepwell_workflows_writer(workflows_dir)
    if stepwell_stack_writer is not None:
        stepwell_stack_writer(stack.working_dir, stepwell_backend)
    stack.variables.update(module_variables(stack.working_dir, stepwell_backend))
    try:
        outputs = stack.apply()
    except Exception:
        # Remove whatever was created before the failure; the apply error is the one to report.
        with contextlib.suppress(Exception):
            stack.destroy()
        raise
    deployed = DeployedStack(stepwell_backend, stack, outputs)
    try:
        yield deployed
    finally:
        if stack.applied:
            leftovers = deployed.destroy()
            assert not leftovers, (
                f"terraform destroy left these behind on {stepwell_backend.name}: {leftovers}"
            )
            stack.cleanup()


@pytest.fixture(scope="session")
def deployed_clock(stepwell_backend: Backend) -> VirtualClock:
    """The virtual clock the scheduler firer fires by. The deployed handlers' ``time.time()`` follows
    it, so fast-forwarded timers are due for the engine too: on moto the local runtime passes it with
    each invocation; on LocalStack it is written to ``Backend.clock_file``, which the plugin's runtime
    workers read per invocation (an external LocalStack, ``LOCALSTACK_ENDPOINT``, keeps real time)."""
    clock = VirtualClock()
    if stepwell_backend.clock_file is not None:
        clock.listeners.append(write_clock_file(stepwell_backend.clock_file))
        clock.listeners[-1](clock)
    return clock


@pytest.fixture(scope="session")
def lambda_runtime(
    stepwell_backend: Backend, deployed_clock: VirtualClock, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LambdaRuntime | BackendLambdaDriver]:
    runtime: LambdaRuntime | BackendLambdaDriver
    if stepwell_backend.runs_lambda_code:
        runtime = BackendLambdaDriver(stepwell_backend.client)
    else:
        runtime = LambdaRuntime(
            stepwell_backend.client,
            stepwell_backend.lambda_code,
            stepwell_backend.environment(),
            tmp_path_factory.mktemp(f"lambda-{stepwell_backend.name}"),
            region=stepwell_backend.region,
            clock_offset=deployed_clock.offset_seconds,
        )
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture(scope="session")
def scheduler_firer(
    stepwell_backend: Backend,
    deployed_clock: VirtualClock,
    lambda_runtime: LambdaRuntime | BackendLambdaDriver,
) -> Iterator[SchedulerFirer]:
    # Scheduler invokes a Lambda target asynchronously: retried, then to its on-failure destination.
    invoker = lambda_runtime.invoke_event if isinstance(lambda_runtime, LambdaRuntime) else None
    firer = SchedulerFirer(stepwell_backend.client, clock=deployed_clock, lambda_invoker=invoker)
    try:
        yield firer
    finally:
        firer.stop()


@pytest.fixture(scope="session")
def function_urls(
    stepwell_backend: Backend, lambda_runtime: LambdaRuntime | BackendLambdaDriver
) -> FunctionUrls:
    """Requests to deployed function URLs, without DNS and without AWS credentials (see FunctionUrls)."""
    return FunctionUrls.for_backend(stepwell_backend, lambda_runtime)
