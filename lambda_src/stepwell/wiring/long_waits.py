"""How the worker wakes long waits (the module's `long_wait_wakeups`): one Scheduler schedule per wait, or due
items and the recurring sweep (stepwell.core.wake_sweep). The worker always gets the sweep, so due items a
deployment kept before switching back to schedules are still sent (by the reconcile message's catch-up)."""

from __future__ import annotations

from stepwell.aws.clients import AwsClients
from stepwell.aws.dynamodb_store.due_wakeups import DynamoDbDueWakeUps
from stepwell.aws.timers import SqsWakeBatches, WakeScheduler
from stepwell.config import LONG_WAIT_SWEEP, StepwellConfig
from stepwell.core.engine import Engine
from stepwell.core.wake_sweep import WakeSweep


def due_wakeups(config: StepwellConfig, clients: AwsClients) -> DynamoDbDueWakeUps:
    """The deployment's due wake-ups (stepwell.ports.due_wakeups) on its executions table."""
    return DynamoDbDueWakeUps(
        clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
    )


def attach_due_wakeups(config: StepwellConfig, clients: AwsClients, engine: Engine) -> None:
    """For an engine a client builds (build_engine) of a deployment with long_wait_wakeups = "sweep": its
    timers keep long waits as due items, and its stop or delete drops the armed wake-up's item (a read more).
    A client of a deployment with per-wait schedules changes nothing: an item left from a sweep period is
    still sent by the worker's catch-up and finds its execution ended."""
    if config.long_wait_wakeups == LONG_WAIT_SWEEP and isinstance(engine.timers, WakeScheduler):
        engine.timers.sweep_long_waits(due_wakeups(config, clients))


def build_wake_sweep(config: StepwellConfig, clients: AwsClients, engine: Engine) -> WakeSweep:
    """The worker's sweep on the deployment's executions table and work queue. With long_wait_wakeups =
    "sweep" the engine's timers keep long waits as its due items (and drop them on a stop, a time-out, a
    delete); with "schedules" nothing changes for the timers (no request more per run)."""
    due = due_wakeups(config, clients)
    if config.long_wait_wakeups == LONG_WAIT_SWEEP and isinstance(engine.timers, WakeScheduler):
        engine.timers.sweep_long_waits(due)
    return WakeSweep(due, SqsWakeBatches(clients.sqs, config.work_queue_url), engine.queue, engine.clock)
