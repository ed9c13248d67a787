"""The ports the engine runs on. The memory backend (stepwell.memory.store, stepwell.testing.local) and
the AWS adapters (DynamoDB, SQS/Scheduler, S3) implement them; the engine sees nothing else.

The store's port is split by concern, one module each; `ExecutionStore` is their union, which both stores
implement and the engine takes. A consumer that needs one concern takes its narrow port:
- executions (ExecutionRecords): one record per execution (GetItem by id) and the listings of them;
- versions (VersionPins): the worker version each running execution is pinned to;
- schedule_pointers (SchedulePointers): per SKIP schedule, the last execution it started (one item,
  claimed with a conditional write);
- log (OperationLog): per execution, an append-only log of Batch items keyed by `seq` (e.g. SK
  "b#000000000042"), plus ExternalInput items (e.g. SK "in#<input_id>") written by senders and absorbed by
  the next worker;
- coordination (Coordination): per execution one record (its lease and the wake-up its last run armed),
  callback ids;
- flow_control (FlowControlStore): flow control state (stepwell.core.flow_control): per concurrency key its
  holders and ticket counters, its tickets, per rate key its recent starts, per rate-limited execution its
  reserved start.
The small ports (Clock, WorkQueue, Timers, FunctionVersions, StatusEvents, PayloadStore) are in services.
docs/reference/tables.md has the tables.
"""

from __future__ import annotations

from typing import Protocol

from stepwell.ports.coordination import Coordination
from stepwell.ports.executions import ExecutionRecords
from stepwell.ports.flow_control import DUE_SHARDS, FlowControlStore
from stepwell.ports.log import OperationLog
from stepwell.ports.schedule_pointers import (
    SCHEDULE_POINTER_HOLD_SECONDS,
    SchedulePointers,
    check_schedule_pointer,
)
from stepwell.ports.services import Clock, FunctionVersions, PayloadStore, StatusEvents, Timers, WorkQueue
from stepwell.ports.versions import VersionPins

__all__ = [
    "DUE_SHARDS",
    "SCHEDULE_POINTER_HOLD_SECONDS",
    "Clock",
    "Coordination",
    "ExecutionRecords",
    "ExecutionStore",
    "FlowControlStore",
    "FunctionVersions",
    "OperationLog",
    "PayloadStore",
    "SchedulePointers",
    "StatusEvents",
    "Timers",
    "VersionPins",
    "WorkQueue",
    "check_schedule_pointer",
]


class ExecutionStore(
    ExecutionRecords,
    VersionPins,
    SchedulePointers,
    OperationLog,
    Coordination,
    FlowControlStore,
    Protocol,
):
    """Everything the engine keeps: the union of the store's ports, which both stores implement."""

    # How long an ended execution's items are kept (its records, log and callbacks expire after it).
    retention_seconds: int
