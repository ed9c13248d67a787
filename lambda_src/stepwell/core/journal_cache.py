"""A per-process cache of folded journals, so a warm worker reads only the log items written since it last
ran an execution (docs/engine.md, Storage).

An entry is the fold of an execution's batches 0..k exactly as a fresh load gives it (`FoldedLog`), with
the last of those batches as stored: the next load reads from that batch on, checks it is unchanged and
folds the rest. The log is append-only and every append is conditional on its seq (the fence), so a
prefix once folded stays true whoever writes after it.

A journal is never shared: `take` removes the entry, and the worker's run works on a copy (`open`); when
the run ends (`close`) the batches it wrote are folded into the entry, which may go back. The worker
changes its own journal in ways a fold of the written batches does not repeat (timestamps at full
precision, counters that only a load advances), so the entry kept is that fold, never the worker's
journal.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stepwell.core.journal import Journal
from stepwell.errors import InvalidArgument
from stepwell.model import Batch

MAX_CACHE_BYTES = 32 * 1024 * 1024


def default_max_bytes(memory_mb: str | None = None) -> int:
    """32 MB of batch text, or a sixteenth of the Lambda function's memory when that is less (about 10 MB
    in memory on a 128 MB function), so the cache never crowds out the handler."""
    text = memory_mb if memory_mb is not None else os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
    try:
        memory = int(text) * 1024 * 1024
    except ValueError:
        return MAX_CACHE_BYTES
    return max(1024 * 1024, min(MAX_CACHE_BYTES, memory // 16))


@dataclass(frozen=True)
class JournalCacheOptions:
    """`enabled`: keep folded journals at all; at most `max_journals` of them and about `max_bytes` of
    stored batch bodies folded into them, the least recently used going first."""

    enabled: bool = True
    max_journals: int = 1000
    # Folded, a journal takes about 1.3 times its batch text in memory: some 40 MB, under a tenth of the
    # worker's default 512 MB (a smaller function gets less: default_max_bytes).
    max_bytes: int = field(default_factory=lambda: default_max_bytes())

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise InvalidArgument(f"journal cache option enabled must be true or false, got {self.enabled!r}")
        for name in ("max_journals", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(f"journal cache option {name} must be an integer >= 1, got {value!r}")


@dataclass
class FoldedLog:
    """The fold of an execution's batches 0..journal.next_seq - 1 and what a later load checks it by."""

    journal: Journal
    # The last batch folded, as the store holds it (None: none yet). A load that does not find it
    # unchanged (the execution's items expired and it was created again) folds the whole log instead.
    last_batch: Batch | None = None
    # Approximate memory: the length of the stored batch bodies folded in.
    size: int = 0


@dataclass
class OpenRun:
    """A worker's run of an execution: the journal it works on, the fold it was copied from and the
    batches it wrote since (as stored, with their body text), folded in only if the fold is kept."""

    live: Journal
    folded: FoldedLog
    written: list[tuple[Batch, str]] = field(default_factory=list)


# How copy_journal copies the fields that grow with the log: a new container of the same members, which
# neither journal changes in place (operations are frozen SDK dataclasses, and the journal replaces a
# private state, never changes it: Journal._set_meta), timers are tuples and ids strings.
_SHALLOW_COPIES: dict[str, Callable[[Any], Any]] = {
    "operations": dict.copy,
    "meta": dict.copy,
    "absorbed_input_ids": set.copy,
    "_timers": list.copy,
    "_open": dict.copy,
    "_dirty": dict.copy,
}


def copy_journal(journal: Journal) -> Journal:
    """A journal that shares nothing mutable with `journal`, made in time that hardly grows with the log:
    the containers that grow with it are copied one level deep (_SHALLOW_COPIES: their members are never
    changed in place), the rest deeply (a run's unflushed changes, the log's expiry, flags); the engine's
    describe_invoke, bound to a record, is shared."""
    values: dict[str, Any] = {}
    for item in dataclasses.fields(journal):
        value = getattr(journal, item.name)
        shallow = _SHALLOW_COPIES.get(item.name)
        if shallow is not None:
            values[item.name] = shallow(value)
        elif item.name == "describe_invoke":
            values[item.name] = value
        else:
            values[item.name] = copy.deepcopy(value)
    copied = copy.copy(journal)  # every field is replaced below: no __init__, which would index again
    copied.__dict__.update(values)
    return copied


class JournalCache:
    """Thread-safe: the worker Lambda runs one invocation at a time, but the local runtime and tests run
    workers on threads."""

    def __init__(self, options: JournalCacheOptions | None = None) -> None:
        self.options = options or JournalCacheOptions()
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, FoldedLog] = OrderedDict()
        self._bytes = 0
        # The runs under way, by the identity of the journal each works on.
        self._open: dict[int, OpenRun] = {}
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def enabled(self) -> bool:
        return self.options.enabled

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def size(self) -> int:
        """Approximate bytes held (see FoldedLog.size)."""
        with self._lock:
            return self._bytes

    def take(self, execution_id: str) -> FoldedLog | None:
        """The execution's entry, removed from the cache: the caller owns it."""
        with self._lock:
            entry = self._entries.pop(execution_id, None)
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
            self._bytes -= entry.size
            return entry

    def put(self, execution_id: str, entry: FoldedLog) -> None:
        """Keep `entry` (replacing any), then evict the least recently used beyond the bounds. One larger
        than max_bytes on its own is not kept."""
        if not self.enabled or entry.last_batch is None:
            return
        with self._lock:
            previous = self._entries.pop(execution_id, None)
            if previous is not None:
                self._bytes -= previous.size
            if entry.size > self.options.max_bytes:
                return
            self._entries[execution_id] = entry
            self._bytes += entry.size
            while len(self._entries) > self.options.max_journals or self._bytes > self.options.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size
                self.evictions += 1

    def discard(self, execution_id: str) -> None:
        with self._lock:
            entry = self._entries.pop(execution_id, None)
            if entry is not None:
                self._bytes -= entry.size

    # --- a worker's run ---

    def open(self, live: Journal, folded: FoldedLog) -> None:
        """`live` is the journal a run works on (a copy of `folded.journal`), until `close`."""
        with self._lock:
            self._open[id(live)] = OpenRun(live, folded)

    def written(self, live: Journal, batch: Batch, text: str) -> None:
        """Note a batch the run of `live` wrote (nothing when no run opened it)."""
        with self._lock:
            run = self._open.get(id(live))
            if run is not None and run.live is live:
                run.written.append((batch, text))

    def close(self, live: Journal) -> OpenRun | None:
        """End the run of `live`: its fold and what it wrote, for the caller to fold and `put`."""
        with self._lock:
            run = self._open.pop(id(live), None)
        return run if run is not None and run.live is live else None
