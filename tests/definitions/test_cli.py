"""The definitions CLI subcommands and the service behind them, on the local backend."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest
from stepwell.cli.definitions import DefinitionsCliError, add_commands, run
from stepwell.features.definitions.model import DefinitionNotFound
from stepwell.features.definitions.router import EventOutcome
from stepwell.features.definitions.service import DefinitionsService
from stepwell.features.definitions.validation import DefinitionInvalid

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
    graph = cli(service, "definitions", "graph", "onboarding", "--domain", "acme")
    assert graph.startswith("flowchart TD") and graph == cli(service, "definitions", "graph", file)
    assert graph == cli(service, "definitions", "graph", "--domain", "acme", "--id", "onboarding")  # older
    assert graph == cli(service, "definitions", "graph", "onboarding", "--domain", "acme", "--version", "1")
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
    signup = ("event", "send", "user.signed_up", "--domain", "acme", "--subject", "u1")
    signup += ("--data", '{"email": "u1@x.io"}', "--id", "s-1")
    sent = json.loads(cli(service, *signup))
    assert sent["status"] == "processed" and len(sent["started"]) == 1
    again = json.loads(cli(service, *signup))  # the same event, delivered again
    assert again["status"] == "duplicate" and again["started"] == []
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
    service.process_event({"id": "broken", "detail-type": "x", "detail": {}}, "acme")
    assert cli(service, "event", "rejected") == "broken: extractor failed: the event maps to no subject\n"
    with pytest.raises(DefinitionsCliError, match="--data is not valid JSON"):
        cli(service, "event", "send", "x", "--domain", "acme", "--subject", "u1", "--data", "{")
    with pytest.raises(ValueError, match="needs a subject too"):
        cli(service, "contexts", "list", "--domain", "acme", "--workflow", "onboarding")


def test_other_commands_are_not_taken() -> None:
    args = argparse.Namespace(command="start")
    assert run(args, lambda: pytest.fail("no service needed"), io.StringIO(), io.StringIO()) is False


def test_a_missing_definition_or_version_is_one_line_saying_what_exists(service: DefinitionsService) -> None:
    with pytest.raises(DefinitionsCliError, match=r"no definition 'nope' in domain 'acme'; .*: none$"):
        cli(service, "definitions", "get", "nope", "--domain", "acme")
    cli(service, "definitions", "put", str(EXAMPLES / "onboarding.json"), "--domain", "acme")
    for command in ("get", "graph"):
        with pytest.raises(
            DefinitionsCliError,
            match=r"no definition 'nope' in domain 'acme'; definitions in domain 'acme': onboarding$",
        ):
            cli(service, "definitions", command, "nope", "--domain", "acme")
        with pytest.raises(
            DefinitionsCliError,
            match=r"no definition 'onboarding' version 7 in domain 'acme'; its versions are 1$",
        ):
            cli(service, "definitions", command, "onboarding", "--domain", "acme", "--version", "7")
    with pytest.raises(DefinitionsCliError, match="graph needs a definition FILE, or WORKFLOW_ID --domain"):
        cli(service, "definitions", "graph")


@pytest.mark.parametrize("name", ["", "   ", "x" * 129])
def test_an_event_without_a_usable_name_is_refused(service: DefinitionsService, name: str) -> None:
    with pytest.raises(DefinitionsCliError, match=r"invalid event name .*: 1 to 128 characters"):
        cli(service, "event", "send", name, "--domain", "acme", "--subject", "u1")


def test_a_rejected_event_is_an_error(service: DefinitionsService, monkeypatch: pytest.MonkeyPatch) -> None:
    # The CLI checks what the router would reject for; any other rejection still fails the command.
    rejected = EventOutcome(event_id="e1", status="rejected", reason="the event maps to no subject")
    monkeypatch.setattr(service, "send_event", lambda *_, **__: rejected)
    with pytest.raises(
        DefinitionsCliError, match="event 'x' for acme/u1 was rejected: the event maps to no subject"
    ):
        cli(service, "event", "send", "x", "--domain", "acme", "--subject", "u1")


@pytest.mark.parametrize("data", ["NaN", '{"a": Infinity}', "[-Infinity]"])
def test_nan_and_infinity_are_not_json(service: DefinitionsService, data: str) -> None:
    with pytest.raises(
        DefinitionsCliError, match=r"--data is not valid JSON .*is not JSON \(numbers must be finite"
    ):
        cli(service, "event", "send", "x", "--domain", "acme", "--subject", "u1", "--data", data)


@pytest.mark.parametrize("command", [("event", "rejected"), ("contexts", "list", "--domain", "acme")])
@pytest.mark.parametrize("limit", ["0", "1001"])
def test_listing_limits_are_checked(
    service: DefinitionsService, command: tuple[str, ...], limit: str
) -> None:
    with pytest.raises(DefinitionsCliError, match=f"--limit must be 1..1000, got {limit}"):
        cli(service, *command, "--limit", limit)


def test_put_and_validate_warn_of_actions_not_registered_here(
    service: DefinitionsService, tmp_path: Path
) -> None:
    document: dict[str, Any] = json.loads((EXAMPLES / "onboarding.json").read_text())
    send_tips = next(node for node in document["nodes"] if node["id"] == "send_tips")
    send_tips["action"] = "billing.charge_card"
    file = tmp_path / "unregistered.json"
    file.write_text(json.dumps(document))

    def run_with_err(*argv: str) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        assert run(parser().parse_args(list(argv)), lambda: service, out, io.StringIO(), err=err)
        return out.getvalue(), err.getvalue()

    out, err = run_with_err("definitions", "validate", str(file))
    assert out == f"{file}: valid\n"
    assert "stepwell: warning:" in err and "'billing.charge_card' is not registered here" in err
    out, err = run_with_err("definitions", "put", str(file), "--domain", "acme")
    assert out == "acme/onboarding: version 1\n"
    assert err.count("stepwell: warning:") == 1 and "billing.charge_card" in err
    with pytest.raises(DefinitionInvalid, match=r"billing\.charge_card"):
        run_with_err("definitions", "put", str(file), "--domain", "acme", "--check-actions")
    out, err = run_with_err("definitions", "put", str(EXAMPLES / "onboarding.json"), "--domain", "acme")
    assert err == ""


def test_a_finished_context_past_its_retention_is_gone_from_list_and_show(
    service: DefinitionsService, harness: Harness
) -> None:
    """As its execution is (tests/engine/test_expired_executions.py), though its item waits for the TTL."""
    service.put_definition("acme", json.loads((EXAMPLES / "onboarding.json").read_text()))
    harness.send("user.signed_up", "u-done", {"email": "done@example.com", "name": "Done"})
    harness.run_all()
    (done,) = service.list_contexts("acme", "u-done").items
    assert done.status != "RUNNING"
    harness.send("user.signed_up", "u-waiting", {"email": "w@example.com", "name": "W"})  # waits for days
    (waiting,) = service.list_contexts("acme", "u-waiting").items
    assert waiting.status == "RUNNING"
    retention = harness.local.store.retention_seconds

    harness.local.clock.advance_to(int(done.updated_at) + retention - 1)
    assert [c.instance_id for c in service.list_contexts("acme", "u-done").items] == [done.instance_id]
    assert service.show_context("acme", "onboarding", "u-done", done.instance_id)["execution"] is not None

    harness.local.clock.advance(1)
    assert service.list_contexts("acme", "u-done").items == []
    assert service.list_contexts("acme", "u-done", workflow_id="onboarding").items == []
    assert done.instance_id not in {c.instance_id for c in service.list_contexts("acme").items}
    with pytest.raises(DefinitionNotFound, match="no context"):
        service.show_context("acme", "onboarding", "u-done", done.instance_id)
    assert harness.runtime.contexts.get_context("acme", "onboarding", "u-done", done.instance_id)  # kept
    # A running context never expires.
    assert [c.instance_id for c in service.list_contexts("acme", "u-waiting").items] == [waiting.instance_id]
    assert service.show_context("acme", "onboarding", "u-waiting", waiting.instance_id)["execution"]
