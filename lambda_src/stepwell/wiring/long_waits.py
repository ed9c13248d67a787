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


def build_wake_sweep(config: StepwellConfig, clients: AwsClients, engine: Engine) -> WakeSweep:
    """The sweep on the deployment's executions table and work queue; with long_wait_wakeups = "sweep" the
    engine's timers keep long waits as its due items from now on."""
    due = DynamoDbDueWakeUps(
        clients.dynamodb,
        executions_table=config.executions_table,
        operations_table=config.operations_table,
        coordination_table=config.coordination_table,
        subject_index=config.subject_index_name,
    )
    if config.long_wait_wakeups == LONG_WAIT_SWEEP and isinstance(engine.timers, WakeScheduler):
        engine.timers.sweep_long_waits(due)
    return WakeSweep(due, SqsWakeBatches(clients.sqs, config.work_queue_url), engine.queue, engine.clock)
