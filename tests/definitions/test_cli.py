"""The definitions CLI subcommands and the service behind them, on the local backend."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
from stepwell.definitions.cli import DefinitionsCliError, add_commands, run
from stepwell.definitions.service import DefinitionsService

from .harness import Harness
from .test_examples import EXAMPLES


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="stepwell")
    add_commands(root.add_subparsers(dest="command", required=True))
    return root


def cli(service: DefinitionsService, *argv: str, stdin: str = "") -> str:
    out = io.StringIO()
    args = parser().parse_args(list(argv))
    assert run(args, lambda: service, out, io.StringIO(stdin))
    return out.getvalue()


@pytest.fixture
def service(harness: Harness) -> DefinitionsService:
    harness.recording_action("onboarding.send_email", {"ok": True})
    return DefinitionsService(harness.local.engine, harness.runtime, harness.router)


def test_definitions_commands(service: DefinitionsService, harness: Harness, tmp_path: Path) -> None:
    file = str(EXAMPLES / "onboarding.json")
    assert cli(service, "definitions", "validate", file) == f"{file}: valid\n"
    broken: dict[str, Any] = json.loads((EXAMPLES / "onboarding.json").read_text())
    broken["nodes"][1]["timeout"] = "soon"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken))
    with pytest.raises(
        DefinitionsCliError, match="node 'first_day' \\(trigger_or_timeout\\): timeout: bad duration"
    ):
        cli(service, "definitions", "validate", str(bad))
    assert (
        cli(service, "definitions", "put", file, "--domain", "acme", "--check-actions")
        == "acme/onboarding: version 1\n"
    )
    assert cli(
        service,
        "definitions",
        "put",
        "-",
        "--domain",
        "acme",
        stdin=(EXAMPLES / "onboarding.json").read_text(),
    ) == ("acme/onboarding: version 2\n")
    assert cli(service, "definitions", "list", "--domain", "acme").startswith("onboarding")
    assert [
        line.split()[0]
        for line in cli(service, "definitions", "versions", "onboarding", "--domain", "acme").splitlines()
    ] == ["v1", "v2"]
    got = json.loads(cli(service, "definitions", "get", "onboarding", "--domain", "acme", "--version", "1"))
    assert got["version"] == 1 and got["definition"]["id"] == "onboarding"
    graph = cli(service, "definitions", "graph", "--domain", "acme", "--id", "onboarding")
    assert graph.startswith("flowchart TD") and graph == cli(service, "definitions", "graph", file)
    with pytest.raises(LookupError, match="no definition 'nope' in domain 'acme'"):
        cli(service, "definitions", "get", "nope", "--domain", "acme")
    assert (
        cli(service, "definitions", "delete", "onboarding", "--domain", "acme")
        == "acme/onboarding: deleted\n"
    )
    assert (
        cli(service, "definitions", "delete", "onboarding", "--domain", "acme")
        == "acme/onboarding: did not exist\n"
    )


def test_contexts_and_events_commands(service: DefinitionsService, harness: Harness) -> None:
    cli(service, "definitions", "put", str(EXAMPLES / "onboarding.json"), "--domain", "acme")
    sent = json.loads(
        cli(
            service,
            "event",
            "send",
            "user.signed_up",
            "--domain",
            "acme",
            "--subject",
            "u1",
            "--data",
            '{"email": "u1@x.io"}',
            "--id",
            "s-1",
        )
    )
    assert sent["status"] == "processed" and len(sent["started"]) == 1
    again = json.loads(
        cli(service, "event", "send", "user.signed_up", "--domain", "acme", "--subject", "u1", "--id", "s-1")
    )
    assert again["status"] == "duplicate"
    harness.local.run_until_idle()
    listing = cli(service, "contexts", "list", "--domain", "acme")
    assert listing.startswith("RUNNING") and "waits for user.activated" in listing
    rows = json.loads(
        cli(
            service,
            "contexts",
            "list",
            "--domain",
            "acme",
            "--subject",
            "u1",
            "--workflow",
            "onboarding",
            "--json",
        )
    )
    instance = rows["Contexts"][0]["instanceId"]
    harness.advance(4 * 86400)
    shown = cli(service, "contexts", "show", "--domain", "acme", "onboarding", "u1", instance)
    assert "SUCCEEDED" in shown.splitlines()[0] and "CallbackTimedOut" in shown
    shown_json = json.loads(
        cli(service, "contexts", "show", "--domain", "acme", "onboarding", "u1", instance, "--json")
    )
    assert shown_json["execution"]["Status"] == "SUCCEEDED"
    service.process_event({"id": "broken", "detail-type": "x", "detail": {}})
    assert cli(service, "event", "rejected") == "broken: extractor failed: the event maps to no domain\n"
    with pytest.raises(DefinitionsCliError, match="--data is not JSON"):
        cli(service, "event", "send", "x", "--domain", "acme", "--subject", "u1", "--data", "{")
    with pytest.raises(ValueError, match="needs a subject too"):
        cli(service, "contexts", "list", "--domain", "acme", "--workflow", "onboarding")


def test_other_commands_are_not_taken() -> None:
    args = argparse.Namespace(command="start")
    assert run(args, lambda: pytest.fail("no service needed"), io.StringIO(), io.StringIO()) is False
