"""An execution's trace header: the X-Ray tracing header it carries from its start to every invocation.

Format (AWS X-Ray's tracing header): `Root=1-<8 hex: epoch seconds>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>`,
fields separated by `;`, in any order, other `key=value` fields (Lineage, Self) allowed. An execution's
header is made once at its start (`execution_trace_header`): the caller's Root and Sampled decision when
the start carries a header, else a fresh Root; the Parent is always a new id, the execution's
own, as Lambda gives an invocation a Parent of its own segment; a fresh trace has no Sampled field (left
to the function's sampler, see execution_trace_header). Every invocation of the execution gets
the same header (`_X_AMZN_TRACE_ID` and the invocation context's `trace_header`), so the spans of all its
invocations join one trace. A child of a chained invoke takes the Root and sampling of the header
the SDK's plugin propagates in the invoke's options (ChainedInvokeOptions.XAmznTraceId) with a Parent of its
own, else its parent's Root (AWS: "the child invocation inherits the parent durable execution's trace
header").

Bad input: `parse_trace_header` refuses a header over MAX_TRACE_HEADER_LENGTH (the API model's bound) or
not in that format, naming it and the format; the Lambda API's Invoke ignores such an X-Amzn-Trace-Id and
starts a fresh trace, as Lambda never refuses an invocation for its tracing header (docs/reference/traces.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from stepwell.errors import InvalidArgument

MAX_TRACE_HEADER_LENGTH = 8192  # the Lambda API model's XAmznTraceId
TRACE_ENVIRONMENT = "_X_AMZN_TRACE_ID"  # where Lambda's runtime puts an invocation's trace header
_ROOT = re.compile(r"1-[0-9a-f]{8}-[0-9a-f]{24}")
_PARENT = re.compile(r"[0-9a-f]{16}")
_SAMPLED = re.compile(r"[01?]")
_FIELD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}=[\x21-\x3a\x3c-\x7e]{0,512}")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_FORMAT = "Root=1-<8 hex digits>-<24 hex digits>[;Parent=<16 hex digits>][;Sampled=0|1]"


@dataclass(frozen=True)
class TraceHeader:
    """The fields of a tracing header that Stepwell keeps: the trace (Root), the span that caused this
    one (Parent), and the sampling decision (None: the caller left it undecided, '?')."""

    root: str
    parent: str | None = None
    sampled: bool | None = None

    def __str__(self) -> str:
        text = f"Root={self.root}"
        if self.parent is not None:
            text += f";Parent={self.parent}"
        if self.sampled is not None:
            text += f";Sampled={int(self.sampled)}"
        return text

    @property
    def trace_id(self) -> str:
        """The W3C / OpenTelemetry trace id (32 hex) of the Root: its epoch and its unique part."""
        return self.root[2:10] + self.root[11:]


def parse_trace_header(text: str) -> TraceHeader:
    """The header `text`, or InvalidArgument naming it and the format."""
    if len(text) > MAX_TRACE_HEADER_LENGTH:
        raise InvalidArgument(
            f"trace header of {len(text)} characters: at most {MAX_TRACE_HEADER_LENGTH} are allowed"
        )
    if not _PRINTABLE.fullmatch(text):
        raise InvalidArgument(
            f"invalid trace header {text[:200]!r}: printable ASCII characters only; expected {_FORMAT}"
        )
    fields: dict[str, str] = {}
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        if not _FIELD.fullmatch(part):
            raise InvalidArgument(
                f"invalid trace header {text[:200]!r}: field {part[:80]!r}; expected {_FORMAT}"
            )
        key, _, value = part.partition("=")
        fields.setdefault(key, value)
    root, parent, sampled = fields.get("Root"), fields.get("Parent"), fields.get("Sampled")
    if root is None or not _ROOT.fullmatch(root):
        raise InvalidArgument(f"invalid trace header {text[:200]!r}: its Root; expected {_FORMAT}")
    if parent is not None and not _PARENT.fullmatch(parent):
        raise InvalidArgument(f"invalid trace header {text[:200]!r}: its Parent; expected {_FORMAT}")
    if sampled is not None and not _SAMPLED.fullmatch(sampled):
        raise InvalidArgument(f"invalid trace header {text[:200]!r}: its Sampled; expected {_FORMAT}")
    return TraceHeader(root, parent, None if sampled in (None, "?") else sampled == "1")


def new_root(now: float) -> str:
    """A fresh X-Ray trace id: version 1, the epoch second `now` and 96 random bits."""
    return f"1-{int(now) & 0xFFFFFFFF:08x}-{secrets.token_hex(12)}"


def execution_trace_header(caller: str | None, now: float) -> str:
    """The trace header an execution starting at `now` carries: the caller's trace (`caller`, checked
    by parse_trace_header) and sampling decision with a Parent of its own, else a fresh trace whose
    sampling is left to the function (no Sampled field: the SDK's OpenTelemetry plugin drops every span
    of a trace marked Sampled=0, and samples by its own sampler when the field is absent)."""
    if caller is None:
        return str(TraceHeader(new_root(now), secrets.token_hex(8)))
    given = parse_trace_header(caller)
    return str(TraceHeader(given.root, secrets.token_hex(8), given.sampled))


def caller_trace_header(text: str | None) -> str | None:
    """A caller's X-Amzn-Trace-Id as Lambda's Invoke takes it: kept when valid, else None (a fresh
    trace: Lambda never refuses an invocation for its tracing header)."""
    if text is None:
        return None
    try:
        parse_trace_header(text)
    except InvalidArgument:
        return None
    return text


# The worker may run handlers on several threads of one process (the local runtime, tests) while the
# environment is the process's: the variable holds the header of the run that began last among those in
# flight, and the value from before the first once none is; the invocation context carries each run's own.
_ENVIRONMENT_LOCK = threading.Lock()
_ACTIVE: list[tuple[object, str]] = []  # (run token, header) of the runs in flight, oldest first
_BEFORE: list[str | None] = [None]  # the variable's value before the first of the runs in flight


@contextlib.contextmanager
def trace_environment(header: str | None) -> Iterator[None]:
    """`_X_AMZN_TRACE_ID` set to `header` around an in-worker handler run (as Lambda's runtime sets it
    per invocation), restored after; nothing changes for None (an execution from before traces)."""
    if header is None:
        yield
        return
    token = object()
    with _ENVIRONMENT_LOCK:
        if not _ACTIVE:
            _BEFORE[0] = os.environ.get(TRACE_ENVIRONMENT)
        _ACTIVE.append((token, header))
        os.environ[TRACE_ENVIRONMENT] = header
    try:
        yield
    finally:
        with _ENVIRONMENT_LOCK:
            _ACTIVE[:] = [entry for entry in _ACTIVE if entry[0] is not token]
            current = _ACTIVE[-1][1] if _ACTIVE else _BEFORE[0]
            if current is None:
                os.environ.pop(TRACE_ENVIRONMENT, None)
            else:
                os.environ[TRACE_ENVIRONMENT] = current


def trace_id_of(header: object) -> str | None:
    """The OpenTelemetry trace id (32 hex) of a stored header, to look the trace up; None when there is
    none (an execution from before traces) or it does not parse."""
    if not isinstance(header, str):
        return None
    try:
        return parse_trace_header(header).trace_id
    except InvalidArgument:
        return None
