"""What the engine's tests read of an execution's history on the local backend."""

from __future__ import annotations

from stepwell.testing.local import LocalStepwell


def event_types(local: LocalStepwell, execution_id: str) -> list[str]:
    return [event["EventType"] for event in local.history(execution_id)]
