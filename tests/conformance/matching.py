"""How a case's expectations are judged, by AWS's conformance validator's rules, and by ours only inside the
case's `x-stepwell` extension block.

AWS's rules (its package's `history.py`, `variables.py` and `validate.py`, read for the facts):
- Variables: `${GEN_STR:N}` is N random lowercase letters and digits; any other value binds as a string.
- Substitution: `${NAME}` inside a string is replaced when NAME is bound; anything else is left as it is.
- History: expected events are matched to actual events by `EventId` (others are ignored); only the keys an
  expected event names are compared; `{}` and `'*'` match anything; a whole-value `${NAME}` binds on first
  sight and must repeat (`${GEN_STR:8}` and `${ABSENT}` are names like any other); a whole-value
  `${/regex/}` searches the value as a string, with no substitution inside the pattern; lists match item
  by item and must have the same length; any other value is compared literally after substitution.
- Result: the status; for SUCCEEDED with a `Result` key, the result after one `json.loads`.

Ours, in the extension block only (AWS's validator ignores the block, so its verdict on the rest of a
case is the same with or without it): `${ABSENT}` as a value says the key must not be there, and as an
`EventType` that there is no event with that `EventId`; known variables are substituted inside
`${/regex/}` before it is compiled; a `Payload` string compares as the JSON value it holds when both sides
parse (the Python SDK's `{"a": 1}` equals the JavaScript SDK's `{"a":1}`), as AWS's compares `Result`.
"""

from __future__ import annotations

import json
import re
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_PLACEHOLDER = re.compile(r"^\$\{(.+)\}$")
_REGEX = re.compile(r"^\$\{/(.+)/\}$")
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_GEN_STR = re.compile(r"^\$\{GEN_STR:(\d+)\}$")
_ALPHABET = string.ascii_lowercase + string.digits
# Ours, only in the extension block: the key (or, as an EventType, the event) must not be there.
ABSENT = "${ABSENT}"
# The case's block of our own keys: AWS's validator reads only its own keys and ignores it.
EXTENSION_KEY = "x-stepwell"


class Placeholders:
    """The bindings of one case: its Variables first, then what matching binds (AWS's PlaceholderContext)."""

    def __init__(self) -> None:
        self.bindings: dict[str, Any] = {}

    def resolve_variables(self, variables: dict[str, Any] | None) -> None:
        for name, value in (variables or {}).items():
            match = _GEN_STR.match(value) if isinstance(value, str) else None
            if match:
                self.bindings[name] = "".join(secrets.choice(_ALPHABET) for _ in range(int(match.group(1))))
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

    def unbound(self, text: str) -> list[str]:
        """The `${NAME}` references in `text` that nothing has bound."""
        return [name for name in _REFERENCE.findall(text) if name not in self.bindings]


def regex_of(value: Any) -> str | None:
    """The pattern of a whole-value `${/pattern/}`, else None."""
    match = _REGEX.match(value) if isinstance(value, str) else None
    return match.group(1) if match else None


def json_ready(value: Any) -> Any:
    """Actual events as the API's JSON shows them (datetimes as ISO strings)."""
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return [json_ready(item) for item in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


@dataclass(frozen=True)
class Rules:
    """Which matcher: AWS's (the default), or ours for the extension block."""

    absent: bool = False  # `${ABSENT}` is a rule, not a placeholder name
    variables_in_patterns: bool = False  # known variables are substituted inside `${/regex/}`
    json_payloads: bool = False  # a `Payload` string compares as the JSON value it holds


AWS = Rules()
EXTENSION = Rules(absent=True, variables_in_patterns=True, json_payloads=True)


def _same_json(expected: Any, actual: Any) -> bool:
    """Both strings hold JSON, and the same value (key order and spacing aside)."""
    if not (isinstance(expected, str) and isinstance(actual, str)):
        return False
    try:
        return bool(json.loads(expected) == json.loads(actual))
    except ValueError:
        return False


def match_history(
    expected: list[dict[str, Any]],
    actual: list[dict[str, Any]],
    names: Placeholders,
    rules: Rules = AWS,
) -> list[str]:
    errors: list[str] = []
    by_id: dict[Any, dict[str, Any]] = {}
    for event in actual:
        if event.get("EventId") is not None:
            by_id[event["EventId"]] = json_ready(event)
    for expected_event in expected:
        event_id = expected_event.get("EventId")
        if event_id is None:
            errors.append(f"expected event without EventId: {expected_event}")
            continue
        if rules.absent and expected_event.get("EventType") == ABSENT:
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
        _match(expected_event, by_id[event_id], f"Event[{event_id}]", names, errors, rules)
    return errors


def _shown(actual: Any) -> str:
    text = str(actual)
    return repr(actual) if len(text) <= 300 else f"{text[:300]!r}... ({len(text)} chars)"


def _match(
    expected: Any, actual: Any, path: str, names: Placeholders, errors: list[str], rules: Rules
) -> None:
    if (isinstance(expected, dict) and not expected) or expected == "*":
        return
    pattern = regex_of(expected)
    if pattern is not None:
        if rules.variables_in_patterns:
            pattern = names.substitute(pattern)
        if not re.search(pattern, str(actual)):
            errors.append(f"{path}: {_shown(actual)} does not match /{pattern}/")
        return
    placeholder = _PLACEHOLDER.match(expected) if isinstance(expected, str) else None
    if placeholder is not None and not (rules.absent and expected == ABSENT):
        name = placeholder.group(1)
        if name in names.bindings:
            if names.bindings[name] != actual:
                errors.append(f"{path}: ${{{name}}} is {names.bindings[name]!r}, got {_shown(actual)}")
        else:
            names.bindings[name] = actual
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if rules.absent and value == ABSENT:
                if key in actual:
                    errors.append(f"{path}.{key}: expected no such key, got {_shown(actual[key])}")
            elif key not in actual:
                errors.append(f"{path}.{key}: missing in actual event")
            else:
                _match(value, actual[key], f"{path}.{key}", names, errors, rules)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            errors.append(f"{path}: expected {len(expected)} items, got {len(actual)}")
            return
        for index, (item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            _match(item, actual_item, f"{path}[{index}]", names, errors, rules)
        return
    resolved = names.substitute(expected) if isinstance(expected, str) else expected
    if rules.json_payloads and path.endswith(".Payload") and _same_json(resolved, actual):
        return
    if resolved != actual:
        errors.append(f"{path}: expected {resolved!r}, got {_shown(actual)}")


def check_result(
    expected: dict[str, Any] | None, description: dict[str, Any], names: Placeholders
) -> list[str]:
    """AWS's: the status; for SUCCEEDED, `Result` (when the case names it) after one json.loads."""
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


def extension(data: dict[str, Any]) -> dict[str, Any]:
    """The case's `x-stepwell` block ({} when it has none); a block that is not a mapping is refused."""
    block = data.get(EXTENSION_KEY)
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise ValueError(f"{EXTENSION_KEY} must be a mapping, got {type(block).__name__}")
    unknown = set(block) - {"ExpectedExecutionHistory", "StopExecution", "ExpectedChildExecutions"}
    if unknown:
        raise ValueError(
            f"{EXTENSION_KEY} has unknown keys {sorted(unknown)}; allowed: ExpectedChildExecutions, "
            "ExpectedExecutionHistory, StopExecution"
        )
    return block


def child_executions(history: list[dict[str, Any]]) -> list[tuple[Any, str]]:
    """(EventId, child execution id) of each `ChainedInvokeStarted` that names a durable child."""
    found = []
    for event in history:
        child_id = event.get("ChainedInvokeStartedDetails", {}).get("DurableExecutionArn")
        if child_id is not None:
            found.append((event.get("EventId"), str(child_id)))
    return found


def check_children(
    block: dict[str, Any],
    names: Placeholders,
    history: Callable[[str], list[dict[str, Any]]],
    describe: Callable[[str], dict[str, Any]],
    model_check: Callable[[list[dict[str, Any]]], list[str]],
) -> list[str]:
    """Ours: the extension's `ExpectedChildExecutions`, each a `DurableExecutionArn` the parent's history
    bound, with its own `ExpectedResult` and `ExpectedExecutionHistory` (matched by the extension's rules:
    the whole child expectation is ours)."""
    errors: list[str] = []
    for index, child in enumerate(block.get("ExpectedChildExecutions") or []):
        child_id = str(names.substitute(child.get("DurableExecutionArn", "")))
        where = f"ExpectedChildExecutions[{index}] ({child_id})"
        if not child_id or names.unbound(child_id):
            errors.append(f"{where}: the parent's history did not bind its DurableExecutionArn")
            continue
        try:
            description = describe(child_id)
        except Exception as error:
            errors.append(f"{where}: does not resolve: {error}")
            continue
        child_history = history(child_id)
        child_errors = match_history(
            list(child.get("ExpectedExecutionHistory") or []), child_history, names, EXTENSION
        )
        child_errors += check_result(child.get("ExpectedResult"), description, names)
        child_errors += model_check(child_history)
        errors += [f"{where}: {error}" for error in child_errors]
    return errors
