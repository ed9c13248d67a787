"""LocalStack side of the executor: one local `runtime.py` process per execution environment.

LocalStack drives it exactly as it drives its Docker executor: `prepare_version` when a
function version is created (the function turns Active or Failed), `start` for each
execution environment, `invoke` per invocation, `stop` when the environment is retired.
The runtime process reports readiness and results back through LocalStack's own
executor endpoint (`executor_endpoint.py`), so event source mappings, retries, logs and
destinations behave as they do with Docker.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from localstack import config
from localstack.aws.api.lambda_ import PackageType
from localstack.services.lambda_.invocation.executor_endpoint import ExecutorEndpoint
from localstack.services.lambda_.invocation.lambda_models import (
    FunctionVersion,
    HotReloadingCode,
    InvocationResult,
    S3Code,
)
from localstack.services.lambda_.invocation.runtime_executor import (
    LambdaRuntimeException,
    RuntimeExecutor,
)

LOG = logging.getLogger(__name__)

RUNTIME_SCRIPT = Path(__file__).with_name("runtime.py")
WORKER_SCRIPT = Path(__file__).with_name("worker.py")

# Interpreter for handlers; the harness points it at a venv holding only boto3.
LAMBDA_PYTHON_ENV = "STEPWELL_LAMBDA_PYTHON"
# Where each execution environment writes <function>-<id>.function.log (the handler's output)
# and .runtime.log (the runtime's own errors); the harness keeps it after LocalStack stops.
LAMBDA_LOG_DIR_ENV = "STEPWELL_LAMBDA_LOG_DIR"
# A file holding the test harness's virtual-clock offset in seconds: handlers' time.time() runs
# that far ahead of the host's clock (worker.py reads it before each invocation), so a wake-up the
# harness fast-forwarded is due for the engine too.
CLOCK_OFFSET_FILE_ENV = "STEPWELL_CLOCK_OFFSET_FILE"
# Node.js functions: the node to run them on (default: the one on PATH) and the test harness's bootstrap
# for it (stepwell.testing.lambda_runtime's node_bootstrap.mjs, which the moto stack runs too).
LAMBDA_NODE_ENV = "STEPWELL_LAMBDA_NODE"
NODE_BOOTSTRAP_ENV = "STEPWELL_NODE_BOOTSTRAP"
NODE_RUNTIMES = ("nodejs18.x", "nodejs20.x", "nodejs22.x")
# A JSON file {function name: {variable: value}} the harness may write: variables put over a function's
# Lambda environment when an execution environment starts (what LambdaRuntime.function_environment does on
# moto), for what a deployed function reaches through Lambda's network and cannot here: a function URL's
# host name resolves nowhere, and a front checking signatures knows only the keys it handed out.
ENVIRONMENT_OVERRIDES_ENV = "STEPWELL_LAMBDA_ENVIRONMENT_FILE"
# Host variables a handler may see besides its Lambda environment (the rest of the host's,
# and LocalStack's own settings, stay out, as they would on AWS).
PASSED_HOST_VARIABLES = (
    "PATH",
    "LANG",
    "LC_ALL",
    "HOME",
    "TMPDIR",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    CLOCK_OFFSET_FILE_ENV,
)
RUNTIME_STOP_GRACE_SECONDS = 5.0


def lambda_python() -> str:
    return os.environ.get(LAMBDA_PYTHON_ENV) or sys.executable


def lambda_node() -> str | None:
    return os.environ.get(LAMBDA_NODE_ENV) or shutil.which("node")


def environment_overrides(function_name: str) -> dict[str, str]:
    """The harness's variables for this function (none when no file is configured or it names none)."""
    path = os.environ.get(ENVIRONMENT_OVERRIDES_ENV)
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as overrides_file:
        overrides = json.load(overrides_file).get(function_name, {})
    if not isinstance(overrides, dict):
        raise LambdaRuntimeException(f"{path}: the variables of {function_name!r} are not an object")
    return {str(name): str(value) for name, value in overrides.items()}


def gateway_host() -> str:
    host = config.GATEWAY_LISTEN[0].host
    # A wildcard bind is not an address a client can dial.
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


class LocalProcessRuntimeExecutor(RuntimeExecutor):
    """Runs a Python or Node.js function's unzipped code in a local process instead of a container."""

    def __init__(self, id: str, function_version: FunctionVersion) -> None:
        super().__init__(id=id, function_version=function_version)
        self.executor_endpoint = ExecutorEndpoint(self.id)
        self.process: subprocess.Popen[bytes] | None = None
        log_dir = Path(os.environ.get(LAMBDA_LOG_DIR_ENV) or Path(config.dirs.tmp) / "stepwell-lambda")
        log_dir.mkdir(parents=True, exist_ok=True)
        base_name = f"{function_version.id.function_name}-{self.id}"
        self.function_log = log_dir / f"{base_name}.function.log"
        self.runtime_log = log_dir / f"{base_name}.runtime.log"

    @classmethod
    def prepare_version(cls, function_version: FunctionVersion) -> None:
        code = cls._require_supported(function_version)
        # Unzips the code once per version. Never ask for the runtime-init binary (the Docker
        # executor's get_runtime_client_path()): it is a download this host cannot make.
        code.prepare_for_execution()

    @classmethod
    def cleanup_version(cls, function_version: FunctionVersion) -> None:
        # The unzipped code belongs to LocalStack, which removes it with the version.
        pass

    @classmethod
    def validate_environment(cls) -> bool:
        python = lambda_python()
        if not os.access(python, os.X_OK):
            LOG.error("%s=%s is not an executable Python interpreter", LAMBDA_PYTHON_ENV, python)
            return False
        return True

    @staticmethod
    def _require_supported(function_version: FunctionVersion) -> S3Code | HotReloadingCode:
        """The function's code, if this executor can run the function; else a reason why not."""
        function_config = function_version.config
        code = function_config.code
        if function_config.package_type != PackageType.Zip or code is None:
            raise LambdaRuntimeException(
                f"package type {function_config.package_type!r} is not supported by the "
                "stepwell-local executor: only Zip packages"
            )
        runtime = str(function_config.runtime or "")
        if runtime in NODE_RUNTIMES:
            bootstrap = os.environ.get(NODE_BOOTSTRAP_ENV, "")
            if lambda_node() is None or not os.path.isfile(bootstrap):
                raise LambdaRuntimeException(
                    f"runtime {runtime!r} needs node (on PATH or {LAMBDA_NODE_ENV}) and the harness's "
                    f"node_bootstrap.mjs ({NODE_BOOTSTRAP_ENV}={bootstrap!r})"
                )
        elif not runtime.startswith("python3"):
            raise LambdaRuntimeException(
                f"runtime {runtime!r} is not supported by the stepwell-local executor: only python3.x "
                f"and {', '.join(NODE_RUNTIMES)}"
            )
        return code

    def start(self, env_vars: dict[str, str]) -> None:
        code = self._require_supported(self.function_version)
        self.executor_endpoint.start()
        code_dir = str(code.get_unzipped_code_location())
        handler_env = {name: os.environ[name] for name in PASSED_HOST_VARIABLES if name in os.environ}
        # LocalStack hands over some values as ints; a process environment takes only strings.
        handler_env.update({name: str(value) for name, value in env_vars.items()})
        runtime = str(self.function_version.config.runtime or "")
        # LocalStack leaves it to the runtime in its container, which names itself (AWS_Lambda_nodejs20.x).
        handler_env["AWS_EXECUTION_ENV"] = f"AWS_Lambda_{runtime}"
        handler_env.update(environment_overrides(self.function_version.id.function_name))
        handler_env["LAMBDA_TASK_ROOT"] = code_dir
        handler_env["PYTHONUNBUFFERED"] = "1"
        handler_env["PYTHONDONTWRITEBYTECODE"] = "1"
        command = [
            lambda_python(),
            str(RUNTIME_SCRIPT),
            "--runtime-endpoint",
            self.get_runtime_endpoint(),
            "--runtime-id",
            self.id,
            "--worker",
            str(WORKER_SCRIPT),
            "--code-dir",
            code_dir,
            "--handler",
            str(self.function_version.config.handler),
            "--timeout",
            str(self.function_version.config.timeout),
            "--function-log",
            str(self.function_log),
        ]
        if runtime in NODE_RUNTIMES:
            command += ["--node", str(lambda_node()), "--node-bootstrap", os.environ[NODE_BOOTSTRAP_ENV]]
        LOG.debug("Starting local runtime for %s: %s", self.function_version.qualified_arn, command)
        with self.runtime_log.open("ab") as runtime_log:
            self.process = subprocess.Popen(
                command,
                env=handler_env,
                cwd=code_dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=runtime_log,
            )
        # The runtime binds a free port and prints it as its first line.
        assert self.process.stdout is not None
        first_line = self.process.stdout.readline().decode(errors="replace").strip()
        self.process.stdout.close()
        if not first_line.startswith("port "):
            self._terminate()
            raise LambdaRuntimeException(
                f"local runtime for {self.function_version.qualified_arn} did not start "
                f"(first line {first_line!r}); see {self.runtime_log}"
            )
        self.executor_endpoint.container_address = "127.0.0.1"
        self.executor_endpoint.container_port = int(first_line.removeprefix("port "))
        # A runtime that dies before reporting ready would leave LocalStack waiting: fail fast.
        threading.Thread(target=self._fail_startup_if_runtime_dies, daemon=True).start()
        self.executor_endpoint.wait_for_startup()  # type: ignore[no-untyped-call]

    def _fail_startup_if_runtime_dies(self) -> None:
        process = self.process
        future = self.executor_endpoint.startup_future
        if process is None or future is None:
            return
        return_code = process.wait()
        if not future.done():
            future.set_exception(
                LambdaRuntimeException(f"local runtime exited with {return_code}; see {self.runtime_log}")
            )

    def stop(self) -> None:
        self._terminate()
        try:
            self.executor_endpoint.shutdown()
        except Exception as error:  # the endpoint may never have been registered
            LOG.debug("Error while shutting down executor endpoint %s: %s", self.id, error)

    def _terminate(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=RUNTIME_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def get_address(self) -> str:
        return "127.0.0.1"

    def get_endpoint_from_executor(self) -> str:
        return gateway_host()

    def get_runtime_endpoint(self) -> str:
        port = config.GATEWAY_LISTEN[0].port
        return f"http://{gateway_host()}:{port}{self.executor_endpoint.get_endpoint_prefix()}"  # type: ignore[no-untyped-call]

    def invoke(self, payload: dict[str, str]) -> InvocationResult:
        return self.executor_endpoint.invoke(payload)

    def get_logs(self) -> str:
        parts = []
        for path in (self.function_log, self.runtime_log):
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "".join(parts)
