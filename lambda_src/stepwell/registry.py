"""Workflow registration: names map to `@durable_execution` handlers.

User modules register their handlers at import (`register(name, handler)` or `@workflow(name)`); the worker
imports the modules listed in STEPWELL_WORKFLOW_MODULES at start.
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from stepwell.errors import DuplicateWorkflow, InvalidWorkflowName, WorkflowNotFound

Handler = Callable[[Any, Any], Any]

WORKFLOW_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
WORKFLOW_NAME_RULE = "1-64 characters: a letter, then letters, digits, '_', '.' or '-'"
MODULES_ENV = "STEPWELL_WORKFLOW_MODULES"


def validate_workflow_name(name: object) -> str:
    if not isinstance(name, str) or not WORKFLOW_NAME_PATTERN.match(name):
        raise InvalidWorkflowName(f"invalid workflow name {name!r}: a name is {WORKFLOW_NAME_RULE}")
    return name


class Registry:
    """Names to handlers. Registering the same handler twice under a name is allowed (module re-import)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def register(self, name: str, handler: Handler) -> Handler:
        validate_workflow_name(name)
        if not callable(handler):
            raise TypeError(f"workflow {name!r}: handler must be callable, got {type(handler).__name__}")
        with self._lock:
            existing = self._handlers.get(name)
            if existing is not None and existing is not handler and _qualname(existing) != _qualname(handler):
                raise DuplicateWorkflow(
                    f"workflow name {name!r} is already registered to {_qualname(existing)}; "
                    f"cannot register {_qualname(handler)} under it"
                )
            self._handlers[name] = handler
        return handler

    def workflow(self, name: str) -> Callable[[Handler], Handler]:
        validate_workflow_name(name)

        def decorate(handler: Handler) -> Handler:
            return self.register(name, handler)

        return decorate

    def unregister(self, name: str) -> None:
        with self._lock:
            self._handlers.pop(name, None)

    def get(self, name: str) -> Handler:
        handler = self._handlers.get(name)
        if handler is None:
            known = ", ".join(sorted(self._handlers)) or "none"
            raise WorkflowNotFound(f"no workflow registered as {name!r} (registered: {known})")
        return handler

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def names(self) -> list[str]:
        return sorted(self._handlers)


def _qualname(handler: Handler) -> str:
    module = getattr(handler, "__module__", "?")
    return f"{module}.{getattr(handler, '__qualname__', type(handler).__name__)}"


def import_workflow_modules(modules: Iterable[str] | None = None) -> list[str]:
    """Import the user's workflow modules (default: STEPWELL_WORKFLOW_MODULES, comma-separated)."""
    if modules is None:
        modules = [m.strip() for m in os.environ.get(MODULES_ENV, "").split(",") if m.strip()]
    imported = []
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ImportError(
                f"cannot import workflow module {module!r} (from {MODULES_ENV}): {error}"
            ) from error
        imported.append(module)
    return imported


# The process-wide registry that user code registers into.
default_registry = Registry()
register = default_registry.register
workflow = default_registry.workflow
