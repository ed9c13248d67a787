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


def attach_due_wakeups(config: StepwellConfig, clients: AwsClients, engine: Engine) -> DynamoDbDueWakeUps:
    """The deployment's due wake-ups, given to the engine's timers: with long_wait_wakeups = "sweep" they keep
    long waits there from now on; in any case a stop, a time-out or a delete drops the armed wake-up's item
    (a client with per-wait schedules may stop an execution a worker with the sweep armed)."""
    due = DynamoDbDueWakeUps(
        clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
    )
    if isinstance(engine.timers, WakeScheduler):
        if config.long_wait_wakeups == LONG_WAIT_SWEEP:
            engine.timers.sweep_long_waits(due)
        else:
            engine.timers.cancel_due_wakeups(due)
    return due


def build_wake_sweep(config: StepwellConfig, clients: AwsClients, engine: Engine) -> WakeSweep:
    """The worker's sweep on the deployment's executions table and work queue (attach_due_wakeups too)."""
    due = attach_due_wakeups(config, clients, engine)
    return WakeSweep(due, SqsWakeBatches(clients.sqs, config.work_queue_url), engine.queue, engine.clock)
