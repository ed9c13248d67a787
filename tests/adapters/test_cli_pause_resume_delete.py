"""`stepwell pause`, `resume` and `delete` against a moto deployment (the test plays the worker Lambda): an
execution addressed by its name is paused, listed and described as paused, resumed, and once ended deleted;
what each refuses is one line naming why."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.cli import main
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

CALLBACK_IDS: list[str] = []
EXECUTION_ID = "default#approve#po-1/po-1"


@durable_execution
def approve(event: dict[str, Any], context: DurableContext) -> Any:
    return context.wait_for_callback(lambda callback_id, _: CALLBACK_IDS.append(callback_id), name="ok")


@pytest.fixture
def cli_env(deployment: Deployment, tmp_path: Path) -> tuple[Path, QueueDriver]:
    CALLBACK_IDS.clear()
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps({"value": deployment.config.to_client_config()}))
    registry = Registry()
    registry.register("approve", approve)
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return config_file, QueueDriver(deployment, runtime, clock)


def _cli(config_file: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config_file), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _ok(config_file: Path, *argv: str) -> str:
    code, out, err = _cli(config_file, *argv)
    assert (code, err) == (0, ""), err
    return out


def test_pause_resume_and_delete_an_execution_by_its_name(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    by_name = ("po-1", "--workflow", "approve")
    _ok(config_file, "start", "approve", "--name", "po-1")
    driver.run_until_quiet()

    assert _ok(config_file, "pause", *by_name, "--reason", "supplier down") == (
        f"{EXECUTION_ID}: pausing (now PAUSING)\n"
    )
    driver.run_until_quiet()
    described = json.loads(_ok(config_file, "describe", *by_name))
    assert described["Status"] == "PAUSED"
    details = described["PauseDetails"]
    assert details["Reason"] == "supplier down" and details["ExecutionTimeoutPaused"] is True
    assert details["PauseRequestTimestamp"].endswith("Z")  # ISO 8601, as the other times
    assert (
        _ok(config_file, "executions", "pause", EXECUTION_ID)
        == f"{EXECUTION_ID}: was paused already (now PAUSED)\n"
    )
    listed = _ok(config_file, "list", "--status", "PAUSED")
    assert EXECUTION_ID in listed
    code, _, err = _cli(config_file, "delete", *by_name)
    assert code == 1 and "has not ended (PAUSED)" in err and "stop it first" in err

    assert _ok(config_file, "resume", *by_name, "--reason", "supplier back") == f"{EXECUTION_ID}: resumed\n"
    assert _ok(config_file, "resume", *by_name) == f"{EXECUTION_ID}: was not paused\n"
    _ok(config_file, "callback", "success", CALLBACK_IDS[0], "--result", '"yes"')
    driver.run_until_quiet()
    history = _ok(config_file, "history", *by_name)
    assert "ExecutionPaused" in history and "reason: supplier down" in history
    assert "ExecutionResumed" in history and "reason: supplier back" in history
    code, _, err = _cli(config_file, "pause", *by_name)
    assert code == 1 and "has ended (SUCCEEDED)" in err

    out = _ok(config_file, "delete", *by_name)
    assert out.startswith(f"{EXECUTION_ID}: deleting (requested 20") and out.endswith("being removed\n")
    assert json.loads(_ok(config_file, "describe", *by_name))["Status"] == "DELETING"
    driver.run_until_quiet()

    code, _, err = _cli(config_file, "describe", *by_name)
    assert code == 1 and "no execution named 'po-1' of workflow 'approve'" in err
    code, _, err = _cli(config_file, "delete", EXECUTION_ID)
    assert code == 1 and "no execution" in err


def test_pause_with_the_timeout_running_on(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    _ok(config_file, "start", "approve", "--name", "po-1")
    driver.run_until_quiet()

    _ok(config_file, "pause", EXECUTION_ID, "--timeout-keeps-running")
    driver.run_until_quiet()

    details = json.loads(_ok(config_file, "describe", EXECUTION_ID))["PauseDetails"]
    assert details["ExecutionTimeoutPaused"] is False and "Reason" not in details
