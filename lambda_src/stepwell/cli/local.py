"""`stepwell local`: your own Terraform root module on the embedded moto backend, on this machine.

    stepwell local up infra/              # apply infra/ on moto and keep it running until Ctrl-C
    stepwell local up infra/ --detach     # the same in the background, until `stepwell local down`
    eval "$(stepwell local env infra/)"   # AWS_ENDPOINT_URL, STEPWELL_CONFIG, ... in this shell
    stepwell local advance 3d infra/      # move its clock 3 days, firing each wake-up on the way
    stepwell local down infra/            # stop it and remove infra/.stepwell/

The server is stepwell.testing.local_infra (the test harness: moto's server, Terraform, the local Lambda
runtime and the scheduler firer; the `testing` extra). It runs as a process of its own, started here: the
CLI sits below the harness in the package layers and talks to it through its state file,
PATH/.stepwell/local.json (``LocalState``), and the control endpoint on 127.0.0.1 the file names
(``POST /advance {"seconds": N}``, ``GET /status``, ``POST /stop``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

STATE_DIR_NAME = ".stepwell"
STATE_FILE_NAME = "local.json"
LOG_FILE_NAME = "local.log"
CLIENT_CONFIG_FILE_NAME = "client_config.json"
# The server's virtual clock (stepwell.clock.clock_file_text): `env` points STEPWELL_CLOCK_OFFSET_FILE at it,
# so the CLI, the console and a client stamp starts, stops and callbacks on the clock the handlers run by.
CLOCK_FILE_NAME = "clock"
SERVER_MODULE = "stepwell.testing.local_infra"
# Where `advance`, `env` and `down` look when no PATH is given (`env` prints it), else the current folder.
PATH_ENV = "STEPWELL_LOCAL_PATH"
READY = "ready"
STARTING = "starting"
# An apply of the module on moto takes a minute or two; a slow machine gets more.
DEFAULT_START_TIMEOUT_SECONDS = 900.0
STOP_TIMEOUT_SECONDS = 60.0
ADVANCE_TIMEOUT_SECONDS = 900.0
# The packages of the `testing` extra the server needs (python-terraform's module is python_terraform).
NEEDED_MODULES = ("moto", "python_terraform")
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(?P<amount>\d+(?:\.\d+)?)(?P<unit>[wdhms])")


class LocalError(Exception):
    """A `stepwell local` command cannot do what it was asked (the CLI prints the message)."""


@dataclass
class LocalState:
    """PATH/.stepwell/local.json: the server's process, where it answers, and what a client needs."""

    pid: int
    status: str
    root: str
    control_url: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    client_config: str = ""
    log: str | None = None
    detached: bool = False

    @classmethod
    def read(cls, state_dir: Path) -> LocalState | None:
        try:
            data = json.loads((state_dir / STATE_FILE_NAME).read_text())
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as error:
            raise LocalError(
                f"{state_dir / STATE_FILE_NAME} is not JSON ({error}): remove {state_dir}"
            ) from error
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})

    def write(self, state_dir: Path) -> None:
        """Written whole (a reader never sees half a file)."""
        state_dir.mkdir(parents=True, exist_ok=True)
        staging = state_dir / f"{STATE_FILE_NAME}.{os.getpid()}.tmp"
        staging.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(staging, state_dir / STATE_FILE_NAME)


def state_dir_for(path: Path) -> Path:
    return path.resolve() / STATE_DIR_NAME


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``3d``, ``1d12h``, ``90m``, ``45s`` or ``2w``."""
    cleaned = text.strip().lower()
    matches = list(_DURATION.finditer(cleaned))
    if not matches or "".join(match.group(0) for match in matches) != cleaned:
        raise LocalError(
            f"duration {text!r}: write a number and a unit, w (weeks), d, h, m or s, e.g. 3d, 1d12h, 90m"
        )
    return sum(float(match["amount"]) * _UNIT_SECONDS[match["unit"]] for match in matches)


def export_lines(environment: Mapping[str, str]) -> str:
    return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in environment.items())


def ready_message(state: LocalState) -> str:
    """What `up` prints once the stack is up: the environment to use and the commands that follow."""
    root = state.root
    stop = "Ctrl-C here" if not state.detached else f"stepwell local down {shlex.quote(root)}"
    return (
        f"Stepwell is running {root} on moto (stop it with {stop}).\n"
        f"Client config: {state.client_config}\n"
        "Environment for the stepwell CLI, your client code and the AWS CLI (or: eval "
        f'"$(stepwell local env {shlex.quote(root)})"):\n'
        f"{export_lines(state.environment)}"
        f"Move the clock: stepwell local advance 3d {shlex.quote(root)}\n"
    )


# -- the server's process ------------------------------------------------------------------------------


def _process_state(pid: int) -> str | None:
    """The process's state letter from /proc (None: no such process, or no /proc here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def server_running(pid: int) -> bool:
    """True while the server's process lives (not a zombie, and running the server module)."""
    with contextlib.suppress(ChildProcessError, OSError):
        # Our own child (a `--detach` run from this process): reap it once it has ended.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if Path("/proc").is_dir():
        if _process_state(pid) in (None, "Z", "X"):
            return False
        with contextlib.suppress(OSError):
            # A reused pid is not ours to stop.
            return SERVER_MODULE in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    return True


def _control(state: LocalState, method: str, route: str, *, body: Any, timeout: float) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{state.control_url}{route}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        raise LocalError(f"the local stack refused {route}: {detail or error.reason}") from error
    return answer


def _running_state(path: Path) -> LocalState:
    state = LocalState.read(state_dir_for(path))
    if state is None:
        raise LocalError(
            f"nothing runs at {path.resolve()} (no {STATE_DIR_NAME}/{STATE_FILE_NAME} there): start it with "
            f"`stepwell local up {path}`, or name the folder you started (or set {PATH_ENV})"
        )
    if not server_running(state.pid):
        raise LocalError(
            f"the local stack of {state.root} is not running (pid {state.pid} has ended; its log: "
            f"{state.log or 'the terminal it ran in'}): `stepwell local down {state.root}` clears it"
        )
    if state.status != READY:
        raise LocalError(f"the local stack of {state.root} is still starting (applying the module): wait")
    return state


def _missing_extra() -> list[str]:
    return [name for name in NEEDED_MODULES if importlib.util.find_spec(name) is None]


def _server_command(args: argparse.Namespace, root: Path) -> list[str]:
    command = [sys.executable, "-m", SERVER_MODULE, str(root), "--region", args.region]
    if args.source_root is not None:
        command += ["--source-root", str(Path(args.source_root).resolve())]
    for assignment in args.var:
        command += ["--var", assignment]
    if args.detach:
        command.append("--detached")
    return command


def _wait_until_ready(
    process: subprocess.Popen[bytes], state_dir: Path, log: Path, timeout: float
) -> LocalState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = LocalState.read(state_dir)
        if state is not None and state.status == READY:
            return state
        if process.poll() is not None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:]) if log.exists() else ""
            raise LocalError(
                f"the local stack did not start (exit {process.returncode}); its log {log}:\n{tail}"
            )
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGTERM)
    raise LocalError(f"the local stack was not up after {timeout:.0f} s; see {log}")


def up(args: argparse.Namespace, out: TextIO) -> int:
    root = Path(args.path).resolve()
    if not root.is_dir() or not any(root.glob("*.tf")):
        raise LocalError(f"{root} is not a Terraform root module (a folder of .tf files)")
    missing = _missing_extra()
    if missing:
        raise LocalError(
            f"stepwell local needs the testing extra ({', '.join(missing)} missing): "
            "pip install 'stepwell[testing]'"
        )
    if shutil.which("terraform") is None:
        raise LocalError("terraform is not on PATH: install Terraform 1.9 or newer and run again")
    state_dir = state_dir_for(root)
    existing = LocalState.read(state_dir)
    if existing is not None and server_running(existing.pid):
        raise LocalError(
            f"{root} already runs locally (pid {existing.pid}): `stepwell local down {args.path}` first"
        )
    if existing is not None:
        shutil.rmtree(state_dir, ignore_errors=True)  # left by a server that did not stop cleanly
    command = _server_command(args, root)
    if not args.detach:
        # The server prints its progress and the environment, and stops on Ctrl-C (which reaches it too).
        process = subprocess.Popen(command)
        while True:
            try:
                return process.wait()
            except KeyboardInterrupt:
                continue
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / LOG_FILE_NAME
    with open(log, "ab") as handle:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    out.write(f"Starting {root} on moto in the background (pid {process.pid}, log {log})...\n")
    out.flush()
    state = _wait_until_ready(process, state_dir, log, args.timeout)
    out.write(ready_message(state))
    return 0


def env(args: argparse.Namespace, out: TextIO) -> int:
    state = _running_state(Path(args.path))
    out.write(export_lines(state.environment))
    return 0


def advance(args: argparse.Namespace, out: TextIO) -> int:
    seconds = parse_duration(args.duration)
    state = _running_state(Path(args.path))
    answer = _control(state, "POST", "/advance", body={"seconds": seconds}, timeout=ADVANCE_TIMEOUT_SECONDS)
    fired = answer.get("fired", [])
    out.write(f"clock moved {args.duration}: now {answer.get('now')}; fired {len(fired)} schedule(s)\n")
    for each in fired:
        out.write(f"  {each['scheduled_time']}  {each['group']}/{each['name']}\n")
    for error in answer.get("errors", []):
        out.write(f"  error: {error}\n")
    if answer.get("next_due"):
        # Wake-ups fall on whole minutes: one a few seconds on fires as the clock runs, or advance to it.
        out.write(f"next wake-up due {answer['next_due']}\n")
    return 0


def _signal_server(state: LocalState, signal_number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if state.detached:
            os.killpg(state.pid, signal_number)  # its session: Terraform and the workers too
        else:
            os.kill(state.pid, signal_number)


def _wait_for_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server_running(pid):
            return True
        time.sleep(0.2)
    return not server_running(pid)


def down(args: argparse.Namespace, out: TextIO) -> int:
    path = Path(args.path)
    state_dir = state_dir_for(path)
    state = LocalState.read(state_dir)
    if state is None:
        out.write(f"nothing runs at {path.resolve()}\n")
        shutil.rmtree(state_dir, ignore_errors=True)
        return 0
    if server_running(state.pid):
        if state.control_url:
            with contextlib.suppress(OSError, LocalError):
                _control(state, "POST", "/stop", body={}, timeout=10)
        else:
            _signal_server(state, signal.SIGTERM)  # still applying: no endpoint yet
        if not _wait_for_exit(state.pid, STOP_TIMEOUT_SECONDS):
            _signal_server(state, signal.SIGTERM)
            if not _wait_for_exit(state.pid, 10):
                _signal_server(state, signal.SIGKILL)
                _wait_for_exit(state.pid, 10)
        out.write(f"stopped the local stack of {state.root} (pid {state.pid})\n")
    else:
        out.write(f"the local stack of {state.root} had already ended (pid {state.pid})\n")
    shutil.rmtree(state_dir, ignore_errors=True)
    return 0


PATH_HELP = f"the folder given to `up` (default: ${PATH_ENV}, else the current folder)"


def _default_path() -> str:
    return os.environ.get(PATH_ENV) or "."


def add_commands(commands: Any) -> None:
    """The `local` command group, on the CLI's subparsers."""
    local = commands.add_parser(
        "local",
        help="run your own Terraform root module on the embedded moto backend (the 'testing' extra)",
        description="Run your Terraform root module on moto's server on this machine, with the local Lambda "
        "runtime and the scheduler firer, on a clock you move. State lives in PATH/.stepwell/.",
    )
    actions = local.add_subparsers(dest="local_command", required=True, metavar="ACTION")
    start = actions.add_parser(
        "up",
        help="apply PATH on moto and keep it running (until Ctrl-C, or `down` with --detach)",
        description="Start moto's server, apply the Terraform root module in PATH to it (from a copy: your "
        "folder and state are untouched), run its functions and fire its schedules until stopped; write the "
        "client config to PATH/.stepwell/ and print the environment to use.",
    )
    start.add_argument("path", metavar="PATH", help="the folder of your Terraform root module")
    start.add_argument(
        "--detach", "-d", action="store_true", help="run in the background (log in PATH/.stepwell/local.log)"
    )
    start.add_argument("--region", default="us-east-1", help="the region to deploy to (default: %(default)s)")
    start.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a Terraform variable for the root module (repeatable)",
    )
    start.add_argument(
        "--source-root",
        metavar="DIR",
        help="the tree copied with PATH (default: the git repository holding PATH, else PATH)",
    )
    start.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_START_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="with --detach: how long to wait for the apply (default: %(default).0f)",
    )
    show = actions.add_parser(
        "env",
        help="print the environment of a running local stack, as export lines",
        description="Print the environment variables that point the stepwell CLI, boto3 and the AWS CLI at a "
        "running local stack, and a Stepwell client at its virtual clock (STEPWELL_CLOCK_OFFSET_FILE), as "
        'shell export lines: eval "$(stepwell local env PATH)".',
    )
    show.add_argument("path", metavar="PATH", nargs="?", default=_default_path(), help=PATH_HELP)
    move = actions.add_parser(
        "advance",
        help="move the local stack's clock, firing each due schedule on the way (e.g. 3d)",
        description="Move the virtual clock of a running local stack forward. Each one-time schedule that "
        "comes due on the way (a wait, a retry's delay, a callback's timeout) fires at its time and what it "
        "wakes runs before the clock moves on; recurring schedules fire once at each step.",
    )
    move.add_argument("duration", help="how far: a number and a unit, w, d, h, m or s (3d, 1d12h, 90m)")
    move.add_argument("path", metavar="PATH", nargs="?", default=_default_path(), help=PATH_HELP)
    stop = actions.add_parser(
        "down",
        help="stop a local stack and remove PATH/.stepwell/",
        description="Stop the local stack of PATH (moto's server, the Lambda runtime's workers, the firer) "
        "and remove its state, PATH/.stepwell/. The deployment lived only in moto's memory.",
    )
    stop.add_argument("path", metavar="PATH", nargs="?", default=_default_path(), help=PATH_HELP)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run a `stepwell local` command; a LocalError is reported on one line (exit status 1)."""
    handlers = {"up": up, "env": env, "advance": advance, "down": down}
    try:
        return handlers[args.local_command](args, out)
    except LocalError as error:
        err.write(f"stepwell local: error: {error}\n")
        return 1
