"""`stepwell flow WORKFLOW [--key K] [--domain D] [--json]` against a moto deployment: the limits, the
running and waiting executions of a key, and a rate limit's recent and delayed starts."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.clock import VirtualClock
from stepwell.core.flow_limits import Concurrency, Rate
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver
from .test_cli import _cli

CALLBACKS: dict[str, str] = {}  # customer -> the callback id of its latest run


@durable_execution
def held(event: dict[str, Any], context: DurableContext) -> str:
    answer = context.wait_for_callback(
        lambda callback_id, _: CALLBACKS.__setitem__(event["customer"], callback_id), name="reply"
    )
    return str(answer)


@pytest.fixture
def flow_env(deployment: Deployment, tmp_path: Path) -> tuple[Path, QueueDriver]:
    CALLBACKS.clear()
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps({"value": deployment.config.to_client_config()}))
    registry = Registry()
    registry.register("held", held, concurrency=Concurrency(1, key="$.customer"))
    registry.register("paced", held, rate=Rate(2, 3600))
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return config_file, QueueDriver(deployment, runtime, clock)


def _start(config_file: Path, workflow: str, customer: str, name: str) -> str:
    code, out, err = _cli(
        config_file, "start", workflow, "--input", json.dumps({"customer": customer}), "--name", name
    )
    assert (code, err) == (0, "")
    return out.strip()


def test_flow_shows_a_keys_limit_running_and_waiting_executions(flow_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = flow_env
    first, second, third = (_start(config_file, "held", "c-1", f"c1-{index}") for index in range(3))
    other = _start(config_file, "held", "c-2", "c2-0")
    driver.run_until_quiet()

    code, out, err = _cli(config_file, "flow", "held", "--key", "c-1")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "workflow 'held' in domain 'default', key 'c-1'",
        "concurrency: limit 1, running 1, waiting 2",
        f"  running  {first}",
        f"  next     {second}",
        f"  next     {third}",
        "rate: no state (no start has been counted under this key)",
    ]
    code, out, _ = _cli(config_file, "flow", "held", "--key", "c-2", "--json")
    assert code == 0 and json.loads(out) == {
        "workflow": "held",
        "domain": "default",
        "key": "c-2",
        "concurrency": {"limit": 1, "running": 1, "waiting": 0, "holders": [other], "next": []},
        "rate": None,
    }

    # The holder ends: the next in line starts and holds the slot.
    assert _cli(config_file, "callback", "success", CALLBACKS["c-1"], "--result", '"ok"')[0] == 0
    driver.run_until_quiet()
    code, out, _ = _cli(config_file, "flow", "held", "--key", "c-1", "--json")
    assert json.loads(out)["concurrency"] == {
        "limit": 1,
        "running": 1,
        "waiting": 1,
        "holders": [second],
        "next": [third],
    }
    assert json.loads(_cli(config_file, "describe", first)[1])["Status"] == "SUCCEEDED"

    code, out, _ = _cli(config_file, "flow", "held", "--key", "nobody")
    assert (code, out.splitlines()[1:]) == (
        0,
        [
            "concurrency: no state (no execution has been counted under this key)",
            "rate: no state (no start has been counted under this key)",
        ],
    )


def test_flow_shows_a_rate_limits_recent_and_delayed_starts(flow_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = flow_env
    started = [_start(config_file, "paced", "c-1", f"paced-{index}") for index in range(3)]
    driver.run_until_quiet(fire_schedules=False)  # the third is delayed by an hour: leave it so

    assert json.loads(_cli(config_file, "describe", started[2])[1])["Status"] == "RUNNING"
    assert _cli(config_file, "history", started[2], "--json")[1].strip() == "[]"
    code, out, err = _cli(config_file, "flow", "paced", "--json")
    assert (code, err) == (0, "")
    status = json.loads(out)
    rate = status["rate"]
    assert (status["key"], status["concurrency"]) == ("", None)
    assert (rate["limit"], rate["period"], rate["delayed"]) == (2, 3600, 1)
    # Two started within the hour; the next may start an hour after the second.
    assert rate["recentStarts"] == 2 and rate["nextStartAt"] > time.time() + 3500
    code, out, _ = _cli(config_file, "flow", "paced")
    assert out.splitlines()[0] == "workflow 'paced' in domain 'default', key none (the whole workflow)"
    assert out.splitlines()[2].startswith("rate: limit 2 per 3600s, 2 started in the last 3600s, 1 delayed, ")
    assert re.search(r"next start \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", out.splitlines()[2])
    assert "next start now" not in out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["flow"], 2, "the following arguments are required: workflow"),
        (["flow", "held", "--key"], 2, "argument --key: expected one argument"),
        (["flow", "held", "--limit", "3"], 2, "unrecognized arguments: --limit 3"),
        (["flow", "held", "--key", "a\tb"], 1, "invalid key 'a\\tb': the key's value, a string of at most"),
        (["flow", "held", "--domain", "a#b"], 1, "'a#b'"),
    ],
)
def test_a_bad_flow_argument_is_one_clear_line(
    flow_env: tuple[Path, QueueDriver], argv: list[str], code: int, message: str
) -> None:
    config_file, _ = flow_env
    got, out, err = _cli(config_file, *argv)
    assert (got, out) == (code, "") and err.startswith("stepwell: error: ") and message in err
    assert len(err.splitlines()) == 1
