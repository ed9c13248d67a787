"""CPU budgets of runs and evaluations, the validation's cost estimate, and replays that read decisions from
the log instead of evaluating them again (issue 37, item 1). No test here measures time: budgets are set
to nothing, or the clock is a counter."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from stepwell.config import ConfigError, StepwellConfig
from stepwell.features.definitions import interpreter as interpreter_module
from stepwell.features.definitions.budgets import DEFINITION_COST_LIMIT, EXPRESSION_COST_LIMIT
from stepwell.features.definitions.expressions import BudgetExceeded, Expression, Meter, compile_expression
from stepwell.features.definitions.model import DefinitionInvalid
from stepwell.features.definitions.runtime import runtime_from_env
from stepwell.features.definitions.validation import parse_definition, validate_definition

from .harness import Harness

# A condition reading whole event values: about 1 MB read at worst ("in" walks a list, "==" compares).
HEAVY = '"needle" not in event.data.tags and event.data.a != event.data.b and "x" not in event.data.c'


def chain(conditions: list[str]) -> dict[str, Any]:
    """trigger -> c0 -> c1 -> ... -> end, every false branch to the end."""
    nodes: list[dict[str, Any]] = [{"id": "t", "type": "trigger", "event": "start"}]
    edges: list[dict[str, Any]] = []
    previous = "t"
    for index, expression in enumerate(conditions):
        node_id = f"c{index}"
        nodes.append({"id": node_id, "type": "condition", "expression": expression})
        edges.append({"from": previous, "to": node_id, **({"branch": "true"} if previous != "t" else {})})
        edges.append({"from": node_id, "to": "e", "branch": "false"})
        previous = node_id
    nodes.append({"id": "e", "type": "end"})
    edges.append({"from": previous, "to": "e", "branch": "true"})
    return {"schemaVersion": 1, "id": "chain", "nodes": nodes, "edges": edges}


def test_a_chain_of_heavy_conditions_is_refused_naming_the_estimate_and_the_limit() -> None:
    document = chain([HEAVY] * 120)
    parse_definition(document)  # a valid graph: only the budget refuses it
    errors = validate_definition(document)
    assert len(errors) == 1, errors
    assert "the expressions a run may evaluate cost" in errors[0]
    assert f"at most {DEFINITION_COST_LIMIT:,} allowed per definition" in errors[0]
    assert "the costliest: node 'c" in errors[0]
    assert validate_definition(chain([HEAVY] * 3)) == []  # a few are fine


def test_one_expression_over_the_per_expression_limit_is_refused_naming_it() -> None:
    costly = " and ".join([f'"n{i}" not in event.data.tags' for i in range(20)])
    errors = validate_definition(chain([costly]))
    assert any(
        error.startswith("node 'c0' (condition): 'expression' may cost")
        and f"at most {EXPRESSION_COST_LIMIT:,} allowed per expression" in error
        for error in errors
    ), errors


def test_the_store_refuses_such_a_definition(harness: Harness) -> None:
    with pytest.raises(DefinitionInvalid, match=f"at most {DEFINITION_COST_LIMIT:,} allowed"):
        harness.put(chain([HEAVY] * 120))


def test_the_examples_cost_little() -> None:
    # Comparisons with constants read little whatever the event holds.
    assert validate_definition(chain(['event.data.status == "paid"'] * 400)) == []


LOOP: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "loop",
    "nodes": [
        {"id": "t", "type": "trigger", "event": "start"},
        {"id": "c1", "type": "condition", "expression": '"stop" not in event.data.tags'},
        {"id": "w", "type": "wait", "duration": 1},
        {"id": "c2", "type": "condition", "expression": '"halt" not in event.data.tags'},
        {"id": "e", "type": "end"},
    ],
    "edges": [
        {"from": "t", "to": "c1"},
        {"from": "c1", "to": "w", "branch": "true"},
        {"from": "c1", "to": "e", "branch": "false"},
        {"from": "w", "to": "c2"},
        {"from": "c2", "to": "c1", "branch": "true"},
        {"from": "c2", "to": "e", "branch": "false"},
    ],
}


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every evaluation's expression text, in order."""
    seen: list[str] = []
    evaluate = Expression.evaluate

    def spy(self: Expression, env: Any, meter: Meter | None = None) -> Any:
        seen.append(self.text)
        return evaluate(self, env, meter)

    monkeypatch.setattr(Expression, "evaluate", spy)
    yield seen


def test_a_wake_up_evaluates_only_its_new_conditions(harness: Harness, evaluations: list[str]) -> None:
    harness.put(LOOP)
    harness.send("start", "u1", {"tags": ["a", "b"]})
    per_wake_up = []
    for _ in range(8):
        before = len(evaluations)
        harness.advance(1)
        per_wake_up.append(len(evaluations) - before)
    # c2 then c1, each once: the earlier ones are read from the log (was 2, 4, 6, ... with every replay).
    assert per_wake_up == [2] * 8
    assert harness.context("loop", "u1").status == "RUNNING"


def test_a_log_written_before_decisions_were_kept_still_replays(
    harness: Harness, evaluations: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter before decisions were kept evaluated conditions in place and read a wait's `until`
    time in a `:now` step, leaving no step of theirs in the log: such a log still replays (its conditions
    evaluated again, as then), and the new work after it is kept in steps."""
    nodes: list[dict[str, Any]] = [
        {"id": "t", "type": "trigger", "event": "start"},
        {"id": "c1", "type": "condition", "expression": '"stop" not in event.data.tags'},
        {"id": "u", "type": "wait", "until": "event.data.at"},
        {"id": "c2", "type": "condition", "expression": '"halt" not in event.data.tags'},
        {"id": "e", "type": "end"},
    ]
    edges = [
        {"from": "t", "to": "c1"},
        {"from": "c1", "to": "u", "branch": "true"},
        {"from": "c1", "to": "e", "branch": "false"},
        {"from": "u", "to": "c2"},
        {"from": "c2", "to": "e", "branch": "true"},
        {"from": "c2", "to": "e", "branch": "false"},
    ]
    harness.put({"schemaVersion": 1, "id": "old", "nodes": nodes, "edges": edges})
    kept = interpreter_module.Walker.decide

    def as_before(
        self: Any,
        context: Any,
        state: Any,
        name: str,
        compute: Any,
        *,
        unrecorded: Any = None,
        record: bool = True,
    ) -> Any:
        return (unrecorded or compute)()

    monkeypatch.setattr(interpreter_module.Walker, "decide", as_before)
    harness.send("start", "u1", {"tags": ["a"], "at": harness.local.clock.now() + 5})
    context = harness.context("old", "u1")
    written = str(harness.local.history(context.execution_id))
    assert "u:now" in written and ":if" not in written and ":until" not in written

    monkeypatch.setattr(interpreter_module.Walker, "decide", kept)
    harness.advance(5)
    assert harness.status(context) == "SUCCEEDED", harness.context("old", "u1").error
    assert evaluations.count('"stop" not in event.data.tags') == 2  # the replay evaluated it again
    assert "c2:if" in str(harness.local.history(context.execution_id))  # the new work kept in a step


def test_a_run_over_its_cpu_budget_fails_its_context_naming_the_budget(harness: Harness) -> None:
    harness.runtime.run_cpu_seconds = 1e-9  # any run is over it by its first node
    harness.put(LOOP)
    harness.send("start", "u1", {"tags": ["a"]})
    context = harness.context("loop", "u1")
    assert context.status == "FAILED" and harness.status(context) == "FAILED"
    assert context.error is not None and context.error["ErrorType"] == "DefinitionRuntimeError"
    assert "the run took more than its CPU budget of 1e-09 s per run" in context.error["ErrorMessage"]
    assert context.error["ErrorMessage"].startswith("node 't' (trigger): ")


def test_an_expression_over_its_budget_fails_its_context_naming_the_budget(harness: Harness) -> None:
    harness.runtime.expression_cpu_seconds = 1e-9  # metered every 64 steps: the list walk is over it
    harness.put(LOOP)
    harness.send("start", "u1", {"tags": [str(n) for n in range(1000)]})
    context = harness.context("loop", "u1")
    assert context.status == "FAILED" and harness.status(context) == "FAILED"
    assert context.error is not None
    message = context.error["ErrorMessage"]
    assert message.startswith(
        "node 'c1' (condition): the evaluation took more than its CPU budget of 1e-09 s"
    )
    assert "per expression in expression '\"stop\" not in event.data.tags'" in message


def test_the_meter_stops_an_evaluation_on_its_clock() -> None:
    ticks = itertools.count()
    meter = Meter(100, "over budget", clock=lambda: float(next(ticks)))  # the clock moves 1 per read
    expression = compile_expression('"x" in data.items')
    with pytest.raises(BudgetExceeded, match="over budget in expression"):
        expression.evaluate({"data": {"items": list(range(64 * 200))}}, meter)
    # A default meter lets a small evaluation through.
    assert expression.evaluate({"data": {"items": ["x"]}}) is True


BUDGET_ENV = {
    "STEPWELL_DEFINITIONS_TABLE": "d",
    "STEPWELL_EXECUTIONS_TABLE": "e",
    "STEPWELL_COORDINATION_TABLE": "c",
    "STEPWELL_DEFINITIONS_RUN_CPU_SECONDS": "4",
    "STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS": "0.1",
}


def test_the_runtime_built_from_the_environment_takes_its_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in BUDGET_ENV.items():
        monkeypatch.setenv(name, value)
    runtime = runtime_from_env(dynamodb=object())
    assert (runtime.run_cpu_seconds, runtime.expression_cpu_seconds) == (4.0, 0.1)
    monkeypatch.setenv("STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS", "5")
    with pytest.raises(ConfigError, match=r"at most the run's budget \(4 s\).*got 5$"):
        runtime_from_env(dynamodb=object())
    for name in ("STEPWELL_DEFINITIONS_RUN_CPU_SECONDS", "STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS"):
        monkeypatch.delenv(name)
    runtime = runtime_from_env(dynamodb=object())
    assert (runtime.run_cpu_seconds, runtime.expression_cpu_seconds) == (10.0, 0.25)


def test_the_runtime_built_from_the_config_takes_its_budgets() -> None:
    from stepwell.aws.clients import AwsClients
    from stepwell.features.definitions.service import runtime_from_config

    config = StepwellConfig.from_env(
        {
            **BUDGET_ENV,
            "STEPWELL_NAME": "sw",
            "STEPWELL_OPERATIONS_TABLE": "o",
            "STEPWELL_WORK_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/123456789012/sw-work",
        }
    )
    runtime = runtime_from_config(config, AwsClients(region="eu-west-1"))
    assert (runtime.run_cpu_seconds, runtime.expression_cpu_seconds) == (4.0, 0.1)
