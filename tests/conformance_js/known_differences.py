"""The cases whose JavaScript twin is written and runs, but whose expectations pin what the Python SDK
writes, so the JavaScript SDK's history cannot match them under AWS's validator's rules
(tests/conformance/matching.py, not loosened for JavaScript). Each is run and must fail exactly where its
differences say (the expectations' locations): a case that passes, or fails anywhere else, fails the test.
README.md in this folder explains each kind of difference."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Why the JS SDK's history differs, by kind (README.md's "Differences" section, same words).
SPACING = "payloads pinned to Python's json.dumps spacing; the JS SDK writes JSON.stringify's compact JSON"
BATCH_ENVELOPE = "the map's ContextSucceeded pinned to the Python SDK's BatchResult envelope"
PYTHON_ERROR_TYPES = (
    "ErrorType pinned to Python's exception classes (RuntimeError, aws_durable_execution_sdk_python...)"
)
WFC_EXHAUSTED = "the exhausted wait strategy's error pinned to the Python SDK's type and message"
INVOKE_ERROR_TYPE = "the JS SDK's InvokeError keeps the child's ErrorMessage only, not its ErrorType"


@dataclass(frozen=True)
class Difference:
    """Why a case fails with its JavaScript handler, and where: the runner's error locations."""

    reasons: tuple[str, ...]
    locations: frozenset[str]


def _at(*locations: str) -> frozenset[str]:
    return frozenset(locations)


STARTED_INPUT = "Event[2].ChainedInvokeStartedDetails.Input.Payload"
CHILD_INPUT = "ExpectedChildExecutions[0]: Event[1].ExecutionStartedDetails.Input.Payload"
RESULT_6 = "Event[6].ExecutionSucceededDetails.Result.Payload"

KNOWN_DIFFERENCES: dict[str, Difference] = {
    "wait_for_condition/wfc-1": Difference(
        (SPACING,), _at("Event[11].ExecutionSucceededDetails.Result.Payload")
    ),
    "wait_for_condition/wfc-3": Difference(
        (WFC_EXHAUSTED, PYTHON_ERROR_TYPES),
        _at(
            "Event[6].StepFailedDetails.Error.Payload.ErrorMessage",
            "Event[6].StepFailedDetails.Error.Payload.ErrorType",
            "Event[8].ExecutionFailedDetails.Error.Payload.ErrorMessage",
            "Event[8].ExecutionFailedDetails.Error.Payload.ErrorType",
        ),
    ),
    "wait_for_condition/wfc-4": Difference(
        (SPACING,), _at("Event[8].ExecutionSucceededDetails.Result.Payload")
    ),
    "map/map-1": Difference(
        (SPACING, BATCH_ENVELOPE),
        _at(
            "Event[15].ContextSucceededDetails.Result.Payload",
            "Event[17].ExecutionSucceededDetails.Result.Payload",
        ),
    ),
    "map/map-2": Difference(
        (SPACING, BATCH_ENVELOPE, PYTHON_ERROR_TYPES),
        _at(
            "Event[14].ContextFailedDetails.Error.Payload.ErrorType",
            "Event[19].ContextSucceededDetails.Result.Payload",
            "Event[21].ExecutionSucceededDetails.Result.Payload",
            "expected Result",
        ),
    ),
    "map/map-3": Difference(
        (SPACING, BATCH_ENVELOPE, PYTHON_ERROR_TYPES),
        _at(
            "Event[5].StepFailedDetails.Error.Payload.ErrorType",
            "Event[6].ContextFailedDetails.Error.Payload.ErrorType",
            "Event[9].StepFailedDetails.Error.Payload.ErrorType",
            "Event[10].ContextFailedDetails.Error.Payload.ErrorType",
            "Event[11].ContextSucceededDetails.Result.Payload",
            "Event[13].ExecutionSucceededDetails.Result.Payload",
        ),
    ),
    "map/map-4": Difference(
        (SPACING, BATCH_ENVELOPE),
        _at(
            "Event[11].ContextSucceededDetails.Result.Payload",
            "Event[13].ExecutionSucceededDetails.Result.Payload",
        ),
    ),
    "map/map-5": Difference(
        (SPACING, BATCH_ENVELOPE),
        _at(
            "Event[7].ContextSucceededDetails.Result.Payload",
            "Event[9].ExecutionSucceededDetails.Result.Payload",
        ),
    ),
    "invoke/invoke-1": Difference((SPACING,), _at(STARTED_INPUT, RESULT_6, CHILD_INPUT)),
    "invoke/invoke-2": Difference(
        (SPACING, INVOKE_ERROR_TYPE, PYTHON_ERROR_TYPES), _at(STARTED_INPUT, RESULT_6, "expected Result")
    ),
    "invoke/invoke-3": Difference(
        (SPACING, INVOKE_ERROR_TYPE), _at(STARTED_INPUT, RESULT_6, CHILD_INPUT, "expected Result")
    ),
    "invoke/invoke-4": Difference((SPACING,), _at(STARTED_INPUT, RESULT_6)),
    "invoke/invoke-5": Difference((SPACING,), _at(STARTED_INPUT)),
    "invoke/invoke-6": Difference((SPACING,), _at(STARTED_INPUT, RESULT_6)),
    "invoke/invoke-7": Difference(
        (SPACING, INVOKE_ERROR_TYPE), _at(STARTED_INPUT, RESULT_6, "expected Result")
    ),
    "invoke/invoke-8": Difference((SPACING,), _at("Event[3].ChainedInvokeStartedDetails.Input.Payload")),
    "invoke/invoke-9": Difference((SPACING,), _at(STARTED_INPUT, CHILD_INPUT)),
}

_LOCATION = re.compile(
    r"((?:ExpectedChildExecutions\[\d+\]: )?"
    r"(?:Event\[\d+\][\w.\[\]]*|expected Result|expected ExecutionStatus|no actual event with EventId=\d+))"
)


def location(error: str) -> str:
    """Where a runner error is (the event and key, or the result), without the values or a child's id; an
    error of another shape is its own location, which no difference lists."""
    plain = re.sub(r" \([^)]*\)", "", error)
    match = _LOCATION.match(plain)
    return match.group(1) if match else error
