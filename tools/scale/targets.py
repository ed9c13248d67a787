"""Issue 42's targets as loads on the recorded kinds."""

from __future__ import annotations

from scale.model import Load, Target
from scale.workflows import DAY, HOUR, MINUTE, YEAR

STARTS_PER_SECOND = 10_000
WAITING = 10_000_000
EVENTS_PER_SECOND = 100_000
TENANTS = 1_000
STORM_WAKE_UPS = 1_000_000
STORM_SECONDS = 60

# The waiting target's bands: kind -> the wait it stands for. The 1 s kind stands for the 1-minute band
# (both are SQS delays). Executions choose among the bands alike, so each band starts (and, in the steady
# state, wakes) the same number a second, r; by Little's law the waiting executions are r times the sum of
# the waits, so r = WAITING / sum, and a band holds r times its wait of them (the year's band nearly all).
WAIT_BANDS = {
    "wait-1s": MINUTE,
    "wait-1h": HOUR,
    "wait-1d": DAY,
    "wait-30d": 30 * DAY,
    "wait-1y": YEAR,
}


def targets() -> list[Target]:
    rate = WAITING / sum(WAIT_BANDS.values())
    return [
        Target(
            "starts",
            f"{STARTS_PER_SECOND:,} starts/s of one workflow (3 steps) in one domain",
            (Load("straight", STARTS_PER_SECOND),),
            "starts/s",
            STARTS_PER_SECOND,
        ),
        Target(
            "waiting",
            f"{WAITING:,} executions waiting, their waits a minute, an hour, a day, 30 days or a year alike",
            tuple(Load(kind, rate, waiting=rate * seconds) for kind, seconds in WAIT_BANDS.items()),
            "waiting",
            WAITING,
        ),
        Target(
            "events-1",
            f"{EVENTS_PER_SECOND:,} definitions events/s from one tenant",
            (Load("definitions", EVENTS_PER_SECOND / 2, tenants=1),),
            "events/s",
            EVENTS_PER_SECOND,
        ),
        Target(
            "events-1000",
            f"{EVENTS_PER_SECOND:,} definitions events/s from {TENANTS:,} tenants",
            (Load("definitions", EVENTS_PER_SECOND / 2, tenants=TENANTS),),
            "events/s",
            EVENTS_PER_SECOND,
        ),
        Target(
            "storm",
            f"{STORM_WAKE_UPS:,} one-day waits ending in the same minute",
            (Load("wait-1d", STORM_WAKE_UPS / STORM_SECONDS, phases=("wake",), waiting=STORM_WAKE_UPS),),
            "wake-ups/min",
            STORM_WAKE_UPS,
            burst=True,
        ),
    ]
