"""The history AWS writes for wait_for_condition and context.invoke, and GetDurableExecutionHistory's options
(IncludeExecutionData, ReverseOrder, MaxItems/Marker), on the in-process engine. Every history is also
checked against botocore's shapes (tests/history_model.py)."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from typing import Any

import pytest
import workflows
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, InvokeConfig
from aws_durable_execution_sdk_python.lambda_service import OperationStatus
from aws_durable_execution_sdk_python.types import WaitForConditionCheckContext
from aws_durable_execution_sdk_python.waits import (
    JitterStrategy,
    WaitForConditionConfig,
    WaitForConditionDecision,
    WaitStrategyConfig,
    create_wait_strategy,
)
from history_model import check_history_against_model
from stepwell import cli
from stepwell.errors import InvalidArgument
from stepwell.model import KEY_PART_RULE, ExecutionStatus, InvokeMessage
from stepwell.testing.local import LocalStepwell

POLL_DELAYS = {1: 10, 2: 20}
# The SDK names the error of an exhausted strategy by its module path.
WAIT_FOR_CONDITION_ERROR = "aws_durable_execution_sdk_python.exceptions.WaitForConditionError"


def _count_up(state: int, _: WaitForConditionCheckContext) -> int:
    return state + 1


def _delay_by_attempt(state: int, attempt: int) -> WaitForConditionDecision:
    # A custom strategy: stop at 3, otherwise wait 10 s after the first check and 20 s after the second.
    if state >= 3:
        return WaitForConditionDecision.stop_polling()
    return WaitForConditionDecision.continue_waiting(Duration.from_seconds(POLL_DELAYS[attempt]))


@durable_execution
def poll_until_three(event: Any, context: DurableContext) -> int:
    config = WaitForConditionConfig(wait_strategy=_delay_by_attempt, initial_state=0)
    return context.wait_for_condition(_count_up, config, name="poll")


@durable_execution
def poll_forever(event: Any, context: DurableContext) -> int:
    strategy = create_wait_strategy(
        WaitStrategyConfig(
            should_continue_polling=lambda _: True,
            max_attempts=2,
            initial_delay=Duration.from_seconds(5),
            jitter_strategy=JitterStrategy.NONE,
        )
    )
    return context.wait_for_condition(
        _count_up, WaitForConditionConfig(wait_strategy=strategy, initial_state=0), name="poll"
    )


def _fail_on_second_check(state: int, _: WaitForConditionCheckContext) -> int:
    if state >= 1:
        raise ConnectionError(f"sensor offline at state {state}")
    return state + 1


@durable_execution
def poll_with_failing_check(event: Any, context: DurableContext) -> int:
    config = WaitForConditionConfig(wait_strategy=_delay_by_attempt, initial_state=0)
    return context.wait_for_condition(_fail_on_second_check, config, name="poll")


@durable_execution
def child_workflow(event: Any, context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(event.get("sleep", 1)), name="nap")
    return {"echo": event["x"]}


@durable_execution
def invoking_parent(event: Any, context: DurableContext) -> Any:
    config = InvokeConfig[Any, Any](tenant_id=event.get("tenant"))
    return context.invoke(event["target"], event["payload"], name="call", config=config)


def _plain_double(event: Any, lambda_context: Any) -> int:
    return int(event["x"]) * 2


@pytest.fixture
def local() -> LocalStepwell:
    local = LocalStepwell()
    local.register("poll.three", poll_until_three)
    local.register("poll.forever", poll_forever)
    local.register("poll.failing", poll_with_failing_check)
    local.register("child", child_workflow)
    local.register("parent", invoking_parent)
    local.register_function("double", _plain_double)
    return local


def _history(local: LocalStepwell, execution_id: str) -> list[dict[str, Any]]:
    events = local.history(execution_id)
    assert check_history_against_model(events) == []
    return events


def _operation_events(events: list[dict[str, Any]], name: str) -> list[tuple[str, dict[str, Any]]]:
    return [(e["EventType"], e[f"{e['EventType']}Details"]) for e in events if e.get("Name") == name]


def _seconds_between(events: list[dict[str, Any]], first: int, second: int) -> float:
    delta: timedelta = events[second]["EventTimestamp"] - events[first]["EventTimestamp"]
    return delta.total_seconds()


# ------------------------------------------------------------------------------ wait_for_condition


def test_a_poll_that_asks_to_check_again_is_a_succeeded_attempt_with_its_state_and_delay(
    local: LocalStepwell,
) -> None:
    execution_id = local.start("poll.three", {})
    local.run_until_idle()
    # What the SDK sees after a poll is unchanged: PENDING until the next check, the state kept.
    op = next(
        iter(o for o in local.engine.load_journal(execution_id).operations.values() if o.name == "poll")
    )
    assert op.status is OperationStatus.PENDING
    assert op.step_details is not None and op.step_details.result == "1"
    assert op.step_details.next_attempt_timestamp is not None
    assert op.step_details.next_attempt_timestamp.timestamp() == pytest.approx(
        local.clock.now() + 10, abs=0.5
    )

    local.run_to_completion(execution_id)
    events = _history(local, execution_id)
    assert _operation_events(events, "poll") == [
        ("StepStarted", {}),
        (
            "StepSucceeded",
            {
                "Result": {"Payload": "1", "Truncated": False},
                "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 10},
            },
        ),
        ("StepStarted", {}),
        (
            "StepSucceeded",
            {
                "Result": {"Payload": "2", "Truncated": False},
                "RetryDetails": {"CurrentAttempt": 2, "NextAttemptDelaySeconds": 20},
            },
        ),
        ("StepStarted", {}),
        (
            "StepSucceeded",
            {"Result": {"Payload": "3", "Truncated": False}, "RetryDetails": {"CurrentAttempt": 3}},
        ),
    ]
    polls = [i for i, e in enumerate(events) if e.get("Name") == "poll"]
    assert {events[i]["SubType"] for i in polls} == {"WaitForCondition"}
    # The next check comes after the strategy's delay.
    assert _seconds_between(events, polls[1], polls[2]) == pytest.approx(10, abs=0.5)
    assert _seconds_between(events, polls[3], polls[4]) == pytest.approx(20, abs=0.5)
    assert local.describe(execution_id)["Status"] == "SUCCEEDED"


def test_a_poll_out_of_attempts_is_a_failed_step_with_the_strategys_error(local: LocalStepwell) -> None:
    execution_id = local.start("poll.forever", {})
    local.run_to_completion(execution_id)
    events = _history(local, execution_id)
    message = "wait_for_condition exhausted 2 attempts before the condition was met"
    assert _operation_events(events, "poll") == [
        ("StepStarted", {}),
        (
            "StepSucceeded",
            {
                "Result": {"Payload": "1", "Truncated": False},
                "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 5},
            },
        ),
        ("StepStarted", {}),
        (
            "StepFailed",
            {
                "Error": {
                    "Payload": {"ErrorType": WAIT_FOR_CONDITION_ERROR, "ErrorMessage": message},
                    "Truncated": False,
                },
                "RetryDetails": {"CurrentAttempt": 2},
            },
        ),
    ]
    assert events[-1]["EventType"] == "ExecutionFailed"
    assert local.describe(execution_id)["Status"] == "FAILED"


def test_a_check_that_raises_fails_the_step_with_its_error(local: LocalStepwell) -> None:
    execution_id = local.start("poll.failing", {})
    local.run_to_completion(execution_id)
    events = _history(local, execution_id)
    polls = _operation_events(events, "poll")
    assert polls[:3] == [
        ("StepStarted", {}),
        (
            "StepSucceeded",
            {
                "Result": {"Payload": "1", "Truncated": False},
                "RetryDetails": {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 10},
            },
        ),
        ("StepStarted", {}),
    ]
    assert polls[3] == (
        "StepFailed",
        {
            "Error": {
                "Payload": {"ErrorType": "ConnectionError", "ErrorMessage": "sensor offline at state 1"},
                "Truncated": False,
            },
            "RetryDetails": {"CurrentAttempt": 2},
        },
    )
    assert len(polls) == 4


# ---------------------------------------------------------------------------------------- invoke


def _started(events: list[dict[str, Any]]) -> dict[str, Any]:
    (details,) = [
        details for kind, details in _operation_events(events, "call") if kind == "ChainedInvokeStarted"
    ]
    return details


def test_chained_invoke_started_names_the_child_execution_and_the_version_that_runs(
    local: LocalStepwell,
) -> None:
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 1}})
    local.run_to_completion(parent_id)
    events = _history(local, parent_id)
    started = _started(events)
    child_id = started["DurableExecutionArn"]
    assert started == {
        "FunctionName": "child",
        "Input": {"Payload": '{"x": 1}', "Truncated": False},
        "ExecutedVersion": "$LATEST",
        "DurableExecutionArn": child_id,
    }
    assert _operation_events(events, "call")[1:] == [
        ("ChainedInvokeSucceeded", {"Result": {"Payload": '{"echo": 1}', "Truncated": False}})
    ]
    child = local.describe(child_id)
    assert (child["Status"], child["ParentExecutionId"], child["Domain"], child["WorkflowName"]) == (
        "SUCCEEDED",
        parent_id,
        "default",
        "child",
    )
    assert _history(local, child_id)[0]["EventType"] == "ExecutionStarted"


def test_executed_version_is_the_deployed_version_the_child_runs_on(local: LocalStepwell) -> None:
    version = local.deploy()
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 2}})
    local.run_to_completion(parent_id)
    started = _started(_history(local, parent_id))
    assert started == {
        "FunctionName": "child",
        "Input": {"Payload": '{"x": 2}', "Truncated": False},
        "ExecutedVersion": version,
        "DurableExecutionArn": started["DurableExecutionArn"],
    }
    assert local.describe(started["DurableExecutionArn"])["Version"] == version


def test_a_tenant_id_is_recorded_and_the_child_runs_in_the_tenants_domain(local: LocalStepwell) -> None:
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 3}, "tenant": "acme"})
    local.run_to_completion(parent_id)
    started = _started(_history(local, parent_id))
    child_id = started["DurableExecutionArn"]
    assert started == {
        "FunctionName": "child",
        "Input": {"Payload": '{"x": 3}', "Truncated": False},
        "TenantId": "acme",
        "ExecutedVersion": "$LATEST",
        "DurableExecutionArn": child_id,
    }
    assert child_id.startswith("acme#child#")
    assert local.describe(child_id)["Domain"] == "acme"
    assert [r.execution_id for r in local.engine.list_executions(domain="acme").items] == [child_id]


def test_a_tenant_id_that_cannot_name_a_domain_fails_the_invoke_naming_it(local: LocalStepwell) -> None:
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 4}, "tenant": "acme corp"})
    local.run_to_completion(parent_id)
    events = _history(local, parent_id)
    assert _operation_events(events, "call") == [
        (
            "ChainedInvokeStarted",
            {"FunctionName": "child", "TenantId": "acme corp"},
        ),
        (
            "ChainedInvokeFailed",
            {
                "Error": {
                    "Payload": {
                        "ErrorType": "InvalidArgument",
                        "ErrorMessage": f"invalid tenant id 'acme corp': {KEY_PART_RULE}",
                    },
                    "Truncated": False,
                }
            },
        ),
    ]
    assert local.describe(parent_id)["Status"] == "FAILED"


def test_a_plain_target_has_no_durable_execution_arn(local: LocalStepwell) -> None:
    parent_id = local.start("parent", {"target": "double", "payload": {"x": 21}})
    local.run_to_completion(parent_id)
    events = _history(local, parent_id)
    assert _operation_events(events, "call") == [
        (
            "ChainedInvokeStarted",
            {
                "FunctionName": "double",
                "Input": {"Payload": '{"x": 21}', "Truncated": False},
                "ExecutedVersion": "$LATEST",
            },
        ),
        ("ChainedInvokeSucceeded", {"Result": {"Payload": "42", "Truncated": False}}),
    ]


def test_stopping_a_parent_stops_its_running_child_and_records_nothing_after_the_stop(
    local: LocalStepwell,
) -> None:
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 5, "sleep": 3600}})
    local.run_until_idle()
    child_id = _started(local.history(parent_id))["DurableExecutionArn"]
    assert local.describe(child_id)["Status"] == "RUNNING"

    assert local.engine.stop_execution(parent_id)
    local.run_to_completion(parent_id)
    local.run_until_idle()
    child = local.describe(child_id)
    assert (child["Status"], child["Error"]) == (
        "STOPPED",
        {"ErrorType": "ParentStopped", "ErrorMessage": f"parent execution {parent_id!r} ended STOPPED"},
    )
    child_events = _history(local, child_id)
    assert (child_events[-1]["EventType"], child_events[-1]["ExecutionStoppedDetails"]) == (
        "ExecutionStopped",
        {"Error": {"Payload": child["Error"], "Truncated": False}},
    )
    # Later messages (the child's stop resumes its parent) find the parent ended: its log ends at the stop.
    local.run_until_idle()
    parent_events = _history(local, parent_id)
    assert parent_events[-1]["EventType"] == "ExecutionStopped"
    assert [kind for kind, _ in _operation_events(parent_events, "call")] == ["ChainedInvokeStarted"]
    assert local.queue.next_due_at() is None


# ------------------------------------------------------------------------------- history options


@pytest.fixture
def finished_invoke(local: LocalStepwell) -> str:
    parent_id = local.start("parent", {"target": "child", "payload": {"x": 6}})
    local.run_to_completion(parent_id)
    return parent_id


def test_history_without_execution_data_has_no_payloads_and_marks_them_truncated(
    local: LocalStepwell, finished_invoke: str
) -> None:
    full = local.engine.get_execution_history(finished_invoke)
    bare = local.engine.get_execution_history(finished_invoke, include_execution_data=False)
    assert check_history_against_model(bare) == []
    assert "Payload" not in json.dumps(bare, default=str)
    assert [e["EventType"] for e in bare] == [e["EventType"] for e in full]
    for stripped, event in zip(bare, full, strict=True):
        key = f"{event['EventType']}Details"
        expected = {
            name: {"Truncated": True} if name in ("Input", "Result", "Error") else value
            for name, value in event[key].items()
        }
        assert stripped == {**event, key: expected}
    by_type = {e["EventType"]: e for e in bare}
    assert by_type["ExecutionStarted"]["ExecutionStartedDetails"] == {"Input": {"Truncated": True}}
    assert by_type["ChainedInvokeSucceeded"]["ChainedInvokeSucceededDetails"] == {
        "Result": {"Truncated": True}
    }


def test_history_in_reverse_order_and_in_pages(local: LocalStepwell, finished_invoke: str) -> None:
    engine = local.engine
    full = engine.get_execution_history(finished_invoke)
    assert len(full) > 5
    assert engine.get_execution_history(finished_invoke, reverse_order=True) == full[::-1]
    for reverse in (False, True):
        pages, marker = [], None
        while True:
            page = engine.get_execution_history_page(
                finished_invoke, reverse_order=reverse, max_items=2, marker=marker
            )
            pages.append(page["Events"])
            marker = page.get("NextMarker")
            if marker is None:
                break
        assert all(len(page) == 2 for page in pages[:-1]) and 1 <= len(pages[-1]) <= 2
        assert [e for page in pages for e in page] == (full[::-1] if reverse else full)
    assert engine.get_execution_history_page(finished_invoke) == {"Events": full}
    assert engine.get_execution_history(finished_invoke, max_items=3, marker="events-from-2") == full[2:5]


def test_a_history_page_holds_100_events_by_default_as_aws_max_items(local: LocalStepwell) -> None:
    # GetDurableExecutionHistory's MaxItems (botocore's Lambda model): "The default is 100 ... A value of 0
    # uses the default." get_execution_history (console, CLI, tests) still reads every event.
    local.register("many_steps", workflows.counted_steps)
    execution_id = local.start("many_steps", {"steps": 60})
    local.run_to_completion(execution_id)
    engine = local.engine
    full = engine.get_execution_history(execution_id)
    assert len(full) > 120
    for max_items in (None, 0):
        first = engine.get_execution_history_page(execution_id, max_items=max_items)
        assert (first["Events"], first["NextMarker"]) == (full[:100], "events-from-100")
    rest = engine.get_execution_history_page(execution_id, marker="events-from-100")
    assert rest == {"Events": full[100:]}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_items": -1}, "invalid max_items -1: an integer from 1 to 1000 .0 or None: the default, 100."),
        ({"max_items": 1001}, "invalid max_items 1001: an integer from 1 to 1000"),
        ({"max_items": True}, "invalid max_items True: an integer from 1 to 1000"),
        ({"marker": "7"}, "invalid history marker '7': pass the NextMarker of a previous page"),
        ({"marker": "events-from-999"}, "invalid history marker 'events-from-999'"),
    ],
)
def test_bad_history_options_are_refused_naming_the_value(
    local: LocalStepwell, finished_invoke: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(")):
        local.engine.get_execution_history_page(finished_invoke, **options)


class _EngineClient:
    """The part of StepwellClient the history command uses, over the local engine."""

    def __init__(self, local: LocalStepwell) -> None:
        self.get_execution_history = local.engine.get_execution_history


def test_cli_history_no_data_and_reverse(local: LocalStepwell, finished_invoke: str) -> None:
    parser = cli.build_parser()
    out = io.StringIO()
    args = parser.parse_args(["history", finished_invoke, "--json", "--no-data", "--reverse"])
    assert cli.run(args, _EngineClient(local), out, io.StringIO()) == 0  # type: ignore[arg-type]
    printed = json.loads(out.getvalue())
    expected = local.engine.get_execution_history(
        finished_invoke, include_execution_data=False, reverse_order=True
    )
    assert printed == json.loads(json.dumps(expected, default=cli._json_default))
    assert printed[0]["EventType"] == "ExecutionSucceeded" and "Payload" not in out.getvalue()

    timeline = io.StringIO()
    cli.run(
        parser.parse_args(["history", finished_invoke, "--reverse"]),
        _EngineClient(local),
        timeline,
        io.StringIO(),
    )  # type: ignore[arg-type]
    lines = timeline.getvalue().splitlines()
    # Newest first, offsets still counted from the start.
    assert "ExecutionSucceeded" in lines[0] and "ExecutionStarted" in lines[-1]
    assert lines[-1].split()[0] == "+0.000s"


@durable_execution
def _awaits_an_answer(event: Any, context: DurableContext) -> Any:
    return context.create_callback(name="answer").result()


def _stamp_ms(event: dict[str, Any]) -> int:
    return round(event["EventTimestamp"].timestamp() * 1000)


@pytest.mark.parametrize("ran_first", [False, True], ids=["stopped before its first run", "stopped waiting"])
def test_a_stop_settled_late_is_stamped_with_the_times_describe_gives(
    stepwell_local: LocalStepwell, ran_first: bool
) -> None:
    """The worker logs a stop when the stop's message comes, which may be days later (a busy lease, a
    redrive from the DLQ): ExecutionStarted and ExecutionStopped still carry the execution's own start and
    stop, as describe's StartTimestamp and EndTimestamp do, and the history's times never go back."""
    stepwell_local.register("awaits", _awaits_an_answer)
    execution_id = stepwell_local.start("awaits", None)
    if ran_first:
        stepwell_local.run_until_idle()
        stepwell_local.clock.advance(3600)
    assert stepwell_local.engine.stop_execution(execution_id)
    stepwell_local.clock.advance(3 * 86400)
    stepwell_local.run_until_idle()

    described = stepwell_local.describe(execution_id)
    history = stepwell_local.history(execution_id)
    assert described["Status"] == "STOPPED"
    assert [event["EventType"] for event in history][-1] == "ExecutionStopped"
    # To the millisecond the history keeps; a first run logs the start as it begins, a moment after it.
    started_within = 1 if not ran_first else 1000
    assert abs(_stamp_ms(history[0]) - described["StartTimestamp"] * 1000) <= started_within
    assert abs(_stamp_ms(history[-1]) - described["EndTimestamp"] * 1000) <= 1
    stamps = [_stamp_ms(event) for event in history]
    assert stamps == sorted(stamps)


def test_a_stop_stamped_before_the_logs_last_event_is_logged_after_it(stepwell_local: LocalStepwell) -> None:
    """A stop that raced a run (its record's end a moment before the run's last events, say on a clock a
    second behind) is logged at the log's last event instead: a history's times never go back."""
    stepwell_local.register("awaits", _awaits_an_answer)
    execution_id = stepwell_local.start("awaits", None)
    stepwell_local.run_until_idle()
    last_event_ms = _stamp_ms(stepwell_local.history(execution_id)[-1])
    stopped_at = last_event_ms / 1000 - 1.0
    store = stepwell_local.engine.store
    assert store.complete_execution(
        execution_id, ExecutionStatus.STOPPED, stopped_at, error={"ErrorType": "Stop"}
    )
    stepwell_local.engine.queue.enqueue(InvokeMessage(execution_id).to_body())
    stepwell_local.run_until_idle()

    history = stepwell_local.history(execution_id)
    assert history[-1]["EventType"] == "ExecutionStopped" and _stamp_ms(history[-1]) == last_event_ms
    assert stepwell_local.describe(execution_id)["EndTimestamp"] == stopped_at
