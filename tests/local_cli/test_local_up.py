"""`stepwell local up` from an installed wheel, on a scratch infra repository outside this one: one stack,
applied once for this module's tests (an apply on moto takes a minute or more; the tests need one each
otherwise).

The wheel is built from a copy of the package (pip wheel --no-deps) and installed (--no-deps --no-index)
into a scratch virtualenv whose other packages are this virtualenv's, linked in one by one, without the
editable install's path file: its Python sees the wheel's stepwell and not this repository, as a user's
would. Every command below is that virtualenv's `stepwell`, run in a user's environment (nothing of this
repository's virtualenv, tests or AWS setup). The infra repository's root module calls this module by a
local path and deploys two workflows:

- `orders.ship` waits two days: a client starts it, `stepwell local advance 3d` moves the clock, it succeeds;
- `orders.pick` (issue 39) has a one-day execution timeout. The handlers run on the stack's virtual clock;
  a CLI on the wall clock stamped a start made after `advance 3d` three days before its first run, and the
  timeout (counted from the start) ended it TIMED_OUT at its first run. After `advance 3d` the CLI, with
  the environment `stepwell local env` prints, starts one: its start agrees with the virtual now and with
  its first run, it keeps running, its callback and a stop are stamped on the virtual clock too, and it
  succeeds after the next `advance`.

The last test stops the stack with `stepwell local down` and checks that no process and no state are left.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from stepwell.clock import CLOCK_OFFSET_FILE_ENV

pytestmark = [pytest.mark.deployed, pytest.mark.moto]

REPO = Path(__file__).resolve().parents[2]
# Not linked into the scratch virtualenv: this repository's editable install and path files.
UNLINKED_PREFIXES = ("stepwell", "__editable__", "_distutils_hack", "__pycache__")
DEPLOYMENT = "scratch-orders"
DAY = 86400.0
# Two CLI runs apart on the virtual clock: each reads the clock when it stamps, between our two readings.
SLACK_SECONDS = 1.0
WORKFLOWS = """
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.registry import workflow


@workflow("orders.ship")
@durable_execution
def ship(event: dict, context: DurableContext) -> dict:
    packed = context.step(lambda _: f"packed {event['order_id']}", name="pack")
    context.wait(Duration.from_days(2), name="cooling-off")
    return {"packed": packed}


@workflow("orders.pick", execution_timeout=86400)
@durable_execution
def pick(event: dict, context: DurableContext) -> dict:
    packed = context.step(lambda _: f"packed {event['order_id']}", name="pack")
    picked = context.wait_for_callback(lambda callback_id, _: None, name="pick")
    context.wait(Duration.from_hours(2), name="cooling-off")
    return {"packed": packed, "picked": picked}
"""
START_AND_WAIT = """
import json, os, sys, time
from stepwell.client import StepwellClient

client = StepwellClient.from_config_file(os.environ["STEPWELL_CONFIG"])
execution_id = client.start_execution("orders.ship", {"order_id": "A-1"}, execution_name="order-A-1")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    events = [event["EventType"] for event in client.get_execution_history(execution_id)]
    if "WaitStarted" in events:
        break
    time.sleep(0.5)
status = client.describe_execution(execution_id)["Status"]
print(json.dumps({"id": execution_id, "events": events, "status": status}))
"""
WHERE_STEPWELL_IS = "import json, sys, stepwell; print(json.dumps([stepwell.__file__, sys.path]))"


def _run(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{shlex.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done


def _build_wheel(work: Path) -> Path:
    source = work / "source"
    shutil.copytree(
        REPO / "lambda_src" / "stepwell",
        source / "lambda_src" / "stepwell",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("pyproject.toml", "LICENSE"):
        shutil.copyfile(REPO / name, source / name)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--quiet",
        "--wheel-dir",
        str(work / "wheel"),
    ]
    _run([*command, str(source)], work, dict(os.environ), timeout=300)
    return next((work / "wheel").glob("stepwell-*.whl"))


def _scratch_virtualenv(work: Path, wheel: Path, env: dict[str, str]) -> Path:
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work, env)
    python = venv / "bin" / "python"
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work, env
        ).stdout.strip()
    )
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(UNLINKED_PREFIXES) and entry.suffix != ".pth":
            (site / entry.name).symlink_to(entry)
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)], work, env)
    return venv


def _infra_repo(root: Path) -> Path:
    infra = root / "infra"
    (infra / "workflows").mkdir(parents=True)
    (infra / "workflows" / "orders.py").write_text(WORKFLOWS)
    module = os.path.relpath(REPO, infra)
    (infra / "main.tf").write_text(
        f'module "workflows" {{\n  source = "{module}"\n\n  name          = "{DEPLOYMENT}"\n'
        '  workflows_dir = "${path.root}/workflows"\n}\n\n'
        'output "stepwell_client_config" {\n  value = module.workflows.client_config\n}\n'
    )
    return infra


def _descendants(pid: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found = {pid}
    while True:
        more = {child for child, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _within(stamp: float, before: float, after: float) -> bool:
    return before - SLACK_SECONDS <= stamp <= after + SLACK_SECONDS


def _user_environment() -> dict[str, str]:
    """The environment of a user's shell: nothing of this repository's virtualenv, tests or AWS setup."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "VIRTUAL_ENV", "AWS_", "STEPWELL_", "TF_CLI_CONFIG", "PYTEST"))
    }


@dataclass
class UpStack:
    """The scratch infra repo's stack, started with the wheel's `stepwell local up infra --detach`."""

    team: Path
    infra: Path
    venv: Path
    env: dict[str, str]  # the user's shell with the scratch virtualenv first on PATH
    up: subprocess.CompletedProcess[str]
    down: subprocess.CompletedProcess[str] | None = None

    @property
    def stepwell_path(self) -> str:
        return str(self.venv / "bin" / "stepwell")

    def state(self) -> dict[str, Any]:
        assert self.down is None, "the stack was stopped by an earlier test (the last test stops it)"
        state: dict[str, Any] = json.loads((self.infra / ".stepwell" / "local.json").read_text())
        return state

    def local_env(self) -> dict[str, str]:
        """What `stepwell local env infra` prints, as a mapping."""
        exports = _run([self.stepwell_path, "local", "env", "infra"], self.team, self.env).stdout
        lines = exports.splitlines()
        return dict(shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in lines)

    def client_env(self) -> dict[str, str]:
        return {**self.env, **self.local_env()}

    def stop(self) -> subprocess.CompletedProcess[str]:
        self.down = subprocess.run(
            [self.stepwell_path, "local", "down", "infra"],
            cwd=self.team,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return self.down


@pytest.fixture(scope="module")
def up_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpStack]:
    root = tmp_path_factory.mktemp("local-up")
    user_environment = _user_environment()
    wheel = _build_wheel(root / "build")
    venv = _scratch_virtualenv(root / "build", wheel, user_environment)
    env = {**user_environment, "PATH": f"{venv / 'bin'}{os.pathsep}{user_environment.get('PATH', '')}"}
    team = root / "team"
    infra = _infra_repo(team)
    up = subprocess.run(
        [str(venv / "bin" / "stepwell"), "local", "up", "infra", "--detach"],
        cwd=team,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    stack = UpStack(team=team, infra=infra, venv=venv, env=env, up=up)
    try:
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        yield stack
    finally:
        if stack.down is None:  # the last test stops it and checks what is left; else stop it here
            stack.stop()


def test_the_scratch_virtualenv_runs_the_wheel_and_not_this_repository(up_stack: UpStack) -> None:
    python = str(up_stack.venv / "bin" / "python")
    where, path = json.loads(_run([python, "-c", WHERE_STEPWELL_IS], up_stack.team, up_stack.env).stdout)
    assert Path(where).is_relative_to(up_stack.venv), where
    assert not any(entry.startswith(str(REPO)) for entry in path), path


def test_local_up_prints_the_config_and_clock_and_local_env_repeats_them(up_stack: UpStack) -> None:
    infra = up_stack.infra
    clock_file = infra / ".stepwell" / "clock"
    assert f"export STEPWELL_CONFIG={infra}/.stepwell/client_config.json" in up_stack.up.stdout
    assert f"export {CLOCK_OFFSET_FILE_ENV}={clock_file}" in up_stack.up.stdout
    local_env = up_stack.local_env()
    assert local_env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
    assert local_env[CLOCK_OFFSET_FILE_ENV] == str(clock_file)


def test_a_two_day_wait_started_by_a_client_ends_after_local_advance(up_stack: UpStack) -> None:
    python, stepwell = str(up_stack.venv / "bin" / "python"), up_stack.stepwell_path
    client_env = up_stack.client_env()
    started = json.loads(_run([python, "-c", START_AND_WAIT], up_stack.team, client_env).stdout)
    assert started["status"] == "RUNNING", started
    assert "WaitStarted" in started["events"], started

    advanced = _run([stepwell, "local", "advance", "3d"], up_stack.team, client_env).stdout
    assert "fired" in advanced and f"{DEPLOYMENT}/sw-" in advanced, advanced
    described = json.loads(_run([stepwell, "describe", started["id"]], up_stack.team, client_env).stdout)
    assert described["Status"] == "SUCCEEDED", described
    assert json.loads(described["Result"]) == {"packed": "packed A-1"}


class VirtualClockCli:
    """The CLI against the running local stack, with the environment `stepwell local env` printed."""

    def __init__(self, stack: UpStack) -> None:
        self.stack = stack
        self.env = stack.client_env()
        self.control_url = stack.state()["control_url"]

    def stepwell(self, *arguments: str) -> str:
        return _run([self.stack.stepwell_path, *arguments], self.stack.team, self.env).stdout

    def virtual_now(self) -> float:
        with urllib.request.urlopen(f"{self.control_url}/status", timeout=10) as response:
            return _epoch(json.loads(response.read())["now"])

    def stamped(self, *arguments: str) -> tuple[float, str, float]:
        """Run a command; the virtual clock's readings just before and just after it."""
        before = self.virtual_now()
        output = self.stepwell(*arguments)
        return before, output, self.virtual_now()

    def describe(self, execution_id: str) -> dict[str, Any]:
        description: dict[str, Any] = json.loads(self.stepwell("describe", execution_id))
        return description

    def events(self, execution_id: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = json.loads(self.stepwell("history", execution_id, "--json"))
        return events

    def waiting_callback(self, execution_id: str) -> tuple[str, list[dict[str, Any]]]:
        """Once the first run is done (it waits for its callback): the callback's id and the history."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            events = self.events(execution_id)
            for event in events:
                if event["EventType"] == "CallbackStarted":
                    return event["CallbackStartedDetails"]["CallbackId"], events
            if self.describe(execution_id)["Status"] != "RUNNING":
                break
            time.sleep(0.5)
        pytest.fail(f"{execution_id} never waited for its callback: {self.describe(execution_id)}")


def test_the_cli_on_the_printed_environment_stamps_on_the_stacks_virtual_clock(up_stack: UpStack) -> None:
    cli = VirtualClockCli(up_stack)
    cli.stepwell("local", "advance", "3d")
    assert cli.virtual_now() - time.time() > 3 * DAY - 60
    before, output, after = cli.stamped(
        "start", "orders.pick", "--input", '{"order_id": "A-1"}', "--name", "pick-A-1"
    )
    picking = output.strip()
    callback_id, events = cli.waiting_callback(picking)
    described = cli.describe(picking)
    started = _epoch(described["StartTimestamp"])
    assert _within(started, before, after), (before, described, after)
    # Its first run follows its start (not three days on), inside its one-day execution timeout.
    assert described["Status"] == "RUNNING", described
    first_step = next(event for event in events if event["EventType"] == "StepSucceeded")
    assert 0 <= _epoch(first_step["EventTimestamp"]) - started < 60, (described, first_step)

    before, _, after = cli.stamped("callback", "success", callback_id, "--result", '"bay-3"')
    answered = next(event for event in cli.events(picking) if event["EventType"] == "CallbackSucceeded")
    assert _within(_epoch(answered["EventTimestamp"]), before, after), (before, answered, after)

    cli.stepwell("local", "advance", "3h")  # the two-hour wait comes due
    described = cli.describe(picking)
    assert described["Status"] == "SUCCEEDED", described
    assert json.loads(described["Result"]) == {
        "packed": "packed A-1",
        "picked": '"bay-3"',
    }  # JSON text: no serdes
    took = _epoch(described["EndTimestamp"]) - started
    assert 2 * 3600 <= took < DAY, described

    stopped = cli.stepwell("start", "orders.pick", "--input", '{"order_id": "B-2"}').strip()
    cli.waiting_callback(stopped)
    before, _, after = cli.stamped("stop", stopped)
    described = cli.describe(stopped)
    assert described["Status"] == "STOPPED", described
    assert _within(_epoch(described["EndTimestamp"]), before, after), (before, described, after)


def test_local_down_stops_every_process_and_leaves_no_state(up_stack: UpStack) -> None:
    """Last in this module: it stops the stack the tests above share."""
    processes = _descendants(up_stack.state()["pid"])
    assert len(processes) >= 2, processes  # the server and moto's server, at least

    down = up_stack.stop()

    assert down.returncode == 0, f"{down.stdout}\n{down.stderr}"
    assert "stopped the local stack" in down.stdout
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in processes if _alive(pid)]
    assert not (up_stack.infra / ".stepwell").exists()
    assert sorted(path.name for path in up_stack.infra.iterdir()) == ["main.tf", "workflows"]
