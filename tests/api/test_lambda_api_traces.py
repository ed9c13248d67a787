"""Trace headers through AWS's durable execution API and boto3's own `lambda` client: Invoke takes the
caller's X-Amzn-Trace-Id (as botocore sends it from a caller running in Lambda) and ignores a malformed
one (a fresh trace, as Lambda does); GetDurableExecution answers TraceHeader.XAmznTraceId.

The front here hands the API function the tracing header the caller sent, as Lambda populates an
invocation's trace from the header it receives (the shared front makes a fresh one for every request)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from stepwell.core.tracing import TRACE_ENVIRONMENT, parse_trace_header

from tests.api.conftest import ARNS, ApiStack, api_stack
from tests.api.iam_url_front import IamFunctionUrlFront, Identity

CALLER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


class _TracePassingFront(IamFunctionUrlFront):
    def event(
        self, identity: Identity, method: str, path: str, headers: list[tuple[str, str]], body: bytes
    ) -> dict[str, Any]:
        event = super().event(identity, method, path, headers, body)
        sent = [value for name, value in headers if name.lower() == "x-amzn-trace-id"]
        if sent:
            event["headers"]["x-amzn-trace-id"] = sent[0]
        return event


@pytest.fixture
def stack() -> Iterator[ApiStack]:
    built = api_stack()
    built.front.close()
    front = _TracePassingFront(
        lambda event: built.handler.handle(event, 60.0), built.front.region, built.front.policy_principals
    )
    traced = ApiStack(built.local, built.handler, front)
    yield traced
    front.close()


def _invoke(client: Any, name: str, trace: str | None) -> str:
    def add_header(params: dict[str, Any], **_: Any) -> None:
        if trace is not None:
            params["headers"]["X-Amzn-Trace-Id"] = trace

    client.meta.events.register_first("before-call.lambda.Invoke", add_header)
    try:
        answer = client.invoke(
            FunctionName="greet",
            Payload=json.dumps({"name": "Ada"}),
            InvocationType="Event",
            DurableExecutionName=name,
        )
    finally:
        client.meta.events.unregister("before-call.lambda.Invoke", add_header)
    arn: str = answer["DurableExecutionArn"]
    return arn


def test_a_callers_trace_header_from_lambda_is_the_executions_trace(
    stack: ApiStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # botocore sends _X_AMZN_TRACE_ID as X-Amzn-Trace-Id from inside a Lambda function.
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "caller")
    monkeypatch.setenv(TRACE_ENVIRONMENT, CALLER)
    client = stack.client()
    arn = client.invoke(FunctionName="greet", Payload=b'{"name": "Ada"}', InvocationType="Event")[
        "DurableExecutionArn"
    ]
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    stack.local.run_until_idle()

    header = client.get_durable_execution(DurableExecutionArn=arn)["TraceHeader"]["XAmznTraceId"]
    kept = parse_trace_header(header)
    assert (kept.root, kept.sampled) == ("1-5759e988-bd862e3fe1be46a994272793", True)
    assert kept.parent not in (None, "53995c3f42cd8ad8")
    assert stack.local.describe(ARNS.execution_id(arn))["TraceHeader"] == header


@pytest.mark.parametrize(
    "sent",
    [None, "Root=1-nothex00-bd862e3fe1be46a994272793", "Root=1-5759e988-" + "a" * 9000],
    ids=["none", "malformed", "over-long"],
)
def test_without_a_valid_caller_trace_the_execution_gets_a_fresh_one(
    stack: ApiStack, sent: str | None
) -> None:
    client = stack.client()
    arn = _invoke(client, f"fresh-{len(sent or '')}", sent)
    described = client.get_durable_execution(DurableExecutionArn=arn, IncludeExecutionData=False)
    header = parse_trace_header(described["TraceHeader"]["XAmznTraceId"])
    assert header.root != "1-5759e988-bd862e3fe1be46a994272793" and header.parent is not None
    assert header.sampled is None


def test_an_explicit_header_on_invoke_is_taken(stack: ApiStack) -> None:
    client = stack.client()
    arn = _invoke(client, "explicit", "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=0")
    header = parse_trace_header(
        client.get_durable_execution(DurableExecutionArn=arn)["TraceHeader"]["XAmznTraceId"]
    )
    assert (header.root, header.sampled) == ("1-5759e988-bd862e3fe1be46a994272793", False)
