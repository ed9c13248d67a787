"""`stepwell local up` from an installed wheel, on a scratch infra repository outside this one.

The wheel is built from a copy of the package (pip wheel --no-deps) and installed (--no-deps --no-index)
into a scratch virtualenv whose other packages are this virtualenv's, linked in one by one, without the
editable install's path file: its Python sees the wheel's stepwell and not this repository, as a user's
would. The infra repository's root module calls this module by a local path and deploys one workflow that
waits two days; the test starts it with the client, moves the clock three days with `stepwell local
advance`, sees it succeed, and checks that `stepwell local down` leaves no process and no state behind.
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
from pathlib import Path

import pytest

pytestmark = [pytest.mark.deployed, pytest.mark.moto]

REPO = Path(__file__).resolve().parents[2]
# Not linked into the scratch virtualenv: this repository's editable install and path files.
UNLINKED_PREFIXES = ("stepwell", "__editable__", "_distutils_hack", "__pycache__")
WORKFLOW = """
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.registry import workflow


@workflow("orders.ship")
@durable_execution
def ship(event: dict, context: DurableContext) -> dict:
    packed = context.step(lambda _: f"packed {event['order_id']}", name="pack")
    context.wait(Duration.from_days(2), name="cooling-off")
    return {"packed": packed}
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
    (infra / "workflows" / "orders.py").write_text(WORKFLOW)
    module = os.path.relpath(REPO, infra)
    (infra / "main.tf").write_text(
        f'module "workflows" {{\n  source = "{module}"\n\n  name          = "scratch-orders"\n'
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


@pytest.fixture
def user_environment() -> dict[str, str]:
    """The environment of a user's shell: nothing of this repository's virtualenv, tests or AWS setup."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTHON", "VIRTUAL_ENV", "AWS_", "STEPWELL_", "TF_CLI_CONFIG", "PYTEST"))
    }


def test_local_up_from_an_installed_wheel_runs_a_scratch_infra_repo_until_down(
    tmp_path: Path, user_environment: dict[str, str]
) -> None:
    wheel = _build_wheel(tmp_path / "build")
    venv = _scratch_virtualenv(tmp_path / "build", wheel, user_environment)
    env = {**user_environment, "PATH": f"{venv / 'bin'}{os.pathsep}{user_environment.get('PATH', '')}"}
    team = tmp_path / "team"
    infra = _infra_repo(team)

    where, path = json.loads(_run([str(venv / "bin" / "python"), "-c", WHERE_STEPWELL_IS], team, env).stdout)
    assert Path(where).is_relative_to(venv), where
    assert not any(entry.startswith(str(REPO)) for entry in path), path

    stepwell = str(venv / "bin" / "stepwell")
    up = subprocess.run(
        [stepwell, "local", "up", "infra", "--detach"],
        cwd=team,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    try:
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        assert f"export STEPWELL_CONFIG={infra}/.stepwell/client_config.json" in up.stdout
        state = json.loads((infra / ".stepwell" / "local.json").read_text())
        exports = _run([stepwell, "local", "env", "infra"], team, env).stdout
        local_env = dict(
            shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in exports.splitlines()
        )
        assert local_env["AWS_ENDPOINT_URL"].startswith("http://127.0.0.1:")
        client_env = {**env, **local_env}

        started = json.loads(
            _run([str(venv / "bin" / "python"), "-c", START_AND_WAIT], team, client_env).stdout
        )
        assert started["status"] == "RUNNING", started
        assert "WaitStarted" in started["events"], started

        advanced = _run([stepwell, "local", "advance", "3d"], team, client_env).stdout
        assert "fired" in advanced and "scratch-orders/sw-" in advanced, advanced
        described = json.loads(_run([stepwell, "describe", started["id"]], team, client_env).stdout)
        assert described["Status"] == "SUCCEEDED", described
        assert json.loads(described["Result"]) == {"packed": "packed A-1"}
        processes = _descendants(state["pid"])
        assert len(processes) >= 2, processes  # the server and moto's server, at least
    finally:
        down = subprocess.run(
            [stepwell, "local", "down", "infra"],
            cwd=team,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert down.returncode == 0, f"{down.stdout}\n{down.stderr}"
    assert "stopped the local stack" in down.stdout
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in processes if _alive(pid)]
    assert not (infra / ".stepwell").exists()
    assert sorted(path.name for path in infra.iterdir()) == ["main.tf", "workflows"]
