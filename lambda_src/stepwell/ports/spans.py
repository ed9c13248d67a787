"""The span recorder port: the worker's own spans (lease, load, run, checkpoint, release) as children of an
execution's trace (docs/reference/traces.md#exporting-traces).

A recorder starts spans and sends what ended at `flush` (the worker function flushes once per invocation,
a run outside one after itself). Recording never raises and never blocks on the network: a span is a few
values kept in memory until the flush, and a flush that cannot deliver drops the spans and says so in its
log (tracing never fails a run). `NoSpans` is the default: nothing recorded, `enabled` False, so the
worker skips even parsing the trace header.
The OTLP/HTTP adapter is stepwell.aws.otlp_spans.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

# A span's attribute values: what OTLP's AnyValue takes that the worker needs.
SpanValue = str | int | bool


class Span(Protocol):
    @property
    def span_id(self) -> str:
        """16 lower-case hex digits: the parent of this span's children."""
        ...

    def set(self, key: str, value: SpanValue) -> None:
        """An attribute, until the span ends (later calls win)."""
        ...

    def end(self, *, error: str | None = None) -> None:
        """End the span now, failed with `error` (a type, never a message that may hold data) when given;
        later calls change nothing."""
        ...


class SpanRecorder(Protocol):
    @property
    def enabled(self) -> bool:
        """Whether spans are recorded at all (False: callers need not build them)."""
        ...

    def start(
        self,
        name: str,
        *,
        trace_id: str,
        parent_span_id: str | None,
        attributes: Mapping[str, SpanValue] | None = None,
    ) -> Span:
        """A span of trace `trace_id` (32 hex digits), child of `parent_span_id` (16 hex, None: a root),
        started now."""
        ...

    def flush(self) -> None:
        """Send the spans that ended since the last flush; never raises."""
        ...


class _NoSpan:
    span_id = "0000000000000000"

    def set(self, key: str, value: SpanValue) -> None:
        return None

    def end(self, *, error: str | None = None) -> None:
        return None


_NO_SPAN = _NoSpan()


class NoSpans:
    """Records nothing (spans off, the default)."""

    enabled = False

    def start(
        self,
        name: str,
        *,
        trace_id: str,
        parent_span_id: str | None,
        attributes: Mapping[str, SpanValue] | None = None,
    ) -> Span:
        return _NO_SPAN

    def flush(self) -> None:
        return None


__all__ = ["NoSpans", "Span", "SpanRecorder", "SpanValue"]
