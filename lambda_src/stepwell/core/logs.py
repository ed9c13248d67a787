"""Structured logs: every line the engine writes is one JSON object.

    {"level": "INFO", "time": "2026-01-02T03:04:05.678Z", "logger": "stepwell.wiring.entry", "message": "...",
     "executionId": ..., "invocationId": ..., "workflow": ..., <fields passed with `extra=`>}

The three context fields come from `log_context` (a contextvar, so concurrent handlers in one process
keep theirs apart) and are null where no execution or invocation is being handled. The engine's log calls
stay plain `logger.info(...)`: the formatter adds the context. What the lines may say (identifiers, never
payloads) is docs/architecture.md's "Logs".
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType

from stepwell.model import ExecutionId

CONTEXT_FIELDS = ("executionId", "invocationId", "workflow")
ENGINE_LOGGER = "stepwell"

_context: ContextVar[Mapping[str, str]] = ContextVar("stepwell_log_context", default=MappingProxyType({}))
# The context bound last in this process, for threads that did not inherit one: the SDK runs a handler's
# steps and checkpoints in threads of its own, and a Lambda process handles one invocation at a time.
_process_context: Mapping[str, str] = MappingProxyType({})
# The attributes every LogRecord has: anything else on a record came from `extra=` and is logged as a field.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def current_context() -> dict[str, str]:
    """The context fields bound now (only those that are set)."""
    return dict(_context.get() or _process_context)


def workflow_of(execution_id: str) -> str | None:
    """The workflow named in an execution id, or None for a string that is not one."""
    try:
        return ExecutionId.parse(execution_id).workflow_id
    except ValueError:
        return None


@contextmanager
def log_context(
    execution_id: str | None = None, invocation_id: str | None = None, keep_invocation: bool = False
) -> Iterator[None]:
    """Bind the execution (and its workflow) and the invocation to the lines written inside. None leaves a
    field as it is; `keep_invocation` keeps an invocation id bound outside (Lambda's request id wins over
    the engine's own)."""
    global _process_context
    fields = current_context()
    if execution_id is not None:
        fields["executionId"] = execution_id
        workflow = workflow_of(execution_id)
        if workflow is not None:
            fields["workflow"] = workflow
    if invocation_id is not None and not (keep_invocation and "invocationId" in fields):
        fields["invocationId"] = invocation_id
    token = _context.set(fields)
    outer, _process_context = _process_context, MappingProxyType(fields)
    try:
        yield
    finally:
        _context.reset(token)
        _process_context = outer


class JsonFormatter(logging.Formatter):
    """One JSON object per record: level, time (UTC, milliseconds), logger, message, the context fields,
    the record's `extra=` fields, and for an exception its type and traceback."""

    def format(self, record: logging.LogRecord) -> str:
        context = current_context()
        line: dict[str, object] = {
            "level": record.levelname,
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
            "logger": record.name,
            "message": record.getMessage(),
            **{name: context.get(name) for name in CONTEXT_FIELDS},
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in line:
                line[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            # The type and where, not the exception's text: it may quote a payload.
            line["errorType"] = record.exc_info[0].__name__
            line["stackTrace"] = "".join(traceback.format_tb(record.exc_info[2]))
        return json.dumps(line, default=str, ensure_ascii=False)


def install_json_logging(level: str) -> None:
    """The worker's logging: the engine's lines (logger "stepwell") from `level` up, and every line of the
    process as JSON. Lambda's runtime has a handler on the root logger (it ships the lines to CloudWatch
    Logs): it gets the JSON formatter; without one (a local runtime), a handler on stdout is added. The
    handlers get `level` too, so workflow code that tunes the handlers it finds at import (to quiet them)
    leaves these alone. Idempotent."""
    logging.getLogger(ENGINE_LOGGER).setLevel(level)
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stdout))
    for handler in root.handlers:
        handler.setFormatter(JsonFormatter())
        handler.setLevel(level)
