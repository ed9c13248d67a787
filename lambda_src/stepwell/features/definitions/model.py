"""The parsed form of a workflow definition (schema version 1: see schema.json) and its errors.

`stepwell.features.definitions.validation.parse_definition` turns the JSON document into a `Definition`
(or raises
`DefinitionInvalid` listing every problem, each naming its node or edge).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stepwell.core.flow_limits import Concurrency, Rate
from stepwell.features.definitions.expressions import Expression

SCHEMA_VERSION = 1
NODE_TYPES = ("trigger", "action", "wait", "trigger_or_timeout", "condition", "parallel", "join", "end")
# Nodes in which a context stops and waits: a cycle needs at least one of them.
WAITING_TYPES = ("wait", "trigger_or_timeout")
JOIN_MODES = ("all", "any", "n")
CONCURRENCY_POLICIES = ("single", "multiple")
# What a flowControl key may read: the context's start (its trigger event, subject and domain); the
# context has no data of its own yet when its limits are resolved.
FLOW_KEY_ROOTS = ("event", "subject", "domain")
MAX_NODES = 500
# A stored definition is one DynamoDB item (its latest and its version item alike) of at most 400 KB:
# taken as 400,000 bytes, which every backend accepts (AWS: 409,600; moto refuses above 405,000). The
# item's keys, ids and version numbers take at most DEFINITION_ITEM_OVERHEAD bytes of it (ids of 128
# ASCII characters, numbers of 21 bytes, the attribute names); the definition's compact JSON the rest.
DYNAMODB_ITEM_BYTES = 400_000
DEFINITION_ITEM_OVERHEAD = 1024
MAX_DEFINITION_BYTES = DYNAMODB_ITEM_BYTES - DEFINITION_ITEM_OVERHEAD


def encode_definition(document: Any) -> str:
    """The definition as it is stored: compact JSON in ASCII (its length is its size in bytes); NaN and
    Infinity are refused (ValueError), they are not JSON."""
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


class DefinitionError(ValueError):
    """Base of the definitions package's errors."""


class DefinitionNotFound(DefinitionError, LookupError):
    """No stored definition, version or context by that name."""


class DefinitionInvalid(DefinitionError):
    """A definition that does not validate; `errors` lists each problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("invalid definition: " + "; ".join(self.errors))


# The longest wait the engine takes (AWS's limit for a durable wait): a duration, or an `until` ahead.
MAX_WAIT_SECONDS = 366 * 86400
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_ISO_DURATION = re.compile(
    r"P(?!\Z)(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?"
)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
DURATION_RULE = (
    "a number of seconds, a string such as '30s', '15m', '1h30m', '3d', '2w', or ISO 8601 such as 'P3D', "
    "'PT1H30M'"
)


def parse_duration(value: object) -> float:
    """Seconds in a duration (see DURATION_RULE). Raises ValueError naming the value."""
    seconds: float
    if isinstance(value, bool):
        raise ValueError(f"bad duration {value!r}: {DURATION_RULE}")
    if isinstance(value, (int, float)):
        if isinstance(value, int) and value.bit_length() > 64:  # float() of a huge int overflows
            raise ValueError(
                f"bad duration (an integer of {value.bit_length()} bits): must be more than 0 and at most "
                "366 days"
            )
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        iso = _ISO_DURATION.fullmatch(text)
        if iso:
            seconds = sum(
                float(iso.group(unit) or 0) * _UNIT_SECONDS[unit] for unit in ("w", "d", "h", "m", "s")
            )
        elif text and _DURATION_PART.sub("", text) == "" and _DURATION_PART.match(text):
            seconds = sum(
                float(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text)
            )
        else:
            raise ValueError(f"bad duration {value!r}: {DURATION_RULE}")
    else:
        raise ValueError(f"bad duration {value!r}: {DURATION_RULE}")
    if seconds <= 0 or seconds != seconds or seconds > MAX_WAIT_SECONDS:
        raise ValueError(f"bad duration {value!r}: must be more than 0 and at most 366 days")
    return seconds


INSTANT_RULE = "epoch seconds or an ISO 8601 time with a zone (such as '2026-12-01T09:00:00Z')"


def parse_instant(value: object) -> float:
    """Epoch seconds of a wait's `until` (see INSTANT_RULE); an integer beyond a float's range is
    infinity, for the caller's range check. Raises ValueError naming the value."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            return math.inf
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                raise ValueError(f"gave {value!r}, a time without a time zone; give {INSTANT_RULE}")
            return parsed.timestamp()
    raise ValueError(f"must give {INSTANT_RULE}, got {value!r}")


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 3
    initial_delay: float = 5.0
    max_delay: float = 300.0
    backoff_rate: float = 2.0
    jitter: str = "full"  # full | none


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    branch: str | None
    index: int

    def label(self) -> str:
        branch = f" [{self.branch}]" if self.branch else ""
        return f"edge #{self.index} ({self.source} -> {self.target}{branch})"


@dataclass
class Node:
    id: str
    type: str
    raw: dict[str, Any]
    # trigger / trigger_or_timeout
    event: str | None = None
    filter: Expression | None = None
    # action
    action: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)  # key -> Expression or literal
    output: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # wait / trigger_or_timeout
    duration: float | None = None
    until: Expression | None = None
    timeout: float | None = None
    # condition
    expression: Expression | None = None
    # join
    mode: str = "all"
    n: int | None = None


@dataclass
class Definition:
    """A validated definition. `outgoing[node]` lists the node's edges in document order."""

    raw: dict[str, Any]
    id: str | None
    name: str | None
    concurrency: str
    nodes: dict[str, Node]
    edges: list[Edge]
    outgoing: dict[str, list[Edge]]
    # parallel node id -> its join node id
    joins: dict[str, str]
    # flowControl: per key, at most N running contexts and R starts per period (stepwell.core.flow_limits)
    flow_concurrency: Concurrency | None = None
    flow_rate: Rate | None = None

    def triggers(self) -> list[Node]:
        return [node for node in self.nodes.values() if node.type == "trigger"]

    def next_node(self, node_id: str, branch: str | None = None) -> str:
        for edge in self.outgoing.get(node_id, []):
            if edge.branch == branch or branch is None:
                return edge.target
        raise DefinitionError(f"node {node_id!r} has no outgoing edge for branch {branch!r}")

    def resumes_once(self, node_id: str) -> bool:
        """Whether an event that resumes the wait at `node_id` can never find another wait for its name
        open in the same context, before or after: the node is in no parallel branch (one path runs at a
        time), no wait for the same event lies on its "event" branch (nor the node itself: a cycle), and
        it lies on no such wait's "event" branch. The router then needs no record of the resume: a
        redelivery finds the callback completed, or the context past it."""
        node = self.nodes[node_id]
        if node.type != "trigger_or_timeout" or any(
            node_id in self.between(parallel_id, join_id) for parallel_id, join_id in self.joins.items()
        ):
            return False
        same = [
            other.id for other in self.nodes.values() if other.type == node.type and other.event == node.event
        ]
        after = self._after_event(node_id)
        return not any(other in after for other in same) and not any(
            node_id in self._after_event(other) for other in same
        )

    def _after_event(self, node_id: str) -> set[str]:
        """The nodes a context may reach after the wait at `node_id` received its event."""
        return self._reachable(
            [edge.target for edge in self.outgoing.get(node_id, []) if edge.branch == "event"]
        )

    def between(self, parallel_id: str, join_id: str) -> set[str]:
        """The nodes of a parallel node's branches, up to its join."""
        return self._reachable([edge.target for edge in self.outgoing.get(parallel_id, [])], stop=join_id)

    def _reachable(self, starts: list[str], stop: str | None = None) -> set[str]:
        """`starts` and every node reachable from them along edges, never entering `stop`."""
        seen: set[str] = set()
        stack = list(starts)
        while stack:
            current = stack.pop()
            if current in seen or current == stop:
                continue
            seen.add(current)
            stack.extend(edge.target for edge in self.outgoing.get(current, []))
        return seen
