"""The CLI a newcomer meets (issue 39): executions by name as well as by id, `list` with a header,
`describe` in ISO 8601, callback results checked as JSON unless --raw, and every command's --help."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from stepwell.cli import EXECUTION_ID_FORMAT, build_parser
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver
from .test_cli import CALLBACK_IDS, _cli, greet

ISO_MILLISECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ISO_SECONDS = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


@durable_execution
def echo(event: Any, context: DurableContext) -> Any:
    """Waits for a callback without a serdes: the SDK hands its result over as the text it was sent."""
    return context.wait_for_callback(lambda callback_id, _: CALLBACK_IDS.append(callback_id), name="reply")


@pytest.fixture
def cli_env(deployment: Deployment, tmp_path: Path) -> tuple[Path, QueueDriver]:
    CALLBACK_IDS.clear()
    config_file = tmp_path / "client_config.json"
    config_file.write_text(json.dumps(deployment.config.to_client_config()))
    registry = Registry()
    registry.register("greet", greet)
    registry.register("echo", echo)
    clock = VirtualClock()
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    return config_file, QueueDriver(deployment, runtime, clock)


def _ok(config_file: Path, *argv: str) -> str:
    code, out, err = _cli(config_file, *argv)
    assert (code, err) == (0, ""), (argv, err)
    return out


def _error(config_file: Path, *argv: str) -> str:
    code, out, err = _cli(config_file, *argv)
    assert (code, out) == (1, "") and err.startswith("stepwell: error: ") and err.count("\n") == 1, err
    return err


def test_an_execution_is_addressed_by_its_name_and_workflow_as_by_its_id(
    cli_env: tuple[Path, QueueDriver],
) -> None:
    config_file, driver = cli_env
    plain = _ok(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "order-7").strip()
    about = _ok(
        config_file,
        *("start", "greet", "--input", '{"name": "bo"}', "--name", "order-8"),
        *("--domain", "shop", "--subject", "customer-42"),
    ).strip()
    assert (plain, about) == ("default#greet#order-7/order-7", "shop#greet#customer-42/order-8")
    driver.run_until_quiet()

    by_id = json.loads(_ok(config_file, "describe", plain))
    assert json.loads(_ok(config_file, "describe", "order-7", "--workflow", "greet")) == by_id
    assert json.loads(_ok(config_file, "executions", "describe", "order-7", "--workflow", "greet")) == by_id
    named = ("order-8", "--workflow", "greet", "--domain", "shop", "--subject", "customer-42")
    assert json.loads(_ok(config_file, "describe", *named))["ExecutionId"] == about
    assert _ok(config_file, "history", *named) == _ok(config_file, "history", about)

    err = _error(config_file, "describe", "order-8", "--workflow", "greet")
    assert (
        "no execution named 'order-8' of workflow 'greet' in domain 'default' with subject 'order-8' "
        "(id 'default#greet#order-8/order-8'); one started with another --domain or --subject needs them "
        "here too (`stepwell list --workflow greet` lists the workflow's executions)"
    ) in err
    err = _error(config_file, "describe", "order-7")
    assert (
        f"'order-7' is not an execution id ({EXECUTION_ID_FORMAT}, as `stepwell start` prints it); to "
        "address an execution by its name, add --workflow WORKFLOW"
    ) in err
    err = _error(config_file, "history", plain, "--workflow", "greet")
    assert (
        f"{plain!r} is an execution id, which holds its workflow, domain and subject: leave out --workflow"
        in err
    )
    assert "not an execution id: 'default#greet'" in _error(config_file, "describe", "default#greet")
    assert "invalid --subject 'a b': 1-128 characters" in _error(
        config_file, "describe", "order-7", "--workflow", "greet", "--subject", "a b"
    )

    assert _ok(config_file, "stop", "order-7", "--workflow", "greet") == f"{plain}: stopped\n"
    assert json.loads(_ok(config_file, "describe", plain))["Status"] == "STOPPED"
    assert _ok(config_file, "stop", *named) == f"{about}: stopped\n"


def test_list_has_a_header_naming_every_column_and_describe_shows_iso_times(
    cli_env: tuple[Path, QueueDriver],
) -> None:
    config_file, driver = cli_env
    done = _ok(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "done").strip()
    driver.run_until_quiet()
    _ok(config_file, "callback", "success", CALLBACK_IDS[0], "--result", '"hi"')
    driver.run_until_quiet()
    waiting = _ok(config_file, "start", "greet", "--input", '{"name": "bo"}', "--name", "waiting").strip()

    header, *rows = _ok(config_file, "list", "--workflow", "greet").splitlines()
    columns = re.split(r"  +", header)
    assert columns == ["STATUS", "STARTED", "ENDED", "WORKFLOW", "NAME", "EXECUTION ID"]
    cells = [re.split(r"  +", row) for row in rows]
    assert [len(each) for each in cells] == [len(columns)] * 2  # every value sits under its header
    assert [(each[0], each[3], each[4], each[5]) for each in cells] == [
        ("RUNNING", "greet", "waiting", waiting),
        ("SUCCEEDED", "greet", "done", done),
    ]
    assert re.fullmatch(ISO_SECONDS, cells[1][1]) and re.fullmatch(ISO_SECONDS, cells[1][2])
    assert cells[0][2] == "-"  # not ended
    for row, cell in zip(rows, cells, strict=True):  # each value starts where its header does
        assert (row.index(cell[1]), row.index(cell[5])) == (
            header.index("STARTED"),
            header.index("EXECUTION ID"),
        )

    listed = json.loads(_ok(config_file, "list", "--workflow", "greet", "--json"))["Executions"]
    assert [row["ExecutionName"] for row in listed] == ["waiting", "done"]
    assert re.fullmatch(ISO_SECONDS, listed[1]["EndTimestamp"])

    described = json.loads(_ok(config_file, "describe", done))
    assert ISO_MILLISECONDS.match(described["StartTimestamp"]) and ISO_MILLISECONDS.match(
        described["EndTimestamp"]
    )
    assert described["StartTimestamp"][:19] == cells[1][1][:19]
    assert "EndTimestamp" not in json.loads(_ok(config_file, "describe", waiting))


def test_a_callback_result_must_be_json_unless_raw(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    greeted = _ok(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "g").strip()
    echoed = _ok(config_file, "start", "echo", "--name", "e").strip()
    driver.run_until_quiet()
    greet_callback, echo_callback = CALLBACK_IDS

    for via in ((), ("--via-bus",)):
        err = _error(config_file, "callback", "success", greet_callback, "--result", "yes please", *via)
        assert (
            "--result is not JSON (Expecting value: line 1 column 1 (char 0)): 'yes please'; write a string "
            """as JSON (--result "\\"yes please\\""), or add --raw to send the text as it is"""
        ) in err
    assert "--result is not JSON (NaN is not JSON" in _error(
        config_file, "callback", "success", greet_callback, "--result", "[NaN]"
    )
    driver.run_until_quiet()
    assert json.loads(_ok(config_file, "describe", greeted))["Status"] == "RUNNING"  # nothing was sent

    # `succeed` is `success`; JSON reaches a JSON serdes as its value.
    assert _ok(config_file, "callback", "succeed", greet_callback, "--result", '"yes please"') == (
        f"callback {greet_callback}: success sent\n"
    )
    # --raw sends any text; without a serdes the workflow receives it as it was sent.
    _ok(config_file, "callback", "success", echo_callback, "--result", "yes please", "--raw")
    driver.run_until_quiet()
    assert json.loads(json.loads(_ok(config_file, "describe", greeted))["Result"]) == "Ada: yes please"
    assert json.loads(json.loads(_ok(config_file, "describe", echoed))["Result"]) == "yes please"


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], Any]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(((*path, name), sub))
                found += _commands(sub, (*path, name))
    return found


def test_every_command_has_a_description_and_every_option_says_what_it_is() -> None:
    commands = _commands(build_parser())
    assert len(commands) > 30
    for path, parser in commands:
        assert parser.description and parser.description[0].isupper(), path
        for action in parser._actions:
            hidden = action.help == argparse.SUPPRESS  # an older spelling kept working, not shown
            if not hidden and not isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                assert action.help and len(action.help.split()) >= 2, (path, action.dest)
        if any(action.dest == "execution" for action in parser._actions):
            assert EXECUTION_ID_FORMAT in (parser.description or ""), path
        if any(action.dest == "callback_id" for action in parser._actions):
            assert "callback id" in parser.format_help(), path
