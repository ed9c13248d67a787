"""The runner's own rules: where cases come from, how a case module is registered, and how a case is
judged: by AWS's conformance validator's rules (history and placeholders, result, ExpectedLogs, polling
end states and the no-progress timeout, callback actions), and by ours only inside `x-stepwell`."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from case_registration import register_case_module
from log_rules import LogLine, check_logs, of_execution
from matching import ABSENT, EXTENSION, EXTENSION_KEY, Placeholders, check_children, extension, match_history
from polling import Driver, PollEnd
from runner import OWN_CASES_DIR, Case, ExecutionStuck, check_shapes, discover_cases, drive, judge

OWN_SUITES = {"wait_for_condition", "invoke", "map"}


def test_own_cases_are_always_discovered_with_their_handlers_beside() -> None:
    own = [case for case in discover_cases() if case.yaml_path.is_relative_to(OWN_CASES_DIR)]
    assert {case.suite for case in own} == OWN_SUITES
    for case in own:
        assert case.handler_path == case.yaml_path.with_suffix(".py") and case.handler_path.is_file()


def _module(**attributes: Any) -> ModuleType:
    module = ModuleType("case_module")
    for name, value in attributes.items():
        setattr(module, name, value)
    return module


def test_register_case_module_registers_workflows_with_options_and_functions() -> None:
    calls: list[tuple[str, str, dict[str, Any]]] = []

    def handler(event: Any, context: Any) -> None: ...

    def child(event: Any, context: Any) -> None: ...

    def plain(event: Any, lambda_context: Any) -> None: ...

    module = _module(
        handler=handler,
        WORKFLOWS={"child-a": child},
        WORKFLOW_OPTIONS={"child-a": {"execution_timeout": 60}},
        FUNCTIONS={"plain-a": plain},
    )
    register_case_module(
        module,
        "case.x",
        lambda name, fn, **options: calls.append(("workflow", name, options)),
        lambda name, fn: calls.append(("function", name, {})),
    )
    assert calls == [
        ("workflow", "case.x", {}),
        ("workflow", "child-a", {"execution_timeout": 60}),
        ("function", "plain-a", {}),
    ]


def test_workflow_options_for_a_name_not_in_workflows_is_refused_naming_it() -> None:
    module = _module(handler=lambda e, c: None, WORKFLOW_OPTIONS={"ghost": {"execution_timeout": 5}})
    with pytest.raises(ValueError, match="'ghost'"):
        register_case_module(module, "case.x", lambda *a, **k: None, lambda *a: None)


def _event(**details: Any) -> dict[str, Any]:
    return {"EventType": "ChainedInvokeStarted", "EventId": 2, "ChainedInvokeStartedDetails": details}


# ------------------------------------------------------------------------------ history, AWS's rules


def test_absent_is_an_ordinary_placeholder_under_aws_rules_and_a_rule_in_the_extension() -> None:
    expected = [{"EventId": 2, "ChainedInvokeStartedDetails": {"DurableExecutionArn": ABSENT}}]
    names = Placeholders()
    assert match_history(expected, [_event(FunctionName="f", DurableExecutionArn="x")], names) == []
    assert names.bindings["ABSENT"] == "x"
    assert match_history(expected, [_event(FunctionName="f")], Placeholders()) == [
        "Event[2].ChainedInvokeStartedDetails.DurableExecutionArn: missing in actual event"
    ]
    assert match_history(expected, [_event(FunctionName="f")], Placeholders(), EXTENSION) == []
    errors = match_history(expected, [_event(DurableExecutionArn="x")], Placeholders(), EXTENSION)
    assert errors == [
        "Event[2].ChainedInvokeStartedDetails.DurableExecutionArn: expected no such key, got 'x'"
    ]


def test_absent_event_is_a_rule_only_in_the_extension() -> None:
    expected = [{"EventId": 3, "EventType": ABSENT}]
    later = {"EventId": 3, "EventType": "ChainedInvokeFailed"}
    assert match_history(expected, [_event()], Placeholders(), EXTENSION) == []
    assert match_history(expected, [_event(), later], Placeholders(), EXTENSION) == [
        "Event[3]: expected no such event, got ChainedInvokeFailed"
    ]
    # AWS: an expected event needs an actual one with its EventId, whose type binds ${ABSENT}.
    assert match_history(expected, [_event()], Placeholders()) == [
        "no actual event with EventId=3 (expected ${ABSENT})"
    ]
    assert match_history(expected, [_event(), later], Placeholders()) == []


def test_variables_are_substituted_inside_patterns_only_in_the_extension() -> None:
    names = Placeholders()
    names.resolve_variables({"TENANT": "acme7"})
    expected = [{"EventId": 2, "ChainedInvokeStartedDetails": {"DurableExecutionArn": "${/^${TENANT}#/}"}}]
    actual = [_event(DurableExecutionArn="acme7#wf#id/id")]
    assert match_history(expected, actual, names, EXTENSION) == []
    assert match_history(expected, [_event(DurableExecutionArn="other#wf#id/id")], names, EXTENSION) != []
    path = "Event[2].ChainedInvokeStartedDetails.DurableExecutionArn"
    assert match_history(expected, actual, names) == [
        f"{path}: 'acme7#wf#id/id' does not match /^${{TENANT}}#/"
    ]


def test_a_generator_in_an_expected_history_binds_like_any_placeholder() -> None:
    names = Placeholders()
    expected = [{"EventId": 2, "Name": "${GEN_STR:8}"}, {"EventId": 3, "Name": "${GEN_STR:8}"}]
    assert match_history(expected, [{"EventId": 2, "Name": "a"}, {"EventId": 3, "Name": "a"}], names) == []
    errors = match_history(
        expected, [{"EventId": 2, "Name": "a"}, {"EventId": 3, "Name": "b"}], Placeholders()
    )
    assert errors == ["Event[3].Name: ${GEN_STR:8} is 'a', got 'b'"]


def test_literals_substitute_known_variables_and_lists_match_by_length() -> None:
    names = Placeholders()
    names.resolve_variables({"X": 7})
    assert names.bindings["X"] == "7"
    expected = [{"EventId": 1, "Payload": '"${X}"', "Items": [1, "*"]}]
    assert match_history(expected, [{"EventId": 1, "Payload": '"7"', "Items": [1, {"a": 1}]}], names) == []
    errors = match_history(expected, [{"EventId": 1, "Payload": '"8"', "Items": [1]}], names)
    assert errors == [
        "Event[1].Payload: expected '\"7\"', got '\"8\"'",
        "Event[1].Items: expected 2 items, got 1",
    ]


def test_the_extension_block_is_a_mapping_of_known_keys() -> None:
    assert extension({}) == {}
    with pytest.raises(ValueError, match="unknown keys \\['StopExecutions'\\]"):
        extension({EXTENSION_KEY: {"StopExecutions": {}}})
    with pytest.raises(ValueError, match="must be a mapping, got list"):
        extension({EXTENSION_KEY: []})


def test_check_shapes_requires_each_child_id_to_resolve_and_the_api_shapes() -> None:
    def describe(execution_id: str) -> dict[str, Any]:
        if execution_id != "known":
            raise KeyError(f"no execution {execution_id!r}")
        return {}

    assert check_shapes([_event(FunctionName="f", DurableExecutionArn="known")], describe) == []
    errors = check_shapes([_event(FunctionName="f", DurableExecutionArn="lost")], describe)
    assert len(errors) == 1 and "'lost' does not resolve" in errors[0]
    errors = check_shapes([_event(FunctionName="f", Surprise=1)], describe)
    assert len(errors) == 1 and "history vs the API model" in errors[0] and "'Surprise'" in errors[0]


def test_expected_child_executions_are_checked_like_the_parent_with_the_extension_rules() -> None:
    names = Placeholders()
    names.bindings["CHILD"] = "child-1"
    child_history = [
        {"EventType": "ExecutionStarted", "EventId": 1, "ExecutionStartedDetails": {"Input": {}}}
    ]
    block = {
        "ExpectedChildExecutions": [
            {
                "DurableExecutionArn": "${CHILD}",
                "ExpectedResult": {"ExecutionStatus": "STOPPED"},
                "ExpectedExecutionHistory": [
                    {"EventId": 1, "EventType": "ExecutionStarted"},
                    {"EventId": 2, "EventType": ABSENT},
                ],
            }
        ]
    }

    def describe(status: str) -> Any:
        return lambda execution_id: {"Status": status}

    def no_problems(history: list[dict[str, Any]]) -> list[str]:
        return []

    assert check_children(block, names, lambda _: child_history, describe("STOPPED"), no_problems) == []
    errors = check_children(block, names, lambda _: child_history, describe("RUNNING"), no_problems)
    assert errors == [
        "ExpectedChildExecutions[0] (child-1): expected ExecutionStatus STOPPED, got RUNNING (error: None)"
    ]
    unbound = check_children(block, Placeholders(), lambda _: child_history, describe("STOPPED"), no_problems)
    assert unbound == [
        "ExpectedChildExecutions[0] (${CHILD}): the parent's history did not bind its DurableExecutionArn"
    ]


def _walk(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [item for child in value.values() for item in _walk(child)]
    if isinstance(value, list):
        return [item for child in value for item in _walk(child)]
    return [value]


def test_our_cases_keep_their_own_rules_inside_the_extension_block() -> None:
    """Read by AWS's validator, our cases say only what AWS's rules say: no `${ABSENT}`, no variable inside a
    pattern and no key of ours outside `x-stepwell`."""
    own = [case for case in discover_cases() if case.yaml_path.is_relative_to(OWN_CASES_DIR)]
    for case in own:
        aws_part = {key: value for key, value in case.data.items() if key != EXTENSION_KEY}
        assert not {"StopExecution", "ExpectedChildExecutions"} & set(aws_part), case.test_id
        for value in _walk(aws_part):
            assert value != ABSENT, case.test_id
            assert not (isinstance(value, str) and value.startswith("${/") and "${" in value[3:]), (
                case.test_id,
                value,
            )
        extension(case.data)


# -------------------------------------------------------------------------------------- ExpectedLogs


def _line(ms: int, message: str, arn: str = "exec-1", **fields: Any) -> LogLine:
    return LogLine(ms, {"level": "INFO", "message": message, "executionArn": arn, **fields})


def _logs(rules: list[dict[str, Any]], lines: list[LogLine]) -> list[str]:
    return check_logs(rules, lines, Placeholders().substitute)


def test_a_log_rule_without_a_count_needs_at_least_one_match() -> None:
    rule = [{"match": {"message": "/hello/"}}]
    assert _logs(rule, [_line(1, "hello there")]) == []
    assert _logs(rule, [_line(1, "bye")]) == [
        "ExpectedLogs[0] match(message='/hello/'): expected at least 1 match(es), got 0"
    ]


def test_min_and_max_count_bound_the_matches() -> None:
    lines = [_line(1, "tick"), _line(2, "tick"), _line(3, "tick")]
    assert _logs([{"match": {"message": "tick"}, "min_count": 2, "max_count": 3}], lines) == []
    assert _logs([{"match": {"message": "tick"}, "min_count": 4}], lines) == [
        "ExpectedLogs[0] match(message='tick'): expected at least 4 match(es), got 3"
    ]
    assert _logs([{"match": {"message": "tick"}, "max_count": 2}], lines) == [
        "ExpectedLogs[0] match(message='tick'): expected at most 2 match(es), got 3"
    ]


def test_a_literal_message_matches_exactly_after_stripping() -> None:
    assert _logs([{"match": {"message": "step done"}, "count": 1}], [_line(1, "  step done \n")]) == []
    assert _logs([{"match": {"message": "step"}, "count": 1}], [_line(1, "step done")]) == [
        "ExpectedLogs[0] match(message='step'): expected exactly 1 match(es), got 0"
    ]


def test_a_rule_on_another_field_matches_that_field() -> None:
    rule = [{"match": {"level": "ERROR"}, "count": 0}]
    assert _logs(rule, [_line(1, "fine"), _line(2, "also fine")]) == []
    assert _logs(rule, [_line(1, "fine"), _line(2, "bad", level="ERROR")]) == [
        "ExpectedLogs[0] match(level='ERROR'): expected exactly 0 match(es), got 1"
    ]
    both = [{"match": {"level": "WARNING", "attempt": 2, "message": "/retry/"}, "count": 1}]
    lines = [_line(1, "retry", level="WARNING", attempt=1), _line(2, "retry", level="WARNING", attempt=2)]
    assert _logs(both, lines) == []


def test_before_and_after_order_the_matches_and_same_millisecond_is_concurrent() -> None:
    lines = [_line(10, "start"), _line(20, "work"), _line(20, "mid"), _line(30, "end")]
    assert (
        _logs(
            [{"match": {"message": "work"}, "after": {"message": "start"}, "before": [{"message": "end"}]}],
            lines,
        )
        == []
    )
    assert _logs([{"match": {"message": "work"}, "after": {"message": "mid"}}], lines) == []
    assert _logs([{"match": {"message": "start"}, "after": {"message": "work"}}], lines) == [
        "ExpectedLogs[0] match(message='start'): expected all matches after {'message': 'work'} "
        "(log records out of order)"
    ]
    assert _logs([{"match": {"message": "end"}, "before": {"message": "start"}}], lines) == [
        "ExpectedLogs[0] match(message='end'): expected all matches before {'message': 'start'} "
        "(log records out of order)"
    ]
    assert _logs([{"match": {"message": "end"}, "after": {"message": "nothing"}}], lines) == [
        "ExpectedLogs[0] match(message='end'): after anchor {'message': 'nothing'} matched no log records"
    ]


def test_log_rules_substitute_variables_and_refuse_an_entry_without_match() -> None:
    names = Placeholders()
    names.resolve_variables({"WHO": "ada"})
    assert (
        check_logs(
            [{"match": {"message": "/hi ${WHO}$/"}, "count": 1}], [_line(1, "hi ada")], names.substitute
        )
        == []
    )
    assert _logs([{"count": 1}], []) == [
        "ExpectedLogs[0]: invalid entry — 'match' must be a non-empty field->value mapping"
    ]


def test_only_the_executions_own_records_count() -> None:
    lines = [
        _line(1, "a"),
        _line(2, "b", arn="child-1"),
        LogLine(3, {"message": "c", "durableExecutionArn": "exec-1"}),
    ]
    assert [line.fields["message"] for line in of_execution(lines, "exec-1")] == ["a", "c"]


def test_logs_are_found_by_the_arn_the_backend_reports_for_the_execution() -> None:
    """AWS's validator filters by the ARN the API answered; the runner asks the backend for it (the API's
    DurableExecutionArn, the client's executionArn), never takes the id it started the case with."""
    data = {"ExpectedLogs": [{"match": {"message": "hello"}, "count": 1}]}
    case = Case("step", "logs", Path("logs.yaml"), Path("logs.py"), data)
    lines = [_line(1, "hello", arn="arn-of-exec-1"), _line(2, "hello", arn="exec-1")]

    def verdict(described: dict[str, Any]) -> list[str]:
        driver = Driver.for_case(data, Placeholders(), "exec-1", 0.0)
        errors = judge(case, driver, [], lambda _: described, lambda _: [], lines)
        return [error for error in errors if error.startswith("ExpectedLogs")]

    assert verdict({"Status": "SUCCEEDED", "executionArn": "arn-of-exec-1"}) == []
    assert verdict({"Status": "SUCCEEDED", "DurableExecutionArn": "arn-of-exec-1"}) == []
    assert verdict({"Status": "SUCCEEDED", "executionArn": "arn-of-another"}) == [
        "ExpectedLogs[0] match(message='hello'): expected exactly 1 match(es), got 0"
    ]
    assert verdict({"Status": "SUCCEEDED"}) == [
        "ExpectedLogs: the backend reports no ARN for execution 'exec-1'"
    ]


# ------------------------------------------------------------------------------ polling and actions


class _Scripted:
    """A backend whose execution follows a script: events due at times, and reactions to callbacks."""

    def __init__(self, script: list[tuple[float, dict[str, Any]]]) -> None:
        self.clock = 1000.0
        self.script = [(1000.0 + at, event) for at, event in script]
        self.events: list[dict[str, Any]] = []
        self.sent: list[tuple[float, str, str, Any]] = []
        self.stopped: list[Any] = []
        self.reactions: dict[str, list[dict[str, Any]]] = {}

    def _append(self, event: dict[str, Any]) -> None:
        self.events.append({**event, "EventId": len(self.events) + 1})

    def run_until_idle(self) -> None:
        for item in [item for item in self.script if item[0] <= self.clock]:
            self.script.remove(item)
            self._append(item[1])

    def now(self) -> float:
        return self.clock

    def next_wake_up(self) -> float | None:
        return min((at for at, _ in self.script), default=None)

    def advance_to(self, when: float) -> None:
        self.clock = max(self.clock, when)

    def history(self, execution_id: str) -> list[dict[str, Any]]:
        return list(self.events)

    def describe(self, execution_id: str) -> dict[str, Any]:
        ends = {"ExecutionSucceeded": "SUCCEEDED", "ExecutionStopped": "STOPPED", "ExecutionFailed": "FAILED"}
        status = next((ends[e["EventType"]] for e in self.events if e["EventType"] in ends), "RUNNING")
        return {"Status": status, "Result": '"done"'}

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        self.sent.append((self.clock, callback_id, operation, payload))
        for event in self.reactions.get(operation, []):
            self._append(event)

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None:
        self.stopped.append(error)
        self._append({"EventType": "ExecutionStopped"})


def _callback(name: str, callback_id: str) -> dict[str, Any]:
    return {
        "EventType": "CallbackStarted",
        "Name": name,
        "CallbackStartedDetails": {"CallbackId": callback_id},
    }


def _drive(data: dict[str, Any], backend: _Scripted) -> Driver:
    names = Placeholders()
    names.resolve_variables(data.get("Variables"))
    driver = Driver.for_case(data, names, "exec-1", backend.now())
    drive(backend, driver)
    return driver


STARTED = {"EventType": "ExecutionStarted"}
SUCCEEDED = {"EventType": "ExecutionSucceeded"}


def test_a_case_without_expected_result_stops_polling_once_its_history_matches() -> None:
    backend = _Scripted([(0, STARTED), (0, {"EventType": "WaitStarted"}), (3600, SUCCEEDED)])
    data = {"AsyncInvoke": True, "ExpectedExecutionHistory": [{"EventId": 2, "EventType": "WaitStarted"}]}
    driver = _drive(data, backend)
    assert driver.ended is PollEnd.MATCHED and driver.errors == []
    assert backend.now() == 1002.0  # the first poll, two seconds in: the hour was never waited


def test_no_new_event_for_the_timeout_ends_polling_with_an_error() -> None:
    script = [(0, STARTED), (0, _callback("cb", "id-1")), (60, SUCCEEDED)]
    data = {"AsyncInvoke": True, "ExpectedResult": {"ExecutionStatus": "SUCCEEDED"}}
    backend = _Scripted(script)
    driver = _drive(data, backend)
    assert driver.ended is PollEnd.NO_PROGRESS and backend.now() == 1032.0
    assert driver.errors == ["No new events for 30.0s (timeout: 30.0s)"]
    errors = judge(_case(data), driver, backend.history("exec-1"), backend.describe, backend.history, [])
    assert "expected ExecutionStatus SUCCEEDED, got RUNNING (error: None)" in _not_shapes(errors)
    patient = _drive({**data, "AsyncConfig": {"NoProgressTimeoutSeconds": 120}}, _Scripted(script))
    assert patient.ended is PollEnd.TERMINAL and patient.errors == []


def test_execution_stopped_ends_polling_only_for_a_stop_of_ours() -> None:
    script = [(0, STARTED), (0, {"EventType": "WaitStarted"}), (5, {"EventType": "ExecutionStopped"})]
    data: dict[str, Any] = {"AsyncInvoke": True, "ExpectedResult": {"ExecutionStatus": "STOPPED"}}
    driver = _drive(data, _Scripted(script))
    assert driver.ended is PollEnd.NO_PROGRESS  # AWS's poller has no ExecutionStopped among its end states
    stop = {"AfterEventType": "WaitStarted", "Error": {"ErrorType": "X"}}
    backend = _Scripted([(0, STARTED), (0, {"EventType": "WaitStarted"}), (600, SUCCEEDED)])
    driver = _drive({**data, EXTENSION_KEY: {"StopExecution": stop}}, backend)
    assert driver.ended is PollEnd.TERMINAL and backend.stopped == [{"ErrorType": "X"}]
    top_level = _drive({**data, "StopExecution": stop}, _Scripted(list(script)))
    assert top_level.stop is None and top_level.ended is PollEnd.NO_PROGRESS


def test_callbacks_are_answered_at_polls_each_after_its_delay() -> None:
    backend = _Scripted([(0, STARTED), (0, _callback("a", "id-a")), (0, _callback("b", "id-b"))])
    backend.reactions["success"] = [{"EventType": "CallbackSucceeded"}]
    data = {
        "AsyncInvoke": True,
        "ExpectedResult": {"ExecutionStatus": "RUNNING"},
        "AsyncConfig": {"NoProgressTimeoutSeconds": 10},
        "CallbackActions": [
            {"CallbackName": "*", "Operation": "SUCCESS", "Payload": {"n": 1}, "Delay": 1},
            {
                "CallbackName": "${/^b$/}",
                "Operation": "failure",
                "Payload": {"ErrorType": "E", "Other": 1},
                "Delay": 3,
            },
        ],
    }
    _drive(data, backend)
    # The first poll is two seconds after the start; both callbacks are new there, handled in order.
    assert backend.sent == [
        (1003.0, "id-a", "success", '{"n": 1}'),
        (1006.0, "id-b", "failure", {"ErrorType": "E"}),
    ]


def test_a_heartbeat_keeps_its_callback_for_the_next_action() -> None:
    backend = _Scripted([(0, STARTED), (0, _callback("cb", "id-1"))])
    backend.reactions["success"] = [SUCCEEDED]
    data = {
        "AsyncInvoke": True,
        "ExpectedResult": {"ExecutionStatus": "SUCCEEDED"},
        "CallbackActions": [
            {"CallbackName": "cb", "Operation": "heartbeat"},
            {"CallbackName": "cb", "Operation": "success", "Payload": "ok"},
        ],
    }
    driver = _drive(data, backend)
    assert [(at, op) for at, _, op, _ in backend.sent] == [(1002.0, "heartbeat"), (1004.0, "success")]
    assert driver.ended is PollEnd.TERMINAL


def test_callback_actions_are_checked_as_aws_does() -> None:
    for action, message in [
        ({"Operation": "success"}, "CallbackAction requires a 'CallbackName' field"),
        ({"CallbackName": "x"}, "CallbackAction requires an 'Operation' field"),
        (
            {"CallbackName": "x", "Operation": "retry"},
            "Invalid operation 'retry'. Must be one of: failure, heartbeat, success",
        ),
    ]:
        driver = Driver.for_case({"AsyncInvoke": True, "CallbackActions": [action]}, Placeholders(), "e", 0.0)
        assert driver.errors == [f"Invalid CallbackAction: {message}"] and driver.ended is not None
    backend = _Scripted([(0, STARTED), (0, _callback("cb", "id-1"))])
    data = {
        "AsyncInvoke": True,
        "AsyncConfig": {"NoProgressTimeoutSeconds": 4},
        "CallbackActions": [{"CallbackName": "cb", "Operation": "failure", "Payload": "oops"}],
    }
    driver = _drive(data, backend)
    assert backend.sent == [] and len(driver.errors) == 2
    assert (
        "Failure callback payload must be a dict" in driver.errors[0]
        and "got str: 'oops'" in driver.errors[0]
    )


def test_an_unmatched_callback_is_an_error_only_when_the_case_has_actions() -> None:
    script = [(0, STARTED), (0, _callback("cb", "id-1"))]
    quiet = _drive({"AsyncInvoke": True, "AsyncConfig": {"NoProgressTimeoutSeconds": 4}}, _Scripted(script))
    assert quiet.errors == ["No new events for 4.0s (timeout: 4.0s)"]
    data = {
        "AsyncInvoke": True,
        "AsyncConfig": {"NoProgressTimeoutSeconds": 4},
        "CallbackActions": [{"CallbackName": "other", "Operation": "success"}],
    }
    loud = _drive(data, _Scripted(script))
    assert loud.errors[0] == "No matching CallbackAction for callback 'cb' (id=id-1)"


def test_a_synchronous_case_sends_no_callback_and_needs_an_expected_history() -> None:
    backend = _Scripted([(0, STARTED), (0, _callback("cb", "id-1"))])
    data = {"CallbackActions": [{"CallbackName": "*", "Operation": "success"}]}
    with pytest.raises(ExecutionStuck, match="waits for a callback or an external event that nobody sends"):
        _drive(data, backend)
    assert backend.sent == []
    done = _Scripted([(0, STARTED), (1, SUCCEEDED)])
    driver = _drive({}, done)
    assert driver.ended is PollEnd.ENDED
    errors = judge(_case({}), driver, done.history("exec-1"), done.describe, done.history, [])
    assert _not_shapes(errors) == ["No ExpectedExecutionHistory found in description file"]


def test_result_is_compared_after_one_json_decode() -> None:
    done = _Scripted([(0, STARTED), (0, SUCCEEDED)])
    expected = {"ExpectedExecutionHistory": [{"EventId": 1}]}
    driver = _drive({**expected, "ExpectedResult": {"ExecutionStatus": "SUCCEEDED", "Result": "done"}}, done)
    ok = judge(
        _case({**expected, "ExpectedResult": {"Result": "done"}}),
        driver,
        done.history("e"),
        done.describe,
        done.history,
        [],
    )
    assert _not_shapes(ok) == []
    wrong = judge(
        _case({**expected, "ExpectedResult": {"Result": '"done"'}}),
        driver,
        done.history("e"),
        done.describe,
        done.history,
        [],
    )
    assert _not_shapes(wrong) == ["expected Result '\"done\"', got 'done'"]


def _not_shapes(errors: list[str]) -> list[str]:
    """The verdict's errors but the API model's (the scripted events carry no details)."""
    return [error for error in errors if not error.startswith("history vs the API model")]


def _case(data: dict[str, Any]) -> Case:
    return Case("suite", "id", OWN_CASES_DIR / "x.yaml", OWN_CASES_DIR / "x.py", data)
