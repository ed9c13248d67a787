"""The scenarios of AWS's otel conformance suites (otel-invocation, otel-execution, otel-long-running), one
function each, picked by the case's `Input.scenario`; invocation.py and execution.py wrap them in the
SDK's OpenTelemetry plugin as AWS's docs show (`@durable_execution(plugins=[...OtelPluginFactory()])`),
with the global tracer provider the test installs. Operation names are the ones the cases' histories and
span assertions name; `delay_seconds` (otel-long-running's LONG_DELAY_SECONDS) sets the long delays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import (
    ChildConfig,
    Duration,
    JitterStrategy,
    MapConfig,
    ParallelBranch,
    ParallelConfig,
    StepConfig,
    WaitForCallbackConfig,
)
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy
from aws_durable_execution_sdk_python.waits import WaitForConditionConfig, WaitForConditionDecision

INVOKE_TARGET = "otel-invoke-target"
FAILING_INVOKE_TARGET = "otel-failing-invoke-target"
# wait-interrupted: the execution times out during its wait (the case expects TIMED_OUT).
INTERRUPTED_TIMEOUT_SECONDS = 10  # within the runner's 30 s no-progress timeout
INTERRUPTED_WAIT_SECONDS = 3600

# The cases' histories have one branch (iteration) after the other.
ONE_AT_A_TIME_PARALLEL = ParallelConfig(max_concurrency=1)

Scenario = Callable[[dict[str, Any], DurableContext], Any]


def _no_retry() -> StepConfig:
    return StepConfig(retry_strategy=create_retry_strategy(RetryStrategyConfig(max_attempts=1)))


def _retry_once(delay_seconds: int) -> StepConfig:
    return StepConfig(
        retry_strategy=create_retry_strategy(
            RetryStrategyConfig(
                max_attempts=2,
                initial_delay=Duration.from_seconds(delay_seconds),
                max_delay=Duration.from_seconds(delay_seconds),
                jitter_strategy=JitterStrategy.NONE,
            )
        )
    )


def _fails_first(step: StepContext) -> str:
    if step.attempt <= 1:
        raise RuntimeError("Intentional first-attempt failure")
    return "recovered"


def success(event: dict[str, Any], context: DurableContext) -> Any:
    return context.step(lambda _: "ok", name="otel-success")


def retry(event: dict[str, Any], context: DurableContext) -> Any:
    return context.step(_fails_first, name="otel-retry", config=_retry_once(1))


def long_retry(event: dict[str, Any], context: DurableContext) -> Any:
    return context.step(_fails_first, name="otel-long-retry", config=_retry_once(int(event["delay_seconds"])))


def _raise(message: str) -> Callable[[StepContext], Any]:
    def run(_: StepContext) -> Any:
        raise RuntimeError(message)

    return run


def terminal_failure(event: dict[str, Any], context: DurableContext) -> Any:
    return context.step(
        _raise("Intentional terminal failure"), name="otel-terminal-failure", config=_no_retry()
    )


def handled_failure(event: dict[str, Any], context: DurableContext) -> Any:
    try:
        context.step(_raise("Intentional handled failure"), name="otel-handled-failure", config=_no_retry())
    except Exception:
        return context.step(lambda _: "recovered", name="otel-recovery-step")
    raise AssertionError("otel-handled-failure succeeded; the scenario needs it to fail")


def execution_failure(event: dict[str, Any], context: DurableContext) -> Any:
    raise RuntimeError("Intentional execution failure")


def wait_resume(event: dict[str, Any], context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(1), name="otel-wait")
    return context.step(lambda _: "resumed", name="otel-after-resume")


def long_wait(event: dict[str, Any], context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(int(event["delay_seconds"])), name="otel-long-wait")
    return context.step(lambda _: "resumed", name="otel-after-long-wait")


def wait_interrupted(event: dict[str, Any], context: DurableContext) -> Any:
    context.wait(Duration.from_seconds(INTERRUPTED_WAIT_SECONDS), name="otel-interrupted-wait")
    return "not reached: the execution times out during the wait"


def _submit(callback_id: str, step: Any) -> None:
    """The submitter: the test's driver sends the callback (the case's CallbackActions)."""


def _wait_for_callback(name: str, context: DurableContext, timeout_seconds: int = 600) -> Any:
    return context.wait_for_callback(
        _submit, name=name, config=WaitForCallbackConfig(timeout=Duration.from_seconds(timeout_seconds))
    )


def wait_for_callback(event: dict[str, Any], context: DurableContext) -> Any:
    return _wait_for_callback("otel-callback", context)


def wait_for_callback_failure(event: dict[str, Any], context: DurableContext) -> Any:
    return _wait_for_callback("otel-failed-callback", context)


def long_callback(event: dict[str, Any], context: DurableContext) -> Any:
    return _wait_for_callback(
        "otel-long-callback", context, timeout_seconds=4 * int(event["delay_seconds"]) + 600
    )


def _condition(final: int) -> WaitForConditionConfig[int]:
    return WaitForConditionConfig(
        initial_state=0,
        wait_strategy=lambda state, attempt: (
            WaitForConditionDecision.stop_polling()
            if state >= final
            else WaitForConditionDecision.continue_waiting(Duration.from_seconds(1))
        ),
    )


def wait_for_condition(event: dict[str, Any], context: DurableContext) -> Any:
    return context.wait_for_condition(lambda state, _: state + 1, config=_condition(2), name="otel-condition")


def wait_for_condition_failure(event: dict[str, Any], context: DurableContext) -> Any:
    def check(state: int, _: Any) -> int:
        raise RuntimeError("Intentional condition failure")

    return context.wait_for_condition(check, config=_condition(2), name="otel-failed-condition")


def child_context(event: dict[str, Any], context: DurableContext) -> Any:
    def body(child: DurableContext) -> Any:
        return child.step(lambda _: "child", name="otel-child-step")

    return context.run_in_child_context(body, name="otel-child-context")


def child_context_failure(event: dict[str, Any], context: DurableContext) -> Any:
    def body(child: DurableContext) -> Any:
        raise RuntimeError("Intentional child context failure")

    return context.run_in_child_context(body, name="otel-failed-child-context")


def virtual_context(event: dict[str, Any], context: DurableContext) -> Any:
    return context.run_in_child_context(
        lambda _: "virtual-complete", name="otel-virtual-context", config=ChildConfig(is_virtual=True)
    )


def _step_branch(step_name: str) -> Callable[[DurableContext], Any]:
    return lambda branch: branch.step(lambda _: step_name, name=step_name)


def parallel_hierarchy(event: dict[str, Any], context: DurableContext) -> Any:
    branches = [
        ParallelBranch(_step_branch("otel-parallel-step-a"), name="otel-parallel-branch-a"),
        ParallelBranch(_step_branch("otel-parallel-step-b"), name="otel-parallel-branch-b"),
    ]
    return context.parallel(branches, name="otel-parallel", config=ONE_AT_A_TIME_PARALLEL).get_results()


def _raise_in_context(_: DurableContext) -> Any:
    raise RuntimeError("Intentional branch failure")


def parallel_failure(event: dict[str, Any], context: DurableContext) -> Any:
    result = context.parallel(
        [ParallelBranch(_raise_in_context, name="otel-failed-parallel-branch")], name="otel-failed-parallel"
    )
    result.throw_if_error()
    return result.get_results()


def map_hierarchy(event: dict[str, Any], context: DurableContext) -> Any:
    def item(child: DurableContext, value: int, index: int, _: Any) -> Any:
        return child.step(lambda _: value, name=f"otel-map-step-{index}")

    config = MapConfig(max_concurrency=1, item_namer=lambda _, index: f"otel-map-iteration-{index}")
    return context.map([0, 1], item, name="otel-map", config=config).get_results()


def map_failure(event: dict[str, Any], context: DurableContext) -> Any:
    def item(child: DurableContext, value: int, index: int, _: Any) -> Any:
        raise RuntimeError("Intentional map iteration failure")

    config = MapConfig(item_namer=lambda _, index: f"otel-failed-map-iteration-{index}")
    result = context.map([0], item, name="otel-failed-map", config=config)
    result.throw_if_error()
    return result.get_results()


def chained_invoke(event: dict[str, Any], context: DurableContext) -> Any:
    return context.invoke(INVOKE_TARGET, {"value": "chained"}, name="otel-invoke")


def chained_invoke_failure(event: dict[str, Any], context: DurableContext) -> Any:
    return context.invoke(FAILING_INVOKE_TARGET, {"value": "chained"}, name="otel-failed-invoke")


def long_chained_invoke(event: dict[str, Any], context: DurableContext) -> Any:
    payload = {"value": "chained", "delay_seconds": int(event["delay_seconds"])}
    return context.invoke(INVOKE_TARGET, payload, name="otel-long-invoke")


def invoke_target(event: dict[str, Any], context: DurableContext) -> Any:
    """The chained invoke's target: a durable execution of its own with no operations (the cases assert
    its Workflow and Invocation spans only); a wait when the caller asks for a long one (otel-long-running's
    long-chained-invoke)."""
    if event.get("delay_seconds"):
        context.wait(Duration.from_seconds(int(event["delay_seconds"])), name="otel-long-invoke-target-wait")
    return f"target:{event.get('value')}"


def failing_invoke_target(event: dict[str, Any], context: DurableContext) -> Any:
    raise RuntimeError("Intentional chained invoke target failure")


SCENARIOS: dict[str, Scenario] = {
    "success": success,
    "retry": retry,
    "terminal-failure": terminal_failure,
    "handled-failure": handled_failure,
    "execution-failure": execution_failure,
    "wait-resume": wait_resume,
    "wait-interrupted": wait_interrupted,
    "wait-for-callback": wait_for_callback,
    "wait-for-callback-failure": wait_for_callback_failure,
    "wait-for-condition": wait_for_condition,
    "wait-for-condition-failure": wait_for_condition_failure,
    "child-context": child_context,
    "child-context-failure": child_context_failure,
    "parallel-hierarchy": parallel_hierarchy,
    "parallel-failure": parallel_failure,
    "map-hierarchy": map_hierarchy,
    "map-failure": map_failure,
    "virtual-context": virtual_context,
    "chained-invoke": chained_invoke,
    "chained-invoke-failure": chained_invoke_failure,
    "long-wait": long_wait,
    "long-retry": long_retry,
    "long-callback": long_callback,
    "long-chained-invoke": long_chained_invoke,
}


def run_scenario(event: dict[str, Any], context: DurableContext) -> Any:
    scenario = (event.get("Input") or {}).get("scenario") if isinstance(event, dict) else None
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown otel scenario {scenario!r}; allowed: {', '.join(SCENARIOS)}")
    return SCENARIOS[scenario]((event["Input"]), context)


def handler_module_attributes(plugin_factory: Callable[[], Any]) -> dict[str, Any]:
    """What a case's handler module exposes (tests/conformance/case_registration.py): the scenario
    handler and the chained invokes' targets, each with the plugin of the module's view."""

    def wrap(function: Scenario) -> Any:
        return durable_execution(plugins=[plugin_factory()])(function)

    return {
        "handler": wrap(run_scenario),
        "WORKFLOWS": {INVOKE_TARGET: wrap(invoke_target), FAILING_INVOKE_TARGET: wrap(failing_invoke_target)},
        # The main handler's registry options, per scenario (otel_cases.OtelLocalBackend reads them).
        "HANDLER_OPTIONS": {"wait-interrupted": {"execution_timeout": INTERRUPTED_TIMEOUT_SECONDS}},
    }
