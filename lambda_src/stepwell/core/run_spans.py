"""The worker's spans of one run of an execution (docs/reference/traces.md#exporting-traces).

A run is one span, `stepwell.worker`, in the execution's trace (the trace id of its header's Root), child
of the header's Parent (the execution's own span id: where the SDK's plugin hangs its spans too); its
phases are its children: `stepwell.lease`, `stepwell.load`, `stepwell.run` (the handler's invocation),
`stepwell.release`, and `stepwell.checkpoint` (each written checkpoint) under `stepwell.run`. An execution
without a header (from before traces) or a recorder that is off gets `NO_TRACE`, which records nothing.

The run in flight on this thread is in a context variable (`current_trace`), so the worker's deeper steps
need no extra parameter; the SDK checkpoints on threads of its own, so the service client is handed its
`RunTrace` instead.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from stepwell.core.tracing import parse_trace_header
from stepwell.errors import InvalidArgument
from stepwell.ports.spans import NoSpans, Span, SpanRecorder, SpanValue

WORKER_SPAN = "stepwell.worker"
LEASE_SPAN = "stepwell.lease"
LOAD_SPAN = "stepwell.load"
RUN_SPAN = "stepwell.run"
CHECKPOINT_SPAN = "stepwell.checkpoint"
RELEASE_SPAN = "stepwell.release"


class RunTrace:
    """Spans under one parent of one trace (a run's, or its handler run's for checkpoints)."""

    def __init__(self, recorder: SpanRecorder, trace_id: str | None, parent: Span | None) -> None:
        self._recorder = recorder
        self._trace_id = trace_id
        self._parent = parent

    @classmethod
    def begin(
        cls, recorder: SpanRecorder, header: str | None, *, execution_id: str, workflow: str
    ) -> RunTrace:
        """The run's trace with its `stepwell.worker` span started, or NO_TRACE."""
        if not recorder.enabled or header is None:
            return NO_TRACE
        try:
            parsed = parse_trace_header(header)
        except InvalidArgument:
            return NO_TRACE  # a stored header is checked at the start; never fail a run over one
        span = recorder.start(
            WORKER_SPAN,
            trace_id=parsed.trace_id,
            parent_span_id=parsed.parent,
            attributes={"stepwell.execution_id": execution_id, "stepwell.workflow": workflow},
        )
        return cls(recorder, parsed.trace_id, span)

    @property
    def recording(self) -> bool:
        return self._trace_id is not None

    def open(self, name: str, **attributes: SpanValue) -> Span | None:
        """A child span started now (None when not recording); the caller ends it."""
        if self._trace_id is None or self._parent is None:
            return None
        return self._recorder.start(
            name, trace_id=self._trace_id, parent_span_id=self._parent.span_id, attributes=attributes
        )

    @contextlib.contextmanager
    def phase(self, name: str, **attributes: SpanValue) -> Iterator[Span | None]:
        """A child span around a block; an exception ends it failed with its type, and goes on."""
        span = self.open(name, **attributes)
        if span is None:
            yield None
            return
        try:
            yield span
        except BaseException as error:
            span.end(error=type(error).__name__)
            raise
        span.end()

    def under(self, span: Span | None) -> RunTrace:
        """The spans whose parent is `span` (one this trace opened)."""
        if span is None or self._trace_id is None:
            return NO_TRACE
        return RunTrace(self._recorder, self._trace_id, span)

    def end(self, outcome: str | None, *, error: str | None = None, flush: bool = True) -> None:
        """End the run's span with the run's outcome, and send the run's spans (unless `flush` is False:
        the caller sends them later, with others)."""
        if self._parent is None:
            return
        if outcome is not None:
            self._parent.set("stepwell.outcome", outcome)
        self._parent.end(error=error)
        if flush:
            self._recorder.flush()


NO_TRACE = RunTrace(NoSpans(), None, None)

# The run in flight on this thread (Worker._run sets it): what its phases are children of.
current_trace: contextvars.ContextVar[RunTrace] = contextvars.ContextVar(
    "stepwell_run_trace", default=NO_TRACE
)
