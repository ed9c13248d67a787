"""A start of a workflow the deployment does not have is refused at once, naming its workflows (issue 39):
client_config's `workflows` (the module's workflow_names) reaches the client and the CLI; definitions'
contexts, which start the interpreter, still start."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from stepwell.cli import main
from stepwell.client import DeployedWorkflowRegistry, StepwellClient, deployed_workflows
from stepwell.clock import VirtualClock
from stepwell.config import ConfigError
from stepwell.core.registry import Registry
from stepwell.errors import WorkflowNotFound
from stepwell.features.definitions.service import install
from stepwell.wiring.entry import EntryRuntime

from .deployment import Deployment
from .driver import QueueDriver
from .test_cli import greet
from .test_definitions_contexts_dynamodb import ONBOARDING


def _config_file(deployment: Deployment, tmp_path: Path, workflows: list[str] | None) -> Path:
    config_file = tmp_path / "client_config.json"
    # As `terraform output -json` writes every output: the client reads client_config's value.
    data = {**deployment.config.to_client_config(), "workflows": workflows}
    config_file.write_text(json.dumps({"client_config": {"value": data}}))
    return config_file


def _cli(config_file: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config_file), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_refuses_a_start_of_a_workflow_the_deployment_does_not_have(
    deployment: Deployment, tmp_path: Path
) -> None:
    config_file = _config_file(deployment, tmp_path, ["greet", "orders.fulfil"])
    code, out, err = _cli(config_file, "start", "gret", "--input", '{"name": "ada"}', "--name", "typo")
    assert (code, out) == (1, "")
    assert err == (
        f"stepwell: error: deployment {deployment.config.name!r} has no workflow 'gret'; its workflows: "
        "greet, orders.fulfil (client_config's workflows, from the module's workflow_names)\n"
    )
    # Nothing was written or sent: the name is free, the queue empty.
    assert _cli(config_file, "list", "--workflow", "gret")[1] == ""
    assert (
        deployment.clients.sqs.receive_message(QueueUrl=deployment.config.work_queue_url).get("Messages")
        is None
    )

    code, out, err = _cli(config_file, "start", "greet", "--input", '{"name": "ada"}', "--name", "right")
    assert (code, out, err) == (0, "default#greet#right/right\n", "")


def test_without_the_list_every_valid_name_is_sent_as_before(deployment: Deployment, tmp_path: Path) -> None:
    config_file = _config_file(deployment, tmp_path, None)
    code, out, err = _cli(config_file, "start", "gret", "--name", "typo")
    assert (code, out, err) == (0, "default#gret#typo/typo\n", "")  # the worker fails it later


def test_the_client_refuses_an_unknown_workflow_for_starts_and_schedules(deployment: Deployment) -> None:
    data = {"value": {**deployment.config.to_client_config(), "workflows": ["greet"]}}
    assert deployed_workflows(data) == ("greet",)
    client = StepwellClient.from_client_config(data, deployment.clients)
    assert isinstance(client.engine.registry, DeployedWorkflowRegistry)
    with pytest.raises(WorkflowNotFound, match=r"has no workflow 'nightly'; its workflows: greet \("):
        client.start_execution("nightly", {})
    with pytest.raises(WorkflowNotFound, match=r"has no workflow 'nightly'; its workflows: greet \("):
        client.create_schedule("every-night", "nightly", "cron(0 2 * * ? *)")
    assert client.list_schedules() == []
    assert client.start_execution("greet", {"name": "ada"}, "ok") == "default#greet#ok/ok"
    # An empty list: a deployment whose only workflows are definitions.
    empty = StepwellClient(deployment.config, deployment.clients, workflows=[])
    with pytest.raises(WorkflowNotFound, match="its workflows: none "):
        empty.start_execution("greet", {})


@pytest.mark.parametrize(
    ("workflows", "message"),
    [
        ("greet", "client_config['workflows'] must be a list of workflow names, got 'greet'"),
        ([7], "client_config['workflows'] must be a list of workflow names, got [7]"),
        (
            ["has space"],
            "client_config['workflows']: invalid workflow name 'has space': a name is 1-64 characters: a "
            "letter, then letters, digits, '_', '.' or '-'",
        ),
    ],
)
def test_a_malformed_workflows_list_is_a_config_error(
    deployment: Deployment, tmp_path: Path, workflows: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        deployed_workflows({**deployment.config.to_client_config(), "workflows": workflows})
    config_file = tmp_path / "bad.json"
    config_file.write_text(json.dumps({**deployment.config.to_client_config(), "workflows": workflows}))
    code, _, err = _cli(config_file, "list", "--status", "RUNNING")
    assert (code, err) == (1, f"stepwell: error: {message}\n")


def test_definitions_contexts_still_start_when_the_config_lists_the_workflows(
    deployment: Deployment, tmp_path: Path
) -> None:
    clock = VirtualClock()
    registry = Registry()
    registry.register("greet", greet)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime.event_router = install(runtime.engine, deployment.config, deployment.clients, registry)
    driver = QueueDriver(deployment, runtime, clock)
    config_file = _config_file(deployment, tmp_path, ["greet"])
    definition = tmp_path / "onboarding.json"
    definition.write_text(json.dumps(ONBOARDING))
    assert _cli(config_file, "definitions", "put", str(definition), "--domain", "acme")[0] == 0

    code, out, err = _cli(config_file, "event", "send", "signup", "--domain", "acme", "--subject", "user-1")
    assert (code, err) == (0, "") and "started" in out, out
    driver.run_until_quiet(fire_schedules=False)
    code, out, err = _cli(config_file, "event", "send", "verified", "--domain", "acme", "--subject", "user-1")
    assert (code, err) == (0, "") and "resumed" in out, out
    driver.run_until_quiet(fire_schedules=False)
    code, out, _ = _cli(config_file, "list", "--domain", "acme", "--json")
    assert [row["Status"] for row in json.loads(out)["Executions"]] == ["SUCCEEDED"]
