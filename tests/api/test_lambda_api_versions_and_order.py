"""Invoke with a Qualifier starts the execution pinned to that worker version (as Invoke of a durable
function's version does on AWS), and ListDurableExecutionsByFunction pages in both orders (ReverseOrder)
with its filters: every page full but the last, no execution twice or missing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution

from tests.api.conftest import ACCOUNT, ARNS, REGION, ApiStack, api_stack

ARN_PREFIX = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"


@durable_execution
def greet_v2(event: Any, context: DurableContext) -> str:
    return context.step(lambda _: f"Hi, {event['name']}!", name="greet")


@pytest.fixture
def versioned() -> Iterator[ApiStack]:
    """Version 1 says Hello, version 2 (live) says Hi."""
    stack = api_stack(versions=1)
    stack.local.deploy({"greet": greet_v2})
    yield stack
    stack.front.close()


def _start(client: Any, payload: Any, name: str, **options: Any) -> str:
    answer = client.invoke(
        FunctionName="greet",
        Payload=json.dumps(payload),
        InvocationType="Event",
        DurableExecutionName=name,
        **options,
    )
    arn: str = answer["DurableExecutionArn"]
    return arn


def test_a_qualifier_starts_the_execution_pinned_to_that_version(versioned: ApiStack) -> None:
    client = versioned.client()
    assert versioned.local.live_version == "2"
    old = _start(client, {"name": "Ada"}, "on-one", Qualifier="1")
    in_name = client.invoke(
        FunctionName="greet:1",
        Payload=b'{"name": "Cy"}',
        InvocationType="Event",
        DurableExecutionName="named",
    )["DurableExecutionArn"]
    live = _start(client, {"name": "Di"}, "on-live", Qualifier="live")
    latest = _start(client, {"name": "Ed"}, "unpinned")
    # Pinned before any run: the live worker forwards the first run to version 1.
    assert versioned.local.record(ARNS.execution_id(old)).code_version == "1"
    assert versioned.local.record(ARNS.execution_id(latest)).code_version is None
    versioned.local.run_until_idle()

    outcomes = {
        arn: client.get_durable_execution(DurableExecutionArn=arn) for arn in (old, in_name, live, latest)
    }
    assert json.loads(outcomes[old]["Result"]) == "Hello, Ada!"
    assert outcomes[old]["Version"] == "1"
    assert outcomes[old]["FunctionArn"] == f"{ARN_PREFIX}greet:1"
    assert json.loads(outcomes[in_name]["Result"]) == "Hello, Cy!"
    assert json.loads(outcomes[live]["Result"]) == "Hi, Di!" and outcomes[live]["Version"] == "2"
    assert json.loads(outcomes[latest]["Result"]) == "Hi, Ed!" and outcomes[latest]["Version"] == "2"
    listed = client.list_durable_executions_by_function(FunctionName="greet", Qualifier="1")
    assert {item["DurableExecutionArn"] for item in listed["DurableExecutions"]} == {old, in_name}

    # The same name and payload again is the same execution, still on its version.
    assert _start(client, {"name": "Ada"}, "on-one", Qualifier="1") == old
    answer = client.invoke(FunctionName="greet", Qualifier="1", Payload=b'{"name": "Fay"}')
    assert answer["ExecutedVersion"] == "1"
    assert json.loads(answer["Payload"].read()) == "Hello, Fay!"


def test_a_qualifier_naming_a_version_the_deployment_lacks_is_not_found(versioned: ApiStack) -> None:
    client = versioned.client()
    for qualifier in ("9", "blue"):
        with pytest.raises(client.exceptions.ResourceNotFoundException) as missing:
            _start(client, {"name": "x"}, f"missing-{qualifier}", Qualifier=qualifier)
        message = missing.value.response["Error"]["Message"]
        assert f"Function not found: {ARN_PREFIX}greet:{qualifier}" in message
        assert "published: 1, 2 (live)" in message
    assert client.list_durable_executions_by_function(FunctionName="greet")["DurableExecutions"] == []
    # A version pruned away is gone for new starts too.
    versioned.local.deploy()
    versioned.local.engine.functions.delete_version("1")  # type: ignore[union-attr]
    with pytest.raises(client.exceptions.ResourceNotFoundException):
        _start(client, {"name": "x"}, "pruned", Qualifier="1")


def _pages(client: Any, **options: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    marker: dict[str, str] = {}
    while True:
        answer = client.list_durable_executions_by_function(FunctionName="approval", **options, **marker)
        pages.append([item["DurableExecutionName"] for item in answer["DurableExecutions"]])
        if "NextMarker" not in answer:
            return pages
        marker = {"Marker": answer["NextMarker"]}


def test_reverse_order_lists_oldest_first_and_every_page_is_full_but_the_last(stack: ApiStack) -> None:
    client = stack.client()
    names = [f"wait-{index}" for index in range(7)]
    for name in names:
        client.invoke(
            FunctionName="approval", Payload=b"{}", InvocationType="Event", DurableExecutionName=name
        )
        stack.local.clock.advance(1.0)
    stack.local.run_until_idle()
    for stopped in ("wait-1", "wait-2", "wait-4"):
        client.stop_durable_execution(DurableExecutionArn=f"default#approval#{stopped}/{stopped}")

    assert _pages(client, ReverseOrder=True, MaxItems=3) == [names[0:3], names[3:6], names[6:]]
    assert _pages(client, MaxItems=3) == [names[::-1][0:3], names[::-1][3:6], names[::-1][6:]]
    running = ["wait-0", "wait-3", "wait-5", "wait-6"]
    assert _pages(client, ReverseOrder=True, MaxItems=2, Statuses=["RUNNING"]) == [running[:2], running[2:]]
    assert _pages(client, MaxItems=3, Statuses=["RUNNING"]) == [running[::-1][:3], running[::-1][3:]]
    starts = [stack.local.record(f"default#approval#{name}/{name}").created_at for name in names]
    # Half a second off the starts (a second apart): a timestamp travels with microseconds at most.
    window = {
        "StartedAfter": datetime.fromtimestamp(starts[1] + 0.5, tz=UTC),
        "StartedBefore": datetime.fromtimestamp(starts[5] - 0.5, tz=UTC),
    }
    assert _pages(client, ReverseOrder=True, MaxItems=2, **window) == [names[2:4], names[4:5]]
    assert _pages(client, MaxItems=5, **window) == [names[4:1:-1]]


def test_a_marker_of_one_order_does_not_continue_the_other(stack: ApiStack) -> None:
    client = stack.client()
    for index in range(3):
        client.invoke(
            FunctionName="approval", Payload=b"{}", InvocationType="Event", DurableExecutionName=f"w{index}"
        )
        stack.local.clock.advance(1.0)
    first = client.list_durable_executions_by_function(FunctionName="approval", ReverseOrder=True, MaxItems=1)
    assert [item["DurableExecutionName"] for item in first["DurableExecutions"]] == ["w0"]
    rest = client.list_durable_executions_by_function(
        FunctionName="approval", ReverseOrder=True, Marker=first["NextMarker"]
    )
    assert [item["DurableExecutionName"] for item in rest["DurableExecutions"]] == ["w1", "w2"]


def test_a_filtered_page_ends_right_after_its_last_execution(stack: ApiStack) -> None:
    """A filter leaves executions out, so the store reads grow (2, then 4) past what the page needs: the
    marker is placed after the last execution answered, so those read past it are on the next page."""
    client = stack.client()
    names = [f"e{index}" for index in range(9)]
    for name in names:
        client.invoke(
            FunctionName="approval", Payload=b"{}", InvocationType="Event", DurableExecutionName=name
        )
        stack.local.clock.advance(1.0)
    for stopped in ("e0", "e3", "e4", "e8"):
        client.stop_durable_execution(DurableExecutionArn=f"default#approval#{stopped}/{stopped}")
    running = [name for name in names if name not in ("e0", "e3", "e4", "e8")]
    assert _pages(client, ReverseOrder=True, MaxItems=2, Statuses=["RUNNING"]) == [
        running[0:2],
        running[2:4],
        running[4:],
    ]
