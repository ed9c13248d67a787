"""Built-in actions and the retry policy mapping."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from typing import Any

import boto3
import pytest
from moto import mock_aws
from stepwell.features.definitions.actions import (
    HTTP,
    INVOKE_LAMBDA,
    PUT_EVENT,
    ActionContext,
    ActionError,
    ActionRegistry,
    PermanentActionError,
    UnknownAction,
    invoke_lambda,
    put_event,
    retry_strategy,
)
from stepwell.features.definitions.model import RetryPolicy


def context(clients: Any = None, bus: str | None = None) -> ActionContext:
    return ActionContext(
        domain="acme",
        workflow_id="wf",
        subject_id="u1",
        instance_id="i1",
        node_id="n",
        attempt=1,
        clients=clients or (lambda service: None),
        event_bus_name=bus,
    )


def test_put_event_on_the_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("STEPWELL_EVENT_BUS_NAME", raising=False)
    with mock_aws():
        events = boto3.client("events", region_name="us-east-1")
        events.create_event_bus(Name="bus")
        result = put_event(
            {"detailType": "email.requested", "detail": {"to": "a@x"}}, context(lambda s: events, bus="bus")
        )
        assert isinstance(result["eventId"], str) and result["eventId"]
        with pytest.raises(PermanentActionError, match="no event bus"):
            put_event({"detailType": "x"}, context(lambda s: events))
        with pytest.raises(PermanentActionError, match="input 'detailType' must be a non-empty string"):
            put_event({}, context(lambda s: events, bus="bus"))


class FakeLambda:
    def __init__(self, error: str | None = None) -> None:
        self.error = error
        self.calls: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        response: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(b'{"done": true}')}
        if self.error:
            response["FunctionError"] = self.error
        return response


def test_invoke_lambda() -> None:
    fake = FakeLambda()
    result = invoke_lambda({"functionName": "fn", "payload": {"x": 1}}, context(lambda s: fake))
    assert result == {"statusCode": 200, "payload": {"done": True}}
    assert (
        json.loads(fake.calls[0]["Payload"]) == {"x": 1}
        and fake.calls[0]["InvocationType"] == "RequestResponse"
    )
    with pytest.raises(ActionError, match="function 'fn' failed: Unhandled"):
        invoke_lambda({"functionName": "fn"}, context(lambda s: FakeLambda("Unhandled")))
    with pytest.raises(PermanentActionError, match="invocationType 'Later'"):
        invoke_lambda({"functionName": "fn", "invocationType": "Later"}, context(lambda s: fake))


def test_invoke_lambda_refuses_the_deployment_s_own_worker_in_every_form() -> None:
    """The worker's role may invoke its own versions (to forward messages), and the worker runs whatever
    event it is handed: a definition that could invoke it would forge bus events for any domain."""
    fake = FakeLambda()
    own = dataclasses.replace(context(lambda s: fake), own_functions=frozenset({"sw-worker"}))
    for name in (
        "sw-worker",
        "sw-worker:live",
        "sw-worker:$LATEST",
        "123456789012:function:sw-worker",
        "arn:aws:lambda:us-east-1:123456789012:function:sw-worker",
        "arn:aws:lambda:us-east-1:123456789012:function:sw-worker:7",
    ):
        with pytest.raises(PermanentActionError, match="this deployment's own worker"):
            invoke_lambda({"functionName": name, "payload": {"source": "com.victim"}}, own)
    assert fake.calls == []
    assert invoke_lambda({"functionName": "sw-worker-reports"}, own)["statusCode"] == 200


def test_registry() -> None:
    registry = ActionRegistry()
    assert {PUT_EVENT, HTTP, INVOKE_LAMBDA} <= set(registry.names())
    assert ActionRegistry(builtins=False).names() == []

    @registry.action("mine")
    def mine(inputs: dict[str, Any], ctx: ActionContext) -> Any:
        return inputs

    assert registry.get("mine") is mine
    with pytest.raises(UnknownAction, match="unknown action 'nope'"):
        registry.get("nope")
    with pytest.raises(ValueError, match="invalid action name ''"):
        registry.register("", mine)


def test_retry_policy_maps_to_the_step_retry_strategy() -> None:
    strategy = retry_strategy(
        RetryPolicy(max_attempts=3, initial_delay=10, max_delay=15, backoff_rate=2, jitter="none")
    )
    first = strategy(RuntimeError("x"), 1)
    second = strategy(RuntimeError("x"), 2)
    assert first.should_retry and first.delay.to_seconds() == 10
    assert second.should_retry and second.delay.to_seconds() == 15  # capped by maxDelay
    assert not strategy(RuntimeError("x"), 3).should_retry
    assert not strategy(PermanentActionError("bad"), 1).should_retry
    wrapped = RuntimeError("wrapper")
    wrapped.__cause__ = PermanentActionError("inner")
    assert not strategy(wrapped, 1).should_retry


def test_put_event_refuses_the_engines_own_detail_types() -> None:
    """stepwell.callback.success and its kind are the engine's commands: a definition must not emit them."""
    sent: list[Any] = []

    class Bus:
        def put_events(self, **kwargs: Any) -> dict[str, Any]:
            sent.append(kwargs)
            return {"FailedEntryCount": 0, "Entries": [{"EventId": "e1"}]}

    for reserved in ("stepwell.callback.success", "stepwell.callback.heartbeat", " Stepwell.anything"):
        with pytest.raises(PermanentActionError, match=r"starting with 'stepwell\.' are the engine's own"):
            put_event({"detailType": reserved, "detail": {}}, context(lambda s: Bus(), bus="bus"))
    # The engine's status change (source aside, a rule matching its detail type would take it for one).
    for status_change in ("Stepwell Execution Status Change", " stepwell  execution status CHANGE"):
        with pytest.raises(PermanentActionError, match="it is the engine's execution status change"):
            put_event({"detailType": status_change, "detail": {}}, context(lambda s: Bus(), bus="bus"))
    assert sent == []
    assert put_event({"detailType": "stepwells.x", "detail": {}}, context(lambda s: Bus(), bus="bus"))
    assert [entry["Entries"][0]["DetailType"] for entry in sent] == ["stepwells.x"]


def test_the_deployed_runtime_knows_its_worker_as_an_own_function(monkeypatch: pytest.MonkeyPatch) -> None:
    from stepwell.features.definitions.runtime import runtime_from_env

    for name, value in {
        "STEPWELL_DEFINITIONS_TABLE": "d",
        "STEPWELL_EXECUTIONS_TABLE": "e",
        "STEPWELL_COORDINATION_TABLE": "c",
        "STEPWELL_WORKER_FUNCTION_NAME": "sw-worker",
    }.items():
        monkeypatch.setenv(name, value)
    assert runtime_from_env(dynamodb=object()).own_functions == frozenset({"sw-worker"})


def test_put_event_stamps_the_chain_as_the_router_takes_it() -> None:
    """The chain is the outside event's id, or its digest when that is no id the router takes (longer than
    256 characters, or with control characters)."""
    sent: list[dict[str, Any]] = []

    class Bus:
        def put_events(self, **kwargs: Any) -> dict[str, Any]:
            sent.append(json.loads(kwargs["Entries"][0]["Detail"]))
            return {"FailedEntryCount": 0, "Entries": [{"EventId": "e1"}]}

    def emit(chain: str) -> None:
        emitting = dataclasses.replace(context(lambda s: Bus(), bus="bus"), event_chain=chain, event_depth=2)
        put_event({"detailType": "x", "detail": {}}, emitting)

    for chain in ("evt-1", "a" * 256, "a" * 257, "line\nbreak", ""):
        emit(chain)
    long_digest = hashlib.sha256(("a" * 257).encode()).hexdigest()
    assert [(detail["stepwellChain"], detail["stepwellDepth"]) for detail in sent] == [
        ("evt-1", 3),
        ("a" * 256, 3),
        (long_digest, 3),
        (hashlib.sha256(b"line\nbreak").hexdigest(), 3),
        ("i1", 3),  # no chain known: the context's own instance id
    ]
