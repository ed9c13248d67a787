"""The mix `make scale` records: each workflow kind run on one moto deployment (bench.moto_stack, driven
as AWS drives it) with every engine request recorded (scale.recorder) and tagged with its kind, its
execution or subject, its tenant and its phase.

- straight, callback, parallel, invoke: executions run one after the other to their end.
- wait-*: a step, a wait, a step. Waits of up to 15 minutes are SQS delays in real time on moto, so the
  run's short wait is 1 s (the 1-minute band of the targets is projected from it); the long ones (an
  hour to a year) start all their executions, count the schedules left while they all wait (at half and
  at all of them, so a per-wait schedule shows as a slope and a fixed sweep as an intercept), then fire
  the schedules in time order on the virtual clock (phase "wake").
- definitions: tenants x subjects; each subject's `user.signed_up` event starts a context (phase
  "start") and its `user.activated` event ends it (phase "resume"), through the work queue as the bus
  rule delivers them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_workflows
from bench.moto_stack import MotoStack
from bench.section import ROOT, log

from scale import workflows
from scale.recorder import Recorder, Tag

DEFINITION = ROOT / "examples" / "definitions" / "onboarding.json"
EVENT_SOURCE = "scale.producer"
SWEEP_MESSAGE = json.dumps({"kind": "wake-sweep"})
# The unit a sweep's requests are charged to; its empty reads are its fixed cost (scale.model).
SWEEP_UNIT = "sweep"
# Wait kinds: label -> seconds. The 1 s one stands for every wait an SQS delay carries (up to 15 min).
SHORT_WAITS = {"wait-1s": 1}
LONG_WAITS = {
    "wait-1h": workflows.HOUR,
    "wait-1d": workflows.DAY,
    "wait-30d": 30 * workflows.DAY,
    "wait-1y": workflows.YEAR,
}


@dataclass(frozen=True)
class Sizes:
    """How many executions (or subjects) of each kind the run records."""

    plain: int = 40
    waits: int = 30
    tenants: int = 10
    subjects_per_tenant: int = 4

    def __post_init__(self) -> None:
        for name in ("plain", "waits", "tenants", "subjects_per_tenant"):
            value = getattr(self, name)
            if not 2 <= value <= 2_000:
                raise ValueError(f"{name} is {value}: between 2 and 2,000 (two to tell shared keys apart)")


@dataclass
class KindRun:
    """What a kind's run counted outside the request log: its units, the driver's modelled charges
    (Lambda invocations, Scheduler invocations), and the schedules held while its units waited."""

    kind: str
    units: int
    groups: int = 1
    modelled: dict[str, dict[str, int]] = field(default_factory=dict)  # phase -> charge -> count
    schedules_at: dict[int, int] = field(default_factory=dict)  # units waiting -> schedules held
    sweeps: int = 0  # wake-sweep messages the driver sent (as the recurring sweep schedule does)


class Workload:
    def __init__(self, stack: MotoStack, recorder: Recorder) -> None:
        self.stack = stack
        self.recorder = recorder
        self.runs: dict[str, KindRun] = {}
        self._registered: set[str] = set()

    # --- plumbing ---

    def _register(self, name: str, handler: Callable[..., Any]) -> None:
        if name not in self._registered:
            self.stack.registry.register(name, handler)
            self._registered.add(name)

    def _tag(self, kind: str, unit: str, group: str = "", phase: str = "run") -> None:
        self.stack.modelled.reset()
        self.recorder.tag = Tag(kind, unit, group, phase)

    def _untag(self, run: KindRun) -> None:
        """Adds the driver's modelled charges since the last tag to the run's phase."""
        tag = self.recorder.tag
        if tag is not None:
            counts = run.modelled.setdefault(tag.phase, {})
            for charge in dataclasses.fields(self.stack.modelled):
                name = charge.name
                counts[name] = counts.get(name, 0) + int(getattr(self.stack.modelled, name))
        self.recorder.tag = None

    def _answer_callbacks(self) -> None:
        for _ in range(100):
            self.stack.drain(fire_schedules=False)
            if not bench_workflows.CALLBACKS:
                return
            while bench_workflows.CALLBACKS:
                self.stack.client.send_callback_success(bench_workflows.CALLBACKS.pop(0), {"ok": True})
        raise RuntimeError("callbacks kept coming")

    def _status(self, execution_id: str) -> str:
        return str(self.stack.client.describe_execution(execution_id)["Status"])

    def _check(self, kind: str, execution_ids: list[str]) -> None:
        bad = {e: s for e in execution_ids if (s := self._status(e)) != "SUCCEEDED"}
        if bad:
            raise RuntimeError(f"{kind}: {len(bad)} executions did not succeed: {list(bad.items())[:3]}")

    def schedules(self) -> list[dict[str, Any]]:
        group = self.stack.config.schedule_group_name
        pages = self.stack.scheduler.get_paginator("list_schedules").paginate(GroupName=group)
        return [summary for page in pages for summary in page.get("Schedules", [])]

    def reconfigure(self, overrides: Mapping[str, str]) -> None:
        """The deployment's settings changed (`--set index_shards=16`): the client and the worker rebuilt on
        the new config, as a deployment with those module variables would run."""
        from stepwell.client import StepwellClient
        from stepwell.wiring.entry import EntryRuntime

        config = dataclasses.replace(self.stack.config, **settings(self.stack.config, overrides))
        stack = self.stack
        stack.config = config
        stack.client = StepwellClient(
            dataclasses.replace(config, direct_wake_ups=True),
            stack.clients,
            registry=stack.registry,
            clock=stack.clock,
        )
        stack.runtime = EntryRuntime.from_config(
            config, stack.clients, registry=stack.registry, clock=stack.clock
        )

    def _sweep(self, kind: str, run: KindRun, due: float) -> None:
        """What the recurring wake-sweep schedule does once a minute: at `due` (past the waits' ends), one
        {"kind": "wake-sweep"} message to the work queue (for a design that keeps long waits as due items)."""
        self.stack.clock.advance_to(max(self.stack.clock.now(), due))
        self._forget_sweep_watermarks()
        self._tag(kind, SWEEP_UNIT, phase="wake")
        # The sweep schedule's own invocation is a fixed one a minute, not any wait's: not charged here.
        run.sweeps += 1
        self.stack.sqs.send_message(QueueUrl=self.stack.config.work_queue_url, MessageBody=SWEEP_MESSAGE)
        self.stack.drain(fire_schedules=False)
        self._untag(run)

    def _forget_sweep_watermarks(self) -> None:
        """Drops the sweep's state (uncounted), so the sweep starts at the clock's bucket as if it had run
        every minute of the virtual jump, finding nothing: a catch-up over a year of empty buckets would be
        an artefact of the jump (and take moto hours). Nothing to drop in a design without it."""
        try:
            from stepwell.aws.dynamodb_store import due_wakeups
        except ImportError:
            return
        key = getattr(due_wakeups, "_STATE_KEY", None)  # its private key: the tool reaches in on purpose
        if key is not None:
            self.recorder.raw_dynamodb.delete_item(TableName=self.stack.config.executions_table, Key=key)

    # --- kinds ---

    def run_plain(self, kind: str, workflow: str, payload: Mapping[str, Any], count: int) -> None:
        """`count` executions one after the other, each to its end (callbacks answered, schedules fired)."""
        run = self.runs.setdefault(kind, KindRun(kind, count))
        ids = []
        for index in range(count):
            self._tag(kind, f"{kind}-{index}")
            execution_id = self.stack.client.start_execution(
                workflow, dict(payload), execution_name=f"{kind}-{index}"
            )
            ids.append(execution_id)
            self._answer_callbacks()
            self.stack.drain()
            self._untag(run)
        self._check(kind, ids)

    def run_long_waits(self, kind: str, workflow: str, count: int, seconds: int) -> None:
        run = self.runs.setdefault(kind, KindRun(kind, count))
        ids: dict[str, str] = {}
        started = self.stack.clock.now()
        for index in range(count):
            unit = f"{kind}-{index}"
            self._tag(kind, unit)
            ids[self.stack.client.start_execution(workflow, {}, execution_name=unit)] = unit
            self.stack.drain(fire_schedules=False)
            self._untag(run)
            if index + 1 in (count // 2, count):
                run.schedules_at[index + 1] = len(self.schedules())
        for _ in range(10 * count + 10):
            unit = self._next_schedule_unit(ids)
            if unit is None:
                break
            self._tag(kind, unit, phase="wake")
            self.stack.fire_next_schedule()
            self.stack.drain(fire_schedules=False)
            self._untag(run)
        for attempt in range(3):  # long waits kept as due items: the sweep wakes them
            if all(self._status(execution_id) == "SUCCEEDED" for execution_id in ids):
                break
            self._sweep(kind, run, started + seconds + 61 * (attempt + 1))
        self._tag(kind, f"{kind}-rest", phase="wake")
        self.stack.drain()
        self._untag(run)
        self._check(kind, list(ids))

    def _next_schedule_unit(self, ids: Mapping[str, str]) -> str | None:
        """The unit the earliest schedule wakes (the one `fire_next_schedule` fires next), "sweep" when its
        input names none of them (a schedule that wakes many), None when no schedule is left."""
        group = self.stack.config.schedule_group_name
        summaries = self.schedules()
        if not summaries:
            return None
        details = [self.stack.scheduler.get_schedule(Name=s["Name"], GroupName=group) for s in summaries]

        def at(schedule: Mapping[str, Any]) -> float:
            expression = str(schedule["ScheduleExpression"])
            if not expression.startswith("at("):
                return float("inf")
            stamp = dt.datetime.strptime(expression[3:-1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.UTC)
            return stamp.timestamp()

        earliest = min(details, key=at)
        text = json.dumps(earliest.get("Target", {}).get("Input", ""))
        for execution_id, unit in ids.items():
            if execution_id in text:
                return unit
        return "sweep"

    def run_definitions(self, tenants: int, subjects_per_tenant: int) -> None:
        from stepwell.features.definitions.actions import default_actions
        from stepwell.features.definitions.runtime import configure
        from stepwell.features.definitions.service import install
        from stepwell.wiring.entry import EntryRuntime

        if "onboarding.send_email" not in default_actions:
            default_actions.register("onboarding.send_email", lambda inputs, context: None)
        names = [f"tenant-{index}" for index in range(tenants)]
        config = dataclasses.replace(self.stack.config, event_sources={EVENT_SOURCE: names})
        base = self.stack.runtime
        router = install(base.engine, config, self.stack.clients, registry=self.stack.registry)
        self.stack.runtime = EntryRuntime(base.engine, base.reconciler, event_router=router)
        definition = json.loads(Path(DEFINITION).read_text())
        for name in names:
            router.runtime.definitions.set_workflow(name, definition)
        kind = "definitions"
        run = self.runs.setdefault(kind, KindRun(kind, tenants * subjects_per_tenant, groups=tenants))
        try:
            for phase, detail_type in (("start", "user.signed_up"), ("resume", "user.activated")):
                for tenant in names:
                    for subject in range(subjects_per_tenant):
                        self._tag(kind, f"{tenant}/user-{subject}", tenant, phase)
                        self._send_event(detail_type, tenant, f"user-{subject}")
                        self.stack.drain(fire_schedules=False)
                        self._untag(run)
        finally:
            configure(None)
            self.stack.runtime = base

    def _send_event(self, detail_type: str, tenant: str, subject: str) -> None:
        """The event as the bus rule hands it to the work queue (the producer's PutEvents is modelled)."""
        body = {
            "version": "0",
            "id": f"{detail_type}-{tenant}-{subject}",
            "detail-type": detail_type,
            "source": EVENT_SOURCE,
            "detail": {"domain": tenant, "subjectId": subject, "data": {"email": f"{subject}@example.com"}},
        }
        self.stack.sqs.send_message(QueueUrl=self.stack.config.work_queue_url, MessageBody=json.dumps(body))

    # --- the mix ---

    def run_all(self, sizes: Sizes) -> None:
        plain: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
            "straight": (bench_workflows.sequential_steps, {"steps": 3}),
            "callback": (bench_workflows.single_callback, {}),
            "parallel": (bench_workflows.single_parallel, {}),
            "invoke": (workflows.parent, {}),
        }
        self._register("scale-child", workflows.child)
        for kind, (handler, payload) in plain.items():
            log(f"scale: {sizes.plain} x {kind}")
            self._register(f"scale-{kind}", handler)
            self.run_plain(kind, f"scale-{kind}", payload, sizes.plain)
        for kind, seconds in SHORT_WAITS.items():
            log(f"scale: {sizes.waits} x {kind}")
            self._register(f"scale-{kind}", workflows.waiting(seconds))
            self.run_plain(kind, f"scale-{kind}", {}, sizes.waits)
        for kind, seconds in LONG_WAITS.items():
            log(f"scale: {sizes.waits} x {kind}")
            self._register(f"scale-{kind}", workflows.waiting(seconds))
            self.run_long_waits(kind, f"scale-{kind}", sizes.waits, seconds)
        log(f"scale: definitions, {sizes.tenants} tenants x {sizes.subjects_per_tenant} subjects")
        self.run_definitions(sizes.tenants, sizes.subjects_per_tenant)


def settings(config: Any, overrides: Mapping[str, str]) -> dict[str, Any]:
    """`overrides` (name -> text) as values of the config's fields, typed as the field's current value."""
    fields = {field.name for field in dataclasses.fields(config)}
    values: dict[str, Any] = {}
    for name, text in overrides.items():
        if name not in fields:
            raise ValueError(f"--set {name}: not a deployment setting; one of {', '.join(sorted(fields))}")
        current = getattr(config, name)
        if isinstance(current, bool):
            if text.lower() not in ("true", "false"):
                raise ValueError(f"--set {name}={text}: true or false")
            values[name] = text.lower() == "true"
        elif isinstance(current, (int, float, str)):
            try:
                values[name] = type(current)(text)
            except ValueError:
                raise ValueError(f"--set {name}={text}: a {type(current).__name__}") from None
        else:
            raise ValueError(f"--set {name}: a {type(current).__name__} setting cannot be set here")
    return values


def make_recorder(stack: MotoStack) -> Recorder:
    """A recorder on every client of the stack's engine (those made later too: botocore copies a client's
    hooks when it is made, so the counter's attach, which every new client goes through, attaches it)."""
    import boto3
    from bench.section import REGION
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    recorder = Recorder(
        raw_dynamodb=boto3.client("dynamodb", region_name=REGION),
        backend=dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION],
        prefix=stack.config.name + "-",
    )
    counter = stack.clients.counter
    attach = counter.attach

    def attach_both(client: Any) -> None:
        attach(client)
        recorder.attach(client)

    counter.attach = attach_both  # type: ignore[method-assign]
    for client in list(stack.clients._clients.values()):  # made already (the tool reaches in on purpose)
        recorder.attach(client)
    return recorder
