"""When an execution's log batches expire (the operations table's TTL), kept cheap and never early.

Every batch holds results, inputs and errors that must go a retention period after the execution ends,
and must stay while it runs. Giving each batch its expiry only at the end costs a write per batch on
every execution. Instead a batch is written with an expiry a horizon past the retention period
(`written at + retention + LOG_HORIZON_SECONDS`), and the end rewrites nothing when the log's earliest
expiry still lies a retention period after it: an execution that ends within the horizon of its first
batch pays no write for its log's expiry, and its log is kept at most the horizon past the retention.

Before the execution suspends, its next run must still find the whole log, with a margin to spare: the
retention period, and at least the longest an SQS message lives (a wake-up's message waiting in the DLQ
for a redrive, say), since every run of a running execution comes from one. When its next wake-up comes
later than that allows, the log is kept instead: every batch loses its expiry (one write each), later
batches are written without one, and the end gives them all theirs (the path every log took before). A
wait with no wake-up (a callback without a timeout) first gets one at the latest safe moment, so one
answered sooner costs nothing. A run that fails (an error the worker cannot handle, a forward to a code
version that is gone) keeps the log too: its execution's next run waits for a retry, a redrive or an
operator, whenever they come. A deployment whose retention is shorter than the margin (12 days) writes
no expiry at all and pays as before.
"""

from __future__ import annotations

from dataclasses import dataclass

# How far past the retention period a batch's expiry is set as it is written: the longest an execution
# runs (from its first batch) without its log costing a write to expire, and the most its log may be
# kept past the retention period. Two days: a day-long wait or callback deadline (the commonest long
# one) fits, and it is about DynamoDB's own delay in deleting expired items.
LOG_HORIZON_SECONDS = 2 * 86_400
# How long an execution's own item outlives its retention period: past the latest expiry any other item of
# the execution is given (its log's, at most the horizon past the retention) by five days more, because
# DynamoDB's TTL deletes expired items lazily and in no set order. The name stays taken while the item is
# there (a start under it is refused), so a new execution under the name does not meet the old one's log
# batches or coordination record, which share its id (AWS Step Functions keeps a name 90 days).
NAME_HOLD_SECONDS = LOG_HORIZON_SECONDS + 5 * 86_400
# SQS's longest message retention (14 days): no message of a running execution, in the work queue or the
# DLQ, outlives the margin its log keeps past the run the message is for.
MESSAGE_LIFETIME_SECONDS = 14 * 86_400
# A run this close to the last safe moment decides there (the wake-up armed for it may come a second
# early: stepwell.aws.timers.EARLY_TOLERANCE_SECONDS).
LOG_DECISION_SLACK_SECONDS = 60


@dataclass
class LogExpiry:
    """What the batches of one execution's log (as read and written) tell of their expiry."""

    # The earliest expiry among the log's batches (None: no batch has one).
    earliest: float | None = None
    # Some batch has no expiry: the log is kept until the execution ends (a log written before batches
    # got one at all, or one kept for a long wait).
    kept: bool = False
    # This run made the log kept: a fold cached before it no longer tells the batches' expiry.
    changed: bool = False

    def note(self, expires_at: float | None) -> None:
        """A batch of the log, read or written, expires at `expires_at` (None: it has no expiry)."""
        if expires_at is None:
            self.kept = True
        elif self.earliest is None or expires_at < self.earliest:
            self.earliest = expires_at

    def expiry_for(self, now: float, retention: float) -> float | None:
        """The expiry of a batch written now (None: none, while the log is kept, and always under a
        retention period too short for it: a batch must outlast the message of the run that wrote it,
        which a run that dies before it suspends leaves to SQS and the DLQ)."""
        if self.kept or retention + LOG_HORIZON_SECONDS < MESSAGE_LIFETIME_SECONDS:
            return None
        return now + retention + LOG_HORIZON_SECONDS

    def safe_until(self, retention: float) -> float | None:
        """The latest time the execution's next run may come and still leave its log the retention period
        or a message's lifetime, whichever is longer (None: no batch expires before the end)."""
        return None if self.earliest is None else self.earliest - max(retention, MESSAGE_LIFETIME_SECONDS)

    def lasts_past(self, ended_at: float, retention: float) -> bool:
        """Whether every batch already expires at least a retention period after `ended_at`, so that the
        end gives none of them a new expiry (only a log no batch of which is kept, nor expires sooner)."""
        # In whole seconds, as an expiry is stored (the table's TTL attribute is an integer).
        return not self.kept and (self.earliest is None or self.earliest >= int(ended_at) + retention)

    def made_kept(self) -> None:
        """Every batch lost its expiry (ExecutionStore.keep_log)."""
        self.earliest = None
        self.kept = True
        self.changed = True
