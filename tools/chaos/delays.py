"""Where a wake-up's due-to-run delay goes: each run of a message with a due time, split into its parts.

The worker processes write two files (chaos.worker): `receipts.jsonl`, a line per message they receive
(message id, queue, real time, SQS's receive count and sent time), and `wakeups.jsonl`, a line per wake-up
the engine handled (message id, execution, due time on the virtual clock, the real time its handling began,
the outcome). A run's delay is what the engine's WakeUpLag metric measures (due time to the start of its
handling, the clock skips left out), split into:

- scheduling: due time to the message's sending, when it was sent after its due time (a long wait's
  schedule fired by the run's stand-in for EventBridge Scheduler, a wake-up the engine sent late);
- in the queue: from its due time (or its sending, if later) to its first receive (a short wait's SQS delay
  ends at its due time; the injected extra delay of a copy, and the queue's backlog, fall here);
- redelivery: first receive to the receive that ran it (the visibility timeout after a worker was killed, or
  after its handling failed; an asynchronous invocation's retries and its trip to the work queue);
- in the batch: receive to the start of its handling (the messages of its batch handled before it);
- duplicate: a copy handled after another copy of the same wake-up had run (every message is sent twice, the
  second with its own extra delay): its whole delay, which is no late wake-up;
- other: what is left (clock readings taken at different moments; never negative).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chaos.checks import real_time
from chaos.record import Jump

# The outcomes after which the engine counts the wake-up's lag (stepwell.core.worker._RAN_THE_EXECUTION).
RAN_ACTIONS = frozenset({"ran", "invoked", "finished", "crashed"})
PARTS = ("scheduling", "in the queue", "redelivery", "in the batch", "duplicate", "other")


@dataclass(frozen=True)
class DelayParts:
    """One run's delay (real seconds) and its parts, in PARTS's order."""

    total: float
    parts: tuple[float, ...]

    def part(self, name: str) -> float:
        return self.parts[PARTS.index(name)]


def percentile(values: Sequence[float], share: float) -> float:
    """The value at `share` (from 0 to 1) of the way through `values` sorted (the nearest one); 0 for none."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be from 0 to 1, got {share}")
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[round(share * (len(ordered) - 1))]


def _key(record: Mapping[str, Any]) -> tuple[str, float]:
    return str(record["execution"]), float(record["due"])


def split_delays(
    wakeups: Iterable[Mapping[str, Any]], receipts: Iterable[Mapping[str, Any]], jumps: Sequence[Jump]
) -> list[DelayParts]:
    """Each wake-up run's delay and its parts (see the module's doc). A run whose message's receipts are
    missing (its line cut short by a kill) counts its receive as its first."""
    first_receive: dict[str, float] = {}
    sent_at: dict[str, float] = {}
    # A wake-up's asynchronous invocation, by wake-up: its first receive and its sending (one that reached
    # the work queue as a destination record runs from another message, whose redelivery began here).
    async_first: dict[tuple[str, float], float] = {}
    async_sent: dict[tuple[str, float], float] = {}
    for receipt in receipts:
        message = str(receipt["message"])
        received = float(receipt["received"])
        first_receive[message] = min(received, first_receive.get(message, received))
        sent = receipt.get("sent")
        if sent is not None:
            sent_at[message] = float(sent)
        if receipt.get("queue") == "async" and receipt.get("due") is not None:
            key = _key(receipt)
            async_first[key] = min(received, async_first.get(key, received))
            if sent is not None:
                async_sent[key] = min(float(sent), async_sent.get(key, float(sent)))
    runs = sorted(
        (record for record in wakeups if str(record.get("action")) in RAN_ACTIONS),
        key=lambda record: float(record["started"]),
    )
    seen: set[tuple[str, float]] = set()
    result = []
    for record in runs:
        key = _key(record)
        due = real_time(float(record["due"]), jumps)
        started = float(record["started"])
        total = max(0.0, started - due)
        if key in seen:
            result.append(DelayParts(total, _only("duplicate", total)))
            continue
        seen.add(key)
        message = str(record.get("message"))
        received = float(record["received"])
        first = min(first_receive.get(message, received), received)
        sent = sent_at.get(message)
        if record.get("destination") and key in async_first:
            first, sent = min(first, async_first[key]), async_sent.get(key, sent)
        scheduling = max(0.0, min(first, sent) - due) if sent is not None else 0.0
        queued = max(0.0, first - (due + scheduling))
        redelivery = max(0.0, received - max(first, due))
        batch = max(0.0, started - max(received, due))
        parts = [scheduling, queued, redelivery, batch, 0.0]
        # Parts that overlap the total's bounds are cut to it, in order; the rest is `other`.
        left = total
        for index, value in enumerate(parts):
            parts[index] = min(value, left)
            left -= parts[index]
        result.append(DelayParts(total, (*parts, max(0.0, left))))
    return result


def _only(name: str, value: float) -> tuple[float, ...]:
    return tuple(value if part == name else 0.0 for part in PARTS)


@dataclass(frozen=True)
class PartSummary:
    name: str
    p50: float
    p90: float
    p99: float
    tail_share: float  # of the summed delay of the runs at or above the p99 of the totals


def summarise(delays: Sequence[DelayParts]) -> list[PartSummary]:
    """p50/p90/p99 of each part, and its share of the slowest runs' delay (those at or above the p99)."""
    cut = percentile([delay.total for delay in delays], 0.99)
    tail = [delay for delay in delays if delay.total >= cut and delay.total > 0]
    tail_total = sum(delay.total for delay in tail)
    rows = []
    for name in PARTS:
        values = [delay.part(name) for delay in delays]
        tail_part = sum(delay.part(name) for delay in tail)
        rows.append(
            PartSummary(
                name,
                percentile(values, 0.5),
                percentile(values, 0.9),
                percentile(values, 0.99),
                tail_part / tail_total if tail_total else 0.0,
            )
        )
    return rows
