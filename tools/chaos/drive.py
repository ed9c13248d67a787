"""The parent's part of the run: it starts the executions and the definitions contexts, sends callback
results (twice), fires due schedules, skips the clock, reconciles, redrives the DLQ, replaces killed
workers, and waits until every execution has ended."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import chaos_workflows

from chaos.record import Jump, RunData
from chaos.settings import JOURNEY, log
from chaos.workdir import read_lines
from chaos.worker_pool import Workers

# A context's `chaos.next` event comes this long (real seconds) after its `chaos.begin`.
JOURNEY_NEXT_AFTER_SECONDS = (1.0, 8.0)
RECONCILE_EVERY_SECONDS = 3.0
REDRIVE_EVERY_SECONDS = 15.0
LOOK_EVERY_SECONDS = 2.0  # how often the parent looks at which executions ended
# The clock skips to the next schedule at most this often, so short SQS delays still pass in real time.
CLOCK_SKIP_EVERY_SECONDS = 2.0
# A skip waits until the work queue and Lambda's queue of asynchronous invocations hold no message ready to
# receive: a skip over an hour while the starts' burst still waits there puts the wake-ups due in that hour
# behind the burst, which no real hour would (the chaos run's 282 s p99 due-to-run delay was that wait).
# Past this long without an empty moment it skips anyway, so a queue that never drains cannot stall the run.
SKIP_HOLD_MAX_SECONDS = 300.0
CALLBACK_SENDER_DELAY_SECONDS = (0.0, 1.0)


def start_all(client: Any, data: RunData) -> None:
    rng = random.Random(data.settings.seed + 3)
    definitions = client.definitions()
    data.first_start = time.perf_counter()
    for index in range(data.settings.executions):
        kinds = data.settings.kinds
        kind = kinds[index % len(kinds)]
        try:
            if kind == JOURNEY:
                subject = f"subject-{index}"
                definitions.publish_event(
                    chaos_workflows.JOURNEY_DOMAIN,
                    subject,
                    chaos_workflows.JOURNEY_BEGIN,
                    {"index": index},
                    source=chaos_workflows.JOURNEY_SOURCE,
                )
                data.journeys[subject] = None
                data.next_events.append(
                    (time.monotonic() + rng.uniform(*JOURNEY_NEXT_AFTER_SECONDS), subject)
                )
            else:
                execution_id = client.start_execution(kind, {"index": index}, execution_name=f"run-{index}")
                data.started[execution_id] = kind
        except Exception as error:  # reported: a start the caller saw fail is not an execution
            data.start_failures.append(f"{kind} {index}: {type(error).__name__}: {error}")
        time.sleep(1.0 / data.settings.start_rate)


def _send_next_events(client: Any, data: RunData) -> None:
    definitions = client.definitions()
    now = time.monotonic()
    due = [subject for when, subject in data.next_events if when <= now]
    data.next_events = [(when, subject) for when, subject in data.next_events if when > now]
    for subject in due:
        definitions.publish_event(
            chaos_workflows.JOURNEY_DOMAIN,
            subject,
            chaos_workflows.JOURNEY_NEXT,
            source=chaos_workflows.JOURNEY_SOURCE,
        )


def _find_contexts(client: Any, data: RunData, per_pass: int = 20) -> list[str]:
    """The execution ids of contexts the `chaos.begin` events started, found since the last pass (a Query
    per subject, up to `per_pass` subjects)."""
    definitions = client.definitions()
    found = []
    for subject in [s for s, execution in data.journeys.items() if execution is None][:per_pass]:
        contexts = definitions.list_contexts(chaos_workflows.JOURNEY_DOMAIN, subject_id=subject).items
        if contexts:
            execution_id = str(contexts[0].execution_id)
            data.journeys[subject] = execution_id
            data.started[execution_id] = JOURNEY
            found.append(execution_id)
    return found


def send_callbacks(client: Any, data: RunData, workdir: Path, stopping: threading.Event) -> None:
    """Completes each callback a submitter wrote, then completes it again: the repeat must be refused."""
    from stepwell.errors import CallbackNotFound

    rng = random.Random(data.settings.seed + 2)
    seen: set[str] = set()
    path = workdir / "callbacks.jsonl"
    while not stopping.is_set():
        for record in read_lines(path):
            callback_id = str(record["callback"])
            if callback_id in seen:
                continue
            seen.add(callback_id)
            time.sleep(rng.uniform(*CALLBACK_SENDER_DELAY_SECONDS) / 10)
            try:
                client.send_callback_success(callback_id, {"approved": True})
                data.callbacks_sent += 1
            except CallbackNotFound:
                # An id a submitter handed out that the execution does not know (reported, not retried).
                data.callbacks_unknown.append(callback_id)
                continue
            except Exception as error:  # a transient failure: try again on a later pass
                log(f"callback {callback_id[:12]}... not sent ({type(error).__name__}); trying again")
                seen.discard(callback_id)
                continue
            try:
                client.send_callback_success(callback_id, {"approved": "again"})
                data.callback_repeats_accepted.append(callback_id)
            except CallbackNotFound:
                data.callback_repeats_refused += 1
            except Exception as error:
                log(f"repeat of callback {callback_id[:12]}...: {type(error).__name__}: {error}")
                data.callback_repeats_refused += 1
        stopping.wait(0.5)


class ScheduleWatch:
    """The group's one-time schedules by due time, each read once (GetSchedule) and remembered by name and
    modification time: moto answers every request in one thread, so the run reads no more than it must."""

    def __init__(self, firer: Any, scheduler: Any, group: str) -> None:
        self._firer = firer
        self._scheduler = scheduler
        self._group = group
        self._known: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}

    def _due_times(self) -> list[tuple[float, dict[str, Any]]]:
        current: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        for page in self._scheduler.get_paginator("list_schedules").paginate(GroupName=self._group):
            for summary in page["Schedules"]:
                key = (str(summary["Name"]), str(summary.get("LastModificationDate")))
                known = self._known.get(key)
                if known is None:
                    try:
                        schedule = self._scheduler.get_schedule(GroupName=self._group, Name=summary["Name"])
                    except self._scheduler.exceptions.ResourceNotFoundException:
                        continue  # withdrawn by a worker since the listing: nothing to fire
                    expression = str(schedule["ScheduleExpression"])
                    if not expression.startswith("at("):
                        continue
                    moment = dt.datetime.strptime(expression[3:-1], "%Y-%m-%dT%H:%M:%S").replace(
                        tzinfo=dt.UTC
                    )
                    known = (moment.timestamp(), schedule)
                current[key] = known
        self._known = current
        return sorted(current.values(), key=lambda entry: entry[0])

    def fire_due(self, now: float) -> tuple[int, float | None]:
        """Fires (and deletes, as ActionAfterCompletion=DELETE does) the schedules due at `now`; returns how
        many fired and the next one's due time."""
        fired = 0
        for due_at, schedule in self._due_times():
            if due_at > now:
                return fired, due_at
            self._firer.fire(schedule, dt.datetime.fromtimestamp(due_at, dt.UTC))
            with contextlib.suppress(self._scheduler.exceptions.ResourceNotFoundException):
                self._scheduler.delete_schedule(GroupName=self._group, Name=schedule["Name"])
            fired += 1
        return fired, None


def drive(
    client: Any,
    data: RunData,
    workers: Workers,
    schedules: ScheduleWatch,
    virtual: Any,
    sqs: Any,
    config: Any,
    starter: threading.Thread,
    async_queue_url: str | None = None,
) -> None:
    """Fire schedules, skip the clock, reconcile, replace killed workers, until every execution ended."""
    queue_urls = [config.work_queue_url, *([async_queue_url] if async_queue_url else [])]
    last_skip = last_reconcile = last_redrive = last_progress = last_look = time.monotonic()
    deadline: float | None = None
    pending: list[str] = []
    while True:
        time.sleep(1.0)
        now = time.monotonic()
        workers.replace_dead()
        fired, upcoming = schedules.fire_due(virtual.now_epoch())
        data.fired_schedules += fired
        may_skip = not fired and upcoming is not None and now - last_skip >= CLOCK_SKIP_EVERY_SECONDS
        if may_skip and (now - last_skip >= SKIP_HOLD_MAX_SECONDS or _drained(sqs, queue_urls)):
            last_skip = now
            current = virtual.now_epoch()
            if upcoming is not None and upcoming > current:
                virtual.advance_seconds(upcoming - current)
                data.jumps.append(Jump(current, upcoming))
                # Fired now, not a loop later: the stand-in for Scheduler is as prompt as it can be.
                fired, _ = schedules.fire_due(virtual.now_epoch())
                data.fired_schedules += fired
        if now - last_reconcile >= RECONCILE_EVERY_SECONDS:
            last_reconcile = now
            sqs.send_message(QueueUrl=config.work_queue_url, MessageBody=json.dumps({"kind": "reconcile"}))
            data.reconciles += 1
        if now - last_redrive >= REDRIVE_EVERY_SECONDS:
            last_redrive = now
            data.redriven += _redrive(sqs, config.dlq_url, config.work_queue_url)
        _send_next_events(client, data)
        if starter.is_alive() or now - last_look < LOOK_EVERY_SECONDS:
            continue
        last_look = now
        if deadline is None:
            deadline = now + data.settings.timeout
            pending = list(data.started)
        pending += _find_contexts(client, data)
        pending = _still_running(client, pending)
        if now - last_progress >= 10:
            last_progress = now
            log(f"{len(data.started) - len(pending)} of {len(data.started)} ended")
        if not pending and None not in data.journeys.values():
            data.last_end = time.perf_counter()
            return
        if now >= deadline:
            unstarted = sum(1 for execution in data.journeys.values() if execution is None)
            log(
                f"giving up after {data.settings.timeout:.0f} s: {len(pending)} executions still "
                f"running, {unstarted} begin events without a context"
            )
            data.last_end = time.perf_counter()
            return


def _drained(sqs: Any, queue_urls: list[str]) -> bool:
    """Whether no message in these queues is ready to receive (those in flight or delayed are not)."""
    for url in queue_urls:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
        if int(attributes["Attributes"]["ApproximateNumberOfMessages"]):
            return False
    return True


def _redrive(sqs: Any, dlq_url: str, work_queue_url: str) -> int:
    """What the DLQ holds, back to the work queue by `stepwell dlq redrive`'s function: how many."""
    from stepwell.aws.work_queue import redrive_dead_letters

    attributes = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])
    waiting = int(attributes["Attributes"]["ApproximateNumberOfMessages"])
    if not waiting:
        return 0
    return redrive_dead_letters(sqs, dlq_url, work_queue_url=work_queue_url, max_messages=waiting).moved


def _still_running(client: Any, pending: list[str], per_pass: int = 50) -> list[str]:
    """Looks at up to `per_pass` of the executions not yet seen ended (one GetItem each); those still
    running go to the back, so the next pass looks at others. A context's execution may not exist yet:
    the router records the context before it starts the execution (a redelivery of its event finishes
    a start a fault cut short), so it counts as running."""
    from stepwell.errors import ExecutionNotFound

    looked_at, rest = pending[:per_pass], pending[per_pass:]
    running = []
    for execution_id in looked_at:
        try:
            status = str(client.describe_execution(execution_id)["Status"])
        except ExecutionNotFound:
            status = "RUNNING"
        if status == "RUNNING":
            running.append(execution_id)
    return rest + running
