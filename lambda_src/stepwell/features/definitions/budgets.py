"""CPU budgets of a definition's runs, and the cost limits validation holds definitions to.

A run is one invocation of the interpreter for a context (its first, or a wake-up): it has
`DefinitionsRuntime.run_cpu_seconds` of CPU, and each expression it evaluates has
`DefinitionsRuntime.expression_cpu_seconds`. A run that goes over either fails its context with one
error naming the budget (checked between nodes and, every CHECK_EVERY steps, inside the evaluator).

CPU is measured per thread (time.thread_time) and summed over the run's threads: the SDK runs the handler
and each parallel branch on threads, in a worker process that may run other executions at the same time,
whose work time.process_time would charge to this run.

Validation (`stepwell.features.definitions.validation.parse_storable_definition`) estimates each expression's
worst-case work in bytes read (`stepwell.features.definitions.expressions.estimate_cost`, over the
largest event and
data a context can hold) and refuses a definition whose expression costs more than EXPRESSION_COST_LIMIT,
or whose expressions evaluated in runs cost more than DEFINITION_COST_LIMIT together. Measured here, the
slowest operations read about 40 ns per byte (`x in` a list of 65,000 short strings, the walk measuring a
list result), so the limits stay within the default budgets with room for a slower CPU.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

# The defaults, re-exported (10 s and 0.25 s; set by the worker's STEPWELL_DEFINITIONS_*_CPU_SECONDS, the
# module's definitions_*_cpu_seconds), are well inside the worker's 60 s default timeout (terraform
# `timeout`): several runs of a batch fit. stepwell.config holds them, as it cannot import this module.
from stepwell.config import DEFAULT_EXPRESSION_CPU_SECONDS as DEFAULT_EXPRESSION_CPU_SECONDS
from stepwell.config import DEFAULT_RUN_CPU_SECONDS as DEFAULT_RUN_CPU_SECONDS
from stepwell.features.definitions.expressions import Meter
from stepwell.features.definitions.ids import MAX_CONTEXT_DATA_BYTES, MAX_ID_LENGTH

# The largest event a context can receive (EventBridge's entry limit, 256 KiB), and its data's limit.
MAX_EVENT_BYTES = 256 * 1024
ROOT_BYTES = {
    "event": MAX_EVENT_BYTES,
    "data": MAX_CONTEXT_DATA_BYTES,
    "subject": MAX_ID_LENGTH + 2,
    "domain": MAX_ID_LENGTH + 2,
}
# In bytes read: 16 whole reads of the largest event per expression, 256 over a definition's expressions.
EXPRESSION_COST_LIMIT = 16 * MAX_EVENT_BYTES
DEFINITION_COST_LIMIT = 256 * MAX_EVENT_BYTES


class RunBudget:
    """The CPU budget of one run, over the threads it runs on (each marks its start with `enter`)."""

    def __init__(
        self,
        seconds: float = DEFAULT_RUN_CPU_SECONDS,
        expression_seconds: float = DEFAULT_EXPRESSION_CPU_SECONDS,
        clock: Callable[[], float] = time.thread_time,
    ) -> None:
        self.seconds = seconds
        self.expression_seconds = expression_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._spent = 0.0
        self._marks: dict[int, float] = {}

    def enter(self) -> None:
        """Count the current thread's CPU from now (a pool thread may have run other work before)."""
        with self._lock:
            self._marks[threading.get_ident()] = self._clock()

    def leave(self) -> None:
        """Charge the current thread's CPU and stop counting it."""
        self.spent()
        with self._lock:
            self._marks.pop(threading.get_ident(), None)

    def spent(self) -> float:
        """CPU seconds the run has taken, the current thread's up to now included."""
        now = self._clock()
        ident = threading.get_ident()
        with self._lock:
            mark = self._marks.get(ident)
            if mark is not None:
                self._spent += max(0.0, now - mark)
                self._marks[ident] = now
            return self._spent

    def exceeded(self) -> str | None:
        """Why the run must stop (None: it may go on)."""
        spent = self.spent()
        if spent <= self.seconds:
            return None
        return self.run_reason(spent)

    def run_reason(self, spent: float | None = None) -> str:
        took = f" ({spent:.2f} s)" if spent is not None else ""
        return f"the run took more than its CPU budget of {self.seconds:g} s per run{took}"

    def meter(self) -> Meter:
        """A Meter for one evaluation on the current thread: the per-expression budget, or what is left of
        the run's when less."""
        left = self.seconds - self.spent()
        if left < self.expression_seconds:
            return Meter(max(0.0, left), self.run_reason())
        return Meter(
            self.expression_seconds,
            f"the evaluation took more than its CPU budget of {self.expression_seconds:g} s per expression",
        )
