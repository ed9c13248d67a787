"""Payload limits through the client and the `stepwell` CLI on a moto deployment (issue 37, item 3): a
start input or callback result over the deployment's limit is one error line naming the limit, the size
and the setting, and nothing is started, completed or put on the bus."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.cli import main
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.errors import PayloadTooLarge
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver

CALLBACK_IDS: list[str] = []
LIMIT = 2048


@durable_execution
def reply(event: Any, context: DurableContext) -> Any:
    return context.wait_for_callback(lambda callback_id, _: CALLBACK_IDS.append(callback_id), name="reply")


def text_of(size: int) -> str:
    return json.dumps("x" * (size - 2))


@pytest.fixture
def limited(deployment: Deployment, tmp_path: Path) -> tuple[Path, QueueDriver, Deployment]:
    """A deployment whose input and callback result limits are 2 KiB, its client_config file, its worker."""
    CALLBACK_IDS.clear()
    config = dataclasses.replace(
        deployment.config, max_execution_input_bytes=LIMIT, max_callback_result_bytes=LIMIT
    )
    limited = dataclasses.replace(deployment, config=config)
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps({"value": config.to_client_config()}))
    registry = Registry()
    registry.register("reply", reply)
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(config, deployment.clients, registry=registry, clock=clock)
    return config_file, QueueDriver(limited, runtime, clock), limited


def _cli(config_file: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config_file), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _one_error_line(code: int, out: str, err: str) -> str:
    assert code == 1 and out == "" and err.startswith("stepwell: error: ") and err.count("\n") == 1, err
    return err


def test_the_cli_refuses_a_start_input_one_byte_past_the_limit(
    limited: tuple[Path, QueueDriver, Deployment], tmp_path: Path
) -> None:
    config_file, _, deployment = limited
    past = tmp_path / "past.json"
    past.write_text(text_of(LIMIT + 1))

    err = _one_error_line(*_cli(config_file, "start", "reply", "--input-file", str(past), "--name", "past"))
    assert err == (
        "stepwell: error: the input of workflow 'reply' is 2,049 bytes; the limit on an execution's input is "
        "2,048 bytes (module variable max_execution_input_bytes, STEPWELL_MAX_EXECUTION_INPUT_BYTES)\n"
    )
    items = deployment.clients.dynamodb.scan(TableName=deployment.config.executions_table)["Items"]
    assert items == []

    code, out, err = _cli(config_file, "start", "reply", "--input", text_of(LIMIT), "--name", "at")
    assert (code, err) == (0, "") and out.strip() == "default#reply#at/at"


def test_the_cli_and_client_refuse_a_callback_result_one_byte_past_the_limit(
    limited: tuple[Path, QueueDriver, Deployment],
) -> None:
    config_file, driver, deployment = limited
    code, out, _ = _cli(config_file, "start", "reply", "--name", "waits")
    execution_id = out.strip()
    driver.run_until_quiet()
    [callback_id] = CALLBACK_IDS
    expected = (
        "the callback result is 2,049 bytes; the limit on a callback's result is 2,048 bytes "
        "(module variable max_callback_result_bytes, STEPWELL_MAX_CALLBACK_RESULT_BYTES)"
    )

    for via in ((), ("--via-bus",)):
        err = _one_error_line(
            *_cli(config_file, "callback", "success", callback_id, "--result", text_of(LIMIT + 1), *via)
        )
        assert err == f"stepwell: error: {expected}\n"
    client = StepwellClient(deployment.config, deployment.clients)
    with pytest.raises(PayloadTooLarge) as refused:
        client.publish_callback_event("success", callback_id, text_of(LIMIT + 1))
    assert str(refused.value) == expected
    driver.run_until_quiet()
    assert client.describe_execution(execution_id)["Status"] == "RUNNING"

    code, out, err = _cli(config_file, "callback", "success", callback_id, "--result", text_of(LIMIT))
    assert (code, err) == (0, "")
    driver.run_until_quiet()
    description = client.describe_execution(execution_id)
    assert description["Status"] == "SUCCEEDED" and json.loads(description["Result"]) == text_of(LIMIT)
