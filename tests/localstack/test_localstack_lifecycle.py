"""stepwell.testing.localstack's lifecycle: attaching, refusing bad input, and leaving no process behind."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator

import pytest
from localstack_client.session import Session
from stepwell.testing.localstack import (
    ENDPOINT_ENV,
    LocalStackProcess,
    LocalStackUnavailable,
    descendant_pids,
    free_port,
    start_localstack,
)

pytestmark = pytest.mark.localstack

EXIT_WAIT_SECONDS = 60.0


@pytest.fixture
def started() -> Iterator[LocalStackProcess]:
    try:
        handle = start_localstack()
    except LocalStackUnavailable as error:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"LocalStack must run in CI but could not start: {error}")
        pytest.skip(f"LocalStack could not start on this host: {error}")
    try:
        yield handle
    finally:
        handle.stop()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(pids: list[int]) -> list[int]:
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.2)
    return [pid for pid in pids if alive(pid)]


def spawn_children(endpoint: str) -> None:
    """Make LocalStack start DynamoDB Local and one Lambda runtime (with its worker)."""
    session = Session(
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
        localstack_host=endpoint.split("://", 1)[1],
    )
    session.client("dynamodb").list_tables()
    role = session.client("iam").create_role(
        RoleName=f"r-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument="{}"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return 'ok'\n")
    lambda_client = session.client("lambda")
    lambda_client.create_function(
        FunctionName="child",
        Runtime="python3.13",
        Role=role["Role"]["Arn"],
        Handler="app.handler",
        Code={"ZipFile": buffer.getvalue()},
    )
    lambda_client.get_waiter("function_active_v2").wait(FunctionName="child")
    assert json.loads(lambda_client.invoke(FunctionName="child")["Payload"].read()) == "ok"


def command_lines(pids: list[int]) -> str:
    lines = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                lines.append(cmdline.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return "\n".join(lines)


def test_stop_ends_localstack_and_every_process_it_started(started: LocalStackProcess) -> None:
    assert started.process is not None
    spawn_children(started.endpoint)
    tree = [started.process.pid, *descendant_pids(started.process.pid)]
    commands = command_lines(tree)
    assert "DynamoDBLocal.jar" in commands
    assert "stepwell_localstack/runtime.py" in commands
    assert "stepwell_localstack/worker.py" in commands
    assert started.rss_bytes() > 0

    started.stop()

    assert wait_until_gone(tree) == []
    assert started.filesystem_root is not None and not started.filesystem_root.exists()
    assert started.log_path is not None and "Ready." in started.log_path.read_text()
    # The handler's logs outlive the run, for diagnosing a failed test.
    assert started.lambda_log_dir is not None
    [function_log] = started.lambda_log_dir.glob("child-*.function.log")
    assert "REPORT RequestId:" in function_log.read_text()


def test_localstack_dies_with_the_process_that_started_it() -> None:
    # A separate Python starts LocalStack, reports its pid, and is then killed outright.
    script = textwrap.dedent(
        """
        import sys, time
        from stepwell.testing.localstack import start_localstack
        handle = start_localstack()
        print(handle.process.pid, handle.endpoint, flush=True)
        time.sleep(600)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        if not line:
            owner.wait()
            if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
                pytest.fail("LocalStack must run in CI but the child could not start it")
            pytest.skip("LocalStack could not start on this host")
        localstack_pid, endpoint = int(line[0]), line[1]
        spawn_children(endpoint)
        tree = [localstack_pid, *descendant_pids(localstack_pid)]
        assert len(tree) >= 4  # launcher, DynamoDB Local, runtime, worker

        owner.send_signal(signal.SIGKILL)
        owner.wait()

        assert wait_until_gone(tree) == [], command_lines(tree)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_an_existing_endpoint_is_used_and_left_running(
    started: LocalStackProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, started.endpoint + "/")

    attached = start_localstack(ready_timeout=30)
    attached.stop()

    assert attached.endpoint == started.endpoint
    assert attached.process is None
    with urllib.request.urlopen(f"{started.endpoint}/_localstack/init/ready", timeout=5) as response:
        assert json.loads(response.read())["completed"] is True


def test_an_unreachable_endpoint_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv(ENDPOINT_ENV, closed)

    with pytest.raises(LocalStackUnavailable, match=f"LocalStack at {closed} not ready"):
        start_localstack(ready_timeout=1)


def test_bad_input_is_rejected_with_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, "localhost:4566")
    with pytest.raises(LocalStackUnavailable, match="'localhost:4566' is not an http"):
        start_localstack()

    with pytest.raises(ValueError, match="ready_timeout must be positive seconds, got 0"):
        start_localstack(ready_timeout=0)
