"""One Lambda execution environment on the host: the part a container's init would play.

Run by the executor in the Lambda interpreter, standard library only:

    python runtime.py --runtime-endpoint URL --runtime-id ID --worker worker.py \
        --code-dir DIR --handler mod.func --timeout SECONDS --function-log FILE \
        [--node NODE --node-bootstrap node_bootstrap.mjs]

It binds a free port on 127.0.0.1 and prints `port N` as its first stdout line, reports
ready to LocalStack, and then serves `POST /invoke` (LocalStack's invoke payload). Each
invocation runs in a long-lived worker process (`worker.py`, which imports the handler
once, like a warm Lambda; a Node.js function's is `node_worker.py`'s); this process
enforces the function's timeout by killing the worker, and posts the invocation's logs
and then its result or error back to LocalStack. Both processes exit when their parent goes
away, so nothing outlives LocalStack.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from node_worker import NodeWorker  # beside this script, which runs as one

PARENT_POLL_SECONDS = 0.5
# AWS gives a function's init phase 10 s of its own before the invocation's timeout starts.
INIT_GRACE_SECONDS = 10.0
NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def exit_when_parent_dies(on_exit: Any = None) -> None:
    """A poll, not PR_SET_PDEATHSIG: that signal fires when the spawning *thread* ends."""
    original_parent = os.getppid()

    def watch() -> None:
        while os.getppid() == original_parent:
            time.sleep(PARENT_POLL_SECONDS)
        if on_exit is not None:
            on_exit()
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def post(url: str, body: bytes, content_type: str = "application/json") -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type})
    with NO_PROXY_OPENER.open(request, timeout=30) as response:
        response.read()


class Worker:
    """The process that imports and calls the handler; replaced after a timeout or crash."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                args.worker,
                "--code-dir",
                args.code_dir,
                "--handler",
                args.handler,
                "--function-log",
                args.function_log,
            ],
            cwd=args.code_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read_messages, name="worker-reader", daemon=True).start()
        self.initialized = False

    def _read_messages(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.messages.put(json.loads(line))
        self.messages.put(None)  # the worker exited

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next message; None if it exited; raises queue.Empty on timeout."""
        return self.messages.get(timeout=max(timeout, 0.0))

    def send(self, request: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()

    def peak_memory_mb(self) -> int:
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return math.ceil(int(line.split()[1]) / 1024)
        except OSError:
            pass
        return 0


def new_worker(args: argparse.Namespace) -> Worker | NodeWorker:
    """A Python worker (worker.py in this interpreter), or a Node.js one when the executor named node."""
    if args.node:
        return NodeWorker(
            node=args.node,
            bootstrap=args.node_bootstrap,
            code_dir=args.code_dir,
            handler=args.handler,
            function_log=args.function_log,
        )
    return Worker(args)


class Environment:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.timeout_seconds = float(args.timeout)
        self.worker: Worker | NodeWorker | None = new_worker(args)
        self.invocations: queue.Queue[dict[str, Any]] = queue.Queue()
        # Each invocation's logs run from where the previous one's ended, so the first also
        # carries the init output (as on AWS) and nothing printed between invocations is lost.
        self.log_offset = file_size(args.function_log)

    def serve_invocations(self) -> None:
        while True:
            invocation = self.invocations.get()
            try:
                self.run(invocation)
            except Exception as error:  # keep serving; LocalStack must always get an answer
                print(f"stepwell runtime: invocation failed internally: {error!r}", file=sys.stderr)
                self.report(invocation["invoke-id"], "error", error_body("Runtime.Unknown", repr(error)), "")

    def run(self, invocation: dict[str, Any]) -> None:
        request_id = invocation["invoke-id"]
        version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        append_log(self.args.function_log, f"START RequestId: {request_id} Version: {version}\n")
        started = time.monotonic()
        deadline_ms = int(time.time() * 1000 + self.timeout_seconds * 1000)
        outcome, body = self.call_worker(invocation, started, deadline_ms)
        duration_ms = (time.monotonic() - started) * 1000
        memory_mb = self.worker.peak_memory_mb() if self.worker is not None else 0
        append_log(
            self.args.function_log,
            f"END RequestId: {request_id}\n"
            f"REPORT RequestId: {request_id}\tDuration: {duration_ms:.2f} ms\t"
            f"Billed Duration: {math.ceil(duration_ms)} ms\t"
            f"Memory Size: {os.environ.get('AWS_LAMBDA_FUNCTION_MEMORY_SIZE', '128')} MB\t"
            f"Max Memory Used: {memory_mb} MB\t\n",
        )
        logs, self.log_offset = read_from(self.args.function_log, self.log_offset)
        self.report(request_id, outcome, body, logs)

    def call_worker(self, invocation: dict[str, Any], started: float, deadline_ms: int) -> tuple[str, bytes]:
        request_id = invocation["invoke-id"]
        if self.worker is None or not self.worker.alive():
            self.worker = new_worker(self.args)
        worker = self.worker
        if not worker.initialized:
            try:
                init = worker.next_message(INIT_GRACE_SECONDS + self.timeout_seconds)
            except queue.Empty:
                return self.timed_out(request_id)
            if init is None or not init.get("ok"):
                # AWS retries init on the next invocation after an init failure.
                worker.kill()
                self.worker = None
                error = (init or {}).get("error") or {
                    "errorType": "Runtime.ExitError",
                    "errorMessage": f"RequestId: {request_id} Error: Runtime exited during init",
                }
                return "error", json.dumps(error).encode()
            worker.initialized = True
        worker.send({**invocation, "deadline-ms": deadline_ms})
        remaining = self.timeout_seconds - (time.monotonic() - started)
        try:
            message = worker.next_message(remaining)
        except queue.Empty:
            return self.timed_out(request_id)
        if message is None:
            self.worker = None
            return "error", error_body(
                "Runtime.ExitError",
                f"RequestId: {request_id} Error: Runtime exited with error: exit status "
                f"{worker.process.returncode}",
            )
        if message.get("ok"):
            return "response", message["payload"].encode()
        return "error", json.dumps(message["error"]).encode()

    def timed_out(self, request_id: str) -> tuple[str, bytes]:
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
        message = f"RequestId: {request_id} Error: Task timed out after {self.timeout_seconds:.2f} seconds"
        append_log(
            self.args.function_log, f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {message}\n"
        )
        return "error", error_body("Sandbox.Timedout", message)

    def report(self, request_id: str, outcome: str, body: bytes, logs: str) -> None:
        base = f"{self.args.runtime_endpoint}/invocations/{request_id}"
        # LocalStack attaches the logs it holds when the result arrives: send them first.
        post(f"{base}/logs", json.dumps({"logs": logs}).encode())
        post(f"{base}/{outcome}", body)

    def shutdown(self) -> None:
        if self.worker is not None:
            self.worker.kill()


def error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"errorType": error_type, "errorMessage": message}).encode()


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def append_log(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as log_file:
        log_file.write(text)


def read_from(path: str, offset: int) -> tuple[str, int]:
    """The text from offset to the end, and the new end."""
    with open(path, "rb") as log_file:
        log_file.seek(offset)
        data = log_file.read()
    return data.decode(errors="replace"), offset + len(data)


def make_handler(environment: Environment) -> type[BaseHTTPRequestHandler]:
    class InvokeHandler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/invoke":
                self.send_error(HTTPStatus.NOT_FOUND, f"unknown path {self.path}; only POST /invoke")
                return
            length = int(self.headers.get("Content-Length", "0"))
            invocation = json.loads(self.rfile.read(length))
            # Answer at once: the result goes back through LocalStack's executor endpoint.
            environment.invocations.put(invocation)
            self.send_response(HTTPStatus.ACCEPTED)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return InvokeHandler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runtime-endpoint", required=True)
    parser.add_argument("--runtime-id", required=True)
    parser.add_argument("--worker", required=True)
    parser.add_argument("--code-dir", required=True)
    parser.add_argument("--handler", required=True)
    parser.add_argument("--timeout", required=True, type=float)
    parser.add_argument("--function-log", required=True)
    # A Node.js function: the node executable and the harness's bootstrap (node_worker.py).
    parser.add_argument("--node", default="")
    parser.add_argument("--node-bootstrap", default="")
    args = parser.parse_args()

    environment = Environment(args)
    exit_when_parent_dies(environment.shutdown)

    def stop(signum: int, frame: Any) -> None:
        environment.shutdown()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(environment))
    print(f"port {server.server_address[1]}", flush=True)
    threading.Thread(target=environment.serve_invocations, name="invocations", daemon=True).start()
    try:
        post(f"{args.runtime_endpoint}/status/{args.runtime_id}/ready", b"{}")
    except Exception as error:
        print(f"stepwell runtime: could not report ready: {error!r}", file=sys.stderr)
        environment.shutdown()
        sys.exit(1)
    server.serve_forever()


if __name__ == "__main__":
    main()
