"""An event as the router reads it (ExtractedEvent: domain, subject id, name, data, event id), and the
extractor that maps a raw event to one: paths into the event (PathExtractor; JSON in
STEPWELL_EVENT_EXTRACTOR, e.g. {"domain": "detail.domain", "subject": "detail.subjectId", "name":
"detail-type", "data": "detail.data", "id": "id"}; a path is dot-separated keys, a number indexes a list, a
leading "$." is allowed, {"const": value} gives a fixed value) or a Python callable registered with
`register_extractor` in the user's workflow code (it returns an ExtractedEvent, a dict with those keys, or
None to reject the event). `normalize_event` checks what an extractor returned."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stepwell.features.definitions.ids import InvalidId, check_id
from stepwell.model import lone_surrogate_at

EXTRACTOR_ENV = "STEPWELL_EVENT_EXTRACTOR"
DEFAULT_PATHS: dict[str, Any] = {
    "domain": "detail.domain",
    "subject": "detail.subjectId",
    "name": "detail-type",
    "data": "detail.data",
    "id": "id",
}
_FIELDS = ("domain", "subject", "name", "data", "id")


class ExtractorError(ValueError):
    pass


@dataclass(frozen=True)
class ExtractedEvent:
    domain: str
    subject_id: str
    name: str
    data: Any
    event_id: str
    # How many definitions deep and the outside event the chain began with (the router's _event_chain);
    # the events a context it starts or resumes emits are one deeper, in the same chain.
    depth: int = 0
    chain: str = ""

    def payload(self) -> dict[str, Any]:
        """What a context gets of the event (its trigger's `event`, a callback's result)."""
        payload = {"id": self.event_id, "name": self.name, "data": self.data}
        return {**payload, "depth": self.depth, "chain": self.chain} if self.depth else payload


Extractor = Callable[[Mapping[str, Any]], "ExtractedEvent | Mapping[str, Any] | None"]


def _walk(event: Any, path: str) -> Any:
    text = path[2:] if path.startswith("$.") else path
    if text in ("", "$"):
        return event
    value = event
    for part in text.split("."):
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


class PathExtractor:
    """Extraction by paths into the event (defaults: EventBridge's envelope with the ids in `detail`)."""

    def __init__(self, paths: Mapping[str, Any] | None = None) -> None:
        merged = dict(DEFAULT_PATHS)
        for key, value in (paths or {}).items():
            if key not in _FIELDS:
                raise ExtractorError(f"unknown extractor field {key!r} (allowed: {', '.join(_FIELDS)})")
            if not (isinstance(value, str) or (isinstance(value, Mapping) and set(value) == {"const"})):
                raise ExtractorError(
                    f"extractor field {key!r}: {value!r} is neither a path string nor {{'const': value}}"
                )
            merged[key] = value
        self.paths = merged

    @classmethod
    def from_env(cls) -> PathExtractor:
        text = os.environ.get(EXTRACTOR_ENV, "").strip()
        if not text:
            return cls()
        try:
            paths = json.loads(text)
        except json.JSONDecodeError as error:
            raise ExtractorError(f"{EXTRACTOR_ENV} is not JSON ({error}): {text[:200]!r}") from error
        if not isinstance(paths, Mapping):
            raise ExtractorError(f"{EXTRACTOR_ENV} must be a JSON object, got {text[:200]!r}")
        return cls(paths)

    def _value(self, event: Mapping[str, Any], key: str) -> Any:
        spec = self.paths[key]
        if isinstance(spec, Mapping):
            return spec["const"]
        return _walk(event, spec)

    def __call__(self, event: Mapping[str, Any]) -> ExtractedEvent | Mapping[str, Any] | None:
        return {key: self._value(event, key) for key in _FIELDS}


_extractor_lock = threading.Lock()
_registered_extractor: Extractor | None = None


def register_extractor(fn: Extractor) -> Extractor:
    """Use `fn` instead of the path extractor (call from the user's workflow code)."""
    global _registered_extractor
    if not callable(fn):
        raise TypeError(f"an extractor must be callable, got {type(fn).__name__}")
    with _extractor_lock:
        _registered_extractor = fn
    return fn


def unregister_extractor() -> None:
    global _registered_extractor
    with _extractor_lock:
        _registered_extractor = None


def default_extractor(paths: Mapping[str, Any] | None = None) -> Extractor:
    """The registered callable, else paths (`paths` when given, else STEPWELL_EVENT_EXTRACTOR)."""
    with _extractor_lock:
        registered = _registered_extractor
    if registered is not None:
        return registered
    return PathExtractor(paths) if paths else PathExtractor.from_env()


def normalize_event(
    raw: ExtractedEvent | Mapping[str, Any] | None, fallback_id: str, domain: str | None = None
) -> ExtractedEvent:
    """The extractor's answer checked; `domain` (chosen by the operator) fills a missing domain."""
    if raw is None:
        raise ExtractorError("the extractor returned nothing for this event")
    if isinstance(raw, ExtractedEvent):
        values: dict[str, Any] = {
            "domain": raw.domain,
            "subject": raw.subject_id,
            "name": raw.name,
            "data": raw.data,
            "id": raw.event_id,
        }
    elif isinstance(raw, Mapping):
        values = dict(raw)
        if "subjectId" in values and "subject" not in values:
            values["subject"] = values["subjectId"]
    else:
        raise ExtractorError(
            f"the extractor returned {type(raw).__name__}; expected ExtractedEvent, a dict or None"
        )
    if domain is not None and values.get("domain") in (None, ""):
        values["domain"] = domain
    for key in ("domain", "subject", "name"):
        value = values.get(key)
        if value is None or value == "":
            raise ExtractorError(f"the event maps to no {key}")
        if not isinstance(value, str):
            # The type only: the value is the event's data, and this reason is logged.
            raise ExtractorError(f"the event's {key} must be a string, got {type(value).__name__}")
    try:
        check_id("domain", values["domain"])
        check_id("subject id", values["subject"])
    except InvalidId as error:
        raise ExtractorError(str(error)) from None
    event_id = values.get("id")
    if event_id is None or event_id == "":
        event_id = fallback_id
    for key, text in (("name", values["name"]), ("id", str(event_id))):
        at = lone_surrogate_at(text)
        if at is not None:  # JSON's "\ud800": no store or digest takes it
            raise ExtractorError(
                f"the event's {key} holds a lone surrogate at character {at}; it must be UTF-8 text"
            )
    return ExtractedEvent(
        domain=values["domain"],
        subject_id=values["subject"],
        name=values["name"],
        data=values.get("data"),
        event_id=str(event_id),
    )
