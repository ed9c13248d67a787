"""`stepwell local up PATH`'s server: your Terraform root module on the embedded moto backend, until stopped.

Started by the CLI (stepwell.cli.local, which describes the state file and control endpoint it serves) as
``python -m stepwell.testing.local_infra PATH [--source-root DIR] [--region R] [--var NAME=VALUE]``. It:

- starts moto's server and applies the root module in PATH to it from a copy (stepwell.testing.terraform:
  the git repository holding PATH, or ``--source-root``, plus any local module outside it; the user's folder
  and real state are not touched);
- runs the deployed functions with the local Lambda runtime (mapped queues polled in the background, the
  Invoke API and function URLs on a local endpoint) and fires due EventBridge Scheduler schedules every
  second, on a virtual clock the handlers follow;
- writes the client config, its clock (read by clients through ``STEPWELL_CLOCK_OFFSET_FILE``) and its
  state to PATH/.stepwell/, prints the environment to use, and serves
  ``POST /advance`` (``advance``: one-time schedules fire at their turn on the way), ``GET /status`` and
  ``POST /stop`` on 127.0.0.1.

It stops on Ctrl-C, SIGTERM or ``/stop``: the firer, the runtime's workers and moto's server end with it and
its files in PATH/.stepwell/ are removed (the deployment lived in moto's memory: nothing to destroy).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from stepwell.cli.local import (
    CLIENT_CONFIG_FILE_NAME,
    CLOCK_FILE_NAME,
    LOG_FILE_NAME,
    PATH_ENV,
    READY,
    STARTING,
    LocalState,
    ready_message,
    state_dir_for,
)
from stepwell.clock import CLOCK_OFFSET_FILE_ENV
from stepwell.testing.backends import Backend, BackendUnavailable, start_backend
from stepwell.testing.deployed_fixtures import client_config_output
from stepwell.testing.lambda_runtime import LambdaRuntime
from stepwell.testing.scheduler import FiredSchedule, SchedulerFirer, VirtualClock, publish_clock
from stepwell.testing.stack_sources import StackCopyError
from stepwell.testing.terraform import TerraformError, TerraformStack, module_variables

WORK_DIR_NAME = "work"
# One-time schedules are fired one at a time in their order; a workflow that keeps setting timers inside
# the span stops an advance after this many steps (it says so) rather than running forever.
MAX_ADVANCE_STEPS = 1000
FIRE_INTERVAL_SECONDS = 1.0
# A one-time schedule's far horizon when looking for the next one (`at()` schedules within ten years).
_HORIZON = timedelta(days=3650)


def runtime_and_firer(
    backend: Backend, work_dir: Path, clock: VirtualClock
) -> tuple[LambdaRuntime, SchedulerFirer]:
    """The local Lambda runtime for a moto backend and a firer whose Lambda targets it runs, both on
    ``clock`` (a handler's ``time.time()`` follows it)."""
    runtime = LambdaRuntime(
        backend.client,
        backend.lambda_code,
        backend.environment(),
        work_dir,
        region=backend.region,
        clock_offset=clock.offset_seconds,
    )
    # A schedule invokes its Lambda target asynchronously: moto runs no code, so the runtime does.
    firer = SchedulerFirer(backend.client, clock=clock, lambda_invoker=runtime.invoke_event)
    return runtime, firer


def next_one_time_due(firer: SchedulerFirer) -> datetime | None:
    """When the earliest pending one-time (``at()``) schedule is due (None: there is none)."""
    now = firer.now()
    due_times = []
    for schedule in firer.list_schedules():
        if not str(schedule.get("ScheduleExpression", "")).startswith("at("):
            continue
        due = firer.due_time(schedule, now + _HORIZON)
        if due is not None:
            due_times.append(due)
    return min(due_times) if due_times else None


def source_root_for(root_module: Path) -> Path:
    """The tree copied with the root module: the git repository holding it (its module sources and a
    workflows folder beside it resolve in the copy), else the root module's own folder."""
    for folder in (root_module, *root_module.parents):
        if (folder / ".git").exists():
            return folder
    return root_module


@dataclass
class AdvanceReport:
    now: datetime
    fired: list[FiredSchedule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    steps: int = 0
    # The next pending one-time schedule: wake-ups are set on whole minutes, so a 3-day wait started at
    # 10:00:20 fires at 10:01:00 three days on, a little after `advance 3d` (the running clock gets there).
    next_due: datetime | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "now": self.now.isoformat(),
            "next_due": self.next_due.isoformat() if self.next_due is not None else None,
            "fired": [
                {
                    "group": each.group_name,
                    "name": each.name,
                    "scheduled_time": each.scheduled_time.isoformat(),
                }
                for each in self.fired
            ],
            "errors": self.errors,
            "steps": self.steps,
        }


class LocalInfra:
    """A deployed root module on moto with its runtime and firer running; ``advance`` moves its clock."""

    def __init__(self, runtime: LambdaRuntime, firer: SchedulerFirer, clock: VirtualClock) -> None:
        self.runtime = runtime
        self.firer = firer
        self.clock = clock
        self._advance_lock = threading.Lock()
        self._reported_errors = 0

    def start(self) -> None:
        self.runtime.start()
        self.firer.start(FIRE_INTERVAL_SECONDS)

    def stop(self) -> None:
        self.firer.stop()
        self.runtime.close()

    def _settle(self, report: AdvanceReport) -> None:
        outcome = self.runtime.drain()
        report.errors.extend(str(error.get("errorMessage", error)) for error in outcome.errors)

    def advance(self, delta: timedelta) -> AdvanceReport:
        """Move the clock by ``delta``: each one-time schedule due on the way fires at its time and what it
        wakes runs (the queues drain) before the clock moves on, so a timer set by that run inside the span
        fires too; recurring schedules fire at each step they are due."""
        with self._advance_lock:
            target = self.clock.now() + delta
            report = AdvanceReport(now=self.clock.now())
            self._settle(report)
            while report.steps < MAX_ADVANCE_STEPS:
                due = next_one_time_due(self.firer)
                if due is None or due > target:
                    break
                self.clock.advance(max(due - self.clock.now(), timedelta(0)))
                report.fired.extend(self.firer.fire_due())
                self._settle(report)
                report.steps += 1
            else:
                report.errors.append(f"stopped after {MAX_ADVANCE_STEPS} wake-ups before the end of the span")
            self.clock.advance(max(target - self.clock.now(), timedelta(0)))
            report.fired.extend(self.firer.fire_due())
            self._settle(report)
            report.now = self.clock.now()
            report.next_due = next_one_time_due(self.firer)
            return report

    def new_background_errors(self) -> list[BaseException]:
        """Errors of the runtime's and firer's background threads not reported yet."""
        errors = [*self.runtime.background_errors, *self.firer.background_errors]
        fresh = errors[self._reported_errors :]
        self._reported_errors = len(errors)
        return fresh


def _control_handler(infra: LocalInfra, stopping: threading.Event) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path != "/status":
                self._answer(404, {"error": f"no route {self.path}"})
                return
            self._answer(200, {"status": READY, "now": infra.clock.now().isoformat()})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError as error:
                self._answer(400, {"error": f"the body is not JSON: {error}"})
                return
            if self.path == "/stop":
                self._answer(200, {"stopping": True})
                stopping.set()
            elif self.path == "/advance":
                seconds = body.get("seconds") if isinstance(body, dict) else None
                if not isinstance(seconds, int | float) or seconds < 0:
                    self._answer(400, {"error": f"seconds must be a number >= 0, got {seconds!r}"})
                    return
                self._answer(200, infra.advance(timedelta(seconds=seconds)).as_json())
            else:
                self._answer(404, {"error": f"no route {self.path}"})

        def log_message(self, format: str, *args: Any) -> None:
            return  # the requests are the user's own commands: nothing to log

    return Handler


@contextmanager
def control_endpoint(infra: LocalInfra, stopping: threading.Event) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _control_handler(infra, stopping))
    thread = threading.Thread(target=server.serve_forever, name="stepwell-local-control", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"http://{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()


def say(text: str) -> None:
    print(text, flush=True)


def _stop_on_sigterm(signal_number: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds like Ctrl-C, through every cleanup below


def _remove_state(state_dir: Path) -> None:
    """Remove what this server wrote; a detached run's log stays for `down` (which removes the folder)."""
    shutil.rmtree(state_dir / WORK_DIR_NAME, ignore_errors=True)
    for path in state_dir.glob("*"):
        if path.name != LOG_FILE_NAME:
            path.unlink(missing_ok=True)
    if not any(state_dir.iterdir()):
        state_dir.rmdir()


def serve(
    root_module: Path,
    *,
    source_root: Path | None = None,
    region: str = "us-east-1",
    variables: dict[str, str] | None = None,
    detached: bool = False,
) -> int:
    """Apply ``root_module`` on moto and keep it running until Ctrl-C, SIGTERM or ``/stop``."""
    root_module = root_module.resolve()
    tree = (source_root or source_root_for(root_module)).resolve()
    if tree != root_module and tree not in root_module.parents:
        say(f"error: the source root {tree} does not hold the root module {root_module}")
        return 2
    state_dir = state_dir_for(root_module)
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / ".gitignore").write_text("*\n")
    work_dir = state_dir / WORK_DIR_NAME
    log = str(state_dir / LOG_FILE_NAME) if detached else None
    state = LocalState(pid=os.getpid(), status=STARTING, root=str(root_module), log=log, detached=detached)
    state.write(state_dir)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        with start_backend("moto", region=region, log_dir=str(_made(work_dir))) as backend:
            say(f"Applying {root_module} to moto's server with Terraform (from a copy of {tree})...")
            stack = TerraformStack(
                backend,
                module_dir=str(root_module.relative_to(tree)),
                work_root=work_dir / "terraform",
                source_root=tree,
            )
            stack.variables.update(module_variables(stack.working_dir, backend))
            stack.variables.update(variables or {})
            outputs = stack.apply()
            config_path = state_dir / CLIENT_CONFIG_FILE_NAME
            config_path.write_text(json.dumps(client_config_output(outputs), indent=2) + "\n")
            clock = VirtualClock()
            clock_path = state_dir / CLOCK_FILE_NAME
            publish_clock(clock, str(clock_path))
            runtime, firer = runtime_and_firer(backend, work_dir / "lambda", clock)
            infra = LocalInfra(runtime, firer, clock)
            infra.start()
            try:
                with control_endpoint(infra, stopping) as control_url:
                    state.control_url = control_url
                    state.client_config = str(config_path)
                    state.environment = {
                        **backend.environment(),
                        # A client's wake-ups (Event invokes of the worker) run on the local runtime.
                        "AWS_ENDPOINT_URL_LAMBDA": runtime.lambda_endpoint_url,
                        "STEPWELL_CONFIG": str(config_path),
                        # A client stamps starts, stops and callbacks on the handlers' virtual clock.
                        CLOCK_OFFSET_FILE_ENV: str(clock_path),
                        PATH_ENV: str(root_module),
                    }
                    state.status = READY
                    state.write(state_dir)
                    say(ready_message(state) + f"Function logs: {work_dir / 'lambda' / 'logs'}/")
                    while not stopping.wait(0.5):
                        for error in infra.new_background_errors():
                            say(f"background error: {type(error).__name__}: {error}")
            finally:
                say("Stopping...")
                infra.stop()
    except KeyboardInterrupt:
        pass
    except (BackendUnavailable, TerraformError, StackCopyError, KeyError) as error:
        # The message says what failed (the apply's own error, a missing tool, a missing output).
        say(f"error: {error}")
        return 1
    finally:
        _remove_state(state_dir)
    say("Stopped.")
    return 0


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _assignment(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"--var wants NAME=VALUE, got {text!r}")
    return name, value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("root_module", type=Path)
    parser.add_argument("--source-root", type=Path, default=None)
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--var", type=_assignment, action="append", default=[])
    parser.add_argument("--detached", action="store_true", help="started by `stepwell local up --detach`")
    args = parser.parse_args(argv)
    return serve(
        args.root_module,
        source_root=args.source_root,
        region=args.region,
        variables=dict(args.var),
        detached=args.detached,
    )


if __name__ == "__main__":
    sys.exit(main())
