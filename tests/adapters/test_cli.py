"""The `stepwell` CLI against a moto deployment, with the test playing the worker Lambda."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import WaitForCallbackConfig
from aws_durable_execution_sdk_python.serdes import JsonSerDes
from stepwell.cli import build_parser, callback_ids_as_positionals, main
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core import journal
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import REGION, Deployment
from .driver import QueueDriver

CALLBACK_IDS: list[str] = []
# The callback's result arrives as text; this serdes reads it as JSON (without one the SDK passes it on).
JSON_REPLY = WaitForCallbackConfig(serdes=JsonSerDes())


@durable_execution
def greet(event: dict[str, Any], context: DurableContext) -> str:
    name = context.step(lambda _: event["name"].title(), name="capitalize")
    answer = context.wait_for_callback(
        lambda callback_id, _: CALLBACK_IDS.append(callback_id), name="reply", config=JSON_REPLY
    )
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
    code, out, _ = _cli(config_file, "callback", "success", CALLBACK_IDS[0], "--result", '"hi there"')
    assert code == 0 and "success sent" in out
    driver.run_until_quiet()

    code, out, _ = _cli(config_file, "describe", execution_id)
    description = json.loads(out)
    assert description["Status"] == "SUCCEEDED"
    assert json.loads(description["Result"]) == "Ada: hi there"

    code, out, _ = _cli(config_file, "list", "--status", "SUCCEEDED")
    header, row = out.splitlines()
    assert code == 0 and header.split("  ")[0] == "STATUS" and row.split()[0] == "SUCCEEDED"
    assert row.endswith(execution_id)
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
    assert len(first_page) == 4 and first_page[-1].startswith("more: --next-token ")
    token = first_page[-1].split()[-1]
    code, out, _ = _cli(config_file, "list", "--workflow", "greet", "--limit", "2", "--next-token", token)
    assert len(out.strip().splitlines()) == 2  # the header and the third
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
    usage = io.StringIO()
    assert main(["list"], out=io.StringIO(), err=usage) == 2
    assert usage.getvalue() == (
        "stepwell: error: one of the arguments --status --workflow --domain --tag is required "
        "(see 'stepwell list --help')\n"
    )


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


def _one_error_line(code: int, out: str, err: str) -> str:
    assert code == 1 and err.startswith("stepwell: error: ") and err.count("\n") == 1, (code, out, err)
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("spelling", ["plain", "after --", "between options"])
def test_a_callback_id_that_starts_with_a_dash_is_accepted(
    cli_env: tuple[Path, QueueDriver], spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file, driver = cli_env
    # Ids made before they got their fixed prefix start with "-" one time in 64: issue such an id.
    derive = journal.derived_callback_id
    monkeypatch.setattr(journal, "derived_callback_id", lambda *ids: "-" + derive(*ids)[2:])
    execution_id = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "dash")[
        1
    ].strip()
    driver.run_until_quiet()
    dashed = CALLBACK_IDS[0]
    assert dashed.startswith("-")

    argv = {
        "plain": ["callback", "success", dashed, "--result", '"hi"'],
        "after --": ["callback", "success", "--result", '"hi"', "--", dashed],
        "between options": ["callback", "success", '--result="hi"', dashed, "--via-bus"],
    }[spelling]
    code, out, err = _cli(config_file, *argv)
    assert (code, err) == (0, ""), err
    assert out.startswith(f"callback {dashed}: success ")
    driver.run_until_quiet()
    assert json.loads(json.loads(_cli(config_file, "describe", execution_id)[1])["Result"]) == "Ada: hi"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # "callback" as a global option's value is not the command: the id after the command still moves.
        (
            ["--region", "callback", "callback", "success", "-abc", "--result", "hi"],
            ["--region", "callback", "callback", "success", "--result", "hi", "--", "-abc"],
        ),
        (
            ["--config=c.json", "callback", "heartbeat", "-abc"],
            ["--config=c.json", "callback", "heartbeat", "--", "-abc"],
        ),
        (
            ["callback", "success", "cbabc", "--result", "-1"],
            ["callback", "success", "cbabc", "--result", "-1"],
        ),
        (["--region", "callback", "describe", "-x"], ["--region", "callback", "describe", "-x"]),
    ],
)
def test_only_the_word_after_callback_action_becomes_the_id(argv: list[str], expected: list[str]) -> None:
    assert callback_ids_as_positionals(build_parser(), argv) == expected


def test_a_second_completion_of_a_callback_is_refused(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    execution_id = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "twice")[
        1
    ].strip()
    driver.run_until_quiet()
    assert _cli(config_file, "callback", "success", CALLBACK_IDS[0], "--result", '"first"')[0] == 0
    err = _one_error_line(*_cli(config_file, "callback", "fail", CALLBACK_IDS[0], "--error-message", "no"))
    assert f"callback {CALLBACK_IDS[0]!r} has already completed" in err
    driver.run_until_quiet()
    assert json.loads(json.loads(_cli(config_file, "describe", execution_id)[1])["Result"]) == "Ada: first"


def test_bad_input_to_every_command_is_one_line(cli_env: tuple[Path, QueueDriver], tmp_path: Path) -> None:
    config_file, driver = cli_env
    execution_id = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "one")[
        1
    ].strip()
    driver.run_until_quiet()
    err = _one_error_line(*_cli(config_file, "start", "greet", "--input", '{"name": "bob"}', "--name", "one"))
    assert "execution 'one' of workflow 'greet'" in err and "different input" in err
    err = _one_error_line(*_cli(config_file, "start", "greet", "--input", '{"n": NaN}'))
    assert "--input is not valid JSON (NaN is not JSON (numbers must be finite))" in err
    err = _one_error_line(*_cli(config_file, "stop", execution_id, "--error-data", "x" * 70_000))
    assert "stop error is 70" in err and "the limit is 65536" in err
    err = _one_error_line(*_cli(config_file, "history", "default#greet#nobody/nobody"))
    assert "no execution with id 'default#greet#nobody/nobody'" in err
    err = _one_error_line(*_cli(config_file, "dlq", "redrive", "--max", "0"))
    assert "--max (max_messages) must be at least 1, got 0" in err
    err = _one_error_line(*_cli(config_file, "definitions", "get", "nope", "--domain", "acme"))
    assert "no definition 'nope' in domain 'acme'; definitions in domain 'acme': none" in err
    err = _one_error_line(
        *_cli(config_file, "definitions", "graph", "nope", "--domain", "acme", "--version", "2")
    )
    assert "no definition 'nope' version 2 in domain 'acme'" in err
    err = _one_error_line(*_cli(config_file, "event", "send", "", "--domain", "acme", "--subject", "u1"))
    assert "invalid event name ''" in err
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    err = _one_error_line(*_cli(config_file, "start", "greet", "--input-file", str(binary)))
    assert f"cannot read input file {str(binary)!r}" in err
    code, _, err = _cli(config_file, "list", "--limit", "many", "--all")
    assert code == 2 and err.count("\n") == 1 and "invalid int value: 'many'" in err


def test_an_unexpected_error_is_one_line_unless_debugging(
    cli_env: tuple[Path, QueueDriver], monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file, _ = cli_env

    def broken(*_: Any, **__: Any) -> Any:
        raise KeyError("Executions")

    monkeypatch.setattr(StepwellClient, "list_executions", broken)
    err = _one_error_line(*_cli(config_file, "list", "--status", "RUNNING"))
    assert err == "stepwell: error: unexpected KeyError: 'Executions' (run with --debug for the traceback)\n"
    with pytest.raises(KeyError):
        _cli(config_file, "--debug", "list", "--status", "RUNNING")


def test_the_client_refuses_nan_results_and_malformed_errors_before_sending(deployment: Deployment) -> None:
    client = StepwellClient(deployment.config, deployment.clients)
    with pytest.raises(ValueError, match="nor are NaN and Infinity"):
        client.send_callback_success("cb-any", {"score": float("nan")})
    with pytest.raises(ValueError, match=r"unknown callback error fields \['Reason'\]"):
        client.publish_callback_event("fail", "cb-any", error={"Reason": "x"})
    with pytest.raises(ValueError, match="callback error field ErrorMessage must be a string"):
        client.publish_callback_event("fail", "cb-any", error={"ErrorMessage": 7})


# --- code versions -----------------------------------------------------------------------------------


def _zipped(text: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", text)
    return buffer.getvalue()


def _publish_worker_version(deployment: Deployment, code: str) -> str:
    """Publish a version of the deployment's worker function in moto (created on first use) and point
    the `live` alias at it, as `terraform apply` of a changed package does."""
    functions = boto3.client("lambda", region_name=REGION)
    name = deployment.config.worker_function_name
    try:
        functions.update_function_code(FunctionName=name, ZipFile=_zipped(code))
    except functions.exceptions.ResourceNotFoundException:
        role = boto3.client("iam", region_name=REGION).create_role(
            RoleName=f"{name}-role", AssumeRolePolicyDocument="{}"
        )["Role"]["Arn"]
        functions.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler="stepwell.wiring.entry.handler",
            Code={"ZipFile": _zipped(code)},
        )
    version: str = functions.publish_version(FunctionName=name, Description=code)["Version"]
    try:
        functions.update_alias(FunctionName=name, Name="live", FunctionVersion=version)
    except functions.exceptions.ResourceNotFoundException:
        functions.create_alias(FunctionName=name, Name="live", FunctionVersion=version)
    return version


def _runtime_on(deployment: Deployment, version: str, clock: VirtualClock) -> EntryRuntime:
    """The worker as that version of the function runs it (Lambda sets its version in its environment)."""
    registry = Registry()
    registry.register("greet", greet)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime.engine.code_version = version
    return runtime


def _versions_json(config_file: Path) -> list[tuple[str, list[str], int]]:
    code, out, err = _cli(config_file, "versions", "--json")
    assert (code, err) == (0, "")
    return [(each["version"], each["aliases"], each["running"]) for each in json.loads(out)["Versions"]]


def test_versions_and_upgrades_one_execution_and_a_workflow_in_bulk(
    cli_env: tuple[Path, QueueDriver], deployment: Deployment
) -> None:
    config_file, driver = cli_env
    assert _publish_worker_version(deployment, "v1") == "1"
    driver.runtime = _runtime_on(deployment, "1", driver.clock)
    first, second, third = (
        _cli(config_file, "start", "greet", "--input", f'{{"name": "{name}"}}', "--name", name)[1].strip()
        for name in ("ann", "bob", "cy")
    )
    driver.run_until_quiet()
    assert len(CALLBACK_IDS) == 3
    code, out, _ = _cli(config_file, "versions")
    assert code == 0
    header, row = out.strip().splitlines()
    assert header.split() == ["VERSION", "ALIASES", "RUNNING", "LAST-MODIFIED"]
    assert row.split()[:3] == ["1", "live", "3"]

    assert _publish_worker_version(deployment, "v2") == "2"
    driver.runtime = _runtime_on(deployment, "2", driver.clock)
    assert _versions_json(config_file) == [("1", [], 3), ("2", ["live"], 0)]

    code, out, err = _cli(config_file, "executions", "upgrade", first, "--to-version", "live")
    assert (code, out, err) == (0, f"{first}: upgraded to version 2\n", "")
    assert _cli(config_file, "executions", "upgrade", first, "--to-version", "2")[1] == (
        f"{first}: already on version 2\n"
    )
    assert json.loads(_cli(config_file, "executions", "describe", first)[1])["Version"] == "2"

    bulk = ("executions", "upgrade", "--workflow", "greet", "--from-version", "1", "--to-version", "2")
    code, out, _ = _cli(config_file, *bulk, "--dry-run")
    assert code == 0
    assert sorted(out.strip().splitlines()[:-1]) == sorted([second, third])
    assert out.strip().splitlines()[-1] == (
        "would upgrade 2 running executions of 'greet' from version 1 to version 2"
    )
    assert _versions_json(config_file) == [("1", [], 2), ("2", ["live"], 1)]  # a dry run moves nothing
    code, out, _ = _cli(config_file, *bulk)
    assert code == 0 and out.strip().splitlines()[-1].startswith("upgraded 2 running executions")
    assert _versions_json(config_file) == [("1", [], 0), ("2", ["live"], 3)]
    assert (
        _cli(config_file, *bulk)[1]
        == "upgraded 0 running executions of 'greet' from version 1 to version 2\n"
    )

    # Version 2 replays each one now (the upgrade enqueued it): recorded, and the callbacks still work.
    driver.run_until_quiet()
    for callback_id in CALLBACK_IDS[:3]:
        assert _cli(config_file, "callback", "success", callback_id, "--result", '"ok"')[0] == 0
    driver.run_until_quiet()
    for execution_id in (first, second, third):
        assert json.loads(_cli(config_file, "describe", execution_id)[1])["Status"] == "SUCCEEDED"
        timeline = _cli(config_file, "history", execution_id)[1]
        assert "ExecutionUpgraded" in timeline and "version 1 -> 2" in timeline
    assert _versions_json(config_file) == [("1", [], 0), ("2", ["live"], 0)]
    err = _one_error_line(*_cli(config_file, "executions", "upgrade", first, "--to-version", "1"))
    assert f"execution {first!r} has ended (SUCCEEDED)" in err


def test_bad_upgrade_and_versions_input_is_one_line(
    cli_env: tuple[Path, QueueDriver], deployment: Deployment, tmp_path: Path
) -> None:
    config_file, driver = cli_env
    _publish_worker_version(deployment, "v1")
    driver.runtime = _runtime_on(deployment, "1", driver.clock)
    execution_id = _cli(config_file, "start", "greet", "--input", '{"name": "ann"}', "--name", "ann")[
        1
    ].strip()
    driver.run_until_quiet()
    for argv, expected in [
        (
            ("executions", "upgrade", "--to-version", "1"),
            "give an EXECUTION (an id, or a NAME with --workflow)",
        ),
        (
            ("executions", "upgrade", execution_id, "--workflow", "greet", "--to-version", "1"),
            f"{execution_id!r} is an execution id, which holds its workflow, domain and subject: leave out "
            "--workflow",
        ),
        (
            (
                "executions",
                "upgrade",
                "--workflow",
                "greet",
                "--domain",
                "d",
                "--from-version",
                "1",
                "--to-version",
                "1",
            ),
            "--domain and --subject go with an execution's NAME, not with --workflow alone",
        ),
        (
            ("executions", "upgrade", "--workflow", "greet", "--to-version", "1"),
            "--workflow needs --from-version",
        ),
        (
            ("executions", "upgrade", execution_id, "--to-version", "1", "--dry-run"),
            "--from-version and --dry-run go with --workflow alone",
        ),
        (("executions", "upgrade", execution_id, "--to-version", "9"), "worker version '9' is not published"),
        (
            (
                "executions",
                "upgrade",
                "--workflow",
                "greet",
                "--from-version",
                "1",
                "--to-version",
                "nightly",
            ),
            "worker version 'nightly' is not published; published: 1 (live)",
        ),
        (
            ("executions", "upgrade", "--workflow", "bad name", "--from-version", "1", "--to-version", "1"),
            "invalid workflow name 'bad name'",
        ),
        (("executions", "upgrade", "default#greet#x/x", "--to-version", "1"), "no execution with id"),
    ]:
        assert expected in _one_error_line(*_cli(config_file, *argv)), argv
    by_name = ("executions", "upgrade", "ann", "--workflow", "greet", "--to-version", "1")
    assert _cli(config_file, *by_name)[1] == f"{execution_id}: already on version 1\n"
    code, _, err = _cli(config_file, "executions", "upgrade", execution_id)
    assert code == 2 and "--to-version" in err and err.count("\n") == 1

    unversioned = tmp_path / "no_worker.json"
    unversioned.write_text(json.dumps({**deployment.config.to_client_config(), "worker_function_name": ""}))
    err = _one_error_line(*_cli(unversioned, "versions"))
    assert "has no worker function configured (worker_function_name)" in err
    err = _one_error_line(*_cli(unversioned, "executions", "upgrade", execution_id, "--to-version", "1"))
    assert "worker_function_name" in err


def test_a_bulk_upgrade_skips_an_execution_another_upgrade_moved_meanwhile(
    cli_env: tuple[Path, QueueDriver], deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file, driver = cli_env
    _publish_worker_version(deployment, "v1")
    driver.runtime = _runtime_on(deployment, "1", driver.clock)
    raced, moved = (
        _cli(config_file, "start", "greet", "--input", f'{{"name": "{name}"}}', "--name", name)[1].strip()
        for name in ("raced", "moved")
    )
    driver.run_until_quiet()
    for code in ("v2", "v3"):
        _publish_worker_version(deployment, code)
    client = StepwellClient(deployment.config, deployment.clients)
    listed = client.engine.store.list_pinned

    def list_then_race(version: str, limit: int = 100, next_token: str | None = None) -> Any:
        page = listed(version, limit, next_token)
        assert client.upgrade_execution(raced, "3")  # another operator, between the listing and the moves
        return page

    monkeypatch.setattr(client.engine.store, "list_pinned", list_then_race)
    assert client.upgrade_executions("greet", "1", "2") == [moved]
    assert client.describe_execution(raced)["Version"] == "3"  # not moved back to 2
    assert client.describe_execution(moved)["Version"] == "2"
