"""Status-change events (stepwell.core.status_events) put on the deployment's EventBridge bus."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stepwell.core.status_events import STATUS_EVENT_DETAIL_TYPE, STATUS_EVENT_SOURCE, StatusEventNotPut

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient


class EventBridgeStatusEvents:
    """StatusEvents on an EventBridge bus: one PutEvents per announcement (at most two entries)."""

    def __init__(self, events: EventBridgeClient, event_bus_name: str) -> None:
        self._events = events
        self._bus = event_bus_name

    def publish(self, details: Sequence[Mapping[str, Any]]) -> None:
        entries: list[Any] = [
            {
                "EventBusName": self._bus,
                "Source": STATUS_EVENT_SOURCE,
                "DetailType": STATUS_EVENT_DETAIL_TYPE,
                "Detail": json.dumps(dict(detail)),
            }
            for detail in details
        ]
        response = self._events.put_events(Entries=entries)
        if response.get("FailedEntryCount"):
            refused = [
                f"{detail['status']} of {detail['executionId']}: {entry.get('ErrorCode')}"
                for detail, entry in zip(details, response["Entries"], strict=False)
                if "EventId" not in entry
            ]
            raise StatusEventNotPut(f"bus {self._bus!r} refused status-change events: {'; '.join(refused)}")
