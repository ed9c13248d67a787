"""Conformance runner: loads requirement cases, runs them on a backend, checks results and histories.

A case is `<dir>/<suite>/<id>.yaml` with its handler module `<suite>/<id>.py` (exposing `handler`, and
`WORKFLOWS`, `WORKFLOW_OPTIONS` and `FUNCTIONS` for the targets it invokes: case_registration.py). Our
handlers for the shared cases live in tests/conformance/handlers/<suite>/<id>.py; our own cases
(tests/conformance/cases) and CONFORMANCE_DIRS folders carry theirs beside the YAML. Matching follows
AWS's conformance validator: expected events are matched to actual ones by EventId, only the keys an
expected event names are compared, `{}` and '*' match anything, `${NAME}` binds on first sight and must
repeat, `${/regex/}` searches, and known variables are substituted in literals. Every history is also
checked against the API's shapes (tests/history_model.py).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import secrets
import string
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

_PLACEHOLDER = re.compile(r"^\$\{(.+)\}$")
_REGEX = re.compile(r"^\$\{/(.+)/\}$")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_GEN_STR = re.compile(r"^\$\{GEN_STR:(\d+)\}$")
# An expected value saying the key must not be in the actual event, or as an expected event's EventType that
# there is no event with that EventId (ours; AWS's format has no such value).
ABSENT = "${ABSENT}"


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


# --------------------------------------------------------------------------------------- placeholders


class Placeholders:
    def __init__(self) -> None:
        self.bindings: dict[str, Any] = {}

    def resolve_variables(self, variables: dict[str, Any] | None) -> None:
        for name, value in (variables or {}).items():
            match = _GEN_STR.match(value) if isinstance(value, str) else None
            if match:
                alphabet = string.ascii_lowercase + string.digits
                self.bindings[name] = "".join(secrets.choice(alphabet) for _ in range(int(match.group(1))))
            else:
                self.bindings[name] = value if isinstance(value, str) else str(value)

    def substitute(self, data: Any) -> Any:
        if isinstance(data, str):
            return _REFERENCE.sub(
                lambda m: str(self.bindings[m.group(1)]) if m.group(1) in self.bindings else m.group(0), data
            )
        if isinstance(data, dict):
            return {key: self.substitute(value) for key, value in data.items()}
        if isinstance(data, list):
            return [self.substitute(value) for value in data]
        return data


def _json_ready(value: Any) -> Any:
    """Actual events as the API's JSON would show them (datetimes as ISO strings)."""
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_ready(item) for item in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def match_history(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], names: Placeholders
) -> list[str]:
    errors: list[str] = []
    by_id = {event.get("EventId"): _json_ready(event) for event in actual}
    for expected_event in expected:
        event_id = expected_event.get("EventId")
        if event_id is None:
            errors.append(f"expected event without EventId: {expected_event}")
            continue
        if expected_event.get("EventType") == ABSENT:
            if event_id in by_id:
                errors.append(
                    f"Event[{event_id}]: expected no such event, got {by_id[event_id].get('EventType')}"
                )
            continue
        if event_id not in by_id:
            errors.append(
                f"no actual event with EventId={event_id} (expected {expected_event.get('EventType')})"
            )
            continue
        _match(expected_event, by_id[event_id], f"Event[{event_id}]", names, errors)
    return errors


def check_history(
    expected: list[dict[str, Any]],
    history: list[dict[str, Any]],
    names: Placeholders,
    describe: Callable[[str], dict[str, Any]],
) -> list[str]:
    """The case's expected events, the API reference's shapes (botocore's model), and that the child
    execution each `ChainedInvokeStarted` names resolves, as AWS's DurableExecutionArn does."""
    errors = match_history(expected, history, names)
    errors += [f"history vs the API model: {problem}" for problem in check_history_against_model(history)]
    for event_id, child_id in child_executions(history):
        try:
            describe(child_id)
        except Exception as error:
            errors.append(f"Event[{event_id}]: DurableExecutionArn {child_id!r} does not resolve: {error}")
    return errors


def child_executions(history: list[dict[str, Any]]) -> list[tuple[Any, str]]:
    """(EventId, child execution id) of each `ChainedInvokeStarted` that names a durable child."""
    found = []
    for event in history:
        child_id = event.get("ChainedInvokeStartedDetails", {}).get("DurableExecutionArn")
        if child_id is not None:
            found.append((event.get("EventId"), str(child_id)))
    return found


def check_children(
    data: dict[str, Any],
    names: Placeholders,
    history: Callable[[str], list[dict[str, Any]]],
    describe: Callable[[str], dict[str, Any]],
) -> list[str]:
    """Ours: `ExpectedChildExecutions`, each a `DurableExecutionArn` bound by the parent's history with its
    own `ExpectedResult` and `ExpectedExecutionHistory`, checked as the parent's are."""
    errors: list[str] = []
    for index, child in enumerate(data.get("ExpectedChildExecutions") or []):
        child_id = str(names.substitute(child.get("DurableExecutionArn", "")))
        where = f"ExpectedChildExecutions[{index}] ({child_id})"
        if not child_id or _REFERENCE.search(child_id):
            errors.append(f"{where}: the parent's history did not bind its DurableExecutionArn")
            continue
        try:
            description = describe(child_id)
        except Exception as error:
            errors.append(f"{where}: does not resolve: {error}")
            continue
        child_errors = check_result(child.get("ExpectedResult"), description, names)
        expected = list(child.get("ExpectedExecutionHistory") or [])
        child_errors += check_history(expected, history(child_id), names, describe)
        errors += [f"{where}: {error}" for error in child_errors]
    return errors


def _match(expected: Any, actual: Any, path: str, names: Placeholders, errors: list[str]) -> None:
    if (isinstance(expected, dict) and not expected) or expected == "*":
        return
    if isinstance(expected, str):
        regex = _REGEX.match(expected)
        if regex:
            # Known variables are substituted in the pattern too (they are letters and digits).
            pattern = names.substitute(regex.group(1))
            if not re.search(pattern, str(actual)):
                shown = (
                    repr(actual)
                    if len(str(actual)) <= 300
                    else f"{str(actual)[:300]!r}... ({len(str(actual))} chars)"
                )
                errors.append(f"{path}: {shown} does not match /{pattern}/")
            return
        placeholder = _PLACEHOLDER.match(expected)
        if placeholder and not _GEN_STR.match(expected):
            name = placeholder.group(1)
            if name in names.bindings:
                if names.bindings[name] != actual:
                    errors.append(f"{path}: ${{{name}}} is {names.bindings[name]!r}, got {actual!r}")
            else:
                names.bindings[name] = actual
            return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if value == ABSENT:
                if key in actual:
                    errors.append(f"{path}.{key}: expected no such key, got {actual[key]!r}")
            elif key not in actual:
                errors.append(f"{path}.{key}: missing in actual event")
            else:
                _match(value, actual[key], f"{path}.{key}", names, errors)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            errors.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
            return
        for index, (item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            _match(item, actual_item, f"{path}[{index}]", names, errors)
        return
    resolved = names.substitute(expected) if isinstance(expected, str) else expected
    if resolved != actual:
        errors.append(f"{path}: expected {resolved!r}, got {actual!r}")


# ------------------------------------------------------------------------------------------- backends


class ConformanceBackend(Protocol):
    """What the runner needs from a backend: the local engine today, a deployed stack later."""

    def start(self, case: Case, module: ModuleType, event: Any) -> str: ...

    def history(self, execution_id: str) -> list[dict[str, Any]]: ...

    def describe(self, execution_id: str) -> dict[str, Any]: ...

    def send_callback(self, callback_id: str, operation: str, payload: Any) -> None: ...

    def stop(self, execution_id: str, error: dict[str, Any] | None) -> None: ...

    def run(self, execution_id: str, on_idle: Callable[[], bool]) -> None:
        """Drive the execution to its end, calling on_idle whenever it waits (for callbacks)."""
        ...

    def advance(self, seconds: float) -> None:
        """Let `seconds` pass (a CallbackAction's Delay)."""
        ...


# ------------------------------------------------------------------------------------------ callbacks


@dataclass
class CallbackDriver:
    """What a case does from outside while its execution waits: its `CallbackActions`, and (ours) its
    `StopExecution` (`AfterEventType`, optional `Error`): one stop once the history has that event."""

    actions: list[dict[str, Any]]
    names: Placeholders
    backend: ConformanceBackend
    stop: dict[str, Any] | None = None
    stopped: bool = False
    handled: set[str] = field(default_factory=set)
    used: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    @property
    def has_actions(self) -> bool:
        return bool(self.actions) or (self.stop is not None and not self.stopped)

    def __call__(self, execution_id: str) -> bool:
        events = _json_ready(self.backend.history(execution_id))
        if self.stop is not None and not self.stopped and self._stop_is_due(events):
            self.stopped = True
            self.backend.stop(execution_id, self.names.substitute(self.stop.get("Error")))
            return True
        _inherit_wait_for_callback_names(events)
        acted = False
        for event in events:
            if event.get("EventType") != "CallbackStarted":
                continue
            callback_id = event.get("CallbackStartedDetails", {}).get("CallbackId")
            if not callback_id or callback_id in self.handled:
                continue
            index, action = self._match(event.get("Name", ""))
            if action is None:
                if self.actions:
                    self.errors.append(f"no CallbackAction for callback {event.get('Name')!r}")
                self.handled.add(callback_id)
                continue
            self.used.add(index)
            operation = action.get("Operation", "")
            if operation != "heartbeat":
                self.handled.add(callback_id)
            delay = float(action.get("Delay", 0) or 0)
            if delay > 0:
                self.backend.advance(delay)
            self.backend.send_callback(callback_id, operation, self.names.substitute(action.get("Payload")))
            # One action per round: the execution reacts before the next one, as with a real sender.
            return True
        return acted

    def _stop_is_due(self, events: list[dict[str, Any]]) -> bool:
        wanted = (self.stop or {}).get("AfterEventType")
        return any(event.get("EventType") == wanted for event in events)

    def _match(self, event_name: str) -> tuple[int, dict[str, Any] | None]:
        for index, action in enumerate(self.actions):
            if index in self.used:
                continue
            wanted = str(self.names.substitute(action.get("CallbackName", "*")))
            regex = _REGEX.match(wanted)
            if wanted in ("*", event_name) or (regex and re.search(regex.group(1), event_name)):
                return index, action
        return -1, None


def _inherit_wait_for_callback_names(events: list[dict[str, Any]]) -> None:
    by_id = {event.get("Id"): event for event in events if event.get("Id") is not None}
    for event in events:
        if event.get("Name") or event.get("EventType") not in ("CallbackStarted",):
            continue
        parent = by_id.get(event.get("ParentId"))
        if parent is not None and parent.get("SubType") == "WaitForCallback" and parent.get("Name"):
            event["Name"] = parent["Name"]


# ---------------------------------------------------------------------------------------------- logs


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        # Only the durable logger's lines (they carry the execution's id) are the workflow's own output.
        if not hasattr(record, "executionArn"):
            return
        try:
            self.messages.append(record.getMessage())
        except Exception:
            self.messages.append(str(record.msg))


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


def check_logs(expected: list[dict[str, Any]] | None, messages: list[str], names: Placeholders) -> list[str]:
    errors = []
    for rule in expected or []:
        pattern = str(names.substitute(rule.get("match", {}).get("message", "")))
        pattern = pattern[1:-1] if pattern.startswith("/") and pattern.endswith("/") else re.escape(pattern)
        count = sum(1 for message in messages if re.search(pattern, message))
        wanted = rule.get("count")
        if wanted is not None and count != int(wanted):
            errors.append(f"log /{pattern}/ appeared {count} times, expected {wanted}")
    return errors


# ---------------------------------------------------------------------------------------------- run


@dataclass
class CaseResult:
    case: Case
    errors: list[str]
    history: list[dict[str, Any]]

    @property
    def passed(self) -> bool:
        return not self.errors


def run_case(case: Case, backend: ConformanceBackend) -> CaseResult:
    module = load_handler_module(case)
    names = Placeholders()
    names.resolve_variables(case.data.get("Variables"))
    event = {"Input": names.substitute(case.data.get("Input"))}
    driver = CallbackDriver(
        list(case.data.get("CallbackActions") or []), names, backend, stop=case.data.get("StopExecution")
    )
    with CaptureLogs() as logs:
        execution_id = backend.start(case, module, event)
        backend.run(execution_id, lambda: driver(execution_id))
    history = backend.history(execution_id)
    errors = list(driver.errors)
    errors += check_history(
        list(case.data.get("ExpectedExecutionHistory") or []), history, names, backend.describe
    )
    errors += check_result(case.data.get("ExpectedResult"), backend.describe(execution_id), names)
    errors += check_children(case.data, names, backend.history, backend.describe)
    errors += check_logs(case.data.get("ExpectedLogs"), logs.messages, names)
    return CaseResult(case, errors, history)


def check_result(
    expected: dict[str, Any] | None, description: dict[str, Any], names: Placeholders
) -> list[str]:
    if not expected:
        return []
    status = description.get("Status")
    wanted_status = expected.get("ExecutionStatus")
    if wanted_status and status != wanted_status:
        return [f"expected ExecutionStatus {wanted_status}, got {status} (error: {description.get('Error')})"]
    if status != "SUCCEEDED" or "Result" not in expected:
        return []
    raw = description.get("Result")
    try:
        actual = json.loads(raw) if raw is not None else None
    except (TypeError, ValueError):
        actual = raw
    wanted = names.substitute(expected.get("Result"))
    return [] if actual == wanted else [f"expected Result {wanted!r}, got {actual!r}"]


def iter_suites(cases: list[Case]) -> Iterator[str]:
    seen: list[str] = []
    for case in cases:
        if case.suite not in seen:
            seen.append(case.suite)
            yield case.suite
