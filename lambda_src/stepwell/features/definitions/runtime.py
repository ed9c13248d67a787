"""What the interpreter and the router run on: the stores, the actions, a clock and AWS clients.

In the worker Lambda the runtime is built once from the environment (`runtime_from_env`, DynamoDB stores
on the tables named in docs/architecture.md); tests build one on the memory stores and a virtual clock
and hand it to `stepwell.features.definitions.interpreter.make_interpreter`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepwell.config import cpu_budgets_from_env
from stepwell.features.definitions.actions import (
    ActionRegistry,
    ClientFactory,
    default_actions,
    default_client_factory,
)
from stepwell.features.definitions.budgets import DEFAULT_EXPRESSION_CPU_SECONDS, DEFAULT_RUN_CPU_SECONDS
from stepwell.features.definitions.store import (
    ContextStore,
    DefinitionStore,
    DynamoDbContextStore,
    DynamoDbDefinitionStore,
    DynamoDbEventLog,
    EventLog,
    MemoryContextStore,
    MemoryDefinitionStore,
    MemoryEventLog,
)
from stepwell.ports import Clock

if TYPE_CHECKING:
    from stepwell.core.engine import Engine


class _SystemClock:
    def now(self) -> float:
        return time.time()


@dataclass
class DefinitionsRuntime:
    definitions: DefinitionStore
    contexts: ContextStore
    events: EventLog
    actions: ActionRegistry = field(default_factory=lambda: default_actions)
    clock: Clock = field(default_factory=_SystemClock)
    clients: ClientFactory = default_client_factory
    event_bus_name: str | None = None
    # The deployment's own functions, which actions may not invoke (ActionContext.own_functions).
    own_functions: frozenset[str] = frozenset()
    # CPU budgets (stepwell.features.definitions.budgets): a run (one invocation of a context) and each
    # expression
    # it evaluates; past either, the context fails naming the budget.
    run_cpu_seconds: float = DEFAULT_RUN_CPU_SECONDS
    expression_cpu_seconds: float = DEFAULT_EXPRESSION_CPU_SECONDS
    # The engine that runs the contexts (set by install() and by a Router built on this runtime): a context
    # continues in a new execution through it (stepwell.features.definitions.continuation); None: it never
    # continues, its log grows as it runs.
    engine: Engine | None = field(default=None, repr=False)

    @classmethod
    def in_memory(
        cls, clock: Clock | None = None, actions: ActionRegistry | None = None
    ) -> DefinitionsRuntime:
        chosen: Clock = clock or _SystemClock()
        return cls(
            definitions=MemoryDefinitionStore(now_ms=lambda: int(chosen.now() * 1000)),
            contexts=MemoryContextStore(now=chosen.now),
            events=MemoryEventLog(),
            actions=actions or default_actions,
            clock=chosen,
        )


def _env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"environment variable {name} is not set (the definitions runtime needs it)")
    return value


def runtime_from_env(dynamodb: Any = None, clients: ClientFactory | None = None) -> DefinitionsRuntime:
    """DynamoDB stores on STEPWELL_DEFINITIONS_TABLE, STEPWELL_EXECUTIONS_TABLE (+ STEPWELL_SUBJECT_INDEX)
    and STEPWELL_COORDINATION_TABLE; the CPU budgets of STEPWELL_DEFINITIONS_RUN_CPU_SECONDS and
    STEPWELL_DEFINITIONS_EXPRESSION_CPU_SECONDS (stepwell.config.ConfigError naming a bad one)."""
    run_cpu_seconds, expression_cpu_seconds = cpu_budgets_from_env()
    factory = clients or default_client_factory
    db = dynamodb if dynamodb is not None else factory("dynamodb")
    return DefinitionsRuntime(
        definitions=DynamoDbDefinitionStore(db, _env("STEPWELL_DEFINITIONS_TABLE")),
        contexts=DynamoDbContextStore(
            db,
            _env("STEPWELL_EXECUTIONS_TABLE"),
            os.environ.get("STEPWELL_SUBJECT_INDEX") or "domain-subjectId-index",
        ),
        events=DynamoDbEventLog(db, _env("STEPWELL_COORDINATION_TABLE")),
        clients=factory,
        event_bus_name=os.environ.get("STEPWELL_EVENT_BUS_NAME") or None,
        own_functions=frozenset(filter(None, [os.environ.get("STEPWELL_WORKER_FUNCTION_NAME")])),
        run_cpu_seconds=run_cpu_seconds,
        expression_cpu_seconds=expression_cpu_seconds,
    )


_lock = threading.Lock()
_configured: DefinitionsRuntime | None = None
_factory: Callable[[], DefinitionsRuntime] = runtime_from_env


def configure(runtime: DefinitionsRuntime | None) -> None:
    """Set the process-wide runtime (None: build it from the environment on first use)."""
    global _configured
    with _lock:
        _configured = runtime


def get_runtime() -> DefinitionsRuntime:
    global _configured
    with _lock:
        if _configured is None:
            _configured = _factory()
        return _configured
