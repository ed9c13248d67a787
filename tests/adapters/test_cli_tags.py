"""`stepwell start --tag KEY=VALUE` and `stepwell list --tag KEY=VALUE` against a moto deployment."""

from __future__ import annotations

import json
from pathlib import Path

from .driver import QueueDriver
from .test_cli import _cli, cli_env

__all__ = ["cli_env"]


def test_start_with_tags_then_describe_and_list_by_tag(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    started = []
    for index in range(3):
        code, out, err = _cli(
            config_file,
            "start",
            "greet",
            "--input",
            '{"name": "ada"}',
            "--name",
            f"tagged-{index}",
            "--tag",
            "customer=c-42",
            "--tag",
            "note=a=b and c",
        )
        assert (code, err) == (0, "")
        started.append(out.strip())
    code, out, err = _cli(
        config_file, "executions", "start", "greet", "--input", '{"name": "bo"}', "--tag", "customer=c-7"
    )
    other = out.strip()
    driver.run_until_quiet()

    code, out, _ = _cli(config_file, "describe", started[0])
    assert code == 0 and json.loads(out)["Tags"] == {"customer": "c-42", "note": "a=b and c"}
    code, out, err = _cli(config_file, "list", "--tag", "customer=c-42", "--limit", "2", "--all", "--json")
    assert (code, err) == (0, "")
    rows = json.loads(out)["Executions"]
    assert (
        sorted(row["ExecutionId"] for row in rows) == sorted(started) and json.loads(out)["NextToken"] is None
    )
    code, out, _ = _cli(config_file, "list", "--tag", "customer=c-42", "--limit", "2")
    assert code == 0 and out.splitlines()[-1].startswith("more: --next-token ")
    code, out, _ = _cli(
        config_file,
        "executions",
        "list",
        "--tag",
        "customer=c-7",
        "--domain",
        "default",
        "--status",
        "RUNNING",
    )
    assert code == 0 and out.splitlines()[1].split()[0] == "RUNNING" and out.strip().endswith(other)
    code, out, _ = _cli(config_file, "list", "--tag", "customer=c-7", "--status", "SUCCEEDED")
    assert (code, out) == (0, "")


def test_bad_tags_on_the_command_line_are_one_line(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, _ = cli_env
    code, _, err = _cli(config_file, "start", "greet", "--tag", "customer")
    assert (code, err) == (1, "stepwell: error: --tag 'customer' is not KEY=VALUE\n")
    code, _, err = _cli(config_file, "start", "greet", "--tag", "k=1", "--tag", "k=2")
    assert (code, err) == (1, "stepwell: error: --tag 'k=2': tag 'k' is given twice\n")
    code, _, err = _cli(config_file, "start", "greet", "--tag", "aws:team=ops")
    assert (code, err) == (1, "stepwell: error: invalid tag key 'aws:team': the prefix 'aws:' is reserved\n")
    code, _, err = _cli(config_file, "list", "--tag", "k=v", "--workflow", "greet")
    assert code == 2 and "--tag lists within --domain, optionally by --status" in err
    code, _, err = _cli(config_file, "list", "--status", "RUNNING", "--workflow", "greet")
    assert code == 2 and "argument --workflow: not allowed with argument --status" in err
    code, out, _ = _cli(config_file, "list", "--workflow", "greet")
    assert (code, out) == (0, "")  # nothing was started by the refused commands
