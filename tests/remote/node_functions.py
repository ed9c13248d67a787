"""JavaScript durable functions for the in-process remote harness (tests/remote/harness.py): a handler file
written with @aws/durable-execution-sdk-js runs in a warm `node` worker of the local Lambda runtime
(stepwell.testing.lambda_runtime's WorkerProcess and node_bootstrap.mjs, the same one the moto stack runs
Node.js functions in), with the SDK's own LambdaClient pointed at the API front by AWS_ENDPOINT_URL_LAMBDA
and signing with an allowed principal's credentials. Its structured log lines (the SDK's logger writes one
JSON object a line to stdout, as in CloudWatch) are handed to Python's logging as records, so the
conformance runner reads them as it reads a Python function's.
"""

from __future__ import annotations

import datetime
import json
import logging
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import IO, Any

from stepwell.testing.lambda_runtime import FunctionSpec
from stepwell.testing.lambda_runtime.worker import WorkerProcess

from tests.api.iam_url_front import Identity

REPO_ROOT = Path(__file__).resolve().parents[2]
# `make node` (npm ci in tools/node) installs the pinned SDK here.
NODE_MODULES = REPO_ROOT / "tools" / "node" / "node_modules"
SDK_PACKAGE = NODE_MODULES / "@aws" / "durable-execution-sdk-js" / "package.json"
# What Lambda would give the function (nodejs22.x: the SDK's engines; the machine's node runs it).
RUNTIME = "nodejs22.x"
TIMEOUT_SECONDS = 120
# Bounds what one invocation's log lines may hand to Python's logging (a runaway handler's output).
MAX_LOG_BYTES = 4 * 1024 * 1024
LOGGER = logging.getLogger("stepwell.tests.node_function")


def node_missing_reason(node: str | None) -> str | None:
    """Why JavaScript functions cannot run here (no node on PATH, the SDK not installed), else None."""
    if node is None:
        return "no node on PATH (make node installs Node.js)"
    if not SDK_PACKAGE.is_file():
        return f"@aws/durable-execution-sdk-js is not installed: no {SDK_PACKAGE} (make node)"
    return None


class NodeFunctionError(Exception):
    """A JavaScript function's error as the Node.js runtime reports it (errorType, errorMessage)."""

    def __init__(self, error: dict[str, Any]) -> None:
        self.error_type = str(error.get("errorType") or "Error")
        super().__init__(str(error.get("errorMessage") or ""))


class NodeFunction:
    """One JavaScript handler (`module_path` relative to `source_dir`, export `export`) deployed as a
    function: its folder copied into a code dir beside the pinned node_modules, one warm `node` worker
    started on first use and kept for every later invocation (replaced when one ends its environment)."""

    def __init__(
        self,
        *,
        name: str,
        source_dir: Path,
        handler: str,
        endpoint_url: str,
        identity: Identity,
        region: str,
        node: str,
    ) -> None:
        self._workdir = Path(tempfile.mkdtemp(prefix="stepwell-js-"))
        code_dir = self._workdir / "code"
        shutil.copytree(source_dir, code_dir)
        (code_dir / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
        self._code_dir = code_dir
        self._node = node
        self._log_path = self._workdir / "function.log"
        self._log: IO[bytes] = open(self._log_path, "ab")  # noqa: SIM115 (kept open for the worker's life)
        self._read_from = 0
        self.spec = FunctionSpec(
            name=name,
            arn=f"arn:aws:lambda:{region}:{identity.account}:function:{name}",
            version="$LATEST",
            handler=handler,
            timeout_seconds=TIMEOUT_SECONDS,
            memory_mb=512,
            environment={},
            code_sha256="",
            last_modified="",
            runtime=RUNTIME,
        )
        self._environment = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self._workdir),
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            **identity.environment(),
            "AWS_ENDPOINT_URL_LAMBDA": endpoint_url,
            "AWS_LAMBDA_FUNCTION_NAME": name,
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
            "AWS_LAMBDA_FUNCTION_TIMEOUT": str(TIMEOUT_SECONDS),
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": f"local/[$LATEST]{uuid.uuid4().hex}",
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{RUNTIME}",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "NODE_PATH": str(code_dir),
            "_HANDLER": handler,
        }
        self._worker: WorkerProcess | None = None
        self._lock = threading.Lock()  # one invocation at a time per worker, as Lambda's environment

    def __call__(self, event: Any, context: Any) -> Any:
        """Invoke the function as the remote harness's handlers are invoked: the answer, or its error."""
        with self._lock:
            if self._worker is None or not self._worker.alive():
                self._worker = WorkerProcess(
                    self.spec,
                    self._code_dir,
                    self._environment,
                    self._log,
                    python_executable="",
                    node_executable=self._node,
                )
            worker = self._worker
            try:
                answer = worker.invoke(event, context.aws_request_id, self.spec.arn)
            except RuntimeError as error:
                if worker.alive():
                    raise
                # The process ended mid-invocation (process.exit): Lambda's words for it.
                code = worker.process.returncode
                message = f"Error: Runtime exited with error: exit status {code}"
                exit_error = {"errorType": "Runtime.ExitError", "errorMessage": message}
                raise NodeFunctionError(exit_error) from error
            finally:
                self._forward_logs()
        if answer.get("error") is not None:
            raise NodeFunctionError(answer["error"])
        return answer.get("result")

    def _forward_logs(self) -> None:
        """The function's new structured log lines (the durable logger's JSON objects) as logging records;
        any other line (console output in Lambda's text format) stays in its log only."""
        self._log.flush()
        with open(self._log_path, "rb") as log:
            log.seek(self._read_from)
            data = log.read(MAX_LOG_BYTES)
        # Whole lines only: a line cut at the bound is read whole next time.
        complete = data[: data.rfind(b"\n") + 1] if len(data) == MAX_LOG_BYTES else data
        self._read_from += len(complete) if complete else len(data)
        for line in complete.decode("utf-8", errors="replace").splitlines():
            fields = _json_object(line)
            if fields is None or not isinstance(fields.get("executionArn"), str):
                continue
            message = str(fields.get("message", ""))
            level = _level(fields.get("level"))
            record = LOGGER.makeRecord(LOGGER.name, level, "node", 0, message, None, None)
            record.created = _epoch(fields.get("timestamp"), record.created)
            for key, value in fields.items():
                if key not in {"message", "level", "timestamp"} and key not in record.__dict__:
                    setattr(record, key, value)
            logging.getLogger().handle(record)

    def log_text(self) -> str:
        """The whole function log (node's stdout and stderr), for a failing test's message."""
        return self._log_path.read_text(errors="replace")

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.kill()
                self._worker = None
        self._log.close()
        shutil.rmtree(self._workdir, ignore_errors=True)


def _json_object(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _level(name: Any) -> int:
    level = logging.getLevelName(str(name).upper()) if name else logging.INFO
    return level if isinstance(level, int) else logging.INFO


def _epoch(stamp: Any, default: float) -> float:
    try:
        return datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return default
