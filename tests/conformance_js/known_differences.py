"""The cases whose JavaScript twin is written and runs, but whose expectations cannot hold for both SDKs: a
true difference between the SDKs, not one of serialisation (payloads are compared as the JSON values they
hold and the SDKs' own error types by pattern, as AWS's shared cases do; tests/conformance/matching.py).
Each is run and must fail exactly where its differences say (the expectations' locations): a case that
passes, or fails anywhere else, fails the test. README.md in this folder explains each difference."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Why the JS SDK's history differs (README.md's "Differences" section, same words).
INVOKE_ERROR_TYPE = "the JS SDK's InvokeError keeps the child's ErrorMessage only, not its ErrorType"


@dataclass(frozen=True)
class Difference:
    """Why a case fails with its JavaScript handler, and where: the runner's error locations."""

    reasons: tuple[str, ...]
    locations: frozenset[str]


def _at(*locations: str) -> frozenset[str]:
    return frozenset(locations)


# The handler returns the failed invoke's ErrorType, which the JS SDK's InvokeError does not carry (its cause
# is `new Error(message)`): the result (by ExpectedResult, and invoke-3's also in its history) differs.
KNOWN_DIFFERENCES: dict[str, Difference] = {
    "invoke/invoke-2": Difference((INVOKE_ERROR_TYPE,), _at("expected Result")),
    "invoke/invoke-3": Difference(
        (INVOKE_ERROR_TYPE,), _at("Event[6].ExecutionSucceededDetails.Result.Payload", "expected Result")
    ),
    "invoke/invoke-7": Difference((INVOKE_ERROR_TYPE,), _at("expected Result")),
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
