"""The runner's own rules: where cases come from, how a case module is registered, and the matchers
our cases rely on beyond AWS's format (absent keys, variables in patterns, resolvable child ids, the
API model check)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from case_registration import register_case_module
from runner import (
    ABSENT,
    OWN_CASES_DIR,
    Placeholders,
    check_children,
    check_history,
    discover_cases,
    match_history,
)

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


def test_absent_requires_the_key_to_be_missing() -> None:
    expected = [{"EventId": 2, "ChainedInvokeStartedDetails": {"DurableExecutionArn": ABSENT}}]
    assert match_history(expected, [_event(FunctionName="f")], Placeholders()) == []
    errors = match_history(expected, [_event(FunctionName="f", DurableExecutionArn="x")], Placeholders())
    assert errors == [
        "Event[2].ChainedInvokeStartedDetails.DurableExecutionArn: expected no such key, got 'x'"
    ]


def test_known_variables_are_substituted_in_patterns() -> None:
    names = Placeholders()
    names.resolve_variables({"TENANT": "acme7"})
    expected = [{"EventId": 2, "ChainedInvokeStartedDetails": {"DurableExecutionArn": "${/^${TENANT}#/}"}}]
    assert match_history(expected, [_event(DurableExecutionArn="acme7#wf#id/id")], names) == []
    assert match_history(expected, [_event(DurableExecutionArn="other#wf#id/id")], names) != []


def test_check_history_requires_each_child_id_to_resolve_and_the_api_shapes() -> None:
    def describe(execution_id: str) -> dict[str, Any]:
        if execution_id != "known":
            raise KeyError(f"no execution {execution_id!r}")
        return {}

    resolving = [_event(FunctionName="f", DurableExecutionArn="known")]
    assert check_history([], resolving, Placeholders(), describe) == []
    errors = check_history(
        [], [_event(FunctionName="f", DurableExecutionArn="lost")], Placeholders(), describe
    )
    assert len(errors) == 1 and "'lost' does not resolve" in errors[0]
    errors = check_history([], [_event(FunctionName="f", Surprise=1)], Placeholders(), describe)
    assert len(errors) == 1 and "history vs the API model" in errors[0] and "'Surprise'" in errors[0]


def test_absent_event_type_requires_no_event_with_that_id() -> None:
    expected = [{"EventId": 3, "EventType": ABSENT}]
    assert match_history(expected, [_event()], Placeholders()) == []
    errors = match_history(
        expected, [_event(), {"EventId": 3, "EventType": "ChainedInvokeFailed"}], Placeholders()
    )
    assert errors == ["Event[3]: expected no such event, got ChainedInvokeFailed"]


def test_expected_child_executions_are_checked_like_the_parent() -> None:
    names = Placeholders()
    names.bindings["CHILD"] = "child-1"
    child_history = [
        {"EventType": "ExecutionStarted", "EventId": 1, "ExecutionStartedDetails": {"Input": {}}}
    ]
    data = {
        "ExpectedChildExecutions": [
            {
                "DurableExecutionArn": "${CHILD}",
                "ExpectedResult": {"ExecutionStatus": "STOPPED"},
                "ExpectedExecutionHistory": [{"EventId": 1, "EventType": "ExecutionStarted"}],
            }
        ]
    }

    def describe(status: str) -> Any:
        return lambda execution_id: {"Status": status}

    assert check_children(data, names, lambda _: child_history, describe("STOPPED")) == []
    errors = check_children(data, names, lambda _: child_history, describe("RUNNING"))
    assert errors == [
        "ExpectedChildExecutions[0] (child-1): expected ExecutionStatus STOPPED, got RUNNING (error: None)"
    ]
    unbound = check_children(data, Placeholders(), lambda _: child_history, describe("STOPPED"))
    assert unbound == [
        "ExpectedChildExecutions[0] (${CHILD}): the parent's history did not bind its DurableExecutionArn"
    ]
