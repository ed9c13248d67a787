"""The `stepwell` CLI against a moto deployment, with the test playing the worker Lambda."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.cli import main
from stepwell.clock import VirtualClock
from stepwell.entry import EntryRuntime
from stepwell.registry import Registry

from .deployment import Deployment
from .driver import QueueDriver

CALLBACK_IDS: list[str] = []


@durable_execution
def greet(event: dict[str, Any], context: DurableContext) -> str:
    name = context.step(lambda _: event["name"].title(), name="capitalize")
    answer = context.wait_for_callback(lambda callback_id, _: CALLBACK_IDS.append(callback_id), name="reply")
    return f"{name}: {answer}"


@pytest.fixture
def cli_env(deployment: Deployment, tmp_path: Path) -> tuple[Path, QueueDriver]:
    CALLBACK_IDS.clear()
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps({"value": deployment.config.to_client_config()}))
    registry = Registry()
    registry.register("greet", greet)
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return config_file, QueueDriver(deployment, runtime, clock)


def _cli(config_file: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config_file), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_start_callback_describe_list_and_history(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    code, out, err = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "hello-1")
    assert (code, err) == (0, "")
    execution_id = out.strip()
    assert execution_id == "default#greet#hello-1/hello-1"
    driver.run_until_quiet()
    assert len(CALLBACK_IDS) == 1

    code, out, _ = _cli(config_file, "callback", "heartbeat", CALLBACK_IDS[0], "--via-bus")
    assert code == 0 and "heartbeat published as event" in out
    code, out, _ = _cli(config_file, "callback", "success", CALLBACK_IDS[0], "--result", "hi there")
    assert code == 0 and "success sent" in out
    driver.run_until_quiet()

    code, out, _ = _cli(config_file, "describe", execution_id)
    description = json.loads(out)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"]) == "Ada: hi there"

    code, out, _ = _cli(config_file, "list", "--status", "SUCCEEDED")
    assert code == 0 and out.split()[0] == "SUCCEEDED" and out.strip().endswith(execution_id)
    code, out, _ = _cli(config_file, "list", "--domain", "default", "--subject", "hello-1", "--json")
    assert [row["ExecutionId"] for row in json.loads(out)["Executions"]] == [execution_id]

    code, out, _ = _cli(config_file, "history", execution_id)
    lines = out.strip().splitlines()
    assert "ExecutionStarted" in lines[0] and "ExecutionSucceeded" in lines[-1]
    assert any("CallbackSucceeded" in line for line in lines)
    code, out, _ = _cli(config_file, "history", execution_id, "--json")
    assert json.loads(out)[0]["EventType"] == "ExecutionStarted"


def test_list_pages_with_next_token(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, _ = cli_env
    for index in range(3):
        assert _cli(config_file, "start", "greet", "--input", '{"name": "x"}', "--name", f"n{index}")[0] == 0
    code, out, _ = _cli(config_file, "list", "--workflow", "greet", "--limit", "2")
    first_page = out.strip().splitlines()
    assert len(first_page) == 3 and first_page[-1].startswith("more: --next-token ")
    token = first_page[-1].split()[-1]
    code, out, _ = _cli(config_file, "list", "--workflow", "greet", "--limit", "2", "--next-token", token)
    assert len(out.strip().splitlines()) == 1
    code, out, _ = _cli(config_file, "list", "--workflow", "greet", "--limit", "2", "--all", "--json")
    assert code == 0 and len(json.loads(out)["Executions"]) == 3


def test_stop_and_fail_callback(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    to_fail = _cli(config_file, "start", "greet", "--input", '{"name": "a"}', "--name", "to-fail")[1].strip()
    driver.run_until_quiet()
    to_stop = _cli(config_file, "start", "greet", "--input", '{"name": "b"}', "--name", "to-stop")[1].strip()
    driver.run_until_quiet()
    assert len(CALLBACK_IDS) == 2

    code, out, _ = _cli(config_file, "stop", to_stop, "--error-message", "operator stop")
    assert (code, out.strip()) == (0, f"{to_stop}: stopped")
    assert _cli(config_file, "stop", to_stop)[1].strip() == f"{to_stop}: had already ended"
    code, _, err = _cli(
        config_file, "callback", "fail", CALLBACK_IDS[0], "--error-type", "Rejected", "--error-message", "no"
    )
    assert (code, err) == (0, "")
    code, _, err = _cli(config_file, "callback", "success", CALLBACK_IDS[1])
    assert code == 1 and "has ended" in err
    driver.run_until_quiet()

    failed = json.loads(_cli(config_file, "describe", to_fail)[1])
    assert failed["Status"] == "FAILED"
    stopped = json.loads(_cli(config_file, "describe", to_stop)[1])
    assert stopped["Status"] == "STOPPED" and stopped["Error"]["ErrorMessage"] == "operator stop"
    assert "ExecutionStopped" in _cli(config_file, "history", to_stop)[1].strip().splitlines()[-1]


def test_user_errors_are_one_clear_line(cli_env: tuple[Path, QueueDriver], tmp_path: Path) -> None:
    config_file, _ = cli_env
    code, _, err = _cli(config_file, "start", "greet", "--input", "{oops")
    assert code == 1 and err.startswith("stepwell: error: --input is not valid JSON")
    code, _, err = _cli(config_file, "describe", "default#greet#nobody/nobody")
    assert code == 1 and "no execution with id 'default#greet#nobody/nobody'" in err
    code, _, err = _cli(config_file, "start", "bad name!")
    assert code == 1 and "invalid workflow name 'bad name!'" in err
    code, _, err = _cli(config_file, "list", "--workflow", "greet", "--subject", "s")
    assert code == 1 and "--subject filters within a domain" in err
    code, _, err = _cli(config_file, "callback", "success", "no-such-callback")
    assert code == 1 and "no-such-callback" in err
    missing = tmp_path / "missing.json"
    code, _, err = _cli(missing, "list", "--status", "RUNNING")
    assert code == 1 and "cannot read the Stepwell config file" in err
    code, _, err = _cli(config_file, "--endpoint-url", "http://127.0.0.1:9", "list", "--status", "RUNNING")
    assert code == 1 and err.startswith("stepwell: error: AWS request failed")
    with pytest.raises(SystemExit) as usage:
        main(["list"], out=io.StringIO(), err=io.StringIO())
    assert usage.value.code == 2


def test_dlq_redrive(cli_env: tuple[Path, QueueDriver], deployment: Deployment) -> None:
    config_file, driver = cli_env
    sqs = deployment.clients.sqs
    for index in range(3):
        sqs.send_message(
            QueueUrl=deployment.config.dlq_url, MessageBody=json.dumps({"kind": "junk", "n": index})
        )
    code, out, _ = _cli(config_file, "dlq", "redrive", "--max", "2")
    assert (code, out.strip()) == (0, "moved 2 messages from the DLQ to the work queue")
    code, out, _ = _cli(config_file, "dlq", "redrive")
    assert (code, out.strip()) == (0, "moved 1 messages from the DLQ to the work queue")
    assert sorted(json.loads(body)["n"] for body in driver.pending_bodies()) == [0, 1, 2]


def test_definitions_commands_are_wired_in(cli_env: tuple[Path, QueueDriver], tmp_path: Path) -> None:
    config_file, _ = cli_env
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    code, _, err = _cli(tmp_path / "no-config-needed.json", "definitions", "validate", str(broken))
    assert code == 1 and err.startswith(f"stepwell: error: {broken}: ")
    code, out, err = _cli(config_file, "definitions", "list", "--domain", "acme")
    assert (code, out, err) == (0, "", "")
