"""Hostile input to the client's API (on moto): every bad value is an InvalidArgument (or the definitions'
own error) naming it, never an AttributeError, a UnicodeError, a RecursionError or an AWS error."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import CallbackConfig, Duration
from stepwell.cli import main
from stepwell.cli.definitions import DefinitionsCliError, load_json_text
from stepwell.client import StepwellClient
from stepwell.clock import VirtualClock
from stepwell.core.registry import Registry
from stepwell.errors import InvalidArgument
from stepwell.features.definitions.model import DefinitionInvalid
from stepwell.features.definitions.store import StoreError
from stepwell.wiring.entry import EntryRuntime
from stepwell.wiring.events import callback_result_text

from .deployment import Deployment
from .driver import QueueDriver, callback_id_of

DEEP_TOKEN = base64.urlsafe_b64encode(b"[" * 100_000).decode()
ORDERS = Path(__file__).resolve().parents[2] / "examples" / "definitions" / "orders.json"


@durable_execution
def approval(event: Any, context: DurableContext) -> Any:
    callback = context.create_callback(name="approval", config=CallbackConfig(timeout=Duration.from_hours(1)))
    return callback.result()


@pytest.fixture
def client(deployment: Deployment) -> StepwellClient:
    return StepwellClient(deployment.config, deployment.clients)


@pytest.mark.parametrize("bad", [None, 5, {"a": 1}])
def test_an_execution_id_that_is_not_a_string_is_an_invalid_argument(
    client: StepwellClient, bad: Any
) -> None:
    for call in (client.describe_execution, client.get_execution_history, client.stop_execution):
        with pytest.raises(InvalidArgument, match=rf"not an execution id: {bad!r}; expected a string"):
            call(bad)


def test_history_markers_take_only_ascii_digits(client: StepwellClient) -> None:
    execution_id = client.start_execution("echo", 1, execution_name="marked")
    for marker in ("events-from-\u00b2", "events-from-\uff11", "events-from-" + "9" * 5000):
        with pytest.raises(InvalidArgument, match="invalid history marker"):
            client.get_execution_history_page(execution_id, marker=marker)
    assert client.get_execution_history_page(execution_id, marker="events-from-0")["Events"] == []


def test_callback_results_and_errors_that_utf8_cannot_carry_are_refused(deployment: Deployment) -> None:
    registry = Registry()
    registry.register("approval", approval)
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    runtime = EntryRuntime.from_config(deployment.config, deployment.clients, registry=registry, clock=clock)
    driver = QueueDriver(deployment, runtime, clock)
    execution_id = client.start_execution("approval", None, execution_name="needs-approval")
    driver.run_until_quiet(fire_schedules=False)
    callback_id = callback_id_of(client, execution_id)

    with pytest.raises(InvalidArgument, match=r"callback result must be UTF-8 text, got a lone surrogate"):
        client.send_callback_success(callback_id, "ok \ud800")
    with pytest.raises(InvalidArgument, match=r"callback error must be UTF-8 text, got a lone surrogate"):
        client.send_callback_failure(callback_id, {"ErrorMessage": "bad \ud800 text"})
    with pytest.raises(InvalidArgument, match=r"callback result must be UTF-8 text: .*0xff"):
        client.send_callback_success(callback_id, b"\xff")
    # Nothing was completed: the callback still takes a good result.
    client.send_callback_success(callback_id, '"yes"')
    driver.run_until_quiet(fire_schedules=False)
    assert client.describe_execution(execution_id)["Status"] == "SUCCEEDED"


def test_callback_result_text_refuses_bytes_that_are_not_utf8_and_values_that_are_not_json() -> None:
    with pytest.raises(InvalidArgument, match="callback result must be UTF-8 text"):
        callback_result_text(b"\xff\xfe")
    with pytest.raises(InvalidArgument, match="not JSON-serializable"):
        callback_result_text(float("nan"))


def test_flow_status_and_list_executions_refuse_names_that_cannot_be_names(client: StepwellClient) -> None:
    with pytest.raises(InvalidArgument, match=r"invalid workflow '\\ud800'"):
        client.flow_status("\ud800")
    for name in ("", "bad name!", "\ud800", "x" * 3000):
        with pytest.raises(InvalidArgument, match="invalid workflow name"):
            client.list_executions(workflow=name)


def test_upgrade_executions_refuses_a_version_that_is_not_a_string(client: StepwellClient) -> None:
    with pytest.raises(InvalidArgument, match="invalid from_version 5: a version number or an alias"):
        client.upgrade_executions("echo", 5, "live")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="invalid to_version None"):
        client.upgrade_executions("echo", "1", None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, 5, "", {"a": 1}])
def test_publish_callback_event_refuses_a_bad_callback_id_before_anything_is_sent(
    client: StepwellClient, bad: Any
) -> None:
    with pytest.raises(InvalidArgument, match=rf"invalid callback id {bad!r}: a non-empty string"):
        client.publish_callback_event("success", bad)


def test_publish_callback_event_refuses_an_unknown_action_as_an_invalid_argument(
    client: StepwellClient,
) -> None:
    for action in ("bogus", ["success"]):
        with pytest.raises(InvalidArgument, match=r"callback action .* is not one of success, fail"):
            client.publish_callback_event(action, "cb123")  # type: ignore[arg-type]


def test_a_page_token_of_json_nested_too_deeply_is_a_bad_page_token(client: StepwellClient) -> None:
    with pytest.raises(InvalidArgument, match="is not one this store returned"):
        client.list_executions(domain="default", next_token=DEEP_TOKEN)
    with pytest.raises(StoreError, match="is not one this store returned"):
        client.definitions().list_contexts("acme", next_token=DEEP_TOKEN)


@pytest.mark.parametrize(("document", "kind"), [([1], "list"), (None, "NoneType")])
def test_put_definition_of_a_document_that_is_not_an_object_names_what_it_got(
    client: StepwellClient, document: Any, kind: str
) -> None:
    service = client.definitions()
    with pytest.raises(DefinitionInvalid, match=f"a definition must be a JSON object, got {kind}"):
        service.put_definition("acme", document)
    assert service.put_definition("acme", json.loads(ORDERS.read_text())).version == 1


def test_json_nested_too_deeply_on_the_command_line_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(DefinitionsCliError, match="--data is JSON nested too deeply"):
        load_json_text("[" * 100_000, "--data")
    document = tmp_path / "deep.json"
    document.write_text("[" * 100_000)
    err = io.StringIO()
    assert main(["definitions", "validate", str(document)], out=io.StringIO(), err=err) == 1
    assert err.getvalue() == f"stepwell: error: {str(document)!r} is JSON nested too deeply: {'[' * 100!r}\n"


@pytest.mark.parametrize("port", ["-1", "65536", "99999", "\uff18\uff10", "x"])
def test_console_port_outside_0_to_65535_is_a_usage_error(port: str) -> None:
    err = io.StringIO()
    assert main(["console", "--port", port], out=io.StringIO(), err=err) == 2
    assert f"port must be a whole number 0..65535, got {port!r}" in err.getvalue()
