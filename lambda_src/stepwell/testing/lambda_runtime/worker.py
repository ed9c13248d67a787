"""The worker process: one warm Lambda execution environment for one function version, and both ends of
the line protocol the harness speaks with it.

``WorkerProcess`` (the harness's side) starts ``python -P worker.py --worker CODE_DIR HANDLER`` with the
interpreter running the harness (it provides boto3, as Lambda's runtime does) and the function's
environment. There ``run_worker`` imports the handler once and serves invocations: one JSON request per
stdin line, one JSON answer per line. The handler's prints go to stderr, the function's log.

A Node.js version (Runtime nodejs18.x, 20.x, 22.x) runs ``node node_bootstrap.mjs CODE_DIR HANDLER FD``
instead, which speaks the same protocol; its answers come on a pipe of their own (descriptor FD), since
Node cannot move its own stdout aside as the Python worker does: stdout and stderr are its log.

This file runs alone as that process, where only the function's own package is importable (``-P`` keeps
this folder off sys.path, so the function's copy of stepwell, not the harness's, is what its imports
see): it imports nothing outside the standard library at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepwell.testing.lambda_runtime.functions import FunctionSpec

WORKER_START_TIMEOUT_SECONDS = 60.0
NODE_BOOTSTRAP = Path(__file__).with_name("node_bootstrap.mjs")


# ---------------------------------------------------------------------------------------------------
# Worker side: runs inside the subprocess, imports the handler once, serves invocations line by line.


_REAL_TIME = time.time
_REAL_TIME_NS = time.time_ns


class _VirtualTime:
    """Moves the worker's wall clock by the harness's virtual-clock offset, so a deployed engine sees a
    timer the scheduler firer fast-forwarded as due. Installed only when the harness sends an offset."""

    offset_seconds = 0.0
    installed = False

    @classmethod
    def set_offset(cls, seconds: float) -> None:
        cls.offset_seconds = seconds
        if not cls.installed:
            time.time = lambda: _REAL_TIME() + cls.offset_seconds
            time.time_ns = lambda: _REAL_TIME_NS() + int(cls.offset_seconds * 1_000_000_000)
            cls.installed = True


class _LambdaContext:
    """The parts of Lambda's context object handlers use."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.function_name: str = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version: str = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn: str = request.get("function_arn", "")
        self.memory_limit_in_mb: str = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.aws_request_id: str = request["request_id"]
        self.log_group_name: str = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name: str = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self._deadline_epoch_ms: int = request["deadline_epoch_ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self._deadline_epoch_ms - int(_REAL_TIME() * 1000))


def _error_payload(error: BaseException, request_id: str, error_type: str | None = None) -> dict[str, Any]:
    """A function error as Lambda's Python runtime reports it: the handler's frames only (this runner's
    own are noise), each as one ``traceback.format_list`` line."""
    return {
        "errorMessage": str(error),
        "errorType": error_type or type(error).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_list(
            [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename != __file__]
        ),
    }


def run_worker(code_dir: str, handler_spec: str) -> None:
    """Serve invocations: one JSON request per stdin line, one JSON answer per line on the protocol fd."""
    # The handler's prints go to stderr (the function's log); answers go to a private copy of stdout.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.path.insert(0, code_dir)
    os.chdir(code_dir)
    handler: Callable[[Any, Any], Any] | None = None
    init_error: dict[str, Any] | None = None
    module_name, _, function_name = handler_spec.rpartition(".")
    try:
        import importlib

        module = importlib.import_module(module_name)
        handler = getattr(module, function_name)
    except BaseException as error:  # any import failure is the function's error, as in Lambda
        init_error = _error_payload(error, "", "Runtime.ImportModuleError")
    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("clock_offset_seconds") is not None:
            _VirtualTime.set_offset(float(request["clock_offset_seconds"]))
        if init_error is not None or handler is None:
            answer: dict[str, Any] = {"error": {**(init_error or {}), "requestId": request["request_id"]}}
        else:
            try:
                result = handler(request["event"], _LambdaContext(request))
                answer = {"result": result}
            except Exception as error:  # the handler's exception is the invocation's FunctionError
                answer = {"error": _error_payload(error, request["request_id"])}
        try:
            encoded = json.dumps(answer)
        except (TypeError, ValueError) as error:
            marshal_error = _error_payload(error, request["request_id"], "Runtime.MarshalError")
            encoded = json.dumps({"error": marshal_error})
        protocol.write(encoded + "\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------------------------------
# Harness side: starts a worker, sends it one invocation at a time, kills it after a timeout or crash.


class InvocationTimeout(RuntimeError):
    """The handler ran past its function's timeout; its worker is killed, as Lambda ends the sandbox."""


class WorkerProcess:
    """The harness's handle on one worker process running ``spec``: one invocation at a time. A Node.js
    version runs on ``node_executable`` (None: no ``node`` was found, and the version cannot start)."""

    def __init__(
        self,
        spec: FunctionSpec,
        code_dir: Path,
        environment: dict[str, str],
        log: IO[bytes],
        *,
        python_executable: str,
        node_executable: str | None = None,
    ) -> None:
        # Here, not at the top: this file also runs alone as the Python worker, on the standard library.
        from stepwell.testing.lambda_runtime.functions import RuntimeKind, runtime_kind

        self.spec = spec
        if runtime_kind(spec.runtime) is RuntimeKind.NODE:
            if node_executable is None:
                raise RuntimeError(f"{spec.name} is a {spec.runtime} function and no node was found")
            read_end, write_end = os.pipe()
            try:
                self.process = subprocess.Popen(
                    [node_executable, str(NODE_BOOTSTRAP), str(code_dir), spec.handler, str(write_end)],
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=log,
                    env=environment,
                    cwd=code_dir,
                    text=True,
                    pass_fds=(write_end,),
                )
            except BaseException:
                os.close(read_end)
                raise
            finally:
                os.close(write_end)  # the child holds its copy: the pipe ends when the worker does
            self._answers: IO[str] = os.fdopen(read_end, "r", encoding="utf-8")
        else:
            self.process = subprocess.Popen(
                # -P: run this file as a script without putting its folder on sys.path, so the function's
                # own code (its PYTHONPATH) is what imports see, not the harness package.
                [python_executable, "-P", __file__, "--worker", str(code_dir), spec.handler],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=environment,
                cwd=code_dir,
                text=True,
            )
            assert self.process.stdout is not None
            self._answers = self.process.stdout
        ready = self._read_line(WORKER_START_TIMEOUT_SECONDS)
        if ready is None or not json.loads(ready).get("ready"):
            self.kill()
            raise RuntimeError(f"the worker for {spec.name} did not start (see its log)")

    def _read_line(self, timeout_seconds: float) -> str | None:
        readable, _, _ = select.select([self._answers], [], [], timeout_seconds)
        if not readable:
            return None
        line = self._answers.readline()
        return line or None

    def invoke(
        self, event: Any, request_id: str, invoked_arn: str, clock_offset_seconds: float | None = None
    ) -> dict[str, Any]:
        assert self.process.stdin is not None
        deadline_ms = int(time.time() * 1000) + self.spec.timeout_seconds * 1000
        request = {
            "event": event,
            "request_id": request_id,
            "deadline_epoch_ms": deadline_ms,
            "function_arn": invoked_arn,
            "clock_offset_seconds": clock_offset_seconds,
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self._read_line(self.spec.timeout_seconds)
        if line is None:
            timed_out = self.process.poll() is None
            self.kill()
            if timed_out:
                # Lambda's words for it (the Sandbox.Timedout error's message).
                seconds = f"{self.spec.timeout_seconds:.2f} seconds"
                raise InvocationTimeout(f"RequestId: {request_id} Error: Task timed out after {seconds}")
            raise RuntimeError(f"the worker for {self.spec.name} exited with code {self.process.returncode}")
        answer: dict[str, Any] = json.loads(line)
        if answer.pop("ending", False):  # the environment ends with this answer: never reuse it
            self.kill()
        return answer

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self._answers):
            if stream is not None and not stream.closed:
                stream.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Stepwell local Lambda runtime worker")
    parser.add_argument("--worker", nargs=2, metavar=("CODE_DIR", "HANDLER"), required=True)
    args = parser.parse_args(argv)
    run_worker(args.worker[0], args.worker[1])


if __name__ == "__main__":
    main()
