"""A Node.js function's worker for `runtime.py` (standard library only): the same surface as its Python
`Worker`, over the test harness's Node bootstrap (stepwell.testing.lambda_runtime's node_bootstrap.mjs,
the one the moto stack runs: Lambda's handler resolution, context, error shapes and console log lines).

The bootstrap speaks its own line protocol (requests {event, request_id, deadline_epoch_ms, function_arn,
clock_offset_seconds} on stdin; answers {ready}, {result} or {error, ending} on a descriptor of their own,
since the function's stdout and stderr are its log); this adapter translates LocalStack's invocation
({invoke-id, payload, deadline-ms, invoked-function-arn}) and `runtime.py`'s messages ({ok, payload} or
{ok: false, error}) to and from it. One bootstrap, so a Node function behaves alike on both backends.
"""

from __future__ import annotations

import json
import math
import os
import queue
import subprocess
import threading
import time
from typing import IO, Any

# Set by the executor when the test harness keeps a virtual clock: a file holding its offset.
CLOCK_OFFSET_FILE_ENV = "STEPWELL_CLOCK_OFFSET_FILE"
# How long an environment that answered its last invocation (an uncaught error) may take to exit.
ENDING_GRACE_SECONDS = 5.0


def clock_offset_seconds() -> float | None:
    """The harness's virtual-clock offset (the file worker.py reads for Python): seconds, or `at <epoch>` (a
    frozen clock: the invocation starts at that instant); None when no clock is configured or readable."""
    path = os.environ.get(CLOCK_OFFSET_FILE_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as offset_file:
            text = offset_file.read().strip()
        if text.startswith("at "):
            return float(text[3:]) - time.time()
        return float(text) if text else None
    except (OSError, ValueError):
        return None


class NodeWorker:
    """One `node node_bootstrap.mjs CODE_DIR HANDLER FD` process; replaced after a timeout or crash."""

    def __init__(self, *, node: str, bootstrap: str, code_dir: str, handler: str, function_log: str) -> None:
        read_end, write_end = os.pipe()
        try:
            with open(function_log, "ab") as log:
                self.process = subprocess.Popen(
                    [node, bootstrap, code_dir, handler, str(write_end)],
                    cwd=code_dir,
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=log,
                    pass_fds=(write_end,),
                )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)  # the child holds its copy: the pipe ends when the worker does
        self._answers: IO[bytes] = os.fdopen(read_end, "rb")
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read_answers, name="node-reader", daemon=True).start()
        self.initialized = False

    def _read_answers(self) -> None:
        for line in self._answers:
            answer = json.loads(line)
            if answer.get("ready"):
                # The bootstrap reports a failed init with each invocation, as Lambda's Node.js runtime does.
                self.messages.put({"ok": True})
            elif "error" in answer:
                if answer.get("ending"):
                    # The environment ends with this answer: let it go before the runtime sees the answer,
                    # so the next invocation gets a new worker rather than this dying one.
                    self._wait_for_exit()
                self.messages.put({"ok": False, "error": answer["error"]})
            else:
                self.messages.put({"ok": True, "payload": json.dumps(answer.get("result"))})
        self.messages.put(None)  # the worker exited (an uncaught error ends it after its answer)

    def _wait_for_exit(self) -> None:
        try:
            self.process.wait(timeout=ENDING_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The worker's next message; None if it exited; raises queue.Empty on timeout."""
        return self.messages.get(timeout=max(timeout, 0.0))

    def send(self, invocation: dict[str, Any]) -> None:
        payload = invocation.get("payload")
        request = {
            "event": json.loads(payload) if payload else {},
            "request_id": invocation["invoke-id"],
            "deadline_epoch_ms": invocation["deadline-ms"],
            "function_arn": invocation.get("invoked-function-arn", ""),
            "clock_offset_seconds": clock_offset_seconds(),
        }
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
