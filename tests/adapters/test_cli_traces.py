"""`stepwell describe` prints the execution's TraceHeader (stored on moto's DynamoDB table)."""

from __future__ import annotations

import json
from pathlib import Path

from stepwell.core.tracing import parse_trace_header

from .driver import QueueDriver
from .test_cli import _cli, cli_env

__all__ = ["cli_env"]


def test_describe_prints_the_trace_header(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    code, out, err = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "traced")
    assert (code, err) == (0, "")
    driver.run_until_quiet()

    code, out, _ = _cli(config_file, "describe", out.strip())
    assert code == 0
    header = parse_trace_header(json.loads(out)["TraceHeader"])
    assert header.parent is not None and header.sampled is None
