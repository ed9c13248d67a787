"""Several versions of the worker in one process: each version is an EntryRuntime with its own workflow
code and code_version, all on one memory store, queue and virtual clock; `Functions` plays Lambda's
versions and the `live` alias (a qualified invoke runs that version's entry), and `drive` plays SQS (the
alias's worker gets each batch; reported item failures come back later)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from stepwell.clock import VirtualClock
from stepwell.core.engine import Engine
from stepwell.core.registry import Registry
from stepwell.core.versions import PRUNE_GRACE_SECONDS
from stepwell.errors import ForwardFailed
from stepwell.memory.payloads import MemoryPayloadStore
from stepwell.memory.store import MemoryExecutionStore
from stepwell.model import ExecutionRecord, FunctionVersion
from stepwell.testing.local import LocalQueue
from stepwell.wiring.entry import EntryRuntime

ALIAS = "live"
REDELIVERY_SECONDS = 30.0


@dataclass
class Functions:
    """The FunctionVersions port over in-process runtimes (published versions by number)."""

    runtimes: dict[str, EntryRuntime] = field(default_factory=dict)
    alias_version: str | None = None
    invocations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # Answers to give instead of running the version (tests of the answer mapping).
    canned: dict[str, dict[str, Any]] = field(default_factory=dict)
    # When each version was published (Lambda's LastModified), on the stack's virtual clock.
    published_at: dict[str, float] = field(default_factory=dict)

    def current_version(self) -> str | None:
        return self.alias_version

    def list_versions(self) -> list[FunctionVersion]:
        return [
            FunctionVersion(
                version,
                (ALIAS,) if version == self.alias_version else (),
                last_modified=datetime.fromtimestamp(self.published_at.get(version, 0.0), tz=UTC).isoformat(),
            )
            for version in sorted(self.runtimes, key=int)
        ]

    def invoke(self, version: str, event: Mapping[str, Any]) -> dict[str, Any]:
        self.invocations.append((version, json.loads(json.dumps(event))))
        if version not in self.runtimes:
            raise ForwardFailed(f"invoke of worker:{version} failed: no such version", version, True)
        if version in self.canned:
            return self.canned[version]
        return self.runtimes[version].handle_event(json.loads(json.dumps(event)))

    def delete_version(self, version: str) -> None:
        del self.runtimes[version]
        self.deleted.append(version)


class VersionedStack:
    def __init__(self) -> None:
        self.clock = VirtualClock()
        self.store = MemoryExecutionStore()
        self.payloads = MemoryPayloadStore()
        self.queue = LocalQueue(self.clock)
        self.functions = Functions()
        self._message_ids = itertools.count(1)

    def publish(
        self, registry: Registry, keep_versions: int = 3, prune_grace: float = PRUNE_GRACE_SECONDS
    ) -> EntryRuntime:
        """Publish the next version with `registry`'s workflows and point the alias at it (a deploy)."""
        version = str(max((int(v) for v in self.functions.runtimes), default=0) + 1)
        engine = self.engine(registry, version)
        runtime = EntryRuntime(engine, keep_versions=keep_versions, prune_grace=prune_grace)
        self.functions.runtimes[version] = runtime
        self.functions.published_at[version] = self.clock.now()
        self.functions.alias_version = version
        return runtime

    def engine(self, registry: Registry, version: str | None) -> Engine:
        return Engine(
            store=self.store,
            queue=self.queue,
            timers=self.queue,
            payloads=self.payloads,
            clock=self.clock,
            registry=registry,
            code_version=version,
            functions=self.functions,
        )

    @property
    def live(self) -> EntryRuntime:
        assert self.functions.alias_version is not None
        return self.functions.runtimes[self.functions.alias_version]

    def sqs_record(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "messageId": f"m-{next(self._message_ids)}",
            "body": json.dumps(body),
            "eventSource": "aws:sqs",
        }

    def drive(self, batch_size: int = 10) -> int:
        """Deliver every due message to the alias's worker in batches; failed items come back later."""
        delivered = 0
        while True:
            now = self.clock.now()
            bodies = []
            while len(bodies) < batch_size and (body := self.queue.pop_due(now)) is not None:
                bodies.append(body)
            if not bodies:
                return delivered
            records = [self.sqs_record(body) for body in bodies]
            answer = self.live.handle_sqs_batch(records)
            failed = {item["itemIdentifier"] for item in answer["batchItemFailures"]}
            for record in records:
                if record["messageId"] in failed:
                    self.queue.enqueue(json.loads(record["body"]), int(REDELIVERY_SECONDS))
            delivered += len(records)

    def run_until_ended(self, execution_ids: list[str], max_rounds: int = 200) -> list[ExecutionRecord]:
        for _ in range(max_rounds):
            self.drive()
            records = [self.record(execution_id) for execution_id in execution_ids]
            if all(record.status.is_terminal for record in records):
                return records
            due_at = self.queue.next_due_at()
            assert due_at is not None, f"nothing scheduled but still running: {records}"
            self.clock.advance_to(due_at)
        raise AssertionError(f"executions did not end: {execution_ids}")

    def record(self, execution_id: str) -> ExecutionRecord:
        record = self.store.get_execution(execution_id)
        assert record is not None, execution_id
        return record
