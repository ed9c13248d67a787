"""Imports a Lambda handler once and calls it for each request (standard library only).

Started by `runtime.py`. Requests arrive as JSON lines on stdin; results leave as JSON
lines on the original stdout, while the handler's own stdout and stderr (print, logging,
tracebacks) go to the function log, which the runtime cuts into per-invocation logs.
The first line out is the init outcome: {"ok": true} or {"ok": false, "error": {...}}.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any, TextIO

PARENT_POLL_SECONDS = 0.5
# Set by the executor when the test harness keeps a virtual clock: a file holding its offset.
CLOCK_OFFSET_FILE_ENV = "STEPWELL_CLOCK_OFFSET_FILE"
current_request_id = ""
_REAL_TIME = time.time
_REAL_TIME_NS = time.time_ns


class VirtualTime:
    """Moves the handler's wall clock (time.time, time.time_ns) by the harness's virtual clock, read
    from the file before each invocation: an offset in seconds, or `at <epoch>` (a frozen clock: the
    invocation starts at that instant). Installed only when the file is configured; the context's
    remaining time stays real."""

    offset_seconds = 0.0

    @classmethod
    def install_if_configured(cls) -> None:
        if os.environ.get(CLOCK_OFFSET_FILE_ENV):
            time.time = lambda: _REAL_TIME() + cls.offset_seconds
            time.time_ns = lambda: _REAL_TIME_NS() + int(cls.offset_seconds * 1_000_000_000)

    @classmethod
    def refresh(cls) -> None:
        path = os.environ.get(CLOCK_OFFSET_FILE_ENV)
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as offset_file:
                text = offset_file.read().strip()
        except OSError:
            return  # no file yet: no offset
        try:
            if text.startswith("at "):
                # A frozen clock: it reads this instant when the invocation starts.
                cls.offset_seconds = float(text[3:]) - _REAL_TIME()
            elif text:
                cls.offset_seconds = float(text)
        except ValueError:
            print(f"stepwell worker: ignoring clock {text!r} in {path}", file=sys.stderr)


class LambdaContext:
    """The attributes and method of the context object AWS's Python runtime passes."""

    def __init__(self, invocation: dict[str, Any]) -> None:
        self.aws_request_id: str = invocation["invoke-id"]
        self.invoked_function_arn: str = invocation.get("invoked-function-arn", "")
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline_ms: int = invocation["deadline-ms"]

    def get_remaining_time_in_millis(self) -> int:
        return max(self._deadline_ms - int(_REAL_TIME() * 1000), 0)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.aws_request_id = current_request_id
        return True


def configure_logging() -> None:
    # Same shape as AWS's Python runtime, so handlers that just call logging.info() are seen.
    formatter = logging.Formatter(
        "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s",
        datefmt="%Y-%m-%dT%H:%M:%S",
    )
    formatter.converter = time.gmtime
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


def load_handler(handler_name: str) -> Callable[[Any, LambdaContext], Any]:
    module_path, _, function_name = handler_name.rpartition(".")
    if not module_path or not function_name:
        raise ValueError(f"Bad handler '{handler_name}': expected 'module.function'")
    module = importlib.import_module(module_path.replace("/", "."))
    handler = getattr(module, function_name, None)
    if not callable(handler):
        raise AttributeError(f"Handler '{function_name}' missing on module '{module_path}'")
    return handler  # type: ignore[no-any-return]


def error_of(error: BaseException, error_type: str | None = None) -> dict[str, Any]:
    return {
        "errorMessage": str(error),
        "errorType": error_type or type(error).__name__,
        "requestId": current_request_id,
        # The handler's frames only, as on AWS: this runner's own frame is noise.
        "stackTrace": traceback.format_list(
            [frame for frame in traceback.extract_tb(error.__traceback__) if frame.filename != __file__]
        ),
    }


def send(channel: TextIO, message: dict[str, Any]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def watch_parent() -> None:
    original_parent = os.getppid()

    def watch() -> None:
        while os.getppid() == original_parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main() -> None:
    global current_request_id
    parser = argparse.ArgumentParser()
    parser.add_argument("--code-dir", required=True)
    parser.add_argument("--handler", required=True)
    parser.add_argument("--function-log", required=True)
    args = parser.parse_args()
    watch_parent()

    # Keep private copies of the request and result pipes, then give the handler the
    # function log as stdout/stderr and nothing to read on stdin.
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    log_fd = os.open(args.function_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115

    # /var/task comes first on a Lambda's sys.path, then the runtime's own packages.
    sys.path.insert(0, args.code_dir)
    VirtualTime.install_if_configured()
    VirtualTime.refresh()
    configure_logging()
    try:
        handler = load_handler(args.handler)
    except Exception as error:
        error_type = "Runtime.ImportModuleError" if isinstance(error, ImportError) else None
        if isinstance(error, SyntaxError):
            error_type = "Runtime.UserCodeSyntaxError"
        traceback.print_exc()
        send(results, {"ok": False, "error": error_of(error, error_type)})
        sys.exit(1)
    send(results, {"ok": True})

    for line in requests:
        invocation = json.loads(line)
        current_request_id = invocation["invoke-id"]
        VirtualTime.refresh()
        os.environ["_X_AMZN_TRACE_ID"] = invocation.get("trace-id", "")
        try:
            event = json.loads(invocation["payload"]) if invocation.get("payload") else {}
            result = handler(event, LambdaContext(invocation))
        except SystemExit as error:
            # AWS resets the environment when a handler exits the process.
            send(results, {"ok": False, "error": error_of(error, "Runtime.ExitError")})
            sys.exit(1)
        except Exception as error:
            print(f"[ERROR] {type(error).__name__}: {error}", file=sys.stderr)
            traceback.print_exc()
            send(results, {"ok": False, "error": error_of(error)})
            continue
        try:
            payload = json.dumps(result)
        except (TypeError, ValueError) as error:
            send(results, {"ok": False, "error": error_of(error, "Runtime.MarshalError")})
            continue
        send(results, {"ok": True, "payload": payload})


if __name__ == "__main__":
    main()
