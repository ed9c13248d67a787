"""A remote durable function's invocations carry the execution's trace: the worker invokes it with
_X_AMZN_TRACE_ID set to the execution's header, which botocore sends (from inside Lambda) as the Invoke's
X-Amzn-Trace-Id, and Lambda hands an async invocation the trace header it received."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext
from stepwell.aws.clients import AwsClients
from stepwell.aws.lambda_invoker import BotoLambdaInvoker
from stepwell.core.tracing import TRACE_ENVIRONMENT
from stepwell.model import ExecutionStatus
from stepwell.ports import ExecutionStore

from tests.remote.harness import RemoteStack, remote_stack

CALLER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def one_step(event: Any, context: DurableContext) -> Any:
    return context.step(lambda _: event["n"] * 2, name="double")


@pytest.fixture
def stack(execution_store: ExecutionStore) -> Iterator[RemoteStack]:
    built = remote_stack({"doubling": one_step}, {}, store=execution_store)
    yield built
    built.close()


def test_each_invoke_of_a_remote_function_is_made_with_the_executions_trace(stack: RemoteStack) -> None:
    seen: list[str | None] = []
    invoke_event = stack.fake_lambda.invoke_event

    def recording(function: str, qualifier: str | None, payload: bytes) -> None:
        seen.append(os.environ.get(TRACE_ENVIRONMENT))
        invoke_event(function, qualifier, payload)

    stack.fake_lambda.invoke_event = recording  # type: ignore[method-assign]
    before = os.environ.get(TRACE_ENVIRONMENT)
    execution_id = stack.local.start("doubling", {"n": 4}, trace_header=CALLER)
    record = stack.run(execution_id)

    assert record.status is ExecutionStatus.SUCCEEDED
    header = stack.local.describe(execution_id)["TraceHeader"]
    assert header.startswith("Root=1-5759e988-bd862e3fe1be46a994272793;")
    assert seen and set(seen) == {header}
    assert os.environ.get(TRACE_ENVIRONMENT) == before


class _Sent(Exception):
    pass


def test_botocore_sends_the_environments_trace_as_the_invokes_header_inside_lambda(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_LAMBDA"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "stepwell-worker")  # as in the deployed worker
    monkeypatch.setenv(TRACE_ENVIRONMENT, CALLER)
    clients = AwsClients(region="us-east-1")
    sent: dict[str, Any] = {}

    def capture(request: Any, **_: Any) -> None:
        sent.update(request.headers)
        raise _Sent  # nothing leaves the machine

    clients.lambda_.meta.events.register("before-send.lambda.Invoke", capture)
    with pytest.raises(_Sent):
        BotoLambdaInvoker(clients).invoke_event(
            "arn:aws:lambda:us-east-1:123456789012:function:f", None, b"{}"
        )
    header = sent["X-Amzn-Trace-Id"]
    assert (header.decode() if isinstance(header, bytes) else header) == CALLER
