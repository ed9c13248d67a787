"""What the parent records while the run goes: the starts, the clock skips, the callbacks it sent, the
workers that died, the schedules it fired."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from chaos.settings import Settings


@dataclass
class Jump:
    """A skip of the virtual clock: from `start` to `end` (virtual epoch seconds)."""

    start: float
    end: float


@dataclass
class RunData:
    settings: Settings
    started: dict[str, str] = field(default_factory=dict)  # execution id -> workflow
    start_failures: list[str] = field(default_factory=list)
    # Definitions contexts: subject -> its context's execution id, once found; (when, subject) of the
    # `chaos.next` events still to send.
    journeys: dict[str, str | None] = field(default_factory=dict)
    next_events: list[tuple[float, str]] = field(default_factory=list)
    jumps: list[Jump] = field(default_factory=list)
    worker_exits: Counter[str] = field(default_factory=Counter)
    callbacks_sent: int = 0
    callbacks_unknown: list[str] = field(default_factory=list)
    callback_repeats_refused: int = 0
    callback_repeats_accepted: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    first_start: float = 0.0
    last_end: float = 0.0
    fired_schedules: int = 0
    reconciles: int = 0
    redriven: int = 0  # messages moved from the DLQ back to the work queue
