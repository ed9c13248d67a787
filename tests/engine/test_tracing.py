"""Trace headers in-process (stepwell.core.tracing): each execution gets one at its start (the caller's
trace when given), describe returns it, every invocation sees it in _X_AMZN_TRACE_ID and its context,
a chained invoke's child carries its parent's trace or the one its invoke propagated (the SDK's
OpenTelemetry plugin's XAmznTraceId), and a bad header is refused naming the format."""

from __future__ import annotations

import os
import re
import threading
from typing import Any

import pytest
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration
from aws_durable_execution_sdk_python.plugin import (
    DurableInstrumentationPlugin,
    InvocationStartInfo,
    PropagationInput,
    PropagationMetadata,
)
from stepwell.core.tracing import (
    MAX_TRACE_HEADER_LENGTH,
    TRACE_ENVIRONMENT,
    caller_trace_header,
    execution_trace_header,
    parse_trace_header,
    trace_environment,
)
from stepwell.errors import InvalidArgument
from stepwell.testing.local import LocalStepwell

HEADER = re.compile(r"Root=1-[0-9a-f]{8}-[0-9a-f]{24};Parent=[0-9a-f]{16}")
CALLER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
SEEN: list[tuple[str | None, str | None]] = []  # (environment, context) per invocation


@durable_execution
def traced(event: Any, context: DurableContext) -> str:
    SEEN.append((os.environ.get(TRACE_ENVIRONMENT), context.lambda_context.trace_header))
    context.wait(Duration.from_seconds(5), name="pause")
    return "done"


@durable_execution
def parent(event: Any, context: DurableContext) -> Any:
    return context.invoke("traced", None, name="child")


@pytest.fixture(autouse=True)
def _seen() -> None:
    SEEN.clear()


def test_each_invocation_sees_the_executions_trace_header_and_describe_returns_it(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("traced", traced)
    before = os.environ.get(TRACE_ENVIRONMENT)
    execution_id = stepwell_local.start("traced")
    stepwell_local.run_to_completion(execution_id)

    header = stepwell_local.describe(execution_id)["TraceHeader"]
    assert HEADER.fullmatch(header), header
    assert "Sampled" not in header  # a fresh trace leaves sampling to the function
    assert len(SEEN) == 2  # the first invocation and the one after the wait
    assert [(header, header), (header, header)] == SEEN
    assert os.environ.get(TRACE_ENVIRONMENT) == before  # restored after each run
    assert stepwell_local.record(execution_id).trace_header == header


def test_the_callers_trace_is_kept_with_a_parent_of_the_executions_own(
    stepwell_local: LocalStepwell,
) -> None:
    stepwell_local.register("traced", traced)
    execution_id = stepwell_local.start("traced", trace_header=CALLER)
    stepwell_local.run_until_idle()

    given, kept = (
        parse_trace_header(CALLER),
        parse_trace_header(stepwell_local.describe(execution_id)["TraceHeader"]),
    )
    assert (kept.root, kept.sampled) == (given.root, True)
    assert kept.parent is not None and kept.parent != given.parent
    assert kept.trace_id == "5759e988bd862e3fe1be46a994272793"


def test_a_chained_invokes_child_carries_its_parents_trace(stepwell_local: LocalStepwell) -> None:
    stepwell_local.register("traced", traced)
    stepwell_local.register("parent", parent)
    execution_id = stepwell_local.start("parent", trace_header=CALLER)
    stepwell_local.run_to_completion(execution_id)

    history = stepwell_local.history(execution_id)
    child_id = next(
        event["ChainedInvokeStartedDetails"]["DurableExecutionArn"]
        for event in history
        if event["EventType"] == "ChainedInvokeStarted"
    )
    parent_header = parse_trace_header(stepwell_local.describe(execution_id)["TraceHeader"])
    child_header = parse_trace_header(stepwell_local.describe(child_id)["TraceHeader"])
    assert child_header.root == parent_header.root
    assert child_header.parent != parent_header.parent


# Another trace than the parent's (CALLER) and another sampling decision, to tell whose the child keeps.
INVOKE_SPAN = "Root=1-6b0a50b9-cfb26d38b1e77f56130efb0a;Parent=1111222233334444;Sampled=0;Lineage=a:1"
PROPAGATED: list[str | None] = [INVOKE_SPAN]  # what the plugin below puts in the invoke's options


class _Propagating(DurableInstrumentationPlugin):
    """As the SDK's OpenTelemetry plugin does: the invoke's span as its ChainedInvokeOptions.XAmznTraceId."""

    def provide_propagation_metadata(self, info: PropagationInput) -> PropagationMetadata | None:
        return PropagationMetadata(x_amzn_trace_id=PROPAGATED[0])


class _PropagatingFactory:
    def create_plugin(self, info: InvocationStartInfo, /) -> DurableInstrumentationPlugin:
        return _Propagating()


@durable_execution(plugins=[_PropagatingFactory()])
def propagating_parent(event: Any, context: DurableContext) -> Any:
    return context.invoke("traced", None, name="child")


def _child_header(stepwell_local: LocalStepwell, propagated: str | None) -> tuple[str, str]:
    """The parent's and its child's trace headers when the invoke propagates `propagated`."""
    PROPAGATED[0] = propagated
    stepwell_local.register("traced", traced)
    stepwell_local.register("propagating", propagating_parent)
    execution_id = stepwell_local.start("propagating", trace_header=CALLER)
    stepwell_local.run_to_completion(execution_id)
    assert stepwell_local.describe(execution_id)["Status"] == "SUCCEEDED"
    child_id = next(
        event["ChainedInvokeStartedDetails"]["DurableExecutionArn"]
        for event in stepwell_local.history(execution_id)
        if event["EventType"] == "ChainedInvokeStarted"
    )
    return stepwell_local.describe(execution_id)["TraceHeader"], stepwell_local.describe(child_id)[
        "TraceHeader"
    ]


def test_a_chained_invokes_propagated_trace_header_is_its_childs(stepwell_local: LocalStepwell) -> None:
    _, child_text = _child_header(stepwell_local, INVOKE_SPAN)
    child = parse_trace_header(child_text)
    # Its Root and Sampled; a Parent of the child's own (AWS's otel suites reject the invoke's span as the
    # parent of the child's Workflow span); Lineage is not kept.
    assert (child.root, child.sampled) == ("1-6b0a50b9-cfb26d38b1e77f56130efb0a", False)
    assert child.parent is not None and child.parent != "1111222233334444" and "Lineage" not in child_text
    assert {seen for pair in SEEN for seen in pair} == {
        child_text
    }  # every invocation of the child runs in it


@pytest.mark.parametrize(
    "propagated",
    [
        "Root=1-nothex;Parent=1111222233334444",
        "Parent=1111222233334444",
        "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",  # OTel's invalid span
    ],
)
def test_a_malformed_propagated_header_leaves_the_child_in_its_parents_trace(
    stepwell_local: LocalStepwell, propagated: str
) -> None:
    parent_text, child_text = _child_header(stepwell_local, propagated)
    parent_header, child_header = parse_trace_header(parent_text), parse_trace_header(child_text)
    assert child_header.root == parent_header.root
    assert child_header.parent not in (parent_header.parent, "1111222233334444")


@pytest.mark.parametrize(
    "bad",
    [
        "Root=1-5759e988-bd862e3fe1be46a99427279",  # 23 hex digits
        "Root=2-5759e988-bd862e3fe1be46a994272793",
        "Parent=53995c3f42cd8ad8;Sampled=1",  # no Root
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=xyz",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=yes",
        "Root=1-5759e988-bd862e3fe1be46a994272793;\n",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Lineage=" + "a" * MAX_TRACE_HEADER_LENGTH,
    ],
)
def test_a_bad_trace_header_refuses_the_start_naming_the_format(
    stepwell_local: LocalStepwell, bad: str
) -> None:
    stepwell_local.register("traced", traced)
    with pytest.raises(InvalidArgument, match="trace header") as refused:
        stepwell_local.start("traced", trace_header=bad)
    assert "Root=1-" in str(refused.value) or str(MAX_TRACE_HEADER_LENGTH) in str(refused.value)
    assert stepwell_local.engine.list_executions(workflow="traced").items == []
    assert caller_trace_header(bad) is None  # what the Lambda API's Invoke does with it: a fresh trace


def test_other_fields_and_an_undecided_sampling_are_accepted() -> None:
    header = parse_trace_header(
        "Self=1-67891234-12456789abcdef012345678;Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=?;Lineage=a:1"
    )
    assert (header.root, header.parent, header.sampled) == ("1-5759e988-bd862e3fe1be46a994272793", None, None)
    assert "Sampled" not in execution_trace_header(str(header), 0)
    assert caller_trace_header(CALLER) == CALLER


def test_the_environment_holds_the_latest_run_in_flight_and_is_restored_when_all_end() -> None:
    os.environ[TRACE_ENVIRONMENT] = "the worker's own"
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, str | None] = {}

    def first() -> None:
        with trace_environment("A"):
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with trace_environment("B"):
            second_in.set()
            first_out.wait(10)
            seen["after the first ended"] = os.environ.get(TRACE_ENVIRONMENT)

    try:
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert seen == {"after the first ended": "B"}
        assert os.environ[TRACE_ENVIRONMENT] == "the worker's own"
        with trace_environment(None):
            assert os.environ[TRACE_ENVIRONMENT] == "the worker's own"
    finally:
        os.environ.pop(TRACE_ENVIRONMENT, None)
