"""The operations the SDK records for itself, and a history with them folded into their parent.

`context.wait_for_callback(submitter, name="approval")` runs a child context (SubType WaitForCallback, named
"approval") holding two operations of the SDK's own making (aws_durable_execution_sdk_python's
wait_for_callback_handler): a callback named "approval create callback id" and a step named "approval
submitter" that runs the submitter (without a name: "create callback id" and "submitter"). The user asked
for one thing, a wait for a callback: the console's timeline and `stepwell history` show the context alone
unless asked for everything (the text keeps the callback's events, under the context's name). Only those
two names count, so a context that merely claims the subtype (ChildConfig(sub_type="WaitForCallback"))
keeps every operation of its own in view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The child context's subtype, and what the SDK names its operations inside (after the context's name).
WAIT_FOR_CALLBACK = "WaitForCallback"
_INTERNAL_SUFFIXES = {"Callback": "create callback id", "Step": "submitter"}
# Kept in the text, as the wait_for_callback's: the callback's events (its id, which an operator answers,
# and whether it succeeded, failed or timed out).
_KEPT_KIND = "Callback"


def _kind(event_type: str) -> str:
    """The kind of operation an event type is about: Callback of CallbackStarted, Step of StepFailed; ""
    for other events."""
    for kind in _INTERNAL_SUFFIXES:
        if event_type.startswith(kind):
            return kind
    return ""


def internal_operations(events: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """{operation id: its parent's id} of every operation the SDK made inside a wait_for_callback."""
    events = list(events)
    contexts = {
        str(event["Id"]): str(event.get("Name") or "")
        for event in events
        if event.get("Id")
        and event.get("SubType") == WAIT_FOR_CALLBACK
        and str(event.get("EventType", "")).startswith("Context")
    }
    internal: dict[str, str] = {}
    for event in events:
        parent_id, operation_id = event.get("ParentId"), event.get("Id")
        if not operation_id or parent_id not in contexts:
            continue
        suffix = _INTERNAL_SUFFIXES.get(_kind(str(event.get("EventType", ""))))
        parent_name = contexts[str(parent_id)]
        if suffix is not None and event.get("Name") == (f"{parent_name} {suffix}" if parent_name else suffix):
            internal[str(operation_id)] = str(parent_id)
    return internal


def fold_internal(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events to show as text: without the submitter steps' events, and with each callback's events
    shown as its wait_for_callback's (its name, or its id when it has none, as the wait_for_callback's own
    events are): the callback id an operator answers and the callback's outcome stay in view."""
    copies = [dict(event) for event in events]
    internal = internal_operations(copies)
    names = {str(event["Id"]): event.get("Name") for event in copies if event.get("Id") in internal.values()}
    folded: list[dict[str, Any]] = []
    for event in copies:
        parent_id = internal.get(str(event.get("Id")))
        if parent_id is None:
            folded.append(event)
        elif _kind(str(event.get("EventType", ""))) == _KEPT_KIND:
            shown = {key: value for key, value in event.items() if key != "Name"}
            name = names.get(parent_id)
            folded.append({**shown, "Name": name} if name else {**shown, "Id": parent_id})
    return folded
