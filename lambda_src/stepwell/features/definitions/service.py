"""The definitions API for the client, the CLI and the worker entry.

- `runtime_from_config(config, clients)`: the DynamoDB stores of a deployment (client_config or the
  worker's environment), with the endpoint and request counting of `AwsClients`.
- `install(engine, config, clients)`: in the worker, register the interpreter and return the Router that
  routes bus events (see the report in docs for the entry wiring).
- `DefinitionsService`: definitions put/get/list/versions/delete/validate/graph, contexts list/show (with
  the execution's timeline), events send (processed here) or publish (through the bus), rejected events.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from stepwell.aws.clients import AwsClients
from stepwell.clock import SystemClock
from stepwell.config import StepwellConfig
from stepwell.core.engine import Engine
from stepwell.core.history import format_timeline
from stepwell.core.registry import Registry, default_registry
from stepwell.errors import ExecutionNotFound
from stepwell.features.definitions.actions import ActionRegistry, default_actions
from stepwell.features.definitions.continuation import chain_ids
from stepwell.features.definitions.interpreter import INTERPRETER_NAME, register_interpreter
from stepwell.features.definitions.mermaid import to_mermaid
from stepwell.features.definitions.model import DefinitionNotFound
from stepwell.features.definitions.router import EventOutcome, EventSources, PathExtractor, Router
from stepwell.features.definitions.runtime import DefinitionsRuntime, configure, get_runtime
from stepwell.features.definitions.store import (
    ContextRecord,
    DynamoDbContextStore,
    DynamoDbDefinitionStore,
    DynamoDbEventLog,
    StoredWorkflow,
    StoreError,
    check_id,
)
from stepwell.features.definitions.validation import (
    parse_definition,
    unregistered_actions,
    validate_definition,
)
from stepwell.model import Page
from stepwell.ports import Clock


def runtime_from_config(
    config: StepwellConfig,
    clients: AwsClients,
    actions: ActionRegistry | None = None,
    clock: Clock | None = None,
) -> DefinitionsRuntime:
    """The DynamoDB stores of a deployment; `clock` (default: system time) stamps items and is the
    interpreter's "now" (pass the engine's clock)."""
    if not config.definitions_table:
        raise StoreError("the configuration names no definitions table (definitions_table)")
    db = clients.dynamodb
    chosen: Clock = clock or SystemClock()
    return DefinitionsRuntime(
        definitions=DynamoDbDefinitionStore(
            db,
            config.definitions_table,
            now_ms=lambda: int(chosen.now() * 1000),
            # A deleted definition's versions stay as long as its finished contexts; a waits record
            # written afresh reads the domain's running contexts (stepwell.features.definitions.store).
            retention_days=config.retention_days,
            contexts_table=config.executions_table,
            subject_index=config.subject_index_name,
        ),
        contexts=DynamoDbContextStore(
            db,
            config.executions_table,
            config.subject_index_name,
            now=chosen.now,
            retention_days=config.retention_days,
        ),
        events=DynamoDbEventLog(db, config.coordination_table),
        actions=actions or default_actions,
        clock=chosen,
        # AwsClients' factory: the deployment's region and endpoint, and request counting.
        clients=clients._client,
        event_bus_name=config.event_bus_name or None,
        own_functions=frozenset(filter(None, [config.worker_function_name])),
        run_cpu_seconds=config.definitions_run_cpu_seconds,
        expression_cpu_seconds=config.definitions_expression_cpu_seconds,
    )


def install(
    engine: Engine,
    config: StepwellConfig,
    clients: AwsClients,
    registry: Registry | None = None,
) -> Router:
    """Worker start-up: the process-wide runtime on the deployment's tables, the interpreter registered,
    and the Router for bus events (extractor: a registered callable, else config.event_extractor paths;
    the domains each event source may speak for: config.event_sources), which runs the contexts an event
    starts or resumes in this process."""
    runtime = runtime_from_config(config, clients, clock=engine.clock)
    runtime.engine = engine  # contexts continue in new executions through it
    configure(runtime)
    chosen = registry if registry is not None else default_registry
    if INTERPRETER_NAME not in chosen:
        register_interpreter(chosen)
    return Router(
        engine,
        get_runtime(),
        paths=config.event_extractor or None,
        sources=EventSources(config.event_sources),
        run_inline=True,
    )


class DefinitionsService:
    def __init__(self, engine: Engine, runtime: DefinitionsRuntime, router: Router | None = None) -> None:
        self.engine = engine
        self.runtime = runtime
        self.router = router or Router(engine, runtime)

    @classmethod
    def for_client(cls, client: Any) -> DefinitionsService:
        """For a `stepwell.client.StepwellClient` (its config, AWS clients and engine)."""
        runtime = runtime_from_config(client.config, client.clients, clock=client.engine.clock)
        return cls(
            client.engine,
            runtime,
            Router(client.engine, runtime, paths=client.config.event_extractor or None),
        )

    # --- definitions ---

    def validate(self, document: Any, check_actions: bool = False) -> list[str]:
        return validate_definition(document, self.runtime.actions.names() if check_actions else None)

    def action_warnings(self, document: Any) -> list[str]:
        """Action names this process has not registered: warnings, not errors, as the deployed worker may
        register more (its workflow modules); `check_actions=True` on validate/put makes them errors."""
        return unregistered_actions(document, self.runtime.actions.names())

    def put_definition(
        self, domain: str, document: Mapping[str, Any], check_actions: bool = False
    ) -> StoredWorkflow:
        if check_actions or not isinstance(document, Mapping):
            # Without check_actions, only to refuse what is not a JSON object, naming what it is.
            parse_definition(document, self.runtime.actions.names() if check_actions else None)
        if document.get("id") is None:
            return self.runtime.definitions.create_workflow(domain, document)
        return self.runtime.definitions.set_workflow(domain, document)

    def get_definition(self, domain: str, workflow_id: str, version: int | None = None) -> StoredWorkflow:
        stored = self.runtime.definitions.get_workflow(domain, workflow_id, version)
        if stored is None:
            which = f" version {version}" if version is not None else ""
            raise DefinitionNotFound(f"no definition {workflow_id!r}{which} in domain {domain!r}")
        return stored

    def list_definitions(self, domain: str) -> list[StoredWorkflow]:
        return self.runtime.definitions.list_workflows(domain)

    def list_versions(self, domain: str, workflow_id: str) -> list[StoredWorkflow]:
        return self.runtime.definitions.list_versions(domain, workflow_id)

    def delete_definition(self, domain: str, workflow_id: str) -> bool:
        """Delete the definition: its contexts still running run on; its versions (and the domain's waits
        record, once no definition is left) expire after the retention period (DefinitionStore)."""
        return self.runtime.definitions.delete_workflow(domain, workflow_id)

    def graph(self, document: Mapping[str, Any]) -> str:
        return to_mermaid(parse_definition(document))

    # --- contexts ---

    def list_contexts(
        self,
        domain: str,
        subject_id: str | None = None,
        workflow_id: str | None = None,
        *,
        limit: int = 100,
        next_token: str | None = None,
    ) -> Page[ContextRecord]:
        """Contexts newest first, without the finished ones whose retention has passed (`_expired`): a page
        may then hold fewer than `limit`, its token going on."""
        contexts = self.runtime.contexts
        if workflow_id is not None:
            if subject_id is None:
                raise StoreError("listing by definition needs a subject too (contexts are keyed by both)")
            page = Page(items=contexts.get_contexts(domain, workflow_id, subject_id))
        elif subject_id is not None:
            page = contexts.get_all_contexts_for_subject(domain, subject_id, limit, next_token)
        else:
            page = contexts.get_all_contexts(domain, limit, next_token)
        now = self.engine.clock.now()
        return Page([record for record in page.items if not self._expired(record, now)], page.next_token)

    def _expired(self, record: ContextRecord, now: float | None = None) -> bool:
        """A finished context whose retention has passed is gone, as its execution is: its item's `ttl`
        counts from its end, its last write (`updated_at`)."""
        return record.status != "RUNNING" and self.engine.retention_passed(record.updated_at, now)

    def show_context(
        self, domain: str, workflow_id: str, subject_id: str, instance_id: str
    ) -> dict[str, Any]:
        """The context item, its execution's description, the ids of every execution it ran in (a long
        context continues in new ones: stepwell.features.definitions.continuation) and their history as
        one timeline, oldest first (an execution whose retention has passed is left out)."""
        record = self.runtime.contexts.get_context(domain, workflow_id, subject_id, instance_id)
        if record is None or self._expired(record):
            raise DefinitionNotFound(
                f"no context {instance_id!r} of definition {workflow_id!r} for subject {subject_id!r} "
                f"in domain {domain!r}"
            )
        executions = chain_ids(record)
        shown: dict[str, Any] = {"context": record.to_dict(), "executions": executions}
        try:
            shown["execution"] = self.engine.describe_execution(record.execution_id)
        except ExecutionNotFound:
            shown["execution"] = None
        events: list[dict[str, Any]] = []
        for execution_id in executions:
            try:
                events.extend(self.engine.get_execution_history(execution_id))
            except ExecutionNotFound:
                continue
        if shown["execution"] is not None:
            shown["history"] = events
            shown["timeline"] = format_timeline(events)
        return shown

    # --- events ---

    def send_event(
        self, domain: str, subject_id: str, name: str, data: Any = None, *, event_id: str | None = None
    ) -> EventOutcome:
        """Process an event for `domain` here (as the worker would, through the extractor's defaults)."""
        check_id("domain", domain)
        check_id("subject id", subject_id)
        envelope = {
            "version": "0",
            "id": event_id or uuid.uuid4().hex,
            "detail-type": name,
            "source": "stepwell.client",
            "detail": {"domain": domain, "subjectId": subject_id, "data": data},
        }
        return Router(self.engine, self.runtime, extractor=PathExtractor()).process_event(envelope, domain)

    def process_event(self, event: Mapping[str, Any], domain: str) -> EventOutcome:
        """Process a raw event (e.g. an EventBridge envelope) with the configured extractor, for the
        operator's `domain`: an event claiming another domain is rejected."""
        check_id("domain", domain)
        return self.router.process_event(event, domain)

    def publish_event(
        self,
        domain: str,
        subject_id: str,
        name: str,
        data: Any = None,
        *,
        source: str = "stepwell.client",
    ) -> str:
        """Put the event on the bus (the default extractor's layout); the bus rule takes it to the worker,
        which accepts it only if the module's event_sources lets `source` speak for `domain`."""
        check_id("domain", domain)
        check_id("subject id", subject_id)
        bus = self.runtime.event_bus_name
        if not bus:
            raise StoreError("the configuration names no event bus (event_bus_name)")
        response = self.runtime.clients("events").put_events(
            Entries=[
                {
                    "Source": source,
                    "DetailType": name,
                    "Detail": json.dumps({"domain": domain, "subjectId": subject_id, "data": data}),
                    "EventBusName": bus,
                }
            ]
        )
        entry = response.get("Entries", [{}])[0]
        if response.get("FailedEntryCount"):
            raise StoreError(f"put_events failed: {entry.get('ErrorCode')}: {entry.get('ErrorMessage')}")
        return str(entry.get("EventId"))

    def rejected_events(self, limit: int = 100) -> list[dict[str, Any]]:
        return self.runtime.events.list_rejected(limit)
