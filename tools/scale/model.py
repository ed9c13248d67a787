"""From the recorded requests, a profile per workflow kind and phase (what one unit of it costs, and which
partitions it touches how widely); from the profiles, the rates at a target.

A partition key value touched by one unit only (an execution's own item) is private: its load does not
grow with the rate, and the model bounds it by the unit's whole load within one second. A value with a
tenant's name in it, touched by that tenant's units only, is the tenant's: at a target of R units per
second over T tenants it takes R / T times its load per unit. Any other value is shared by every unit of
its kind (a status, a workflow id, a shard of one): it takes R times its load per unit, the share the run
observed. Values that end in "#<number>" (index shards: `RUNNING#3`; shard 0 is the plain value) are one
row, "#<shard>", with one shard's load: the row's total over the shard count (estimated_shards); a shard
one unit hit is not that unit's. Private and tenant values are reported with the unit's and
tenant's names replaced by <unit> and <tenant>, so one row stands for all of them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from scale.limits import PARTITION_READ_UNITS, PARTITION_WRITE_UNITS, QUOTA_BY_KEY, Measure
from scale.recorder import Request

# The unit a periodic sweep's requests are charged to (scale.workload.SWEEP_UNIT).
FIXED_UNIT = "sweep"
# More distinct shards than this share of the touches: too few touches to estimate a shard count.
UNDERSAMPLED = 0.8
SWEEPS_PER_SECOND = 1 / 60  # the recurring wake-sweep schedule's rate
# A Lambda invocation's time, for concurrency: a fixed part plus a round trip per AWS request (typical
# in-Region latencies; moto's in-process times say nothing about Lambda's).
INVOCATION_SECONDS = 0.020
REQUEST_SECONDS = 0.010


class Scope(Enum):
    PRIVATE = "one per unit"
    TENANT = "one per tenant"
    SHARED = "shared"
    FIXED = "the sweep's"  # touched by a periodic sweep only: its cost a sweep, one sweep a minute


@dataclass(frozen=True)
class PartitionUse:
    """A partition key value (or, private and tenant ones, the class of them) and its units in the run:
    for a private class, the most any one value took; otherwise the total over the run."""

    table: str
    index: str
    label: str
    scope: Scope
    write_units: float
    read_units: float
    shards: int = 0  # a sharded value: the shards the run saw (its units are one shard's)


@dataclass(frozen=True)
class PhaseProfile:
    partitions: tuple[PartitionUse, ...]
    calls: Mapping[str, float]  # "service.Operation" -> requests in the run
    charges: Mapping[str, float]  # driver-modelled: lambda_invocations, scheduler_invocations


@dataclass(frozen=True)
class KindProfile:
    kind: str
    units: int
    groups: int
    phases: Mapping[str, PhaseProfile]
    schedules_per_wait: float = 0.0  # schedules held per waiting unit (a slope)
    schedules_fixed: float = 0.0  # schedules held whatever waits (an intercept)
    events_per_unit: int = 0  # bus events a unit is made of (definitions: 2)
    sweeps: int = 0  # periodic sweeps the run drove for this kind


def _label(value: str, names: Iterable[str], placeholder: str) -> str:
    for name in sorted(names, key=len, reverse=True):
        if name:
            value = re.sub(re.escape(name) + r"(?![0-9A-Za-z])", placeholder, value)
    return value


_SHARD = re.compile(r"^(.*)#([0-9]{1,4})$")


def _classify(
    value: str, who: set[str], tenants: set[str], *, tenanted: bool, sharded: set[str]
) -> tuple[str, Scope]:
    """A value's scope and the label it is reported under. A periodic sweep touches many units' values:
    it does not make a unit's own value shared. `sharded`: the values seen with a "#<number>" suffix, whose
    plain value is their shard 0."""
    if who == {FIXED_UNIT}:
        return value, Scope.FIXED
    who = who - {FIXED_UNIT}
    shard = _SHARD.match(value)
    if len(who) == 1 and not shard and value not in sharded:  # one unit's (a shard one unit hit is not)
        name = next(iter(who)).split("/")[-1]
        return _label(_label(value, [name], "<unit>"), tenants, "<tenant>"), Scope.PRIVATE
    base = shard.group(1) if shard else value
    label = f"{base}#<shard>" if shard or value in sharded else value
    tenant = next(iter(tenants)) if tenanted and len(tenants) == 1 else ""
    if tenant and re.search(re.escape(tenant) + r"(?![0-9A-Za-z])", value):  # derived from the tenant
        return _label(label, tenants, "<tenant>"), Scope.TENANT
    return label, Scope.SHARED


def estimated_shards(seen: int, touches: int) -> float:
    """How many shards a class has, from the `seen` distinct ones `touches` random touches found: k with
    k (1 - (1 - 1/k)^touches) = seen (the expected occupancy). All touches on distinct shards bound k
    below only, and nearly all of them say little: then `seen`, which errs towards a hotter shard."""
    if seen > UNDERSAMPLED * touches or seen <= 1:
        return float(max(1, seen))
    low, high = float(seen), float(seen) * 1_000
    for _ in range(100):
        middle = (low + high) / 2
        if middle * (1 - (1 - 1 / middle) ** touches) < seen:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _use(
    table: str, index: str, label: str, scope: Scope, totals: list[float], *, groups: int
) -> PartitionUse:
    write, read, write_max, read_max, values, touches = totals
    if scope is Scope.PRIVATE:  # the worst single value of the class
        return PartitionUse(table, index, label, scope, write_max, read_max)
    if label.endswith("#<shard>"):  # one shard's share of the class (a tenant's: of its tenant's shards)
        per = max(1, groups) if scope is Scope.TENANT else 1
        shards = estimated_shards(round(values / per), round(touches / per))
        return PartitionUse(table, index, label, scope, write / shards, read / shards, round(shards))
    return PartitionUse(table, index, label, scope, write, read)


def build_profiles(
    requests: Sequence[Request],
    *,
    units: Mapping[str, int],
    groups: Mapping[str, int],
    charges: Mapping[str, Mapping[str, Mapping[str, int]]],
    schedules: Mapping[str, tuple[float, float]],
    events_per_unit: Mapping[str, int],
    sweeps: Mapping[str, int] | None = None,
) -> dict[str, KindProfile]:
    """Profiles by kind from the tagged requests; `units`, `groups`, `charges` (kind -> phase -> name ->
    count), `schedules` (kind -> (per wait, fixed)) and `events_per_unit` from the run."""
    # (kind, phase) -> (table, index, value) -> [write, read, units touching, groups touching]
    touched: dict[tuple[str, str], dict[tuple[str, str, str], list[object]]] = defaultdict(dict)
    calls: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    # (kind, table, index, value) -> units and tenants touching it in any phase: a value's scope is its kind's
    whose: dict[tuple[str, str, str, str], tuple[set[str], set[str]]] = {}
    for request in requests:
        if request.empty and request.tag.unit == FIXED_UNIT:
            continue  # a periodic sweep's empty reads: its fixed cost a minute, not any unit's
        key = (request.tag.kind, request.tag.phase)
        calls[key][f"{request.service}.{request.operation}"] += 1
        if request.operation in ("PutEvents", "SendMessageBatch"):
            calls[key][f"{request.service}.{request.operation} entries"] += request.entries
        for touch in request.touches:
            entry = touched[key].setdefault((touch.table, touch.index, touch.value), [0.0, 0.0, set(), set()])
            entry[0] = float(entry[0]) + touch.write_units  # type: ignore[arg-type]
            entry[1] = float(entry[1]) + touch.read_units  # type: ignore[arg-type]
            entry[2].add(request.tag.unit)  # type: ignore[attr-defined]
            entry[3].add(request.tag.group)  # type: ignore[attr-defined]
            who, tenants = whose.setdefault(
                (request.tag.kind, touch.table, touch.index, touch.value), (set(), set())
            )
            who.add(request.tag.unit)
            tenants.add(request.tag.group)
    # (kind, table, index) -> plain values seen with shard suffixes too: their shard 0
    sharded: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for kind, table, index, value in whose:
        if match := _SHARD.match(value):
            sharded[(kind, table, index)].add(match.group(1))
    profiles: dict[str, KindProfile] = {}
    for kind in units:
        phases: dict[str, PhaseProfile] = {}
        phase_names = {phase for k, phase in calls if k == kind} | set(charges.get(kind, {}))
        for phase in sorted(phase_names):
            # (table, index, label, scope) -> [write total, read total, write max, read max, values,
            # units' touches (a unit counted once a value)]
            classes: dict[tuple[str, str, str, Scope], list[float]] = {}
            for (table, index, value), (write, read, _, _) in touched[(kind, phase)].items():
                assert isinstance(write, float) and isinstance(read, float)
                who, tenants = whose[(kind, table, index, value)]
                label, scope = _classify(
                    value,
                    who,
                    tenants,
                    tenanted=groups.get(kind, 1) > 1,
                    sharded=sharded[(kind, table, index)],
                )
                found = classes.setdefault((table, index, label, scope), [0.0] * 6)
                found[0] += write
                found[1] += read
                found[2], found[3] = max(found[2], write), max(found[3], read)
                found[4] += 1
                found[5] += len(who - {FIXED_UNIT})
            partitions = tuple(
                _use(table, index, label, scope, totals, groups=groups.get(kind, 1))
                for (table, index, label, scope), totals in sorted(classes.items(), key=str)
            )
            phase_charges = {
                name: float(count) for name, count in charges.get(kind, {}).get(phase, {}).items()
            }
            phases[phase] = PhaseProfile(partitions, dict(calls[(kind, phase)]), phase_charges)
        per_wait, fixed = schedules.get(kind, (0.0, 0.0))
        profiles[kind] = KindProfile(
            kind,
            units[kind],
            groups.get(kind, 1),
            phases,
            schedules_per_wait=per_wait,
            schedules_fixed=fixed,
            events_per_unit=events_per_unit.get(kind, 0),
            sweeps=(sweeps or {}).get(kind, 0),
        )
    return profiles


def schedule_slope(held: Mapping[int, int]) -> tuple[float, float]:
    """(schedules per waiting unit, fixed schedules) from schedules held at two counts of waiting units."""
    if len(held) < 2:
        return 0.0, float(max(held.values(), default=0))
    (low, at_low), (high, at_high) = sorted(held.items())[:1] + sorted(held.items())[-1:]
    slope = (at_high - at_low) / (high - low)
    return slope, max(0.0, at_high - slope * high)


@dataclass(frozen=True)
class Load:
    """`rate` units of `kind` a second (its `phases` only, or all), spread over `tenants` tenants, with
    `waiting` of its units waiting at any moment (for the schedules they hold)."""

    kind: str
    rate: float
    tenants: int = 1
    phases: tuple[str, ...] = ()
    waiting: float = 0.0


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    loads: tuple[Load, ...]
    unit: str  # what the target's headline figure counts ("starts/s", "events/s", "waiting", ...)
    headline: float
    burst: bool = False  # arrives at once: Lambda must add its concurrency within 10 s


@dataclass(frozen=True)
class PartitionRate:
    table: str
    index: str
    label: str
    scope: Scope
    write_per_second: float
    read_per_second: float
    shards: int = 0

    @property
    def utilisation(self) -> float:
        return max(self.write_per_second / PARTITION_WRITE_UNITS, self.read_per_second / PARTITION_READ_UNITS)

    @property
    def place(self) -> str:
        return f"{self.table}/{self.index}" if self.index else self.table


@dataclass(frozen=True)
class QuotaRate:
    key: str
    value: float  # per second, or at once (Measure)

    @property
    def utilisation(self) -> float:
        return self.value / QUOTA_BY_KEY[self.key].default


@dataclass
class Projection:
    target: Target
    partitions: list[PartitionRate] = field(default_factory=list)
    quotas: list[QuotaRate] = field(default_factory=list)
    sqs_requests: float = 0.0  # per second

    def hottest(self) -> tuple[str, float]:
        """The limit with the highest utilisation: (what, utilisation)."""
        candidates = [(f"{p.place} `{p.label}`", p.utilisation) for p in self.partitions]
        candidates += [(QUOTA_BY_KEY[q.key].name, q.utilisation) for q in self.quotas]
        return max(candidates, key=lambda pair: pair[1], default=("nothing", 0.0))

    def first_limit(self) -> tuple[str, float | None]:
        """The first limit the target's load hits as it grows, and the headline rate it hits it at (None
        when nothing the model knows grows with it)."""
        what, utilisation = self.hottest()
        if utilisation <= 0:
            return what, None
        return what, self.target.headline / utilisation


def _phases(profile: KindProfile, load: Load) -> list[PhaseProfile]:
    names = load.phases or tuple(profile.phases)
    missing = [name for name in names if name not in profile.phases]
    if missing:
        raise ValueError(f"{profile.kind} has no phase {missing}; it has {sorted(profile.phases)}")
    return [profile.phases[name] for name in names]


def project(target: Target, profiles: Mapping[str, KindProfile]) -> Projection:
    partitions: dict[tuple[str, str, str, Scope], list[float]] = {}
    quotas: dict[str, float] = defaultdict(float)
    sqs = 0.0
    fixed_schedules = 0.0
    for load in target.loads:
        if load.kind not in profiles:
            raise ValueError(f"target {target.name!r}: no profile of {load.kind!r}; have {sorted(profiles)}")
        profile = profiles[load.kind]
        per_unit = load.rate / profile.units  # the run's totals times this: per second at the target
        for phase in _phases(profile, load):
            for use in phase.partitions:
                if use.scope is Scope.PRIVATE:
                    write, read = use.write_units, use.read_units  # within a second, at worst
                elif use.scope is Scope.FIXED:  # a sweep's, one sweep a minute whatever the rate
                    per_sweep = SWEEPS_PER_SECOND / max(1, profile.sweeps)
                    write, read = use.write_units * per_sweep, use.read_units * per_sweep
                elif use.scope is Scope.TENANT:
                    write, read = (
                        use.write_units * per_unit / load.tenants,
                        use.read_units * per_unit / load.tenants,
                    )
                else:
                    write, read = use.write_units * per_unit, use.read_units * per_unit
                found = partitions.setdefault((use.table, use.index, use.label, use.scope), [0.0, 0.0, 0.0])
                found[2] = max(found[2], use.shards)
                if use.scope in (Scope.PRIVATE, Scope.FIXED):
                    found[0], found[1] = max(found[0], write), max(found[1], read)
                else:
                    found[0] += write
                    found[1] += read
            calls = phase.calls
            quotas["create_schedule"] += calls.get("scheduler.CreateSchedule", 0.0) * per_unit
            quotas["delete_schedule"] += calls.get("scheduler.DeleteSchedule", 0.0) * per_unit
            quotas["scheduler_invocations"] += phase.charges.get("scheduler_invocations", 0.0) * per_unit
            quotas["put_events"] += calls.get("events.PutEvents", 0.0) * per_unit
            invocations = phase.charges.get("lambda_invocations", 0.0)
            requests = sum(count for name, count in calls.items() if not name.endswith(" entries"))
            quotas["lambda_concurrency"] += (
                invocations * INVOCATION_SECONDS + requests * REQUEST_SECONDS
            ) * per_unit
            kms = sum(count for name, count in calls.items() if name.startswith("kms."))
            # With kms_key_arn, Scheduler encrypts a schedule's input when it is made and decrypts it
            # when it fires (an assumption: one call each); the engine's own KMS calls are recorded.
            kms += calls.get("scheduler.CreateSchedule", 0.0) + phase.charges.get(
                "scheduler_invocations", 0.0
            )
            quotas["kms"] += kms * per_unit
            # The engine's SQS requests, and those AWS makes for it: the event source mapping's receives and
            # deletes, Scheduler's sends to the queue.
            played = sum(
                phase.charges.get(name, 0.0) for name in ("esm_receives", "esm_deletes", "scheduler_sends")
            )
            engine = sum(
                count for name, count in calls.items() if name.startswith("sqs.") and "entries" not in name
            )
            sqs += (engine + played) * per_unit
        events = profile.events_per_unit * load.rate  # bus events: a producer's PutEvents, a rule delivery
        sqs += events  # the rule's SendMessage of each to the work queue
        quotas["put_events"] += events
        quotas["rule_invocations"] += events
        quotas["schedules"] += profile.schedules_per_wait * load.waiting
        fixed_schedules = max(fixed_schedules, profile.schedules_fixed)
    quotas["schedules"] += fixed_schedules
    if target.burst:  # the concurrency it needs, all of it added within the 10 s it arrives in
        quotas["lambda_scaling"] = quotas["lambda_concurrency"]
    projection = Projection(target, sqs_requests=sqs)
    projection.partitions = sorted(
        (
            PartitionRate(t, i, label, scope, w, r, int(shards))
            for (t, i, label, scope), (w, r, shards) in partitions.items()
        ),
        key=lambda p: p.utilisation,
        reverse=True,
    )
    projection.quotas = sorted(
        (QuotaRate(key, value) for key, value in quotas.items() if value > 0),
        key=lambda q: q.utilisation,
        reverse=True,
    )
    return projection


def is_count(key: str) -> bool:
    return QUOTA_BY_KEY[key].measure is Measure.COUNT
