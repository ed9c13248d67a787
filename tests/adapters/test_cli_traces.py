"""`stepwell describe` prints the execution's TraceHeader (stored on moto's DynamoDB table); `stepwell start
--trace-header` and StepwellClient.start_execution(trace_header=...) start an execution in the caller's
trace, and refuse a malformed header naming the format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stepwell.client import StepwellClient
from stepwell.core.tracing import parse_trace_header
from stepwell.errors import ExecutionNotFound, InvalidArgument

from .deployment import Deployment
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


CALLER = "Root=1-6b0a50b9-cfb26d38b1e77f56130efb0a;Parent=0e7be06134132673;Sampled=1"
FORMAT = "Root=1-<8 hex digits>-<24 hex digits>"


def test_start_with_a_trace_header_joins_the_callers_trace(cli_env: tuple[Path, QueueDriver]) -> None:
    config_file, driver = cli_env
    started = ("start", "greet", "--input", '{"name": "ada"}', "--trace-header", CALLER)
    code, out, err = _cli(config_file, *started)
    assert (code, err) == (0, "")
    driver.run_until_quiet()

    code, out, _ = _cli(config_file, "describe", out.strip())
    assert code == 0
    header = parse_trace_header(json.loads(out)["TraceHeader"])
    assert (header.root, header.sampled) == ("1-6b0a50b9-cfb26d38b1e77f56130efb0a", True)
    assert header.parent is not None and header.parent != "0e7be06134132673"  # the execution's own span

    for bad in [
        "Root=1-6b0a50b9-cfb26d38",
        "Parent=0e7be06134132673",
        CALLER.replace("Sampled=1", "Sampled=2"),
    ]:
        code, out, err = _cli(config_file, "start", "greet", "--name", "refused", "--trace-header", bad)
        assert code != 0 and out == ""
        assert "--trace-header" in err and FORMAT in err


def test_the_client_starts_in_the_callers_trace_and_refuses_a_bad_header(deployment: Deployment) -> None:
    client = StepwellClient(deployment.config, deployment.clients)
    execution = client.start_execution("greet", {"name": "ada"}, trace_header=CALLER)
    header = parse_trace_header(client.describe_execution(execution)["TraceHeader"])
    assert header.trace_id == "6b0a50b9cfb26d38b1e77f56130efb0a"
    with pytest.raises(InvalidArgument, match=r"invalid trace header 'Root=x'.*expected Root=1-<8 hex"):
        client.start_execution("greet", {"name": "bo"}, "refused", trace_header="Root=x")
    with pytest.raises(ExecutionNotFound):
        client.describe_execution("default#greet#refused/refused")  # a refused start writes nothing
