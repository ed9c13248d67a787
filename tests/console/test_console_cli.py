"""`stepwell console` on the command line: loopback by default, a clear line without the extra."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from stepwell import cli
from stepwell.console.server import check_host, is_loopback


def _config_file(tmp_path: Path) -> Path:
    path = tmp_path / "client_config.json"
    path.write_text(
        json.dumps(
            {
                "name": "sw-test",
                "region": "us-east-1",
                "definitions_table": "sw-test-definitions",
                "executions_table": "sw-test-executions",
                "operations_table": "sw-test-operations",
                "coordination_table": "sw-test-coordination",
                "work_queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/sw-test-work",
                "work_queue_arn": "arn:aws:sqs:us-east-1:123456789012:sw-test-work",
            }
        )
    )
    return path


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_only_loopback_addresses_without_allow_remote() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.com")
    check_host("127.0.0.1", allow_remote=False)
    check_host("0.0.0.0", allow_remote=True)
    with pytest.raises(ValueError, match=r"--host '0\.0\.0\.0' is not a loopback address.*--allow-remote"):
        check_host("0.0.0.0", allow_remote=False)


def test_a_remote_host_is_refused_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    status, out, err = _run("--config", str(_config_file(tmp_path)), "console", "--host", "0.0.0.0")
    assert status == 1 and out == ""
    assert (
        err.startswith("stepwell: error: --host '0.0.0.0' is not a loopback address") and err.count("\n") == 1
    )


def test_without_the_extra_the_command_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for module in [name for name in sys.modules if name.startswith("stepwell.console.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "flask", None)  # an import of flask now fails as if it were missing
    status, _, err = _run("--config", str(_config_file(tmp_path)), "console")
    assert status == 1
    assert err == (
        "stepwell: error: the console needs the 'console' extra (flask is not installed): "
        "pip install 'stepwell[console]'\n"
    )


def test_the_console_command_parses_its_options() -> None:
    args = cli.build_parser().parse_args(["console", "--port", "0", "--open"])
    assert (args.host, args.port, args.open, args.allow_remote) == ("127.0.0.1", 0, True, False)
