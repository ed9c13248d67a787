"""`stepwell local up` publishes its virtual clock, and the CLI run with the environment `stepwell local env`
prints stamps starts, callbacks and stops on it (issue 39).

The handlers run on the stack's virtual clock. A CLI on the wall clock stamped a start made after
`stepwell local advance 3d` three days before its first run: describe showed it starting three days before
its first step, and a one-day execution timeout (counted from the start) ended it TIMED_OUT at its first
run. Here a scratch infra repo (outside this one, the module by a local path) runs on moto with this
repository's install; after `advance 3d` the CLI starts a workflow with a one-day execution timeout: its
start agrees with the virtual now and with its first run, it keeps running, its callback and a stop are
stamped on the virtual clock too, and it succeeds after the next `advance`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from stepwell.clock import CLOCK_OFFSET_FILE_ENV

pytestmark = [pytest.mark.deployed, pytest.mark.moto]

REPO = Path(__file__).resolve().parents[2]
STEPWELL = str(Path(sys.executable).parent / "stepwell")
DAY = 86400.0
# Two CLI runs apart on the virtual clock: each reads the clock when it stamps, between our two readings.
SLACK_SECONDS = 1.0
WORKFLOW = """
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from stepwell.core.registry import workflow


@workflow("orders.ship", execution_timeout=86400)
@durable_execution
def ship(event: dict, context: DurableContext) -> dict:
    packed = context.step(lambda _: f"packed {event['order_id']}", name="pack")
    picked = context.wait_for_callback(lambda callback_id, _: None, name="pick")
    context.wait(Duration.from_hours(2), name="cooling-off")
    return {"packed": packed, "picked": picked}
"""


def _infra_repo(root: Path) -> Path:
    infra = root / "infra"
    (infra / "workflows").mkdir(parents=True)
    (infra / "workflows" / "orders.py").write_text(WORKFLOW)
    module = os.path.relpath(REPO, infra)
    (infra / "main.tf").write_text(
        f'module "workflows" {{\n  source = "{module}"\n\n  name          = "clock-orders"\n'
        '  workflows_dir = "${path.root}/workflows"\n}\n\n'
        'output "client_config" {\n  value = module.workflows.client_config\n}\n'
    )
    return infra


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{shlex.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


class LocalStack:
    """The CLI against the running local stack, with the environment `stepwell local env` printed."""

    def __init__(self, cwd: Path, env: dict[str, str], control_url: str) -> None:
        self.cwd = cwd
        self.env = env
        self.control_url = control_url

    def stepwell(self, *arguments: str) -> str:
        return _run([STEPWELL, *arguments], self.cwd, self.env)

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


def _within(stamp: float, before: float, after: float) -> bool:
    return before - SLACK_SECONDS <= stamp <= after + SLACK_SECONDS


@pytest.fixture
def user_environment() -> dict[str, str]:
    """A user's shell: nothing of this repository's tests or AWS setup (this virtualenv's stepwell)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "STEPWELL_", "TF_CLI_CONFIG", "PYTEST"))
    }


def test_the_cli_on_the_printed_environment_stamps_on_the_stacks_virtual_clock(
    tmp_path: Path, user_environment: dict[str, str]
) -> None:
    team = tmp_path / "team"
    infra = _infra_repo(team)
    up = subprocess.run(
        [STEPWELL, "local", "up", "infra", "--detach"],
        cwd=team,
        env=user_environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    try:
        assert up.returncode == 0, f"{up.stdout}\n{up.stderr}"
        clock_file = infra / ".stepwell" / "clock"
        assert f"export {CLOCK_OFFSET_FILE_ENV}={clock_file}" in up.stdout
        exports = _run([STEPWELL, "local", "env", "infra"], team, user_environment)
        local_env = dict(
            shlex.split(line.removeprefix("export "))[0].split("=", 1) for line in exports.splitlines()
        )
        assert local_env[CLOCK_OFFSET_FILE_ENV] == str(clock_file)
        state = json.loads((infra / ".stepwell" / "local.json").read_text())
        stack = LocalStack(team, {**user_environment, **local_env}, state["control_url"])

        stack.stepwell("local", "advance", "3d")
        assert stack.virtual_now() - time.time() > 3 * DAY - 60
        before, output, after = stack.stamped(
            "start", "orders.ship", "--input", '{"order_id": "A-1"}', "--name", "order-A-1"
        )
        shipped = output.strip()
        callback_id, events = stack.waiting_callback(shipped)
        described = stack.describe(shipped)
        started = _epoch(described["StartTimestamp"])
        assert _within(started, before, after), (before, described, after)
        # Its first run follows its start (not three days on), inside its one-day execution timeout.
        assert described["Status"] == "RUNNING", described
        first_step = next(event for event in events if event["EventType"] == "StepSucceeded")
        assert 0 <= _epoch(first_step["EventTimestamp"]) - started < 60, (described, first_step)

        before, _, after = stack.stamped("callback", "success", callback_id, "--result", '"bay-3"')
        answered = next(event for event in stack.events(shipped) if event["EventType"] == "CallbackSucceeded")
        assert _within(_epoch(answered["EventTimestamp"]), before, after), (before, answered, after)

        stack.stepwell("local", "advance", "3h")  # the two-hour wait comes due
        described = stack.describe(shipped)
        assert described["Status"] == "SUCCEEDED", described
        assert json.loads(described["Result"]) == {
            "packed": "packed A-1",
            "picked": '"bay-3"',
        }  # JSON text: no serdes
        took = _epoch(described["EndTimestamp"]) - started
        assert 2 * 3600 <= took < DAY, described

        stopped = stack.stepwell("start", "orders.ship", "--input", '{"order_id": "B-2"}').strip()
        stack.waiting_callback(stopped)
        before, _, after = stack.stamped("stop", stopped)
        described = stack.describe(stopped)
        assert described["Status"] == "STOPPED", described
        assert _within(_epoch(described["EndTimestamp"]), before, after), (before, described, after)
    finally:
        down = subprocess.run(
            [STEPWELL, "local", "down", "infra"],
            cwd=team,
            env=user_environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert down.returncode == 0, f"{down.stdout}\n{down.stderr}"
    assert not (infra / ".stepwell").exists()
