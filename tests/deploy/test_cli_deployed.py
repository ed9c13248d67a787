"""The `stepwell` command line, run as a user runs it (a child process with the deployment's config), on
each backend's server: the DLQ redrive with and without --max, and bad input as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from stepwell.testing.deployed_fixtures import DeployedStack

from deploy.queues import set_mapping_enabled, take_marked

CLI_TIMEOUT_SECONDS = 300.0


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
