"""Conformance runner: finds requirement cases, runs each on a backend and judges it.

A case is `<dir>/<suite>/<id>.yaml` with its handler module `<suite>/<id>.py` (exposing `handler`, and
`WORKFLOWS`, `WORKFLOW_OPTIONS` and `FUNCTIONS` for the targets it invokes: case_registration.py). Our
handlers for the shared cases live in tests/conformance/handlers/<suite>/<id>.py; our own cases
(tests/conformance/cases) and CONFORMANCE_DIRS folders carry theirs beside the YAML. A case is judged by
AWS's conformance validator's rules: matching.py (history, placeholders, result), polling.py (how the
execution is driven: polls, callback actions, end states and the no-progress timeout), log_rules.py
(ExpectedLogs); our own keys live apart in the case's `x-stepwell` block. Every history is also checked
against the API's shapes (tests/history_model.py).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import yaml

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from history_model import check_history_against_model
from log_rules import PRINTED_JSON, LogLine, check_logs, of_execution, reported_arn
from matching import (
    EXTENSION,
    Placeholders,
    check_children,
    check_result,
    child_executions,
    extension,
    match_history,
)
from polling import Driver, PollEnd

REPO_ROOT = Path(__file__).resolve().parents[2]
# ../shared/conformance beside the repository; STEPWELL_SHARED_CONFORMANCE_DIR points elsewhere.
SHARED_CONFORMANCE_DIR = Path(
    os.environ.get("STEPWELL_SHARED_CONFORMANCE_DIR") or (REPO_ROOT / ".." / "shared" / "conformance")
).resolve()
OWN_HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
# Our own cases for the operations the shared suites do not cover; always run, handlers beside the YAML.
OWN_CASES_DIR = Path(__file__).resolve().parent / "cases"
SUITES = (
    "step",
    "wait",
    "callback",
    "child",
    "parallel",
    "wait_for_callback",
    "wait_for_condition",
    "invoke",
    "map",
)

# ---------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    suite: str
    case_id: str
    yaml_path: Path
    handler_path: Path
    data: dict[str, Any]

    @property
    def test_id(self) -> str:
        return f"{self.suite}/{self.case_id}"


def conformance_dirs() -> list[tuple[Path, Path | None]]:
    """(requirements dir, handlers dir or None when handlers sit beside the YAML)."""
    dirs: list[tuple[Path, Path | None]] = []
    if SHARED_CONFORMANCE_DIR.is_dir():
        dirs.append((SHARED_CONFORMANCE_DIR, OWN_HANDLERS_DIR))
    dirs.append((OWN_CASES_DIR, None))
    for extra in os.environ.get("CONFORMANCE_DIRS", "").split(":"):
        if extra.strip():
            path = Path(extra.strip()).resolve()
            if not path.is_dir():
                raise FileNotFoundError(f"CONFORMANCE_DIRS names {extra!r}, which is not a directory")
            dirs.append((path, None))
    return dirs


def _case_sort_key(path: Path) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"[-.]", path.stem))


def discover_cases() -> list[Case]:
    cases = []
    for requirements, handlers in conformance_dirs():
        for suite_dir in sorted(p for p in requirements.iterdir() if p.is_dir()):
            for yaml_path in sorted(suite_dir.glob("*.yaml"), key=_case_sort_key):
                data = yaml.safe_load(yaml_path.read_text())
                handler_dir = (handlers / suite_dir.name) if handlers is not None else suite_dir
                cases.append(
                    Case(
                        suite=suite_dir.name,
                        case_id=yaml_path.stem,
                        yaml_path=yaml_path,
                        handler_path=handler_dir / f"{yaml_path.stem}.py",
                        data=data,
                    )
                )
    return cases


def load_handler_module(case: Case) -> ModuleType:
    if not case.handler_path.is_file():
        raise FileNotFoundError(f"case {case.test_id}: no handler module at {case.handler_path}")
    name = f"conformance_handler_{case.suite}_{case.case_id.replace('-', '_')}_{abs(hash(case.handler_path))}"
    spec = importlib.util.spec_from_file_location(name, case.handler_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load handler module {case.handler_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "handler", None)):
        raise AttributeError(f"handler module {case.handler_path} does not expose a callable `handler`")
    return module


# ------------------------------------------------------------------------------------------- backends


class ConformanceBackend(Protocol):
    """What the runner needs from a backend: the local engine, or a class named by
    STEPWELL_CONFORMANCE_BACKEND. Time is the backend's clock (a virtual one: skipping ahead is free)."""

    def start(self, case: Case, module: ModuleType, event: Any) -> str: ...

    def history(self, execution_id: str) -> list[dict[str, Any]]: ...

    def describe(self, execution_id: str) -> dict[str, Any]: ...

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None:
        """`payload` as the API call carries it: a success's Result text, a failure's Error mapping."""
        ...

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None: ...

    def run_until_idle(self) -> None:
        """Run everything due now, until nothing is."""
        ...

    def now(self) -> float: ...

    def next_wake_up(self) -> float | None:
        """When something is next due (a timer, a delayed message), None when nothing is."""
        ...

    def advance_to(self, when: float) -> None: ...


class ExecutionStuck(RuntimeError):
    pass


def drive(backend: ConformanceBackend, driver: Driver, max_rounds: int = 100_000) -> list[dict[str, Any]]:
    """Run the execution and its driver until the driver is done (polling ended, or a synchronous invoke
    returned); the history as it then stands."""
    execution_id = driver.execution_id
    for _ in range(max_rounds):
        backend.run_until_idle()
        status = str(backend.describe(execution_id).get("Status"))
        if driver.act(backend, backend.now(), idle=True, status=status):
            continue
        if driver.ended is not None and not driver.sends:
            history = backend.history(execution_id)
            # What the end set going (a child's stop after its parent's) settles before children are read.
            backend.run_until_idle()
            return history
        wake_up = backend.next_wake_up()
        times = [when for when in (wake_up, driver.next_time(wake_up)) if when is not None]
        if not times:
            raise ExecutionStuck(
                f"execution {execution_id!r} is {status} and nothing is scheduled: it waits for a callback "
                "or an external event that nobody sends"
            )
        backend.advance_to(max(min(times), backend.now()))
    raise ExecutionStuck(f"execution {execution_id!r} did not end within {max_rounds} rounds")


# ---------------------------------------------------------------------------------------------- judge


def check_shapes(history: list[dict[str, Any]], describe: Callable[[str], dict[str, Any]]) -> list[str]:
    """Ours, for every history: the API reference's shapes (botocore's model), and that the child execution
    each `ChainedInvokeStarted` names resolves, as AWS's DurableExecutionArn does."""
    errors = [f"history vs the API model: {problem}" for problem in check_history_against_model(history)]
    for event_id, child_id in child_executions(history):
        try:
            describe(child_id)
        except Exception as error:
            errors.append(f"Event[{event_id}]: DurableExecutionArn {child_id!r} does not resolve: {error}")
    return errors


def judge(
    case: Case,
    driver: Driver,
    history: list[dict[str, Any]],
    describe: Callable[[str], dict[str, Any]],
    history_of: Callable[[str], list[dict[str, Any]]],
    log_lines: list[LogLine],
) -> list[str]:
    """A case's verdict: AWS's checks in AWS's order (history, result, logs), then the extension's."""
    data, names = case.data, driver.names
    errors = list(driver.errors)
    expected = list(data.get("ExpectedExecutionHistory") or [])
    if not expected and not driver.polled:
        errors.append("No ExpectedExecutionHistory found in description file")
    errors += match_history(expected, history, names)
    if driver.ended is not PollEnd.MATCHED:
        errors += check_result(data.get("ExpectedResult"), describe(driver.execution_id), names)
    errors += _check_logs(data.get("ExpectedLogs"), driver, describe, log_lines, names)
    errors += check_shapes(history, describe)
    block = extension(data)
    errors += match_history(list(block.get("ExpectedExecutionHistory") or []), history, names, EXTENSION)
    errors += check_children(block, names, history_of, describe, lambda child: check_shapes(child, describe))
    return errors


# ---------------------------------------------------------------------------------------------- logs


def _check_logs(
    expected: Any,
    driver: Driver,
    describe: Callable[[str], dict[str, Any]],
    log_lines: list[LogLine],
    names: Placeholders,
) -> list[str]:
    """ExpectedLogs, on the records of the execution's ARN as the backend reports it (AWS's filter)."""
    if not expected:
        return []
    arn = reported_arn(describe(driver.execution_id))
    if arn is None:
        return [f"ExpectedLogs: the backend reports no ARN for execution {driver.execution_id!r}"]
    return check_logs(expected, of_execution(log_lines, arn), names.substitute)


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[LogLine] = []

    def emit(self, record: logging.LogRecord) -> None:
        # Only records carrying an execution's ARN can pass AWS's filter; of_execution picks one's.
        if hasattr(record, "executionArn") or hasattr(record, PRINTED_JSON):
            self.lines.append(LogLine.of(record))


@dataclass
class CaptureLogs:
    handler: _LogCapture = field(default_factory=_LogCapture)

    def __enter__(self) -> _LogCapture:
        root = logging.getLogger()
        self._previous = root.level
        root.addHandler(self.handler)
        root.setLevel(logging.DEBUG)
        return self.handler

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self._previous)


# ---------------------------------------------------------------------------------------------- run


@dataclass
class CaseResult:
    case: Case
    errors: list[str]
    history: list[dict[str, Any]]

    @property
    def passed(self) -> bool:
        return not self.errors


def start_case(case: Case) -> tuple[Placeholders, Any]:
    """The case's bindings (its Variables) and the event its handler receives."""
    names = Placeholders()
    names.resolve_variables(case.data.get("Variables"))
    extension(case.data)  # a malformed block fails the case before anything runs
    return names, {"Input": names.substitute(case.data.get("Input"))}


def run_case(case: Case, backend: ConformanceBackend) -> CaseResult:
    module = load_handler_module(case)
    names, event = start_case(case)
    with CaptureLogs() as logs:
        execution_id = backend.start(case, module, event)
        driver = Driver.for_case(case.data, names, execution_id, backend.now())
        history = drive(backend, driver)
    errors = judge(case, driver, history, backend.describe, backend.history, logs.lines)
    return CaseResult(case, errors, history)


def iter_suites(cases: list[Case]) -> Iterator[str]:
    seen: list[str] = []
    for case in cases:
        if case.suite not in seen:
            seen.append(case.suite)
            yield case.suite
