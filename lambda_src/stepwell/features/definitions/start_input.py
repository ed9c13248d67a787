"""What starts one execution of a definitions context: the interpreter's input (StartInput), read from the
payload the router or a continuation starts it with, and the event facts it carries on (depth, chain)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stepwell.features.definitions.continuation import Continuation
from stepwell.features.definitions.model import DefinitionError
from stepwell.features.definitions.store import ContextRecord


class DefinitionRuntimeError(DefinitionError):
    """A definition failed while running (an expression error, a join short of branches, ...)."""


def event_depth(event: Mapping[str, Any]) -> int:
    """An event payload's depth (0 when absent or not a whole number: an outside event)."""
    depth = event.get("depth", 0)
    return depth if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0 else 0


def event_chain(event: Mapping[str, Any]) -> str:
    """The outside event an event payload's chain began with: its "chain", else its own id."""
    chain = event.get("chain", event.get("id"))
    return chain if isinstance(chain, str) else ""


@dataclass(frozen=True)
class StartInput:
    domain: str
    workflow_id: str
    subject_id: str
    instance_id: str
    version: int
    definition: dict[str, Any]
    trigger: str
    event: dict[str, Any]
    execution_id: str
    # Where a continuation's walk resumes (stepwell.features.definitions.continuation); None: a first
    # execution, which walks from the trigger.
    continuation: Continuation | None = None

    @classmethod
    def parse(cls, payload: Any, execution_id: str) -> StartInput:
        if not isinstance(payload, Mapping):
            raise DefinitionRuntimeError(f"interpreter input must be an object, got {payload!r}")
        missing = [
            key
            for key in (
                "domain",
                "workflowId",
                "subjectId",
                "instanceId",
                "version",
                "definition",
                "trigger",
                "event",
            )
            if key not in payload
        ]
        if missing:
            raise DefinitionRuntimeError(f"interpreter input misses {missing}")
        event, carried = payload["event"], payload.get("continuation")
        return cls(
            domain=str(payload["domain"]),
            workflow_id=str(payload["workflowId"]),
            subject_id=str(payload["subjectId"]),
            instance_id=str(payload["instanceId"]),
            version=int(payload["version"]),
            definition=dict(payload["definition"]),
            trigger=str(payload["trigger"]),
            event=dict(event) if isinstance(event, Mapping) else {"data": event},
            execution_id=execution_id,
            continuation=None if carried is None else Continuation.parse(carried),
        )

    def fields(self) -> dict[str, Any]:
        """The input's fields a continuation repeats (its trigger, event and continuation are its own)."""
        return {
            "domain": self.domain,
            "workflowId": self.workflow_id,
            "subjectId": self.subject_id,
            "instanceId": self.instance_id,
            "version": self.version,
            "definition": self.definition,
            "trigger": self.trigger,
        }

    @property
    def count(self) -> int:
        """Which continuation of its context this execution is (0: the first execution)."""
        return self.continuation.count if self.continuation is not None else 0

    def record(self) -> ContextRecord:
        """The context item's keys (the store updates only the attributes it is asked to)."""
        return ContextRecord(
            domain=self.domain,
            workflow_id=self.workflow_id,
            subject_id=self.subject_id,
            instance_id=self.instance_id,
            version=self.version,
            execution_id=self.execution_id,
        )
