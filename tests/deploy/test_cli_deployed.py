"""The `stepwell` command line, run as a user runs it (a child process with the deployment's config), on
each backend's server: the DLQ redrive with and without --max, bad input as one line, and the worker's code
versions with the running executions pinned to each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from deployed_backend import DeployedTarget
from stepwell.testing.deployed_fixtures import DeployedStack

from deploy.queues import set_mapping_enabled, take_marked

CLI_TIMEOUT_SECONDS = 300.0
RUN_TIMEOUT_SECONDS = 120.0


def _stepwell(stack: DeployedStack, config_file: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stepwell.cli", "--config", str(config_file), *arguments],
        env={**os.environ, **stack.backend.environment()},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_SECONDS,
        check=False,
    )


def _config_file(stack: DeployedStack, tmp_path: Path) -> Path:
    path = tmp_path / "client_config.json"
    path.write_text(json.dumps({"value": stack.client_config}))
    return path


def test_dlq_redrive_moves_every_dead_letter_back_with_and_without_max(
    deployed_stack: DeployedStack, tmp_path: Path
) -> None:
    config = deployed_stack.client_config
    backend = deployed_stack.backend
    config_file = _config_file(deployed_stack, tmp_path)
    marker = f"redrive-{uuid.uuid4().hex}"
    sqs = backend.client("sqs")
    # More than one receive's worth (SQS returns at most 10 per ReceiveMessage).
    for n in range(13):
        sqs.send_message(QueueUrl=config["dlq_url"], MessageBody=json.dumps({"marker": marker, "n": n}))
    # Paused, the worker leaves the redriven messages on the work queue for the test to read.
    set_mapping_enabled(backend, config["worker_function_name"], False)
    try:
        limited = _stepwell(deployed_stack, config_file, "dlq", "redrive", "--max", "3")
        assert (limited.returncode, limited.stderr) == (0, "")
        assert limited.stdout == "moved 3 messages from the DLQ to the work queue\n"
        moved = take_marked(backend, config["work_queue_url"], marker, 3)
        assert len(moved) == 3

        everything = _stepwell(deployed_stack, config_file, "dlq", "redrive")
        assert (everything.returncode, everything.stderr) == (0, "")
        # moto's server lacks StartMessageMoveTask: the CLI moves the messages itself. LocalStack (and
        # AWS) move them with a move task.
        assert everything.stdout == "moved 10 messages from the DLQ to the work queue\n" or (
            everything.stdout.startswith("redrive started (SQS message move task ")
        )
        moved += take_marked(backend, config["work_queue_url"], marker, 10)
        assert sorted(json.loads(body)["n"] for body in moved) == list(range(13))
    finally:
        set_mapping_enabled(backend, config["worker_function_name"], True)


def test_bad_input_is_one_line_and_a_non_zero_exit(deployed_stack: DeployedStack, tmp_path: Path) -> None:
    config_file = _config_file(deployed_stack, tmp_path)
    for arguments, expected in [
        (("definitions", "get", "nope", "--domain", "acme"), "no definition 'nope' in domain 'acme'"),
        (("event", "send", "", "--domain", "acme", "--subject", "u1"), "invalid event name ''"),
        (("callback", "success", "-no-such-callback"), "no callback with id '-no-such-callback'"),
        (("start", "orders.fulfil", "--input", "[Infinity]"), "--input is not valid JSON"),
    ]:
        done = _stepwell(deployed_stack, config_file, *arguments)
        assert done.returncode == 1, (arguments, done.stderr)
        assert done.stderr.startswith("stepwell: error: ") and done.stderr.count("\n") == 1, done.stderr
        assert expected in done.stderr


def test_versions_lists_the_worker_versions_and_the_executions_pinned_to_each(
    deployed_stack: DeployedStack, deployed_target: DeployedTarget, tmp_path: Path
) -> None:
    config = deployed_stack.client_config
    config_file = _config_file(deployed_stack, tmp_path)
    functions = deployed_stack.backend.client("lambda")
    name, alias = config["worker_function_name"], config.get("worker_alias", "live")
    name_option = f"--name=cli-versions-{uuid.uuid4().hex[:10]}"
    started = _stepwell(
        deployed_stack, config_file, "start", "versioned.stable", "--input", '{"name": "ana"}', name_option
    )
    assert (started.returncode, started.stderr) == (0, "")
    execution_id = started.stdout.strip()
    # Its first run pins it to the live version; it then waits a day. The CLI's start woke it by invoking
    # the worker's alias, which LocalStack runs by itself: a quiet queue does not mean it ran yet.
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    while True:
        deployed_target.process_queue()
        described = json.loads(
            _stepwell(deployed_stack, config_file, "executions", "describe", execution_id).stdout
        )
        if described.get("Version") or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    live = functions.get_alias(FunctionName=name, Name=alias)["FunctionVersion"]
    assert (described["Status"], described["Version"]) == ("RUNNING", live)

    listed = _stepwell(deployed_stack, config_file, "versions", "--json")
    assert (listed.returncode, listed.stderr) == (0, "")
    versions = json.loads(listed.stdout)["Versions"]
    published = [
        each["Version"]
        for page in functions.get_paginator("list_versions_by_function").paginate(FunctionName=name)
        for each in page["Versions"]
        if each["Version"] != "$LATEST"
    ]
    assert [each["version"] for each in versions] == sorted(published, key=int)
    assert [each["version"] for each in versions if alias in each["aliases"]] == [live]
    running = {each["version"]: each["running"] for each in versions}
    assert running[live] >= 1
    table = _stepwell(deployed_stack, config_file, "versions").stdout.splitlines()
    assert table[0].split() == ["VERSION", "ALIASES", "RUNNING", "LAST-MODIFIED"]
    assert [line.split()[:3] for line in table[1:] if line.split()[0] == live] == [
        [live, alias, str(running[live])]
    ]

    upgrade = _stepwell(
        deployed_stack, config_file, "executions", "upgrade", execution_id, "--to-version", alias
    )
    assert (upgrade.returncode, upgrade.stdout) == (0, f"{execution_id}: already on version {live}\n")
    assert _stepwell(deployed_stack, config_file, "stop", execution_id).stdout == f"{execution_id}: stopped\n"
    after = json.loads(_stepwell(deployed_stack, config_file, "versions", "--json").stdout)["Versions"]
    # An ended execution no longer counts (it keeps the version it ran on).
    assert {each["version"]: each["running"] for each in after}[live] < running[live]
    stopped = json.loads(_stepwell(deployed_stack, config_file, "describe", execution_id).stdout)
    assert (stopped["Status"], stopped["Version"]) == ("STOPPED", live)
