"""Soak (issue 37, item 6): a mix of executions run through their retention on the virtual clock on moto;
afterwards every table, the bucket, the queues and Scheduler must hold nothing but what running executions
need. `make soak` runs the long version and writes its section of BENCHMARKS.md.

    .venv/bin/python tools/soak.py                        # 25 executions of each kind, prints the section
    .venv/bin/python tools/soak.py --write BENCHMARKS.md  # ... and writes its section (make soak)
    .venv/bin/python tools/soak.py --per-kind 2           # the short run (tests/adapters/test_soak_short.py)

The deployment is moto's in-process mock (stepwell.testing.mock_deployment, as the adapter tests build it),
driven by tests/adapters/driver.py (SQS's event source mapping, Scheduler's one-time wake-ups, redelivery
into the DLQ). The worker has published versions (in-process runtimes behind tests/engine/versioned_stack.py's
Functions, the FunctionVersions port): executions pinned to version 1 are forwarded there after version 3
goes live, some are upgraded to version 3, and those pinned to version 2 meet it deleted by hand (the
reconciler never deletes a version executions are pinned to): their wake-ups fail into the DLQ until they
are upgraded and the DLQ redriven. Once the mix has ended the reconciler runs (it prunes version 1).

Then the clock skips past every hold: the retention period plus the 7-day name hold
(stepwell.core.log_expiry.NAME_HOLD_SECONDS) and the 400-day schedule pointer hold, whichever is longest, and
what AWS would do meanwhile is applied: DynamoDB's TTL deletes every item whose `ttl` lies in the past
(and no more than five years: DynamoDB ignores older ones), the bucket's lifecycle rule (read from
modules/payloads/main.tf) deletes the objects carrying its tag once its days have passed. Whatever is left
is counted per table and item kind (by key prefix) and per tag state, less what running executions need.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tool_paths  # tools/, this file's folder, is on the path

# tests/ as pytest puts it on the path (tests/adapters is the package `adapters`); tests/engine for its
# versioned stack, a module of its own there.
tool_paths.add(tool_paths.ROOT / "tests", tool_paths.ROOT / "tests" / "engine")

import soak_retention as retention  # noqa: E402
from adapters.deployment import REGION, Deployment, create_deployment  # noqa: E402
from adapters.driver import QueueDriver, callback_id_of  # noqa: E402
from adapters.leftovers import asks, asks_small, fails_open, fire_occurrence, waits_long  # noqa: E402
from fake_aws import fake_aws_environment  # noqa: E402
from moto import mock_aws  # noqa: E402
from reporting import md_table, report_checked_run, wrap_markdown  # noqa: E402
from soak_retention import DAY, KNOWN_KINDS, PAYLOADS_MODULE  # noqa: E402
from stepwell.aws.clients import AwsClients  # noqa: E402
from stepwell.aws.payloads import RETENTION_TAG_ENDED, RETENTION_TAG_KEY  # noqa: E402
from stepwell.client import StepwellClient  # noqa: E402
from stepwell.clock import VirtualClock  # noqa: E402
from stepwell.core.flow_limits import Concurrency, Rate  # noqa: E402
from stepwell.core.log_expiry import NAME_HOLD_SECONDS  # noqa: E402
from stepwell.core.registry import Registry  # noqa: E402
from stepwell.features.definitions.service import install  # noqa: E402
from stepwell.ports import SCHEDULE_POINTER_HOLD_SECONDS  # noqa: E402
from stepwell.wiring.entry import EntryRuntime  # noqa: E402
from versioned_stack import Functions  # noqa: E402

DEFAULT_PER_KIND = 25
# The driver's rounds (a batch received or a schedule fired) before it gives up on the queue going quiet.
ROUNDS = 20_000
# Past every hold by a day more: DynamoDB deletes expired items within days, S3 expires at a midnight.
MARGIN_SECONDS = DAY
# Over the engine's 200 KB inline limit, so offloaded to the bucket (repetitive: the batches stay small).
BIG = 210 * 1024
# The name of its section of BENCHMARKS.md: a bench run keeps every `chaos*` section (tools/reporting.py).
SECTION_NAME = "chaos-soak"

# The definition the contexts run: a signup, then a verification or a day's time-out (a Scheduler wake-up).
ONBOARDING: dict[str, Any] = {
    "schemaVersion": 1,
    "id": "onboarding",
    "nodes": [
        {"id": "signed_up", "type": "trigger", "event": "signup"},
        {"id": "verify", "type": "trigger_or_timeout", "event": "verified", "timeout": "1d"},
        {"id": "done", "type": "end"},
    ],
    "edges": [
        {"from": "signed_up", "to": "verify"},
        {"from": "verify", "to": "done", "branch": "event"},
        {"from": "verify", "to": "done", "branch": "timeout"},
    ],
}
DOMAIN = "acme"
EVENT_SOURCE = "soak.app"

# The mix: kind -> (what it is, the status each of its executions must end in).
KINDS: dict[str, tuple[str, str]] = {
    "succeeded": (
        "a 2 h wait on a Scheduler wake-up, every other one with a 210 KiB input and result",
        "SUCCEEDED",
    ),
    "answered": ("a callback answered with a 210 KiB result (a small result returned)", "SUCCEEDED"),
    "failed": ("fails with a callback still open", "FAILED"),
    "stopped": ("stopped while waiting for a callback, with a 210 KiB input", "STOPPED"),
    "timed out": ("a callback never answered, past the workflow's 1 h execution timeout", "TIMED_OUT"),
    "concurrency-limited": ("two per key under Concurrency(1): the second waits for the first", "SUCCEEDED"),
    "rate-limited": ("Rate(1 per hour): the later starts are delayed on Scheduler", "SUCCEEDED"),
    "scheduled": (
        "a SKIP schedule: one occurrence starts it, the next is skipped, the schedule deleted",
        "SUCCEEDED",
    ),
    "forwarded": (
        "started on version 1, forwarded there after version 3 went live; 1 pruned after",
        "SUCCEEDED",
    ),
    "upgraded": ("started on version 1, upgraded to version 3 while waiting", "SUCCEEDED"),
    "redriven": (
        "pinned to version 2, deleted by hand: wake-ups fail into the DLQ; upgraded, DLQ redriven",
        "SUCCEEDED",
    ),
    "definitions context": (
        "a signup, then the verification event (half) or the day's time-out",
        "SUCCEEDED",
    ),
}


@dataclass(frozen=True)
class Settings:
    per_kind: int = DEFAULT_PER_KIND


@dataclass
class Report:
    settings: Settings
    retention_days: int = 0
    skipped_days: float = 0.0
    wall_seconds: float = 0.0
    # kind -> Counter of end statuses.
    ended: dict[str, Counter[str]] = field(default_factory=dict)
    # (store, item kind) -> count: at the end of the mix, expired by TTL or the lifecycle rule, left after.
    before: Counter[tuple[str, str]] = field(default_factory=Counter)
    expired: Counter[tuple[str, str]] = field(default_factory=Counter)
    left: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Items of executions still running, not counted as left (none, as this mix ends every execution).
    running_kept: int = 0
    # What the queues and Scheduler hold once the mix has ended (SQS and Scheduler have no TTL to apply).
    resources: dict[str, int] = field(default_factory=dict)
    pruned_versions: list[str] = field(default_factory=list)
    redriven_messages: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[str]:
        failures = []
        for kind, (_, status) in KINDS.items():
            ended = self.ended.get(kind, Counter())
            if ended != Counter({status: self.settings.per_kind}):
                failures.append(f"{kind}: ended {dict(ended)}, expected {self.settings.per_kind} {status}")
        failures += [
            f"left after retention: {store} {kind}: {n}" for (store, kind), n in self.left.items() if n
        ]
        failures += [f"left at the end of the mix: {name}: {n}" for name, n in self.resources.items() if n]
        return failures


# ---------------------------------------------------------------------------------------------- the mix


class Versions:
    """The worker's published versions, each an entry runtime in this process, `live` on the newest; the
    driver's runtime (what SQS's mapping and Scheduler's invokes reach) follows the alias."""

    def __init__(self, deployment: Deployment, registry: Registry, clock: VirtualClock) -> None:
        self.deployment = deployment
        self.registry = registry
        self.clock = clock
        self.functions = Functions()
        self.driver = QueueDriver(deployment, self.publish(), clock)

    def publish(self) -> EntryRuntime:
        version = str(max((int(v) for v in self.functions.runtimes), default=0) + 1)
        base = EntryRuntime.from_config(
            self.deployment.config, self.deployment.clients, registry=self.registry, clock=self.clock
        )
        engine = dataclasses.replace(base.engine, code_version=version, functions=self.functions)
        # One version kept: the reconciler may prune every older one nothing is pinned to.
        runtime = EntryRuntime(engine, keep_versions=1)
        runtime.event_router = install(engine, self.deployment.config, self.deployment.clients, self.registry)
        self.functions.runtimes[version] = runtime
        self.functions.published_at[version] = self.clock.now()
        self.functions.alias_version = version
        if hasattr(self, "driver"):
            self.driver.runtime = runtime
        return runtime


@contextlib.contextmanager
def moto_deployment() -> Iterator[Deployment]:
    """The module's resources in moto's in-process mock, with fake credentials (nothing reaches AWS)."""
    with fake_aws_environment(REGION), mock_aws():
        # The soak's events come on the bus from its own source, which may speak for its domain.
        config = dataclasses.replace(create_deployment(), event_sources={EVENT_SOURCE: [DOMAIN]})
        yield Deployment(config=config, clients=AwsClients(region=REGION))


def _registry() -> Registry:
    registry = Registry()
    registry.register("waits-long", waits_long)
    registry.register("forwarded", waits_long)
    registry.register("upgraded", waits_long)
    registry.register("redriven", waits_long)
    registry.register("asks", asks)
    registry.register("asks-small", asks_small)
    registry.register("fails-open", fails_open)
    registry.register("times-out", asks, execution_timeout=3600)
    registry.register("held", asks, concurrency=Concurrency(1, key="$.customer"))
    registry.register("paced", waits_long, rate=Rate(1, 3600))
    registry.register("nightly", asks)
    return registry


def run_mix(deployment: Deployment, settings: Settings, report: Report) -> VirtualClock:
    """Starts every kind `settings.per_kind` times and drives them all to their ends."""
    n = settings.per_kind
    registry = _registry()
    clock = VirtualClock()
    client = StepwellClient(deployment.config, deployment.clients, registry=registry, clock=clock)
    versions = Versions(deployment, registry, clock)  # version 1, live
    driver = versions.driver
    # The client's upgrades resolve `live` through the worker's versions.
    client.engine = dataclasses.replace(client.engine, functions=versions.functions)
    started: dict[str, list[str]] = {kind: [] for kind in KINDS}

    def start(kind: str, workflow: str, payload: dict[str, Any], index: int, **options: Any) -> str:
        name = f"{kind.replace(' ', '-')}-{index}"
        execution_id = client.start_execution(workflow, payload, execution_name=name, **options)
        started[kind].append(execution_id)
        return execution_id

    # Version 1: executions that will be forwarded to it and upgraded away from it suspend in their wait.
    for i in range(n):
        start("forwarded", "forwarded", {"n": i}, i)
        start("upgraded", "upgraded", {"n": i}, i)
    driver.run_until_quiet(max_rounds=ROUNDS, fire_schedules=False)
    # Version 2: executions pinned to it, which is deleted by hand once version 3 is live.
    versions.publish()
    for i in range(n):
        start("redriven", "redriven", {"n": i}, i)
    driver.run_until_quiet(max_rounds=ROUNDS, fire_schedules=False)
    clock.advance(600)
    versions.publish()
    for execution_id in started["upgraded"]:
        assert client.upgrade_execution(execution_id, "live")
    versions.functions.delete_version("2")

    # Version 3 (live): the rest of the mix.
    for i in range(n):
        start("succeeded", "waits-long", {"n": i, "big": BIG if i % 2 else 0}, i, tags={"team": "soak"})
        start("answered", "asks-small", {}, i)
        start("failed", "fails-open", {}, i, tags={"team": "soak"})
        start("stopped", "asks", {"pad": "x" * BIG}, i)
        start("timed out", "times-out", {}, i)
        start("concurrency-limited", "held", {"customer": f"c-{i // 2}"}, i)
        start("rate-limited", "paced", {"n": i}, i)
    definitions = client.definitions()
    definitions.put_definition(DOMAIN, ONBOARDING)
    for i in range(n):
        (context_execution,) = definitions.send_event(DOMAIN, f"user-{i}", "signup", {}).started
        started["definitions context"].append(context_execution)
    driver.run_until_quiet(max_rounds=ROUNDS, fire_schedules=False)

    # SKIP schedules: the first occurrence claims and starts, the second (a day on) is skipped; deleted.
    for i in range(n):
        client.create_schedule(f"nightly-{i}", "nightly", "cron(0 0 * * ? *)", overlap="SKIP")
        fire_occurrence(deployment, f"nightly-{i}", "2030-01-01T00:00:00Z")
    driver.run_until_quiet(max_rounds=ROUNDS, fire_schedules=False)
    clock.advance(DAY)
    for i in range(n):
        fire_occurrence(deployment, f"nightly-{i}", "2030-01-02T00:00:00Z")
    driver.run_until_quiet(max_rounds=ROUNDS, fire_schedules=False)
    for i in range(n):
        client.delete_schedule(f"nightly-{i}")
    started["scheduled"] = [
        record.execution_id for record in client.list_executions(workflow="nightly", subject_id=None).items
    ]

    for execution_id in started["answered"]:
        client.send_callback_success(callback_id_of(client, execution_id), json.dumps("z" * BIG))
    for execution_id in started["stopped"]:
        assert client.stop_execution(execution_id)
    for i in range(0, n, 2):  # on the bus: the worker's router takes them (and records their ids)
        definitions.publish_event(DOMAIN, f"user-{i}", "verified", {}, source=EVENT_SOURCE)
    # One from a source that may not speak for the domain: refused, recorded as rejected.
    definitions.publish_event(DOMAIN, "user-0", "verified", {}, source="soak.stranger")
    # Failed runs (the forwards to the deleted version) come back until SQS moves them to the DLQ.
    driver.run_until_quiet(max_rounds=ROUNDS, redeliver_failures=True)
    _answer_waiting(client, driver, started["scheduled"] + started["concurrency-limited"])

    # The executions pinned to the deleted version: upgraded to the live one, their messages redriven.
    upgraded = client.upgrade_executions("redriven", from_version="2", to_version="live")
    assert sorted(upgraded) == sorted(started["redriven"]), upgraded
    report.redriven_messages = client.redrive_dlq().moved
    driver.run_until_quiet(max_rounds=ROUNDS, redeliver_failures=True)

    # The reconciler's recurring run, past the prune grace: version 1 has nothing pinned to it any more.
    clock.advance(3 * 3600)
    before = set(versions.functions.runtimes)
    deployment.clients.sqs.send_message(
        QueueUrl=deployment.config.work_queue_url, MessageBody=json.dumps({"kind": "reconcile"})
    )
    driver.run_until_quiet(max_rounds=ROUNDS)
    report.pruned_versions = sorted(before - set(versions.functions.runtimes))
    definitions.delete_definition(DOMAIN, ONBOARDING["id"])

    for kind, execution_ids in started.items():
        report.ended[kind] = Counter(client.describe_execution(eid)["Status"] for eid in execution_ids)
    report.resources = _resources(deployment)
    return clock


def _answer_waiting(client: StepwellClient, driver: QueueDriver, execution_ids: list[str]) -> None:
    """Answer each running execution's callback once it has one, until they have all ended (a held one
    starts only when the one before it on its key ends)."""
    answered: set[str] = set()
    for _ in range(len(execution_ids) + 1):
        running = [eid for eid in execution_ids if client.describe_execution(eid)["Status"] == "RUNNING"]
        if not running:
            return
        for execution_id in running:
            if execution_id in answered:
                continue
            with contextlib.suppress(AssertionError):  # no callback yet: still waiting for its slot
                client.send_callback_success(callback_id_of(client, execution_id), json.dumps("ok"))
                answered.add(execution_id)
        driver.run_until_quiet(max_rounds=ROUNDS)


def _resources(deployment: Deployment) -> dict[str, int]:
    """Messages in the queues and schedules in the group, which no TTL removes."""
    config, clients = deployment.config, deployment.clients

    def messages(url: str) -> int:
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        attributes = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(attributes.get(name, "0")) for name in names)

    schedules = clients.scheduler.list_schedules(GroupName=config.schedule_group_name).get("Schedules", [])
    return {
        "work queue: messages": messages(config.work_queue_url),
        "DLQ: messages": messages(config.dlq_url),
        "Scheduler group: schedules": len(schedules),
    }


def run(settings: Settings, after_mix: Callable[[Deployment], None] | None = None) -> Report:
    """The whole soak on a fresh moto deployment. `after_mix` runs once the mix has ended, before the
    retention (tests use it to leave something behind on purpose)."""
    began = time.monotonic()
    report = Report(settings)
    rule = retention.read_lifecycle_rule()
    if rule.days_variable != "retention_days":
        raise SystemExit(
            f"{PAYLOADS_MODULE}: the expiry rule's days are var.{rule.days_variable}, not retention_days"
        )
    with moto_deployment() as deployment:
        clock = run_mix(deployment, settings, report)
        if after_mix is not None:
            after_mix(deployment)
        report.before = retention.count_items(deployment, rule).counts
        # Every write so far came before these moments (moto stamps LastModified in real time).
        settled_virtual, settled_real = clock.now(), time.time()
        report.retention_days = deployment.config.retention_days
        hold = report.retention_days * DAY + NAME_HOLD_SECONDS
        hold = max(hold, SCHEDULE_POINTER_HOLD_SECONDS) + MARGIN_SECONDS
        clock.advance(hold)
        report.skipped_days = hold / DAY
        report.expired = retention.apply_ttl(deployment, clock.now())
        report.expired += retention.apply_lifecycle(
            deployment, rule, report.retention_days, settled_real, clock.now() - settled_virtual
        )
        left = retention.count_items(deployment, rule)
        report.left, report.running_kept, report.examples = left.counts, left.running_kept, left.examples
    report.wall_seconds = time.monotonic() - began
    return report


# ---------------------------------------------------------------------------------------------- the section


def render(report: Report) -> str:
    n = report.settings.per_kind
    verdict = "FAILED" if report.failed_checks else "PASSED"

    def ends(kind: str) -> str:
        return ", ".join(f"{status} {count}" for status, count in sorted(report.ended.get(kind, {}).items()))

    kind_rows = [(kind, what, ends(kind) or "-") for kind, (what, _) in KINDS.items()]
    stores = list(KNOWN_KINDS) + sorted((set(report.before) | set(report.left)) - set(KNOWN_KINDS))
    count_rows = [
        (
            store,
            kind,
            f"{report.before[(store, kind)]:,}",
            f"{report.expired[(store, kind)]:,}",
            f"{report.left[(store, kind)]:,}",
        )
        for store, kind in stores
    ]
    resource_rows = [(name, f"{count:,}") for name, count in report.resources.items()]
    lines = [
        "## Soak",
        "",
        f"Generated by `make soak` (`tools/soak.py --per-kind {n} --write BENCHMARKS.md`) on "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC in {report.wall_seconds:.0f} s: {verdict}.",
        "",
        f"{n} executions of each kind below, on moto's in-process mock (tests/adapters/driver.py plays "
        "SQS's mapping, Scheduler and the DLQ's redrive policy), the worker with published versions in this "
        f"process (the reconciler pruned version(s) {', '.join(report.pruned_versions) or 'none'}; "
        f"{report.redriven_messages} message(s) redriven from the DLQ). Once every execution had ended, the "
        f"virtual clock skipped {report.skipped_days:.0f} days (past the {report.retention_days}-day "
        "retention plus the 7-day name hold, and past the 400-day schedule pointer hold) and what AWS does "
        "meanwhile was applied: DynamoDB's TTL deleted every item whose `ttl` had passed, the bucket's "
        f"lifecycle rule (modules/payloads/main.tf) every object tagged "
        f"`{RETENTION_TAG_KEY}={RETENTION_TAG_ENDED}`. Left: what every table and the bucket still hold, "
        f"less what running executions need ({report.running_kept} item(s) of running executions; none run "
        "at the end of this mix). How it runs: tools/soak.py.",
        "",
        md_table(["kind", "executions", "ended"], kind_rows),
        "",
        md_table(
            ["store", "item kind", "at the end of the mix", "expired (TTL, lifecycle)", "left (must be 0)"],
            count_rows,
        ),
        "",
        md_table(["at the end of the mix (no TTL applies)", "count (must be 0)"], resource_rows),
    ]
    problems = report.failed_checks
    if problems:
        lines += ["", "Problems:", "", *(f"- {problem}" for problem in problems)]
        lines += ["", "Left (first 20):", "", *(f"- `{example}`" for example in report.examples)]
    return wrap_markdown("\n".join(lines)) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--per-kind", type=int, default=DEFAULT_PER_KIND, help="executions of each kind")
    parser.add_argument("--write", type=Path, help="write the report's section into this markdown file")
    args = parser.parse_args(argv)
    if args.per_kind < 1:
        parser.error(f"--per-kind must be at least 1, got {args.per_kind}")
    report = run(Settings(per_kind=args.per_kind))
    return report_checked_run(render(report), report.failed_checks, args.write, SECTION_NAME)


if __name__ == "__main__":
    sys.exit(main())
